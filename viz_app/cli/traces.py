"""Verbs on trace files: validate, inspect, schema, synth."""

from __future__ import annotations

import argparse
import json
import sys

from tqdm import tqdm

from viz_app.analysis import figures
from viz_app.errors import TraceError
from viz_app.io.files import trace_files
from viz_app.io.native import dump_trace, load_trace, load_traces, trace_from_dict
from viz_app.model import TOPOLOGIES, orchviz_schema


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
    files = trace_files(args.paths)
    report: list[dict] = []
    for path in tqdm(files, desc="validating", unit="file", disable=None, file=sys.stderr):
        errors: list[TraceError] = []
        count = 0
        try:
            for _ in load_traces(path, on_error=errors.append):
                count += 1
        except TraceError as err:
            errors.append(err)
        report.append({"file": str(path), "ok": not errors, "traces": count,
                       "errors": [e.as_dict() for e in errors]})
        if not args.json:
            tqdm.write(f"{path}: ok" if not errors else "\n".join(str(e) for e in errors))
    if args.json:
        print(json.dumps({"files": report, "valid": all(r["ok"] for r in report)}, indent=2))
    if not files:
        print("no trace files found", file=sys.stderr)
        return 1
    return 0 if all(r["ok"] for r in report) else 1


def inspect(args: argparse.Namespace) -> int:
    """Print one trace's figures."""
    try:
        trace = load_trace(args.trace)
    except TraceError as err:
        print(err, file=sys.stderr)
        return 1
    fig = figures(trace)
    if args.json:
        print(fig.model_dump_json(indent=2))
        return 0
    print(f"trace     {trace.trace_id}  (task {trace.task_id}, topology {trace.topology or '-'})")
    for key in ("events", "agents", "depth", "max_fanout", "mean_fanout", "messages", "tool_calls",
                "makespan_s", "parallelism", "critical_path_s", "tokens", "cost_usd"):
        value = getattr(fig, key)
        print(f"{key:<16}{value:.2f}" if isinstance(value, float) else f"{key:<16}{value}")
    for point in fig.aggregates:
        print(f"aggregate {point.event_id} by {point.agent} at t={point.t:g} merges "
              f"{', '.join(point.inputs) or 'nothing'} ({point.inputs_from})")
    for stop in fig.stops:
        print(f"stop      {stop.event_id} by {stop.agent} at t={stop.t:g}"
              + (" (inferred: no explicit stop decision)" if stop.inferred else ""))
    for warning in fig.warnings:
        print(f"warning   {warning.message}")
    return 0


def schema(args: argparse.Namespace) -> int:
    """Print the schema."""
    print(json.dumps(orchviz_schema(), indent=2))
    return 0


def synth(args: argparse.Namespace) -> int:
    """Generate, validate and write a synthetic trace."""
    from viz_app.io.native import write_trace
    from viz_app.synth import synth_trace

    raw = synth_trace(args.agents, args.events, topology=args.topology, seed=args.seed)
    trace = trace_from_dict(raw, "<synth>")
    path = write_trace(trace, args.output)
    print(f"{path}: {len(trace.events)} events, {args.agents} agents "
          f"({len(dump_trace(trace)) / 1e6:.1f} MB)")
    return 0
