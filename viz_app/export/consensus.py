"""Which labels a training export uses, and how several reviewers' answers on one target become
one answer without turning a disagreement into a confident label.

Every training shape (stepwise, unpaired, preference, openrlhf-rm, openrlhf-prm, rllm,
agent-lightning, verl, agent-rewards) reads the current labels through `select`:

- Labels are grouped by target and question: (trace, event or the trace itself, question).
- `min_reviewers` K: a target answered by fewer than K reviewers is left out (adjudicators do not
  count towards K).
- Whether answers disagree is the one rule of `viz_app.labels.disagreement`, the rule the
  campaigns' status and the Adjudicate queue use: a lead who settles every dispute the queue
  lists leaves no target of the campaign disputed here.
- Reviewers who all gave the same answer make an *agreed* answer: its value, and the mean of their
  rewards.
- Reviewers whose answers on a scale are *close* (within `SPREAD` of its span: one point on 1-5)
  are no dispute: the target is kept with the mean of their rewards, no value, resolution
  `close` (an adjudicated answer there is taken instead), and a note counts them.
- Reviewers who gave different answers make a *disputed* target. `disputed` says what to do:
  `drop` (the default) leaves it out and reports it; `mean` keeps it with the mean reward, no
  value, and `disputed: true` on its rows; `adjudicated` takes the answer of a label whose source
  is `adjudication` (a lead's final answer in a review campaign) and reports the disputed targets
  that have none.
- `adjudicated_only` keeps only targets with an adjudication label, and that label's answer.
- Labels a lead retracted never reach an export: `LabelStore.current_records` leaves them out.
- A follow-up question (one with `ask_when`, such as `stop_should_have_been`) is kept only when
  the answer it follows was resolved to one of the values that ask it; the follow-up of a
  disputed stop is left out and reported.
- Free-text questions are never disputed: their labels ride along in the provenance.
- Corrections (`viz_app.labels.correction`) are disputed when reviewers chose different
  decisions (another action, agent, role or recipient); their own words may differ without a
  dispute (the answer's value is then the first reviewer's, and the decision-pairs exports write
  each reviewer's words: `viz_app.export.decision_pairs`). Tags are disputed when the sets
  chosen differ.

Nothing is dropped silently: every target left out is counted in `Selection.left_out`, one
sentence per reason, naming the first few.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from viz_app.errors import OrchvizError
from viz_app.labels import FIELDS, PAIRWISE_QUESTION, LabelRecord, Rubric, close, disputed

Disputed = Literal["drop", "mean", "adjudicated"]
"""What a training export does with a target whose reviewers disagree."""

DISPUTED: tuple[str, ...] = ("drop", "mean", "adjudicated")

Confirmations = Literal["all", "balanced", "none"]
CONFIRMATIONS: tuple[str, ...] = ("all", "balanced", "none")
"""Which pairs of decisions judged sound the decision-pairs exports write."""

ADJUDICATED = "adjudicated"
"""How an answer an adjudication settled is resolved (`Answer.resolution`, `--disputed
adjudicated`)."""

CLOSE = "close"
"""How a scale's close answers are resolved (`viz_app.labels.disagreement.close`): the mean of
their rewards, no value."""

ADJUDICATION = "adjudication"
"""The `source` of a label that settles a dispute: a lead's final answer in a review campaign
(`Label.source`)."""

SHOWN = 5
"""How many targets a sentence of `left_out` names before it says 'and N more'."""


class ExportOptions(BaseModel):
    """How a training export chooses and shapes its rows."""

    model_config = ConfigDict(frozen=True)

    min_reviewers: int = Field(1, ge=1, description="Leave out targets answered by fewer "
                               "reviewers than this.")
    adjudicated_only: bool = Field(False, description="Keep only targets with an adjudicated "
                                   "label, and its answer.")
    disputed: Disputed = Field("drop", description="What to do with a target whose reviewers "
                               "disagree: drop it (and report it), average it, or take an "
                               "adjudicated label.")
    threshold: float = Field(0.0, ge=-1, lt=1, description="Where a shape needs a bool: True "
                             "when the reward is above this.")
    prompt_with_system: bool = Field(False, description="Put the trace's free-text `system` "
                                     "description (and topology) at the head of prompts.")
    conversational: bool = Field(False, description="Write prompts and completions as lists of "
                                 "{role, content} messages (the shapes that accept them).")
    allow_cross_task: bool = Field(False, description="Write judged pairs whose two traces "
                                   "attempt different tasks (left out and counted by default: "
                                   "a pair's prompt is one task).")
    max_length: int | None = Field(None, ge=1, description="Leave out (and name) rows longer "
                                   "than this, in tokens with `tokenizer`, else characters.")
    tokenizer: str | None = Field(None, description="A local tokenizer folder (read with "
                                  "transformers): lengths are counted in its tokens.")
    confirmations: Confirmations = Field("balanced", description="Decision pairs: write the "
                                         "pairs of decisions judged sound (confirmations): all, "
                                         "as many as corrections per sub-decision (balanced), "
                                         "or none.")


@dataclass(slots=True)
class Answer:
    """The one answer a training export uses for a target and question."""

    trace_id: str
    event_id: str
    """'' for the trace itself."""
    question: str
    value: Any
    """The answer the reviewers agree on (or the adjudicator's); None when averaged over a
    dispute (`--disputed mean`)."""
    reward: float | None
    """The mean reward of the labels it rests on; None for answers without one."""
    reward_std: float | None
    """Population standard deviation of those rewards (0 when they agree)."""
    reviewers: int
    """Reviewers (not adjudicators) who answered."""
    disputed: bool
    """Whether the reviewers gave different answers."""
    resolution: str
    """single, agreed, close (a scale's close answers), mean, adjudicated, notes (free text), or
    implied (a step implied by a 'should have stopped at' pointer; see `viz_app.export.steps`)."""
    labels: list[LabelRecord] = field(default_factory=list)
    """Every label it rests on (reviewers' and adjudicators'), for provenance."""

    @property
    def key(self) -> tuple[str, str, str]:
        """(trace id, event id, question)."""
        return self.trace_id, self.event_id, self.question

    def summary(self) -> dict[str, Any]:
        """The answer as a row keeps it beside any bool or scalar: its value as JSON text (its
        type varies by question), reward, spread, reviewers, and how it was resolved."""
        return {"question": self.question, "value_json": dumps(self.value),
                "reward": self.reward, "reward_std": self.reward_std,
                "reviewers": self.reviewers, "disputed": self.disputed,
                "resolution": self.resolution}


@dataclass
class Selection:
    """The answers a training export uses, and what it left out."""

    answers: list[Answer]
    """Sorted by trace, event ('' first) and question."""
    left_out: list[str] = field(default_factory=list)
    """One sentence per reason a target was left out."""
    notes: list[str] = field(default_factory=list)
    """What the reader of the export should know (disputed targets averaged)."""
    dropped: list[tuple[str, str, str]] = field(default_factory=list)
    """The targets left out, as (trace id, event id, question)."""

    def by_trace(self) -> dict[str, list[Answer]]:
        """trace id -> its answers, in order."""
        found: dict[str, list[Answer]] = defaultdict(list)
        for answer in self.answers:
            found[answer.trace_id].append(answer)
        return found


_json = orjson.dumps


def dumps(value: Any) -> str:
    """A value as JSON text."""
    return _json(value).decode()


def _canonical(value: Any) -> bytes:
    """A value in a form where equal answers are equal bytes (tags in any order)."""
    if isinstance(value, list):
        return orjson.dumps(sorted(value, key=dumps))
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def _std(values: Sequence[float]) -> float | None:
    """Population standard deviation (what `statistics.pstdev` gives, in floats: it is called
    once per target, and pstdev's exact arithmetic dominated a 100,000-label export)."""
    if not values:
        return None
    if len(values) == 1 or min(values) == max(values):
        return 0.0
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))


def _answer(key: tuple[str, str, str], used: list[LabelRecord], reviewers: int, value: Any,
            disputed: bool, resolution: str, everything: list[LabelRecord]) -> Answer:
    rewards = [r["reward"] for r in used if r["reward"] is not None]
    return Answer(trace_id=key[0], event_id=key[1], question=key[2], value=value,
                  reward=_mean(rewards), reward_std=_std(rewards), reviewers=reviewers,
                  disputed=disputed, resolution=resolution, labels=everything)


def _shown(found: list[tuple[tuple[str, str, str], str]]) -> str:
    named = "; ".join(f"{t} {e or '(trace)'} {q}" + (f" ({detail})" if detail else "")
                      for (t, e, q), detail in found[:SHOWN])
    more = f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    return named + more


def _answers_text(labels: Iterable[LabelRecord]) -> str:
    return ", ".join(f"{r['reviewer']}: {dumps(r['value'])}" for r in labels)


def select(labels: Iterable[LabelRecord], rubric: Rubric | None,
           options: ExportOptions = ExportOptions()) -> Selection:
    """The answers a training export uses from current label records (one per reviewer, target
    and question; pairwise judgements are the preference export's and are skipped here), by the
    rules at the top of this module."""
    groups: dict[tuple[str, str, str], list[LabelRecord]] = defaultdict(list)
    settled: set[tuple[str, str, str]] = set()
    for record in labels:
        if record["question"] == PAIRWISE_QUESTION:
            continue
        key = (record["trace_id"], record["event_id"] or "", record["question"])
        groups[key].append(record)
        if record.get("source") == ADJUDICATION:
            settled.add(key)
    questions = rubric.questions_by_id if rubric is not None else {}
    kept: dict[tuple[str, str, str], Answer] = {}
    why: dict[str, list[tuple[tuple[str, str, str], str]]] = defaultdict(list)
    averaged: list[tuple[tuple[str, str, str], str]] = []
    closes: list[tuple[tuple[str, str, str], str]] = []
    any_adjudicated = False
    for key, group in groups.items():
        adjudicated: list[LabelRecord] = []
        reviewed = group
        if key in settled:
            adjudicated = [r for r in group if r.get("source") == ADJUDICATION]
            reviewed = [r for r in group if r.get("source") != ADJUDICATION]
            any_adjudicated = True
        question = questions.get(key[2])
        if options.adjudicated_only:
            if not adjudicated:
                why["no adjudication"].append((key, ""))
            elif len({_canonical(r["value"]) for r in adjudicated}) > 1:
                why["adjudicators disagree"].append((key, _answers_text(adjudicated)))
            else:
                kept[key] = _answer(key, adjudicated, len(reviewed), adjudicated[0]["value"],
                                    _differ(reviewed), ADJUDICATED, group)
            continue
        if len(reviewed) < options.min_reviewers:
            why["few reviewers"].append((key, f"{len(reviewed)}"))
            continue
        if question is not None and question.kind == "text":
            texts = {_canonical(r["value"]) for r in reviewed}
            kept[key] = _answer(key, reviewed, len(reviewed),
                                reviewed[0]["value"] if len(texts) == 1 else None, False,
                                "notes", group)
            continue
        values = [r["value"] for r in reviewed]
        differ = disputed(question, values) is not None  # the one rule: labels/disagreement.py
        if not differ and close(question, values):
            if adjudicated and not _differ(adjudicated):  # a lead settled it all the same
                kept[key] = _answer(key, adjudicated, len(reviewed), adjudicated[0]["value"],
                                    False, ADJUDICATED, group)
            else:
                kept[key] = _answer(key, reviewed, len(reviewed), None, False, CLOSE, group)
                closes.append((key, _answers_text(reviewed)))
            continue
        if not differ:
            kept[key] = _answer(key, reviewed, len(reviewed), reviewed[0]["value"], False,
                                "single" if len(reviewed) == 1 else "agreed", group)
            continue
        if options.disputed == "mean":
            kept[key] = _answer(key, reviewed, len(reviewed), None, True, "mean", group)
            averaged.append((key, _answers_text(reviewed)))
        elif options.disputed == ADJUDICATED and adjudicated \
                and len({_canonical(r["value"]) for r in adjudicated}) == 1:
            kept[key] = _answer(key, adjudicated, len(reviewed), adjudicated[0]["value"], True,
                                ADJUDICATED, group)
        elif options.disputed == ADJUDICATED:
            why["disputed, not adjudicated"].append((key, _answers_text(reviewed)))
        else:
            why["disputed"].append((key, _answers_text(reviewed)))
    _follow_ups(kept, questions, groups, why)
    return _selection(kept, why, averaged, options, any_adjudicated, closes)


_PLAIN = (str, int, bool)
"""Answer types that are equal exactly when they are equal and of one type (no need to
compare their JSON)."""


def _differ(labels: Sequence[LabelRecord]) -> bool:
    """Whether the labels give different answers (tags in any order count as one)."""
    if not labels:
        return False
    first = labels[0]["value"]
    kind = type(first)
    if kind in _PLAIN:
        return any(type(r["value"]) is not kind or r["value"] != first for r in labels)
    return len({_canonical(r["value"]) for r in labels}) > 1


def _follow_ups(kept: dict[tuple[str, str, str], Answer], questions: dict,
                groups: dict[tuple[str, str, str], list[LabelRecord]],
                why: dict[str, list[tuple[tuple[str, str, str], str]]]) -> None:
    """Keep a follow-up answer only where the answer it follows was resolved to a value that
    asks it; after an adjudicated answer, only the adjudicator's follow-up counts."""
    for key in list(kept):
        question = questions.get(key[2])
        if question is None or question.ask_when is None:
            continue
        parent = kept.get((key[0], key[1], question.ask_when.question))
        asks = parent is not None and not (parent.disputed and parent.resolution == "mean") \
            and any(_canonical(parent.value) == _canonical(v) for v in question.ask_when.values)
        if not asks:
            del kept[key]
            why["follow-up of a disputed answer"].append((key, question.ask_when.question))
            continue
        if parent.resolution == ADJUDICATED and kept[key].resolution != ADJUDICATED:
            adjudicated = [r for r in groups[key] if r.get("source") == ADJUDICATION]
            if adjudicated and not _differ(adjudicated):
                kept[key] = _answer(key, adjudicated, kept[key].reviewers,
                                    adjudicated[0]["value"], kept[key].disputed, ADJUDICATED,
                                    groups[key])
            else:
                del kept[key]
                why["follow-up of a disputed answer"].append((key, question.ask_when.question))


REASONS: dict[str, str] = {
    "disputed": "left out because their reviewers disagree (the default, --disputed drop; "
                "--disputed mean averages them, --disputed adjudicated takes an adjudicator's "
                "answer)",
    "disputed, not adjudicated": "left out: their reviewers disagree and no adjudicated label "
                                 "settles them (--disputed adjudicated)",
    "few reviewers": "left out with fewer reviewers than --min-reviewers {k}",
    "no adjudication": "left out without an adjudicated label (--adjudicated-only)",
    "adjudicators disagree": "left out: their adjudicated labels disagree",
    "follow-up of a disputed answer": "follow-up answers left out: the answer they follow (such "
                                      "as a stop's correctness) was disputed or left out",
}


def _selection(kept: dict[tuple[str, str, str], Answer],
               why: dict[str, list[tuple[tuple[str, str, str], str]]],
               averaged: list[tuple[tuple[str, str, str], str]], options: ExportOptions,
               any_adjudicated: bool,
               closes: Sequence[tuple[tuple[str, str, str], str]] = ()) -> Selection:
    left_out: list[str] = []
    if options.adjudicated_only and not any_adjudicated:
        left_out.append("no label has source adjudication (a lead adjudicates disputed "
                        "targets in a review campaign), so --adjudicated-only exports nothing")
    for reason, found in why.items():
        if options.adjudicated_only and reason == "no adjudication" and not any_adjudicated:
            continue
        text = REASONS[reason].format(k=options.min_reviewers)
        unit = "targets" if len(found) != 1 else "target"
        left_out.append(f"{len(found)} {unit} {text}: {_shown(sorted(found))}")
    notes = []
    if averaged:
        notes.append(f"{len(averaged)} disputed targets averaged (--disputed mean); their rows "
                     f"say disputed: true: {_shown(sorted(averaged))}")
    if closes:
        notes.append(f"{len(closes)} targets whose reviewers' answers on a scale are close (one "
                     "point apart on a 1-5 scale: no dispute) kept with the mean of their "
                     f"rewards, resolution close, no value: {_shown(sorted(closes))}")
    dropped = sorted(k for found in why.values() for k, _ in found)
    return Selection(answers=[kept[k] for k in sorted(kept)], left_out=left_out, notes=notes,
                     dropped=dropped)


# -- provenance ---------------------------------------------------------------------------------

PROVENANCE_FIELDS: tuple[str, ...] = tuple(
    "value_json" if name == "value" else name for name in FIELDS)
"""The keys of a provenance entry: every field of a label (who and how identified, source,
campaign, rubric version and hash, trace hash, time, ...), its value as JSON text (its type
varies by question)."""


def provenance_entry(record: LabelRecord) -> dict[str, Any]:
    """The provenance entry of one label record (see PROVENANCE_FIELDS; a field the record
    lacks is null). Made in as few steps as it can: one is made for every label exported."""
    entry = dict(zip(PROVENANCE_FIELDS, map(record.get, FIELDS)))
    entry["value_json"] = _json(entry["value_json"]).decode()
    if not entry["event_id"]:
        entry["event_id"] = None
    return entry


def provenance(labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """Provenance entries of labels (each once, by label id, in the order given)."""
    seen: set[str] = set()
    found = []
    for record in labels:
        if record["label_id"] in seen:
            continue
        seen.add(record["label_id"])
        found.append(provenance_entry(record))
    return found


def answers_labels(answers: Iterable[Answer]) -> list[LabelRecord]:
    """Every label the answers rest on."""
    return [record for answer in answers for record in answer.labels]


def record_of(entry: dict[str, Any]) -> dict[str, Any]:
    """The label record a provenance entry holds (the fields of `FIELDS`, in order)."""
    if "value_json" not in entry:
        raise OrchvizError("a provenance entry lacks value_json")
    record = {name: entry.get(name) for name in FIELDS if name != "value"}
    record["value"] = orjson.loads(entry["value_json"])
    return {name: record[name] for name in FIELDS}


def records_of(entries: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Label records from provenance entries, each label once (by id), sorted as the store
    sorts current labels (by trace, event, question, reviewer)."""
    found: dict[str, dict[str, Any]] = {}
    for entry in entries:
        found.setdefault(entry["label_id"], record_of(entry))
    return sorted(found.values(), key=lambda r: (r["trace_id"], r["event_id"] or "",
                                                 r["question"], r["reviewer"],
                                                 r.get("pair_trace_id") or ""))
