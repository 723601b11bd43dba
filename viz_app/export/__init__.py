"""Exports of reward labels: label records (jsonl, csv, parquet), the RL reward file, labelled
traces, and reward-model training shapes (stepwise, unpaired).

Every format is a pure function of current labels, the traces they were made on and the rubric;
`export(format, ...)` writes one. A new format (such as `preference`) is one more entry in
`FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from viz_app.export.prompts import all_unpaired_records, stepwise_records
from viz_app.export.records import (flat_records, label_records, write_csv, write_jsonl,
                                    write_parquet, write_table)
from viz_app.export.rewards import reward_rows
from viz_app.export.traces import write_labelled_traces
from viz_app.labels.rubric import Rubric
from viz_app.labels.label import FIELDS, LabelRecord
from viz_app.model import Trace

Writer = Callable[[list[LabelRecord], Mapping[str, Trace], Rubric, Path], object]


def _jsonl(labels, traces, rubric, out):
    return write_jsonl(label_records(labels), out)


def _csv(labels, traces, rubric, out):
    return write_csv(flat_records(labels), out, FIELDS)


def _parquet(labels, traces, rubric, out):
    return write_parquet(flat_records(labels), out, FIELDS)


def _rewards(labels, traces, rubric, out):
    return write_table(reward_rows(labels, rubric), out)


def _traces(labels, traces, rubric, out):
    return write_labelled_traces(traces, labels, rubric, out)


def _stepwise(labels, traces, rubric, out):
    return write_jsonl(stepwise_records(traces, labels), out)


def _unpaired(labels, traces, rubric, out):
    return write_jsonl(all_unpaired_records(traces, labels), out)


FORMATS: dict[str, Writer] = {
    "jsonl": _jsonl, "csv": _csv, "parquet": _parquet, "rewards": _rewards,
    "traces": _traces, "stepwise": _stepwise, "unpaired": _unpaired,
}
"""Export formats by name, each writing current labels to a path."""

NEEDS_TRACES = ("traces", "stepwise", "unpaired")
"""Formats that read the labelled traces themselves."""

WRITES_FOLDER = ("traces",)
"""Formats whose output is a folder."""


def export(format: str, labels: list[LabelRecord], traces: Mapping[str, Trace], rubric: Rubric,
           output: str | Path) -> object:
    """Write current label records (`LabelStore.current_records`) in a format; returns the
    path (or paths) written."""
    if format not in FORMATS:
        raise ValueError(f"unknown export format {format!r} (known: {', '.join(FORMATS)})")
    return FORMATS[format](labels, traces, rubric, Path(output))
