"""verl's rollout dumps: `trainer.rollout_data_dir` (and `trainer.validation_data_dir`) hold one
`{global_step}.jsonl` per step, written whole by `RayPPOTrainer._dump_generations`
(verl/trainer/ppo/ray_trainer.py): one line per sample, `{input, output, gts, score, step, ...}`
with the reward function's extra infos (`acc`, `pred`, ...) and, when the agent loop gives one,
`request_id`.

`input` and `output` are the decoded prompt and response, `gts` the ground truth, `score` the
sequence's reward (the sum of its token-level scores). verl names no group: the samples of one
step with the same `input` are one (GRPO's `n` responses to one prompt). A rollout is the
prompt as the user's turn and the response as the policy's generation; `score` is the trainer's
reward, the numeric extra infos its parts.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import first_value
from viz_app.io.rollouts import (TRAINER_REWARD, OnError, PromptKeys, as_text, number,
                                 pending_note, rollout_lines, step_in_name,
                                 text_trace, with_note)
from viz_app.model import Trace

NAME = "verl"
KEYS = ("input", "output", "score")
"""What every line of a verl dump has (`gts` and `step` too, in every release since 0.3)."""
OWN = frozenset({"input", "output", "gts", "score", "step", "request_id"})


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are a verl rollout dump (0 to 1)."""
    first = first_value(data)
    if isinstance(first, dict) and all(k in first for k in KEYS):
        return 1.0 if "gts" in first or "step" in first else 0.8
    return 0.0


def split_of(label: str) -> str:
    """`val` for a dump under a validation folder (`validation_data_dir`), else `train`."""
    return "val" if any(p.lower().startswith("val") for p in PurePath(label).parent.parts) \
        else "train"


def import_verl(source: Source, *, name: str | None = None,
                first_line: int = 1, on_error: OnError | None = None) -> list[Trace]:
    """One trace per sample of a verl rollout dump (numbered from `first_line` when the bytes
    are what a trainer appended since; a bad line told to `on_error` and left out)."""
    data, label = read_source(source, name)
    split = split_of(label)
    run = "/".join(PurePath(label).parent.parts[-2:]) if PurePath(label).parent.name else ""
    where = f"verl/{run}/" if run else "verl/"
    file_step = step_in_name(PurePath(label).stem)
    keys = PromptKeys()
    traces = []
    for line, row in rollout_lines(data, label, first_line, on_error,
                                   needs=("input", "output"), kind="a verl rollout"):
        traces.append(_trace(row, line, label, where, split, file_step, keys))
    if not traces:
        raise TraceError(label, "", "holds no verl rollouts yet")
    return with_note(traces, pending_note(data, label))


def _trace(row: dict[str, Any], line: int, label: str, where: str, split: str,
           file_step: int | None, keys: PromptKeys) -> Trace:
    prompt = row["input"]
    if prompt.__class__ is not str:
        prompt = as_text(prompt) or ""
    step = row.get("step")
    if step.__class__ is not int:
        step = file_step
    key = keys[prompt]
    request = row.get("request_id")
    if request is not None:
        request = as_text(request)
    rewards: dict[str, float] = {}
    extras: dict[str, Any] = {}
    for name_, value in row.items():  # the reward function's extra infos
        if name_ in OWN:
            continue
        kind = value.__class__
        if kind is float:
            if value - value == 0.0:  # finite (infinity less itself is not a number)
                rewards[_PARTS[name_]] = value
            else:
                extras[name_] = value
        elif kind is int:
            rewards[_PARTS[name_]] = float(value)
        elif kind is bool:
            rewards[_PARTS[name_]] = 1.0 if value else 0.0
        else:
            extras[name_] = value
    score = number(row.get("score"))
    if score is not None:
        rewards[TRAINER_REWARD] = score
    gts = row.get("gts")
    output = row["output"]
    rollout = {"trainer": NAME, "group": f"{split}:{'-' if step is None else step}:{key}",
               "index": line - 1, "split": split, "source": f"line {line}"}
    if step is not None:
        rollout["step"] = step
    if request is not None:
        rollout["rollout_id"] = request
    return text_trace(
        label=label, source_format=NAME, trace_id=request or f"{where}{step}/{line - 1}",
        task_id=f"prompt-{key}", rewards=rewards, system="verl", rollout=rollout,
        prompt=prompt, response=output if output.__class__ is str else as_text(output) or "",
        asked=None if gts is None else {
            "ground_truth": gts if gts.__class__ is str else as_text(gts)},
        said={"reward_extra_info": extras} if extras else None)


class _PartKeys(dict):
    """An extra info's name -> its key among the rewards, `trainer.<name>`, made once a name
    (a reward function reports a few; past 256 names they are made each time, not kept)."""

    def __missing__(self, name: str) -> str:
        found = f"{TRAINER_REWARD}.{name}"
        if len(self) < 256:
            self[name] = found
        return found


_PARTS = _PartKeys()
