"""`orchviz report TRACE`: a trace's case study as one self-contained HTML (or Markdown) file."""

from __future__ import annotations

import argparse
import sys

from viz_app.cli.workspace import add_db_option, no_store, open_workspace
from viz_app.export import write_report
from viz_app.io.detect import read_any
from viz_app.text import file_name, terminal_text


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `report`."""
    p = verbs.add_parser(
        "report", help="write a trace's case study as one self-contained file",
        description="Write one trace's case study: its figures, the interactive spawn tree and "
        "timeline, its labels with their reviewers (an adjudicated answer marked final, with "
        "its reason), its bookmarks with their notes in the order of the run, its campaigns' "
        "disputes with what was said on them (notes, comments, the lead's reason), and its "
        "warnings. HTML opens offline (Plotly's JavaScript is inlined, no "
        "request to any host); --format md writes Markdown with PNG figures when Chromium is "
        "available (Playwright), without them otherwise.")
    p.add_argument("trace", metavar="TRACE", help="a trace file (any format orchviz reads)")
    p.add_argument("--trace-id", help="the trace to report when the file holds several")
    add_db_option(p, help="the store: a SQLAlchemy URL or a SQLite file (default: orchviz.db; "
                  "a SQLite file that does not exist means no labels and no bookmarks)")
    p.add_argument("-o", "--output", help="the file to write (default: <trace id>.html or .md)")
    p.add_argument("--format", choices=["html", "md"], default="html")
    p.set_defaults(run=report_verb)


def report_verb(args: argparse.Namespace) -> int:
    """Write the report of one trace, with its case study from the workspace's database."""
    found = read_any(args.trace)
    traces = [t for t in found if args.trace_id is None or t.trace_id == args.trace_id]
    if len(traces) != 1:
        held = ", ".join(terminal_text(t.trace_id) for t in found[:20])
        print(f"{terminal_text(args.trace)}: pick one trace with --trace-id (it holds: {held})"
              if traces or args.trace_id is None else
              f"{terminal_text(args.trace)}: no trace {terminal_text(repr(args.trace_id))} "
              f"(it holds: {held})", file=sys.stderr)
        return 2
    trace = traces[0]
    output = args.output or f"{file_name(trace.trace_id)}.{args.format}"
    if no_store(args.db):
        print(f"no label store at {terminal_text(args.db)}: the report has no labels or "
              "bookmarks", file=sys.stderr)
        result = write_report(trace, output, format=args.format)
    else:
        result = open_workspace(args).exports.write_report(trace, output, format=args.format)
    if result.note:
        print(terminal_text(result.note), file=sys.stderr)
    extra = f" with {len(result.images)} figures" if result.images else ""
    print(f"{terminal_text(trace.trace_id)} -> {terminal_text(result.path)}{extra}")
    return 0
