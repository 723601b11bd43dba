"""Reward-model training shapes built from labelled decision points.

A *decision point* is an event target with at least one rewarded label (an aggregate, a stop,
a message). Its reward is the mean, over its rewarded questions, of the mean over reviewers; its
boolean label is `reward > 0`.

- stepwise (one record per trace): `prompt` is the task header and every event before the first
  decision point; `completions[i]` is the events after decision point i-1 up to and including
  decision point i; `labels[i]` its label. `prompt + "".join(completions)` is the orchestration up
  to its last labelled decision.
- unpaired (one record per decision point): `prompt` is the task header and every event before
  the decision; `completion` is the decision event itself; `label` its label.

Each event is one line: `[t=12.5] orchestrator aggregate: <its text>` (messages and returns
name their recipient). Extra keys (`trace_id`, `event_ids`, `rewards`) keep each record traceable
to its labels; trainers ignore columns they do not use.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from viz_app.analysis import Analysis, analyze
from viz_app.export.rewards import target_rewards
from viz_app.labels.label import LabelRecord
from viz_app.model import Event, Trace


def header(trace: Trace) -> str:
    """The top of every prompt: the task and the system that attempted it."""
    lines = [f"Task: {trace.task_id}"]
    if trace.system or trace.topology:
        lines.append(f"System: {trace.system or 'unknown'} ({trace.topology or 'unknown'} "
                     "topology)")
    lines.append("Orchestration:")
    return "\n".join(lines) + "\n"


def event_line(event: Event, analysis: Analysis) -> str:
    """One event as a line of a prompt."""
    what = event.type
    if event.decision:
        what += f" ({event.decision})"
    if event.type in ("message", "return", "spawn") and event.to:
        what += f" -> {event.to}"
    if event.tool and event.type in ("tool_call", "tool_result"):
        what += f" [{event.tool}]"
    text = event.text.replace("\n", " ").strip()
    return f"[t={float(event.t):g}] {analysis.actor[event.id]} {what}: {text}\n"


def decision_rewards(labels: Iterable[LabelRecord], trace_id: str) -> dict[str, float]:
    """event id -> reward of each labelled decision point of one trace."""
    per_event: dict[str, list[float]] = defaultdict(list)
    for (tid, event_id, _question), rewards in target_rewards(labels).items():
        if tid == trace_id and event_id:
            per_event[event_id].append(statistics.fmean(rewards))
    return {e: statistics.fmean(r) for e, r in per_event.items()}


def _points(trace: Trace,
            labels: Iterable[LabelRecord]) -> tuple[Analysis, list[tuple[int, str, float]]]:
    """The trace's analysis and its labelled decision points as (position, event id, reward),
    in time order."""
    analysis = analyze(trace)
    rewards = decision_rewards(labels, trace.trace_id)
    points = sorted((analysis.position[e], e, r) for e, r in rewards.items()
                    if e in analysis.position)
    return analysis, points


def stepwise_record(trace: Trace, labels: Iterable[LabelRecord]) -> dict[str, Any] | None:
    """The stepwise record of one trace, or None when none of its decisions is labelled."""
    analysis, points = _points(trace, labels)
    if not points:
        return None
    lines = [event_line(e, analysis) for e in analysis.order]
    first = points[0][0]
    completions, start = [], first
    for position, _event, _reward in points:
        completions.append("".join(lines[start:position + 1]))
        start = position + 1
    return {"prompt": header(trace) + "".join(lines[:first]), "completions": completions,
            "labels": [r > 0 for _, _, r in points], "trace_id": trace.trace_id,
            "event_ids": [e for _, e, _ in points], "rewards": [r for _, _, r in points]}


def unpaired_records(trace: Trace, labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """One unpaired record per labelled decision point of a trace, in time order."""
    analysis, points = _points(trace, labels)
    lines = [event_line(e, analysis) for e in analysis.order]
    prefix = header(trace)
    return [{"prompt": prefix + "".join(lines[:position]), "completion": lines[position],
             "label": reward > 0, "trace_id": trace.trace_id, "event_id": event_id,
             "reward": reward}
            for position, event_id, reward in points]


def stepwise_records(traces: Mapping[str, Trace],
                     labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """Stepwise records of every labelled trace found in `traces`, by trace id."""
    labels = list(labels)
    found = (stepwise_record(traces[t], labels) for t in sorted({x["trace_id"] for x in labels})
             if t in traces)
    return [r for r in found if r is not None]


def all_unpaired_records(traces: Mapping[str, Trace],
                         labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """Unpaired records of every labelled trace found in `traces`, by trace id."""
    labels = list(labels)
    return [r for t in sorted({x["trace_id"] for x in labels}) if t in traces
            for r in unpaired_records(traces[t], labels)]
