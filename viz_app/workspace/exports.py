"""The exports facet (`ws.exports`): the current labels (or bookmarks, or suggestions) written
in one of `viz_app.export.FORMATS`, for the CLI, the app and the tests alike, the bytes of a
download the app offers, written once per state of the labels, and a trace's case-study report
(`orchviz report` and the trace page's Report button show the same).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING
from pathlib import Path

from viz_app.errors import OrchvizError
from viz_app.export import (FORMATS, ExportInput, ExportOptions, ExportResult, bookmark_records,
                            write_export)
from viz_app.labels import LabelRecord
from viz_app.model import Trace
from viz_app.workspace.bookmarks import Bookmarks
from viz_app.workspace.campaigns import Campaigns
from viz_app.workspace.disputes import Disputes
from viz_app.workspace.ground import Ground
from viz_app.workspace.library import Library
from viz_app.workspace.suggestions import Suggestions

if TYPE_CHECKING:
    from viz_app.export import ReportResult


class Exports:
    """Label files in the trainers' shapes, written from the workspace's stores."""

    def __init__(self, ground: Ground, library: Library, campaigns: Campaigns,
                 suggestions: Suggestions, bookmarks: Bookmarks, disputes: Disputes):
        self._ground = ground
        self._library = library
        self._campaigns = campaigns
        self._suggestions = suggestions
        self._bookmarks = bookmarks
        self._disputes = disputes
        self._downloads: dict[tuple, bytes] = {}

    def write(self, format: str, output: str | os.PathLike, *,
               traces: Mapping[str, Trace] | None = None, reviewer: str | None = None,
               campaign: str | None = None, adjudicated_only: bool = False,
               from_scores: bool = False, options: ExportOptions | None = None,
               hf_dataset: bool = False, other_versions: str | None = None) -> ExportResult:
        """Write the current labels (or, for `bookmarks`, the current bookmarks) in one of
        `viz_app.export.FORMATS`, by one reviewer or (None) by everyone; a training format
        chooses its rows by `options` (`viz_app.export.consensus`) and, with `hf_dataset`, is
        written as a `datasets` folder. A format that needs the traces reads them from `traces`,
        else from the workspace's folders; what it cannot place or would not use (labels on a
        trace not given, disputed targets) is in `left_out`. `campaign` keeps the labels of one
        review campaign; `adjudicated_only` keeps only adjudicated labels (a lead's final
        answers). Retracted labels are never exported."""
        found = FORMATS.get(format)
        if found is None:
            raise OrchvizError(f"unknown export format {format!r} (known: {', '.join(FORMATS)})")
        labels: list[LabelRecord] = []
        if found.reads == "bookmarks":
            given = ExportInput(labels=[], traces={}, rubric=None,
                                bookmarks=bookmark_records(self._bookmarks.records(), reviewer))
        elif found.reads == "suggestions":
            if campaign is not None or reviewer is not None:
                raise OrchvizError("the suggestions export takes every stored suggestion: it "
                                   "has no reviewer or campaign to choose by")
            given = ExportInput(labels=[], traces={}, rubric=None,
                                suggestions=self._suggestions.all())
        else:
            if found.needs_traces and traces is None:
                if not self._ground.settings.traces:
                    raise OrchvizError(f"the {format} export needs the traces: name their "
                                       "folders (--traces)")
                traces = self._library.read_traces().traces
            if campaign is not None:
                self._campaigns.get(campaign)
            labels = self._ground.labels.current_records(reviewer=reviewer, campaign=campaign,
                                                 adjudicated_only=adjudicated_only)
            if found.needs_traces and traces is not None and self._library.pools:
                traces = {**traces, **self._pooled(labels, traces)}
            given = ExportInput(labels=labels, rubric=self._ground.rubric, from_scores=from_scores,
                                traces=traces if found.needs_traces and traces is not None
                                else {}, options=options or ExportOptions(),
                                versions=self._library.versions(),
                                other_versions=other_versions)
        written = write_export(format, given, output, hf_dataset=hf_dataset)
        if written.rows is not None:
            count = written.rows
        elif found.counts_rows:
            count = sum(len(p.read_bytes().splitlines()) for p in written.paths)
        else:
            count = len(labels)
        return ExportResult(format=format, output=Path(output), written=written.paths,
                            count=count, left_out=written.left_out, notes=written.notes,
                            hf_dataset=hf_dataset, empty=written.empty)

    def _pooled(self, labels: Sequence[LabelRecord], known: Mapping[str, Trace]
                ) -> dict[str, Trace]:
        """The traces of the pools that labels are on and `known` lacks, each read alone (its
        row group) through the pools' indexes: what an export of a pool's labels reads."""
        wanted = {r["trace_id"] for r in labels} | {
            r["pair_trace_id"] for r in labels if r.get("pair_trace_id")}
        found: dict[str, Trace] = {}
        for trace_id in sorted(wanted - set(known)):
            if self._library.locate(trace_id) is not None:
                found[trace_id] = self._library.trace(trace_id)
        return found

    DOWNLOADS_KEPT = 8
    """Downloads kept per workspace (`download`)."""

    def download(self, format: str) -> bytes:
        """Every current label in a format that needs no trace, as the bytes of its file: what
        the Agreement page offers. Written once per state of the labels (they are only ever
        appended, so their row counts tell a change) and kept, not on every rerun of a page."""
        found = FORMATS.get(format)
        if found is None or found.needs_traces or found.reads != "labels":
            raise OrchvizError(f"{format!r} is no download of the labels alone (known: "
                               + ", ".join(f.name for f in FORMATS.values()
                                           if f.reads == "labels" and not f.needs_traces) + ")")
        key = (format, self._ground.rubric.sha256, *self._ground.labels.revision())
        kept = self._downloads.get(key)
        if kept is None:
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / found.file_name
                self.write(format, path)
                kept = path.read_bytes()
            if len(self._downloads) >= self.DOWNLOADS_KEPT:
                self._downloads.pop(next(iter(self._downloads)), None)
            self._downloads[key] = kept
        return kept

    # -- a trace's case study ----------------------------------------------------------------------

    def _case_study(self, trace: Trace, viewer: str | None, lead: bool) -> dict:
        """What a report of a trace shows: its labels and bookmarks (`ws.bookmarks.case_study`)
        and the disputes on it with their threads (`ws.disputes.on_trace`), every one for a
        lead, else what `viewer` may see."""
        labels, bookmarks = self._bookmarks.case_study(trace, viewer, lead=lead)
        return {"labels": labels, "bookmarks": bookmarks,
                "threads": self._disputes.on_trace(trace.trace_id, viewer, lead=lead)}

    def report_html(self, trace: Trace, viewer: str | None = None, *, lead: bool = True) -> str:
        """A trace's case-study report as one self-contained HTML page, its footer naming the
        trace's file as the library shows it (what the trace page's Report button downloads)."""
        from viz_app.export import report_html

        return report_html(trace, **self._case_study(trace, viewer, lead),
                           source=self._library.source_name(trace))

    def write_report(self, trace: Trace, output: str | os.PathLike, *,
                     format: str = "html") -> ReportResult:
        """Write a trace's case-study report, as a lead sees it, as HTML or as Markdown with its
        figures beside it (`viz_app.export.write_report`; what `orchviz report` writes)."""
        from viz_app.export import write_report

        return write_report(trace, output, format=format,
                            **self._case_study(trace, None, True))
