"""Labelled traces: each trace written back in the reference schema with its `rewards` filled
from the labels, so a trainer that reads traces reads the rewards with them."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from viz_app.export.rewards import target_rewards
from viz_app.labels import LabelRecord, Rubric
from viz_app.model import Trace
from viz_app.text import file_name


def trace_rewards(labels: Iterable[LabelRecord], rubric: Rubric) -> dict[str, dict[str, float]]:
    """trace id -> reward channel -> value: the mean over the trace's targets of each target's
    mean reward over reviewers (so a target many reviewers saw weighs no more than another)."""
    per_channel: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (trace_id, _event, question_id), rewards in target_rewards(labels).items():
        question = rubric.questions_by_id.get(question_id)
        channel = question.reward_channel if question else f"labels.{question_id}"
        per_channel[trace_id][channel].append(statistics.fmean(rewards))
    return {t: {c: statistics.fmean(v) for c, v in channels.items()}
            for t, channels in per_channel.items()}


def event_rewards(labels: Iterable[LabelRecord], rubric: Rubric,
                  trace_id: str) -> dict[str, dict[str, float]]:
    """event id -> reward channel -> mean reward over reviewers, for one trace's events."""
    found: dict[str, dict[str, float]] = defaultdict(dict)
    for (tid, event_id, question_id), rewards in target_rewards(labels).items():
        if tid != trace_id or not event_id:
            continue
        question = rubric.questions_by_id.get(question_id)
        channel = question.reward_channel if question else f"labels.{question_id}"
        found[event_id][channel] = statistics.fmean(rewards)
    return found


def labelled_trace(trace: Trace, labels: Iterable[LabelRecord], rubric: Rubric) -> dict[str, Any]:
    """The trace as a reference-schema dict: its `rewards` keep their channels and gain one per
    labelled question (such as `orchestration.aggregation_quality`); each labelled event gains
    a `rewards` key with its own channels (events are open in the schema)."""
    labels = [x for x in labels if x["trace_id"] == trace.trace_id]
    raw = trace.to_dict()
    raw["rewards"] = {**raw.get("rewards", {}),
                      **trace_rewards(labels, rubric).get(trace.trace_id, {})}
    per_event = event_rewards(labels, rubric, trace.trace_id)
    for event in raw["events"]:
        if event["id"] in per_event:
            event["rewards"] = per_event[event["id"]]
    return raw


def write_labelled_traces(traces: Mapping[str, Trace], labels: Iterable[LabelRecord],
                          rubric: Rubric,
                          folder: str | Path) -> list[Path]:
    """Write every labelled trace found in `traces` into `folder` as `<trace_id>.json` (named by
    `viz_app.text.file_name`: two ids that make the same name get `-2`, `-3`)."""
    labels = list(labels)
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    used: set[str] = set()
    for trace_id in sorted({x["trace_id"] for x in labels}):
        trace = traces.get(trace_id)
        if trace is None:
            continue
        name = file_name(trace_id, used, ending=".json")
        used.add(name)
        path = target / name
        path.write_bytes(orjson.dumps(labelled_trace(trace, labels, rubric),
                                      option=orjson.OPT_INDENT_2))
        written.append(path)
    return written
