"""The preference export: one row per judged pair of orchestrations, in the shape reward-model
and DPO trainers read (`prompt`, `chosen`, `rejected`, `margin`), with the trace ids for
provenance.

- `prompt` is the task (`Task: <task_id>`); `chosen` and `rejected` are each orchestration as
  text: its system line, then one line per event in time order (`event_line` of the stepwise
  export), so `prompt + chosen` reads as one document.
- Judged pairs (the `pairwise_preference` labels): when several reviewers judged one pair, each
  vote counts +w for the pair's first trace or -w for its second, with w = strength / 3 (no
  strength given counts as 1, a tie as 0). The mean vote picks `chosen` by its sign, and its
  size is the `margin` in (0, 1]; a pair whose votes cancel out is left out.
- From scores (`--from-scores`): a trace's score is the mean, over its rewarded targets, of each
  target's mean reward over reviewers. Every two traces of one `task_id` whose scores differ make
  a pair: the higher one is chosen, and the margin is half the difference (rewards lie in
  [-1, 1], so it is in (0, 1]). A pair that reviewers judged is not added again from scores.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from viz_app.analysis import analyze
from viz_app.export.prompts import event_line
from viz_app.export.records import write_jsonl
from viz_app.export.rewards import target_rewards
from viz_app.labels.pairs import STRENGTHS, Preference, pair_key, preferences
from viz_app.labels.label import LabelRecord
from viz_app.model import Trace

PREFERENCE_FIELDS = ("prompt", "chosen", "rejected", "margin", "chosen_trace_id",
                     "rejected_trace_id", "task_id", "same_task", "source", "reviewers",
                     "reasons", "chosen_score", "rejected_score")
"""The keys of every preference row, in order."""


def task_prompt(trace: Trace) -> str:
    """The prompt of a preference row: the task the orchestrations attempted."""
    return f"Task: {trace.task_id}\n"


def orchestration_text(trace: Trace) -> str:
    """An orchestration as text for a trainer: the system that ran it, then each event on one
    line in time order."""
    analysis = analyze(trace)
    head = f"System: {trace.system or 'unknown'} ({trace.topology or 'unknown'} topology)\n"
    return head + "Orchestration:\n" + "".join(event_line(e, analysis) for e in analysis.order)


def vote(p: Preference) -> float:
    """A judgement as a signed vote: + for the pair's first trace, - for its second, its size the
    strength over 3 (no strength: 1; a tie: 0)."""
    if p.chosen is None:
        return 0.0
    size = (p.strength or 1) / max(STRENGTHS)
    return size if p.chosen == p.first else -size


def _row(chosen: Trace, rejected: Trace, margin: float, source: str, **extra) -> dict[str, Any]:
    row = {"prompt": task_prompt(chosen), "chosen": orchestration_text(chosen),
           "rejected": orchestration_text(rejected), "margin": margin,
           "chosen_trace_id": chosen.trace_id, "rejected_trace_id": rejected.trace_id,
           "task_id": chosen.task_id, "same_task": chosen.task_id == rejected.task_id,
           "source": source, "reviewers": [], "reasons": [], "chosen_score": None,
           "rejected_score": None}
    row.update(extra)
    return row


def judged_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace]) -> list[dict[str, Any]]:
    """One row per judged pair whose two traces are in `traces` and whose votes do not cancel,
    sorted by pair."""
    by_pair: dict[tuple[str, str], list[Preference]] = defaultdict(list)
    for p in preferences(labels):
        by_pair[p.pair].append(p)
    rows = []
    for (first, second), judged in sorted(by_pair.items()):
        if first not in traces or second not in traces:
            continue
        mean = statistics.fmean(vote(p) for p in judged)
        if mean == 0:
            continue
        chosen, rejected = (first, second) if mean > 0 else (second, first)
        judged = sorted(judged, key=lambda p: p.reviewer)
        rows.append(_row(traces[chosen], traces[rejected], abs(mean), "judged",
                         reviewers=[p.reviewer for p in judged],
                         reasons=[p.reason for p in judged]))
    return rows


def trace_scores(labels: Iterable[LabelRecord]) -> dict[str, float]:
    """trace id -> score: the mean over its rewarded targets (and questions) of the mean reward
    over reviewers."""
    per_trace: dict[str, list[float]] = defaultdict(list)
    for (trace_id, _event, _question), rewards in target_rewards(labels).items():
        per_trace[trace_id].append(statistics.fmean(rewards))
    return {t: statistics.fmean(v) for t, v in per_trace.items()}


def score_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
               skip: Iterable[tuple[str, str]] = ()) -> list[dict[str, Any]]:
    """Pairs from scores: every two scored traces of one task whose scores differ (pairs in
    `skip`, in canonical order, are left out), the higher-scored one chosen."""
    scores = {t: s for t, s in trace_scores(labels).items() if t in traces}
    skipped = set(skip)
    by_task: dict[str, list[str]] = defaultdict(list)
    for trace_id in sorted(scores):
        by_task[traces[trace_id].task_id].append(trace_id)
    rows = []
    for _task, members in sorted(by_task.items()):
        for a, b in itertools.combinations(members, 2):
            if pair_key(a, b) in skipped or scores[a] == scores[b]:
                continue
            hi, lo = (a, b) if scores[a] > scores[b] else (b, a)
            rows.append(_row(traces[hi], traces[lo], (scores[hi] - scores[lo]) / 2, "scores",
                             chosen_score=scores[hi], rejected_score=scores[lo]))
    return rows


def preference_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace], *,
                    from_scores: bool = False) -> list[dict[str, Any]]:
    """The rows of the preference export: judged pairs, then (with `from_scores`) pairs from
    scores that no reviewer judged."""
    labels = list(labels)
    rows = judged_rows(labels, traces)
    if from_scores:
        judged = {pair_key(p.first, p.second) for p in preferences(labels)}
        rows += score_rows(labels, traces, skip=judged)
    return rows


def unplaced_pairs(labels: Iterable[LabelRecord], traces: Mapping[str, Trace]) -> list[tuple[str, str]]:
    """Judged pairs left out because a trace of theirs is not among `traces`."""
    return sorted({p.pair for p in preferences(labels)
                   if p.first not in traces or p.second not in traces})


def write_preference(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                     path: str | Path, *, from_scores: bool = False) -> Path:
    """Write the preference export as JSON Lines."""
    return write_jsonl(preference_rows(labels, traces, from_scores=from_scores), path)
