"""A trainer writing rollouts, for the tests and benchmarks that follow a run: OpenRLHF's
`rollout_data_rank_<r>.jsonl` lines (the RL Logging Board's shape), appended a group at a time,
a line sometimes cut in two writes as a trainer's buffered writer may leave it."""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

PROMPTS = [f"user\nProblem {i}: what is {i} * {i + 7}? Answer after ####.\nassistant\n"
           for i in range(10_000)]


def rollout(step: int, prompt: int, sample: int, seed: int = 0, words: int = 60) -> dict:
    """One sample's line: the prompt, a response, its reward, the per-token arrays."""
    rng = random.Random(f"{step}:{prompt}:{sample}:{seed}")
    right = rng.random() < 0.5
    answer = prompt * (prompt + 7) if right else rng.randint(1, 10_000)
    text = " ".join(rng.choice(("so", "then", "we", "multiply", "carry", "check", "the"))
                    for _ in range(words)) + f"\n#### {answer}"
    tokens = text.split()[:32]
    return {"prompt": PROMPTS[prompt % len(PROMPTS)], "response": text,
            "response_tokens": tokens, "logprobs": [-0.5] * len(tokens),
            "ref_logprobs": [-0.6] * len(tokens), "values": [0.0] * len(tokens),
            "token_rewards": [0.0] * (len(tokens) - 1) + [1.0 if right else 0.0],
            "reward": 1.0 if right else 0.0, "step": step}


def lines(step: int, prompts: range, group: int, seed: int = 0, words: int = 60) -> list[bytes]:
    """A step's lines: `group` samples of each prompt."""
    return [json.dumps(rollout(step, p, s, seed, words), ensure_ascii=False).encode() + b"\n"
            for p in prompts for s in range(group)]


def append(path: Path, data: bytes, *, cut: bool = False) -> None:
    """Append bytes as a trainer does, flushed; `cut` writes the last line in two halves with a
    pause between them (a reader may see the first half alone)."""
    with path.open("ab") as stream:
        if cut and len(data) > 2:
            half = len(data) - len(data.splitlines(keepends=True)[-1]) // 2
            stream.write(data[:half])
            stream.flush()
            os.fsync(stream.fileno())
            time.sleep(0.05)
            stream.write(data[half:])
        else:
            stream.write(data)
        stream.flush()
