"""The RL-facing reward file: per target and question, the mean reward over reviewers, with how
many reviewers gave one and how far apart they were, keyed by the taxonomy."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from viz_app.labels import LabelRecord, Rubric

REWARD_FIELDS = ("trace_id", "trace_sha256", "event_id", "question", "family", "credit_unit", "sub_decision",
                 "channel", "reward", "reward_std", "reward_min", "reward_max", "reviewers",
                 "rubric_version")
"""The columns of the rewards export, in order."""


def target_rewards(labels: Iterable[LabelRecord]) -> dict[tuple[str, str, str], list[float]]:
    """(trace id, event id, question) -> the rewards of its current labels, one per reviewer.
    Answers without a reward (tags, notes, pointers) are left out."""
    found: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for label in labels:
        if label["reward"] is not None:
            found[(label["trace_id"], label["event_id"] or "", label["question"])].append(
                label["reward"])
    return found


def reward_rows(labels: Iterable[LabelRecord], rubric: Rubric) -> list[dict[str, Any]]:
    """One row per labelled target, question and version of the trace judged (`trace_sha256`:
    a target judged on two versions is two rows): `reward` is the mean over reviewers,
    `reward_std` the population standard deviation (0 for one reviewer), `reviewers` the count.
    `labels` must be current labels (one per reviewer)."""
    found: dict[tuple[str, str, str, str], list[float]] = defaultdict(list)
    for label in labels:
        if label["reward"] is not None:
            found[(label["trace_id"], label.get("trace_sha256") or "", label["event_id"] or "",
                   label["question"])].append(label["reward"])
    rows = []
    for (trace_id, sha, event_id, question_id), rewards in sorted(found.items()):
        question = rubric.questions_by_id.get(question_id)
        rows.append({
            "trace_id": trace_id, "trace_sha256": sha or None, "event_id": event_id or None,
            "question": question_id,
            "family": question.family if question else None,
            "credit_unit": question.credit_unit if question else None,
            "sub_decision": question.sub_decision if question else None,
            "channel": question.reward_channel if question else None,
            "reward": statistics.fmean(rewards), "reward_std": statistics.pstdev(rewards),
            "reward_min": min(rewards), "reward_max": max(rewards), "reviewers": len(rewards),
            "rubric_version": rubric.version,
        })
    return rows
