"""Lengths: how long each row of a training shape is, measured as its trainer reads it, and what
the trainer's default length limit would do to the rows.

Trainers cut or drop long rows silently (TRL's KTOTrainer drops a row past
`KTOConfig.max_length`, OpenRLHF's reward dataset cuts one past `--max_len`), so every export
counts its rows' lengths as it writes them: the distribution (shortest, median, 90th percentile,
longest) is printed and written in the dataset card, with how many rows the target trainer's
default limit (`Limit`) would cut or drop. Lengths are characters, or, with `tokenizer` (a local
tokenizer folder, read with transformers), tokens of the text's content (a chat template's own
tokens and special tokens are not counted). Without a tokenizer the rows over a limit in tokens
are estimated at `CHARS_PER_TOKEN` characters a token, and said to be an estimate.
`max_length` leaves out the rows longer than it and names them.

A shape says what its trainer reads of a row with `texts`: the documents the trainer tokenizes
(each a list of parts read as one text); a row's length is that of its longest document.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from viz_app.errors import OrchvizError

CHARS_PER_TOKEN = 4
"""Characters a token, roughly, in English text and code: how rows over a token limit are
estimated when no tokenizer is given."""

SHOWN = 5
"""How many rows a sentence names before it says 'and N more'."""


@dataclass(frozen=True)
class Limit:
    """A trainer's default length limit and what it does to a longer row."""

    tokens: int
    """The default, in tokens."""
    setting: str
    """Where it is set (`KTOConfig.max_length`, `--max_len`)."""
    effect: str
    """What the trainer does to a longer row, as a verb phrase: 'drops them', 'cuts them'."""


Texts = Callable[[dict[str, Any]], list[list[str]]]
"""The documents a trainer reads of a row, each as its parts."""


def content(value: Any) -> list[str]:
    """A prompt or completion's text: a string, or the contents of chat messages."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [m.get("content") or "" for m in value if isinstance(m, dict)]
    return []


def prompt_completion(row: dict[str, Any]) -> list[list[str]]:
    """unpaired: the prompt and its completion, read together."""
    return [content(row["prompt"]) + content(row["completion"])]


def prompt_completions(row: dict[str, Any]) -> list[list[str]]:
    """stepwise: the prompt and every completion with PRMTrainer's separator after each."""
    return [[row["prompt"], *(c + "\n" for c in row["completions"])]]


def prompt_each_completion(row: dict[str, Any]) -> list[list[str]]:
    """decision-groups: the prompt with each member's completion (a GRPO group's sequences)."""
    prompt = content(row["prompt"])
    return [prompt + [c] for c in row["completions"]]


def prompt_chosen_rejected(row: dict[str, Any]) -> list[list[str]]:
    """preference: the prompt with the chosen, and with the rejected."""
    prompt = content(row["prompt"])
    return [prompt + content(row["chosen"]), prompt + content(row["rejected"])]


def chosen_rejected(row: dict[str, Any]) -> list[list[str]]:
    """openrlhf-rm: the chosen and the rejected, each whole."""
    return [content(row["chosen"]), content(row["rejected"])]


def single_input(row: dict[str, Any]) -> list[list[str]]:
    """openrlhf-prm: the input."""
    return [[row["input"]]]


def prompt_only(row: dict[str, Any]) -> list[list[str]]:
    """verl: the prompt (the judge's answer is short)."""
    return [content(row["prompt"])]


def triplet(row: dict[str, Any]) -> list[list[str]]:
    """agent-lightning: the Triplet's prompt and response."""
    return [content(row["prompt"]["raw_content"]) + content(row["response"]["raw_content"])]


def trajectories(row: dict[str, Any]) -> list[list[str]]:
    """rllm: each trajectory's steps (what the agent observed and answered), one document
    each."""
    return [[part for step in t.get("steps") or []
             for part in (step.get("observation") or "", step.get("model_response") or "")]
            for t in row.get("trajectories") or []] or [[]]


def row_name(row: dict[str, Any]) -> str:
    """Where a row comes from, to name it: its trace (and event, or pair)."""
    if row.get("chosen_trace_id"):
        return f"{row['chosen_trace_id']} vs {row['rejected_trace_id']}"
    for where in (row, row.get("metadata"), row.get("extra_info"), row.get("task")):
        if isinstance(where, dict) and where.get("trace_id"):
            name = str(where["trace_id"])
            if where.get("event_id"):
                name += f" {where['event_id']}"
            if where.get("question") and where is row.get("extra_info"):
                name += f" {where['question']}"
            if where.get("kind") == "should_have_stopped":
                name += " (should have stopped)"
            return name
    return str(row.get("id", "?"))


def _counter(tokenizer: str | None) -> Callable[[list[str]], int]:
    if tokenizer is None:
        return lambda parts: sum(map(len, parts))
    if not Path(tokenizer).is_dir():
        raise OrchvizError(f"--tokenizer {tokenizer}: no such folder (it takes a local "
                           "tokenizer folder): nothing was exported")
    quiet = os.environ.get("TRANSFORMERS_VERBOSITY")
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"  # not its warning that torch is missing
    try:
        from transformers import AutoTokenizer
    except ImportError:
        raise OrchvizError("--tokenizer needs the transformers package (pip install "
                           "transformers): nothing was exported") from None
    finally:
        if quiet is None:
            os.environ.pop("TRANSFORMERS_VERBOSITY", None)
        else:
            os.environ["TRANSFORMERS_VERBOSITY"] = quiet
    try:
        found = AutoTokenizer.from_pretrained(tokenizer, local_files_only=True)
    except (OSError, ValueError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise OrchvizError(f"--tokenizer {tokenizer}: no tokenizer could be read there "
                           f"({first}): nothing was exported") from None

    def count(parts: list[str]) -> int:
        return len(found("".join(parts), add_special_tokens=False)["input_ids"])
    return count


def _named(names: Sequence[str]) -> str:
    return "; ".join(names[:SHOWN]) + (f"; and {len(names) - SHOWN} more"
                                       if len(names) > SHOWN else "")


@dataclass
class Lengths:
    """The lengths of an export's rows, counted as they pass on their way to the file."""

    texts: Texts
    limit: Limit | None
    trainer: str
    tokenizer: str | None = None
    max_length: int | None = None
    seen: list[int] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.count = _counter(self.tokenizer)  # a tokenizer that cannot be read stops it here

    @property
    def unit(self) -> str:
        """What a length counts."""
        return "tokens" if self.tokenizer else "characters"

    def through(self, rows: Iterable[dict[str, Any]], done: Callable[[], None]
                ) -> Iterator[dict[str, Any]]:
        """The rows, each measured, those past `max_length` held back; `done()` once the last
        has passed."""
        count, texts, limit = self.count, self.texts, self.max_length
        for row in rows:
            length = max(count(parts) for parts in texts(row))
            if limit is not None and length > limit:
                self.refused.append(f"{row_name(row)} ({length})")
                continue
            self.seen.append(length)
            yield row
        done()

    def facts(self) -> dict[str, Any]:
        """The distribution and what the trainer's default limit would do, for the card."""
        seen = sorted(self.seen)
        found: dict[str, Any] = {"unit": self.unit, "tokenizer": self.tokenizer,
                                 "rows": len(seen), "max_length": self.max_length,
                                 "refused": len(self.refused)}
        if seen:
            found.update(shortest=seen[0], median=statistics.median_low(seen),
                         p90=seen[min(len(seen) - 1, (len(seen) * 9) // 10)], longest=seen[-1])
        if self.limit is not None:
            cut = self.limit.tokens if self.tokenizer else self.limit.tokens * CHARS_PER_TOKEN
            found["limit"] = {"trainer": self.trainer, "setting": self.limit.setting,
                              "tokens": self.limit.tokens, "effect": self.limit.effect,
                              "over": sum(1 for n in seen if n > cut),
                              "estimated": self.tokenizer is None}
        return found

    def sentences(self) -> tuple[list[str], list[str]]:
        """(left out, notes): the rows held back by `max_length`, the distribution and the
        default limit's effect, one sentence each."""
        facts = self.facts()
        left_out = [f"{len(self.refused)} rows longer than --max-length {self.max_length} "
                    f"{self.unit} left out: {_named(self.refused)}"] if self.refused else []
        if not facts["rows"]:
            return left_out, []
        notes = [f"row lengths in {self.unit}: shortest {facts['shortest']:,}, median "
                 f"{facts['median']:,}, 90th percentile {facts['p90']:,}, longest "
                 f"{facts['longest']:,} ({facts['rows']:,} rows)"]
        limit = facts.get("limit")
        if limit is not None:
            estimate = (f" (estimated at {CHARS_PER_TOKEN} characters a token: --tokenizer "
                        "DIR counts them)") if limit["estimated"] else ""
            if limit["over"]:
                notes.append(f"{limit['over']:,} of {facts['rows']:,} rows are longer than "
                             f"{limit['trainer']}'s default {limit['setting']} "
                             f"{limit['tokens']:,} tokens{estimate}, and it {limit['effect']}: "
                             "set it to at least the longest row")
            else:
                notes.append(f"every row fits {limit['trainer']}'s default {limit['setting']} "
                             f"{limit['tokens']:,} tokens{estimate}")
        return left_out, notes


def card_lines(facts: dict[str, Any] | None) -> list[str]:
    """The card's `## Lengths` section."""
    if not facts:
        return []
    lines = ["## Lengths", ""]
    if facts["rows"]:
        lines.append(f"Counted in {facts['unit']}"
                     + (f" of the tokenizer at `{facts['tokenizer']}`" if facts["tokenizer"]
                        else "") + ".")
        lines += ["", "| rows | shortest | median | 90th percentile | longest |",
                  "|---:|---:|---:|---:|---:|",
                  f"| {facts['rows']} | {facts['shortest']} | {facts['median']} | "
                  f"{facts['p90']} | {facts['longest']} |", ""]
    else:
        lines += ["No rows.", ""]
    limit = facts.get("limit")
    if limit is not None and facts["rows"]:
        how = (f" (estimated at {CHARS_PER_TOKEN} characters a token)"
               if limit["estimated"] else "")
        lines += [f"{limit['over']} of {facts['rows']} rows are longer than the default "
                  f"`{limit['setting']}` of {limit['trainer']}, {limit['tokens']} tokens"
                  f"{how}; it {limit['effect']}.", ""]
    if facts["max_length"] is not None:
        lines += [f"`--max-length {facts['max_length']}` left out {facts['refused']} longer "
                  "rows.", ""]
    return lines
