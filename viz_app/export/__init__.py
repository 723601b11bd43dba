"""Exports: label records (jsonl, csv, parquet), the RL reward file, labelled traces, reward-model
training shapes (stepwise, unpaired), pairwise preferences, and bookmarks with their notes.

Every format is a pure function of what it reads (current label records, the traces they were
made on, the rubric, or the current bookmarks); `export(format, ...)` writes one. `FORMATS` is
the one registry: `orchviz labels export`, `Workspace.export` and the app's downloads all read it,
so a new format is one more entry there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError
from viz_app.export.bookmarks import bookmark_records
from viz_app.export.preference import preference_rows, unplaced_pairs
from viz_app.export.prompts import all_unpaired_records, stepwise_records
from viz_app.export.records import (flat_records, label_records, write_csv, write_jsonl,
                                    write_parquet, write_table)
from viz_app.export.rewards import reward_rows
from viz_app.export.traces import write_labelled_traces
from viz_app.labels.label import FIELDS, LabelRecord
from viz_app.labels.rubric import Rubric
from viz_app.model import Trace


@dataclass(frozen=True)
class ExportInput:
    """What an export is written from."""

    labels: Sequence[LabelRecord]
    """The current label records (`LabelStore.current_records`)."""
    traces: Mapping[str, Trace]
    """The labelled traces by id (empty for the formats that do not need them)."""
    rubric: Rubric | None
    """The rubric the labels were checked against (None for the bookmarks)."""
    bookmarks: Sequence[Mapping[str, Any]] = ()
    """The current bookmark records (`BookmarkStore.records`)."""
    from_scores: bool = False
    """Preference: also pair the traces of one task by their scalar labels."""


Writer = Callable[[ExportInput, Path], object]
"""Writes one format to a path and returns the path (or paths) written."""

LeftOut = Callable[[Sequence[LabelRecord], Mapping[str, Trace]], list[str]]
"""What a format leaves out of the output, one sentence each."""


def _nothing_left_out(labels: Sequence[LabelRecord], traces: Mapping[str, Trace]) -> list[str]:
    return []


def _labels_off_traces(labels: Sequence[LabelRecord], traces: Mapping[str, Trace]) -> list[str]:
    return [f"labels on trace {trace_id} skipped: it is not among --traces"
            for trace_id in sorted({x["trace_id"] for x in labels} - set(traces))]


def _pairs_off_traces(labels: Sequence[LabelRecord], traces: Mapping[str, Trace]) -> list[str]:
    return [f"judgement of {first} vs {second} skipped: a trace is not among --traces"
            for first, second in unplaced_pairs(labels, traces)]


@dataclass(frozen=True)
class ExportFormat:
    """A file orchviz exports."""

    name: str
    """Short name, as `--format` takes it."""
    title: str
    """What it holds, in a phrase (the CLI's `--help` lists them)."""
    file_name: str
    """A name for its output when none is given (the app's downloads)."""
    write: Writer
    """Writes it."""
    needs_traces: bool = False
    """Whether it reads the labelled traces themselves (`--traces`), not only the labels."""
    writes_folder: bool = False
    """Whether its output is a folder of files rather than one file."""
    reads: Literal["labels", "bookmarks"] = "labels"
    """What it is made of: the current labels, or the current bookmarks."""
    unit: str = "current labels"
    """What the summary of an export counts (`12 current labels -> out.jsonl`)."""
    counts_rows: bool = False
    """Whether that count is the rows written (one per line) rather than the labels read."""
    left_out: LeftOut = field(default=_nothing_left_out)
    """What it cannot place, given the labels and the traces (labels whose trace is not among
    the traces given), one sentence each."""


FORMATS: dict[str, ExportFormat] = {f.name: f for f in (
    ExportFormat("jsonl", "one row per label with every field (JSON Lines; "
                 "`orchviz labels import` reads it back)", "labels.jsonl",
                 lambda given, out: write_jsonl(label_records(given.labels), out)),
    ExportFormat("csv", "the same rows as CSV, each value as JSON text", "labels.csv",
                 lambda given, out: write_csv(flat_records(given.labels), out, FIELDS)),
    ExportFormat("parquet", "the same rows as Parquet", "labels.parquet",
                 lambda given, out: write_parquet(flat_records(given.labels), out, FIELDS)),
    ExportFormat("rewards", "per target, the mean reward over reviewers with count and spread",
                 "rewards.jsonl",
                 lambda given, out: write_table(reward_rows(given.labels, given.rubric), out)),
    ExportFormat("traces", "each labelled trace with its rewards filled, one file each in "
                 "the folder -o names",
                 "labelled", lambda given, out: write_labelled_traces(
                     given.traces, given.labels, given.rubric, out),
                 needs_traces=True, writes_folder=True, left_out=_labels_off_traces),
    ExportFormat("stepwise", "a stepwise reward-model shape (JSON Lines)", "stepwise.jsonl",
                 lambda given, out: write_jsonl(stepwise_records(given.traces, given.labels),
                                                out),
                 needs_traces=True, left_out=_labels_off_traces),
    ExportFormat("unpaired", "an unpaired reward-model shape (JSON Lines)", "unpaired.jsonl",
                 lambda given, out: write_jsonl(all_unpaired_records(given.traces,
                                                                     given.labels), out),
                 needs_traces=True, left_out=_labels_off_traces),
    ExportFormat("preference", "one {prompt, chosen, rejected, margin} row per judged pair of "
                 "traces", "preference.jsonl",
                 lambda given, out: write_jsonl(preference_rows(
                     given.labels, given.traces, from_scores=given.from_scores), out),
                 needs_traces=True, unit="preference pairs", counts_rows=True,
                 left_out=_pairs_off_traces),
    ExportFormat("bookmarks", "the current bookmarks with their notes (JSON Lines)",
                 "bookmarks.jsonl",
                 lambda given, out: write_jsonl(bookmark_records(given.bookmarks), out),
                 reads="bookmarks", unit="current bookmarks", counts_rows=True),
)}
"""Every export format, by name."""

NEEDS_TRACES = tuple(f.name for f in FORMATS.values() if f.needs_traces)
"""Formats that read the labelled traces themselves."""

WRITES_FOLDER = tuple(f.name for f in FORMATS.values() if f.writes_folder)
"""Formats whose output is a folder."""


def export(format: str, labels: Sequence[LabelRecord], traces: Mapping[str, Trace],
           rubric: Rubric | None, output: str | Path, *,
           bookmarks: Sequence[Mapping[str, Any]] = (), from_scores: bool = False) -> object:
    """Write current label records (`LabelStore.current_records`), or bookmark records, in a
    format; returns the path (or paths) written."""
    if format not in FORMATS:
        raise OrchvizError(f"unknown export format {format!r} (known: {', '.join(FORMATS)})")
    given = ExportInput(labels=labels, traces=traces, rubric=rubric, bookmarks=bookmarks,
                        from_scores=from_scores)
    return FORMATS[format].write(given, Path(output))


class ExportResult(BaseModel):
    """What an export wrote (`Workspace.export`)."""

    format: str = Field(description="The format written (a key of FORMATS).")
    output: Path = Field(description="The file (or folder) written.")
    written: list[Path] = Field(description="Every file written.")
    count: int = Field(description="The labels read, or the rows written (see `counts_rows`).")
    left_out: list[str] = Field(default_factory=list, description="What could not be placed, "
                                "one sentence each (labels whose trace was not given).")

    @property
    def text(self) -> str:
        """'6 current labels -> labels.jsonl', '3 traces in labelled/' for a folder."""
        found = FORMATS[self.format]
        where = f"{len(self.written)} traces in {self.output}" if found.writes_folder \
            else str(self.output)
        return f"{self.count} {found.unit} -> {where}"
