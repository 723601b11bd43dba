"""OpenRLHF's rollout logs, as the RL Logging Board reads them: each data-parallel rank appends
its samples to `rollout_data_rank_<rank>[_<suffix>].jsonl` while the run trains (the board's
OpenRLHF patch, and the verl fork loggers that copy it, write `rollout_data_rank<rank>.jsonl`).
One line per sample: `{prompt, response, reward, step}`, usually with the per-token
`response_tokens`, `logprobs`, `ref_logprobs`, `values`, `token_rewards` (the KL penalty plus
the reward, what PPO trained on) and optionally `ground_truth`, `ref_response`, `ref_reward`.

The samples of one step with the same prompt are one group (`n_samples_per_prompt`). `reward`
(the reward model's score, without the KL penalty) is the trainer's reward; the sum of
`token_rewards` its part `trainer.with_kl_penalty`; the summed log-ratio against the reference
policy (`logprobs - ref_logprobs`) the metric `kl`.
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import first_value
from viz_app.io.rollouts import (TRAINER_REWARD, Chat, OnError, Rollout, as_text, group_id, number,
                                 pending_note, prompt_key, rollout_lines, run_name, with_note)
from viz_app.model import Trace

NAME = "openrlhf"
_RANK = re.compile(r"rollout_data_rank_?(val)?_?(\d+)")
TOKEN_KEYS = ("response_tokens", "logprobs", "ref_logprobs", "values", "token_rewards")


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are an OpenRLHF rollout log (0 to 1)."""
    first = first_value(data)
    if not (isinstance(first, dict) and "prompt" in first and "response" in first
            and "reward" in first):
        return 0.0
    if _RANK.search(PurePath(name).name) or any(k in first for k in TOKEN_KEYS):
        return 1.0
    return 0.6 if "step" in first else 0.0


def import_openrlhf(source: Source, *, name: str | None = None,
                    first_line: int = 1, on_error: OnError | None = None) -> list[Trace]:
    """One trace per sample of an OpenRLHF rollout log."""
    data, label = read_source(source, name)
    found = _RANK.search(PurePath(label).name)
    rank = int(found.group(2)) if found else 0
    split = "val" if found and found.group(1) else "train"
    run = run_name(label)
    traces = []
    for line, row in rollout_lines(data, label, first_line, on_error):
        if not all(k in row for k in ("prompt", "response")):
            raise TraceError(label, f"line {line}", "is not an OpenRLHF rollout (no prompt and "
                             "response)")
        traces.append(_trace(row, line, label, run, rank, split))
    if not traces:
        raise TraceError(label, "", "holds no OpenRLHF rollouts yet")
    return with_note(traces, pending_note(data, label))


def _total(values: Any) -> float | None:
    if not isinstance(values, list):
        return None
    numbers = [number(v) for v in values]
    return sum(n for n in numbers if n is not None) if numbers else None


def _trace(row: dict[str, Any], line: int, label: str, run: str, rank: int,
           split: str) -> Trace:
    prompt = as_text(row.get("prompt")) or ""
    step = row["step"] if row.get("step").__class__ is int else None
    key = prompt_key(prompt)
    rollout = Rollout(trainer=NAME, step=step, group=group_id(split, step, key), index=line - 1,
                      split=split, source=f"line {line}")
    rewards: dict[str, float] = {}
    if (reward := number(row.get("reward"))) is not None:
        rewards[TRAINER_REWARD] = reward
    if (with_kl := _total(row.get("token_rewards"))) is not None:
        rewards[f"{TRAINER_REWARD}.with_kl_penalty"] = with_kl
    metrics: dict[str, float] = {}
    logprobs, reference = row.get("logprobs"), row.get("ref_logprobs")
    if isinstance(logprobs, list) and isinstance(reference, list):
        pairs = [(number(a), number(b)) for a, b in zip(logprobs, reference)]
        metrics["kl"] = sum(a - b for a, b in pairs if a is not None and b is not None)
    chat = Chat()
    asked = chat.prompt(prompt)
    if asked is not None and row.get("ground_truth") is not None:
        asked["ground_truth"] = as_text(row["ground_truth"])
    tokens = row.get("response_tokens")
    chat.response(row.get("response"),
                  tokens=len(tokens) if isinstance(tokens, list) else None,
                  reference_response=as_text(row.get("ref_response")),
                  reference_reward=number(row.get("ref_reward")))
    where = "/".join(p for p in (run, f"rank{rank}", "" if split == "train" else split) if p)
    return chat.trace(label=label, source_format=NAME,
                      trace_id=f"openrlhf/{where}/{step}/{line - 1}", task_id=f"prompt-{key}",
                      rollout=rollout, rewards=rewards, system="openrlhf", metrics=metrics)
