"""`orchviz report TRACE`: a trace's case study as one self-contained HTML (or Markdown) file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from viz_app.errors import TraceError
from viz_app.export.report import write_report
from viz_app.io.detect import read_any
from viz_app.settings import database_url


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `report`."""
    p = verbs.add_parser(
        "report", help="write a trace's case study as one self-contained file",
        description="Write one trace's case study: its figures, the interactive spawn tree and "
        "timeline, its labels with their reviewers, its bookmarks with their notes in the order "
        "of the run, and its warnings. HTML opens offline (Plotly's JavaScript is inlined, no "
        "request to any host); --format md writes Markdown with PNG figures when Chromium is "
        "available (Playwright), without them otherwise.")
    p.add_argument("trace", metavar="TRACE", help="a trace file (any format orchviz reads)")
    p.add_argument("--trace-id", help="the trace to report when the file holds several")
    p.add_argument("--db", default="orchviz.db",
                   help="label store: a SQLAlchemy URL or a SQLite file (default: orchviz.db; "
                   "a SQLite file that does not exist means no labels and no bookmarks)")
    p.add_argument("-o", "--output", help="the file to write (default: <trace id>.html or .md)")
    p.add_argument("--format", choices=["html", "md"], default="html")
    p.set_defaults(run=report_verb)


def _db_url(value: str) -> str | None:
    """The store's URL, or None for a SQLite file that is not there (rather than creating one)."""
    if "://" not in value and not Path(value).expanduser().exists():
        return None
    return database_url(value)


def report_verb(args: argparse.Namespace) -> int:
    """Write the report of one trace."""
    try:
        traces = read_any(args.trace)
    except (TraceError, OSError) as err:
        print(err, file=sys.stderr)
        return 1
    if args.trace_id is not None:
        traces = [t for t in traces if t.trace_id == args.trace_id]
    if len(traces) != 1:
        found = ", ".join(t.trace_id for t in read_any(args.trace)[:20])
        print(f"{args.trace}: pick one trace with --trace-id (it holds: {found})"
              if traces or args.trace_id is None else
              f"{args.trace}: no trace {args.trace_id!r} (it holds: {found})", file=sys.stderr)
        return 2
    trace = traces[0]
    db_url = _db_url(args.db)
    if db_url is None:
        print(f"no label store at {args.db}: the report has no labels or bookmarks",
              file=sys.stderr)
    from viz_app.export.traces import file_name

    output = args.output or f"{file_name(trace.trace_id)}.{args.format}"
    result = write_report(trace, output, db_url=db_url, format=args.format)
    if result.note:
        print(result.note, file=sys.stderr)
    extra = f" with {len(result.images)} figures" if result.images else ""
    print(f"{trace.trace_id} -> {result.path}{extra}")
    return 0
