"""The reward server's audit log: every scored rollout, kept for reviewers to label what the
model rewarded (opt-in: `orchviz reward serve --audit LOCATION`).

The log is a pool (`viz_app.io.pool`), in a folder or on object storage (any fsspec URL,
`s3://bucket/prefix`): each flush writes the rollouts it holds with the pool writer as one
Parquet shard, `rollouts-<time>-<process>-<n>.parquet`, so the log is read, indexed and sampled
as any pool is (`orchviz pool index`, a campaign's `--pool`). The traces are kept as they came
(their hashes unchanged, so a label made on the logged trace is a label of that rollout); the
model's word is kept apart, beside each shard in `_rewards/<shard>.jsonl` (the pool reader skips
names beginning with `_`): per rollout its trace id and hash, the model's version, its team
reward and each decision's reward, and when it was scored. Rewards are never written into the
trace."""

from __future__ import annotations

import os
import tempfile
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import fsspec
import orjson

from viz_app.model import Trace
from viz_app.reward.scoring import RolloutScore

REWARDS = "_rewards"
"""The log's subfolder of the model's scores, one JSON Lines file per shard."""


class AuditLog:
    """Rollouts and their scores, written to the log every `every` rollouts and on close."""

    def __init__(self, location: str, every: int = 64):
        self.location = location.rstrip("/")
        self.every = max(1, every)
        self.held: list[tuple[Trace, RolloutScore, str]] = []
        self.lock = threading.Lock()
        self.flushes = 0
        fs, path = fsspec.core.url_to_fs(self.location)
        if fs.protocol in ("file", "local") or "file" in fs.protocol:
            os.makedirs(path, exist_ok=True)

    def add(self, traces: Sequence[Trace], scores: Sequence[RolloutScore]) -> None:
        at = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
        with self.lock:
            self.held += [(t, s, at) for t, s in zip(traces, scores)]
            full = len(self.held) >= self.every
        if full:
            self.flush()

    def flush(self) -> str | None:
        """Write what is held as one shard and its scores; the shard's URL (None: nothing
        held)."""
        with self.lock:
            taken, self.held = self.held, []
            if not taken:
                return None
            self.flushes += 1
            n = self.flushes
        from viz_app.io.pool import write_pool

        stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S%f")
        name = f"rollouts-{stamp}-{os.getpid()}-{n:05d}"
        seen: dict[str, tuple[Trace, RolloutScore, str]] = {}
        for item in taken:  # a trace id scored twice in one flush: its latest score
            seen[item[0].trace_id] = item
        with tempfile.TemporaryDirectory() as tmp:
            written = write_pool([t for t, _, _ in seen.values()], str(Path(tmp) / "pool"),
                                 format="parquet")
            shard = Path(written.shards[0].url)
            fs, path = fsspec.core.url_to_fs(self.location)
            fs.put_file(str(shard), f"{path}/{name}.parquet")
        lines = b"".join(orjson.dumps({
            "trace_id": t.trace_id, "trace_sha256": t.sha256,
            "model_version": s.model_version, "team_reward": s.team_reward,
            "decisions": [d.model_dump() for d in s.decisions], "scored_at": at}) + b"\n"
            for t, s, at in seen.values())
        with fsspec.open(f"{self.location}/{REWARDS}/{name}.jsonl", "wb") as stream:
            stream.write(lines)
        return f"{self.location}/{name}.parquet"

    def close(self) -> None:
        self.flush()


def read_scores(location: str) -> Iterator[dict[str, Any]]:
    """Every score the log holds, shard by shard, in the order written."""
    fs, path = fsspec.core.url_to_fs(location.rstrip("/"))
    folder = f"{path}/{REWARDS}"
    if not fs.exists(folder):
        return
    for name in sorted(fs.ls(folder, detail=False)):
        if not str(name).endswith(".jsonl"):
            continue
        with fs.open(name, "rb") as stream:
            for line in stream:
                if line.strip():
                    yield orjson.loads(line)


def least_sure(location: str) -> list[str]:
    """The logged rollouts' trace ids, the ones the model is least sure of first: the team
    reward nearest 0 (the model's rewards run from -1 to 1, so 0 is where it leans neither
    way), then the ones whose decisions it scores most apart."""
    latest: dict[str, dict[str, Any]] = {}
    for score in read_scores(location):
        latest[score["trace_id"]] = score

    def doubt(score: dict[str, Any]) -> tuple[float, float]:
        rewards = [d["reward"] for d in score["decisions"]]
        spread = (max(rewards) - min(rewards)) if rewards else 0.0
        return (abs(score["team_reward"]), -spread)

    return [s["trace_id"] for s in sorted(latest.values(), key=doubt)]


def urgencies(location: str, rubric: Any, first: dict[tuple[str, str, str, str], Any]
              ) -> dict[tuple[str, str, str], float]:
    """How much each logged target asks for a reviewer, for a campaign drawn from the log
    (the `reward` order): per (trace id, trace version, event id, '' for the trace), how
    unsure the model was (1 - |reward|: its rewards run from -1 to 1) plus half how far its
    reward is from the reward of a first reviewer's answer there (`first`, as
    `viz_app.labels.first_answers` gives them), so the targets it doubts and the ones it
    disagrees with a reviewer on come first."""
    from viz_app.labels import reward_of
    from viz_app.reward.decisions import reward_questions

    asked = reward_questions(rubric)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for score in read_scores(location):
        latest[(score["trace_id"], score["trace_sha256"])] = score
    found: dict[tuple[str, str, str], float] = {}
    for (trace_id, sha), score in latest.items():
        found[(trace_id, sha, "")] = 1.0 - min(1.0, abs(score["team_reward"]))
        for d in score["decisions"]:
            doubt = 1.0 - min(1.0, abs(d["reward"]))
            apart = [abs(r - d["reward"]) / 2 for q, question in asked.items()
                     if (v := first.get((trace_id, sha, d["event_id"], q))) is not None
                     and (r := reward_of(question, v)) is not None]
            found[(trace_id, sha, d["event_id"])] = doubt + max(apart, default=0.0)
    return found
