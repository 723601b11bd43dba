"""Verbs on trace files: validate, inspect, schema, synth."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from viz_app.model import TOPOLOGIES
from viz_app.text import terminal_text

if TYPE_CHECKING:
    from viz_app.store import IndexProgress
    from viz_app.summary import LibraryFailure

# The readers, the analysis and the stores are imported by the verbs that use them, not above:
# most verbs of `orchviz` import this module for `--traces` and its progress bar, and
# `orchviz schema` or a verb's `--help` should not pay for what they never run.


def register(verbs: argparse._SubParsersAction) -> None:
    """Add the trace verbs."""
    p = verbs.add_parser("validate", help="check trace files against the schema",
                         description="Check trace files (files, folders searched recursively, "
                         "globs): one line per file, `ok` or the error. Exit 0 when all are valid.")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.set_defaults(run=validate)

    p = verbs.add_parser("inspect", help="print a trace's orchestration figures",
                         description="Print the figures of one trace: agents, depth, fan-out, "
                         "makespan, parallelism, critical path, decision points, warnings.")
    p.add_argument("trace", metavar="TRACE")
    p.add_argument("--json", action="store_true", help="print the figures as a JSON object")
    p.set_defaults(run=inspect)

    p = verbs.add_parser("schema", help="print the JSON Schema orchviz reads and writes",
                         description="Print the reference trace schema with the optional event "
                         "keys orchviz understands documented in it.")
    p.set_defaults(run=schema)

    p = verbs.add_parser("synth", help="write a large synthetic trace",
                         description="Write a realistic synthetic trace for tests and benchmarks.")
    p.add_argument("--agents", type=int, required=True, help="number of agents")
    p.add_argument("--events", type=int, required=True, help="approximate number of events")
    p.add_argument("--topology", choices=TOPOLOGIES, default="hierarchical")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", required=True, help="the .json (or .json.gz) file to write")
    p.set_defaults(run=synth)


def validate(args: argparse.Namespace) -> int:
    """Validate every file; one line each."""
    from viz_app.io.files import trace_files
    from viz_app.io.uploads import checked_traces

    files = trace_files(args.paths)
    report: list[dict] = []
    for path in tqdm(files, desc="validating", unit="file", disable=None, file=sys.stderr):
        checked = checked_traces(path, fmt="orchviz")  # the rule the app's upload applies
        errors, count = checked.errors, len(checked.traces)
        report.append({"file": str(path), "ok": not errors, "traces": count,
                       "errors": [e.as_dict() for e in errors]})
        if not args.json:
            tqdm.write(f"{terminal_text(path)}: ok" if not errors
                       else "\n".join(terminal_text(e) for e in errors))
    if args.json:
        print(json.dumps({"files": report, "valid": all(r["ok"] for r in report)}, indent=2))
    if not files:
        print("no trace files found", file=sys.stderr)
        return 1
    return 0 if all(r["ok"] for r in report) else 1


def inspect(args: argparse.Namespace) -> int:
    """Print one trace's figures."""
    from viz_app.analysis import FIGURES, figure_rows, figures
    from viz_app.errors import TraceError
    from viz_app.io.native import load_trace

    try:
        trace = load_trace(args.trace)
    except TraceError as err:
        print(terminal_text(err), file=sys.stderr)
        return 1
    fig = figures(trace)
    if args.json:
        print(fig.model_dump_json(indent=2))
        return 0
    t = terminal_text
    print(f"trace     {t(trace.trace_id)}  (task {t(trace.task_id)}, "
          f"topology {t(trace.topology or '-')})")
    listed = ("messages", "tool calls", "aggregates", "stops")  # in a help, or one by one below
    for row in figure_rows(fig, [n for n in FIGURES if n not in listed]):
        print(f"{row.name:<16}{t(row.value)}" + (f"  ({t(row.help)})" if row.help else ""))
    for point in fig.aggregates:
        print(f"aggregate {t(point.event_id)} by {t(point.agent)} at t={point.t:g} merges "
              f"{t(', '.join(point.inputs)) or 'nothing'} ({point.inputs_from})")
    for stop in fig.stops:
        print(f"stop      {t(stop.event_id)} by {t(stop.agent)} at t={stop.t:g}"
              + (" (inferred: no explicit stop decision)" if stop.inferred else ""))
    for warning in fig.warnings:
        print(f"warning   {t(warning.message)}")
    return 0


def schema(args: argparse.Namespace) -> int:
    """Print the schema."""
    from viz_app.model import orchviz_schema

    print(json.dumps(orchviz_schema(), indent=2))
    return 0


def synth(args: argparse.Namespace) -> int:
    """Generate, validate and write a synthetic trace."""
    from viz_app.io.native import dump_trace, trace_from_dict, write_trace
    from viz_app.synth import synth_trace

    raw = synth_trace(args.agents, args.events, topology=args.topology, seed=args.seed)
    trace = trace_from_dict(raw, "<synth>")
    path = write_trace(trace, args.output)
    print(f"{path}: {len(trace.events)} events, {args.agents} agents "
          f"({len(dump_trace(trace)) / 1e6:.1f} MB)")
    return 0


# -- the `--traces` option of other verbs ----------------------------------------------------------


def add_traces_option(p: argparse.ArgumentParser, *, required: bool = False,
                      help: str = "a folder (or file) of the labelled traces") -> None:
    """Add `--traces`: one folder or file each time, repeatable (`--traces a --traces b`), so
    that positionals may follow it (`labels import --traces DIR FILE`)."""
    p.add_argument("--traces", action="append", metavar="DIR", required=required,
                   help=f"{help}; one per --traces, repeat it for more "
                   "(--traces a --traces b)")


def progress_bar(desc: str) -> IndexProgress:
    """A progress callback (done, total, path) that draws a bar on stderr in a terminal."""
    bar: list[tqdm] = []

    def update(done: int, total: int, path: str) -> None:
        if not bar:
            bar.append(tqdm(total=total, desc=desc, unit="file", disable=None, file=sys.stderr))
        bar[0].n = done
        bar[0].refresh()
        if done >= total:
            bar[0].close()

    return update


def say_unread(unread: Sequence[LibraryFailure], option: str = "--traces") -> None:
    """Say once on stderr how many files gave no trace (naming a couple), rather than a line
    per file: a labels file beside the traces is no error."""
    files = list(dict.fromkeys(failure.path for failure in unread))
    if not files:
        return
    named = ", ".join(terminal_text(Path(f).name) for f in files[:2]) + \
        (f" and {len(files) - 2} more" if len(files) > 2 else "")
    print(f"skipped {len(files)} file{'s' if len(files) != 1 else ''} under {option} that "
          f"orchviz cannot read as traces ({named}); `orchviz validate` says why",
          file=sys.stderr)
