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
from viz_app.io.rollouts import (TRAINER_REWARD, Chat, OnError, Rollout, as_text, group_id, number,
                                 pending_note, prompt_key, reward_parts, rollout_lines,
                                 step_in_name, with_note)
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
    """One trace per sample of a verl rollout dump."""
    data, label = read_source(source, name)
    split = split_of(label)
    run = "/".join(PurePath(label).parent.parts[-2:]) if PurePath(label).parent.name else ""
    file_step = step_in_name(PurePath(label).stem)
    traces = []
    for line, row in rollout_lines(data, label, first_line, on_error):
        if not all(k in row for k in ("input", "output")):
            raise TraceError(label, f"line {line}", "is not a verl rollout (no input and "
                             "output)")
        traces.append(_trace(row, line, label, run, split, file_step))
    if not traces:
        raise TraceError(label, "", "holds no verl rollouts yet")
    return with_note(traces, pending_note(data, label))


def _trace(row: dict[str, Any], line: int, label: str, run: str, split: str,
           file_step: int | None) -> Trace:
    prompt = as_text(row.get("input")) or ""
    step = row.get("step") if row.get("step").__class__ is int else file_step
    key = prompt_key(prompt)
    request = as_text(row.get("request_id"))
    rollout = Rollout(trainer=NAME, step=step, group=group_id(split, step, key), index=line - 1,
                      rollout_id=request, split=split, source=f"line {line}")
    rewards = reward_parts(row, OWN)
    score = number(row.get("score"))
    if score is not None:
        rewards[TRAINER_REWARD] = score
    chat = Chat()
    asked = chat.prompt(prompt)
    if asked is not None and row.get("gts") is not None:
        asked["ground_truth"] = as_text(row["gts"])
    extras = {k: v for k, v in row.items() if k not in OWN and number(v) is None}
    chat.response(row.get("output"), reward_extra_info=extras or None)
    where = f"{run}/" if run else ""
    return chat.trace(label=label, source_format=NAME,
                      trace_id=request or f"verl/{where}{step}/{line - 1}",
                      task_id=f"prompt-{key}", rollout=rollout, rewards=rewards,
                      system="verl")
