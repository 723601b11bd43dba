"""OpenRLHF's rollout logs, as the RL Logging Board reads them: each data-parallel rank appends
its samples to `rollout_data_rank_<rank>[_<suffix>].jsonl` while the run trains (the board's
OpenRLHF patch, and the verl fork loggers that copy it, write `rollout_data_rank<rank>.jsonl`).
One line per sample: `{prompt, response, reward, step}`, usually with the per-token
`response_tokens`, `logprobs`, `ref_logprobs`, `values`, `token_rewards` (the KL penalty plus
the reward, what PPO trained on) and optionally `ground_truth`, `ref_response`, `ref_reward`.

A sample's id names its run, rank, step and line, and the file it is a line of (`file_key`: a
hash of the file's first line): a rank file rotated by the trainer (moved away, a new one begun
at the same path, its lines numbered from 1 again, often within the same step) holds other
samples under other ids, while the same file read again (moved, or followed) keeps its ids.

The samples of one step with the same prompt are one group (`n_samples_per_prompt`). `reward`
(the reward model's score, without the KL penalty) is the trainer's reward; the sum of
`token_rewards` its part `trainer.with_kl_penalty`; the summed log-ratio against the reference
policy (`logprobs - ref_logprobs`) the metric `kl`.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePath
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import first_value
from viz_app.io.rollouts import (TRAINER_REWARD, OnError, PromptKeys, as_text, number,
                                 pending_note, rollout_lines, run_name, text_trace, with_note)
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


def file_key(data: bytes) -> str:
    """What tells one rank file from another at the same path: the first 8 hex digits of the
    SHA-256 of its first line (the same however far the file has grown, and wherever it is
    moved)."""
    return hashlib.sha256(data[:data.find(b"\n") + 1 or len(data)]).hexdigest()[:8]


def import_openrlhf(source: Source, *, name: str | None = None, first_line: int = 1,
                    on_error: OnError | None = None, key: str | None = None) -> list[Trace]:
    """One trace per sample of an OpenRLHF rollout log (numbered from `first_line` when the
    bytes are what a trainer appended since, `key` then being the file's `file_key`; a bad
    line told to `on_error` and left out)."""
    data, label = read_source(source, name)
    if key is None:
        if first_line != 1:
            raise ValueError("lines read after the first need the file's key")
        key = file_key(data)
    found = _RANK.search(PurePath(label).name)
    rank = int(found.group(2)) if found else 0
    split = "val" if found and found.group(1) else "train"
    run = run_name(label)
    where = "openrlhf/" + "/".join(p for p in (run, f"rank{rank}@{key}", "" if split == "train"
                                               else split) if p)
    keys = PromptKeys()
    traces = []
    for line, row in rollout_lines(data, label, first_line, on_error,
                                   needs=("prompt", "response"), kind="an OpenRLHF rollout"):
        traces.append(_trace(row, line, label, where, split, keys))
    if not traces:
        raise TraceError(label, "", "holds no OpenRLHF rollouts yet")
    return with_note(traces, pending_note(data, label))


def _total(values: Any) -> float | None:
    """The sum of a list of numbers (None when it holds anything else)."""
    if values.__class__ is not list or not values:
        return None
    try:
        total = sum(values)  # C speed: a response's tokens can be thousands
    except TypeError:
        return None
    return number(total)


def _trace(row: dict[str, Any], line: int, label: str, where: str, split: str,
           keys: PromptKeys) -> Trace:
    prompt = row["prompt"]
    if prompt.__class__ is not str:
        prompt = as_text(prompt) or ""
    step = row.get("step")
    if step.__class__ is not int:
        step = None
    key = keys[prompt]
    rewards: dict[str, float] = {}
    if (reward := number(row.get("reward"))) is not None:
        rewards[TRAINER_REWARD] = reward
    if (with_kl := _total(row.get("token_rewards"))) is not None:
        rewards[f"{TRAINER_REWARD}.with_kl_penalty"] = with_kl
    metrics: dict[str, float] = {}
    logprobs, reference = _total(row.get("logprobs")), _total(row.get("ref_logprobs"))
    if logprobs is not None and reference is not None:
        metrics["kl"] = logprobs - reference  # the summed log-ratio: sum(lp) - sum(ref lp)
    said: dict[str, Any] = {}
    if row.get("ref_response") is not None:
        said["reference_response"] = as_text(row["ref_response"])
    if (reference_reward := number(row.get("ref_reward"))) is not None:
        said["reference_reward"] = reference_reward
    truth = row.get("ground_truth")
    tokens = row.get("response_tokens")
    response = row["response"]
    rollout = {"trainer": NAME, "group": f"{split}:{'-' if step is None else step}:{key}",
               "index": line - 1, "split": split, "source": f"line {line}"}
    if step is not None:
        rollout["step"] = step
    return text_trace(
        label=label, source_format=NAME, trace_id=f"{where}/{step}/{line - 1}",
        task_id=f"prompt-{key}", rollout=rollout, rewards=rewards, system="openrlhf",
        metrics=metrics, prompt=prompt,
        response=response if response.__class__ is str else as_text(response) or "",
        asked={"ground_truth": as_text(truth)} if truth is not None else None,
        said=said or None, tokens=float(len(tokens)) if tokens.__class__ is list else None)
