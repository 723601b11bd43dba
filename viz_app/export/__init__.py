"""Exports: label records (jsonl, csv, parquet), the RL reward file, labelled traces, the
training shapes of the trainers RL teams use (TRL, OpenRLHF, rLLM, Agent Lightning, verl, and
the per-agent reward matrix), and bookmarks with their notes.

Every format is a pure function of what it reads (current label records, the traces they were
made on, the rubric, or the current bookmarks); `write_export(format, given, output)` writes
one. `FORMATS` (`export.formats`) is the one registry: `orchviz labels export`, `ws.exports.write` and the app's
downloads all read it, so a new format is one more entry there.

A *training* format reads the labels through `viz_app.export.consensus.select` (the options
`--min-reviewers`, `--adjudicated-only`, `--disputed`), keeps the provenance of every label on
its rows, can be written as a Hugging Face dataset folder (`--hf-dataset`), and has a reader that
gives the label records back (`viz_app.export.readers`). Its entry names the released trainer
it serves (`trainer`), what that trainer reads of a row and its default length limit (`texts`,
`limit`: every export measures its rows, `viz_app.export.lengths`), and the columns a folder
keeps as JSON text (`json_columns`). docs/trainers/ has a page per framework.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from viz_app.face import lazy

if TYPE_CHECKING:  # the face: what callers import from viz_app.export, each from its module
    from viz_app.export.bookmarks import bookmark_records
    from viz_app.export.consensus import DISPUTED, ExportOptions, Selection, select
    from viz_app.export.formats import (FORMATS, NEEDS_TRACES, TRAINING, WRITES_FOLDER,
                                        ExportFormat, ExportInput, ExportResult, Shaped, Written,
                                        check_options, export, write_export)
    from viz_app.export.readers import read_export, read_rows
    from viz_app.export.report import ReportResult, report_html, write_report
    from viz_app.export.traces import file_name, write_labelled_traces
    from viz_app.export.consensus import CONFIRMATIONS
    from viz_app.export.decision_pairs import decision_pair_rows
    from viz_app.export.steps import event_line

__getattr__, __dir__ = lazy(__name__, __file__)
