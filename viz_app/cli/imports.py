"""The `orchviz import` verb: convert files in other formats into orchviz traces."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tqdm import tqdm

from viz_app.cli.workspace import add_db_option, add_rubric_option
from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.detect import FORMATS, read_any
from viz_app.io.files import trace_files
from viz_app.io.native import dump_trace, write_trace
from viz_app.io.redact import redact
from viz_app.io.rollouts import join
from viz_app.model import Trace
from viz_app.text import file_name, terminal_text


def register(verbs: argparse._SubParsersAction) -> None:
    """Add the import verb."""
    formats = ", ".join(f"{f.name} ({f.title})" for f in FORMATS.values())
    p = verbs.add_parser(
        "import", help="convert traces from other formats (Claude Code, OpenAI Agents, OTLP...)",
        description="Convert files or folders into orchviz traces. The format of each file is "
        "detected unless --from names it; a Claude Code project folder or a Codex rollout "
        f"folder yields one trace per session. Formats: {formats}.")
    p.add_argument("sources", nargs="+", metavar="SRC", help="files or folders to import")
    p.add_argument("--from", dest="fmt", choices=list(FORMATS), metavar="FORMAT",
                   help="the format of every SRC (default: detect it)")
    out = p.add_mutually_exclusive_group()
    out.add_argument("-o", "--output", metavar="OUT",
                     help="write the one imported trace here (.json, or .jsonl for many)")
    out.add_argument("--out-dir", metavar="DIR", help="write one <trace_id>.json per trace")
    p.add_argument("--redact", action="store_true",
                   help="drop inline content, keeping a sha256 hash in content_ref")
    add_db_option(p, default=None, metavar="URL",
                  help="the store (a SQLAlchemy URL or a SQLite file): Who&When annotations "
                  "are stored there as imported labels")
    add_rubric_option(p, metavar="FILE",
                      help="with --db: the rubric those labels are checked against (default: "
                      "the packaged rubric; use the one the app runs with)")
    p.set_defaults(run=import_traces)


def collect(sources: list[str], fmt: str | None) -> tuple[list[Trace], list[TraceError]]:
    """Every trace the sources hold, and the errors of those that could not be read; says on
    stderr which format each file was read as."""
    def said(label: str, name: str) -> None:
        tqdm.write(f"{terminal_text(label)}: read as {name} ({FORMATS[name].title})",
                   file=sys.stderr)

    items: list[Path] = []
    for source in sources:
        path = Path(source)
        items.extend([path] if path.is_dir() and _is_session_folder(path, fmt)
                     else trace_files([source]))
    traces: list[Trace] = []
    errors: list[TraceError] = []
    for path in tqdm(items, desc="importing", unit="file", disable=None if len(items) > 1
                     else True, file=sys.stderr):
        try:
            traces.extend(read_any(path, fmt=fmt, on_format=said, on_error=errors.append))
        except TraceError as err:
            errors.append(err)
    return join(traces), errors


def _is_session_folder(path: Path, fmt: str | None) -> bool:
    from viz_app.io.detect import folder_format

    return fmt in ("claude_code", "codex") or folder_format(path) is not None


def import_traces(args: argparse.Namespace) -> int:
    """Import, optionally redact, and write the traces; 1 when any source failed."""
    traces, errors = collect(args.sources, args.fmt)
    for err in errors:
        print(terminal_text(err), file=sys.stderr)
    if args.db:
        _store_annotations(traces, args)
    if args.redact:
        traces = [redact(t) for t in traces]
    for trace in traces:
        for warning in analyze(trace).warnings:
            print(f"{terminal_text(trace.trace_id)}: warning: {terminal_text(warning.message)}",
                  file=sys.stderr)
    if not traces:
        print("nothing imported", file=sys.stderr)
        return 1
    if args.out_dir:
        used: set[str] = set()
        for trace in traces:
            name = file_name(trace.trace_id, used, ending=".json")
            used.add(name)
            print(terminal_text(write_trace(trace, Path(args.out_dir) / name)))
    elif args.output and not args.output.endswith((".jsonl", ".ndjson")):
        if len(traces) > 1:
            print(f"{len(traces)} traces imported: write them with --out-dir or to a .jsonl "
                  "file", file=sys.stderr)
            return 1
        print(terminal_text(write_trace(traces[0], args.output)))
    else:
        lines = b"".join(dump_trace(t, indent=False) + b"\n" for t in traces)
        if args.output:
            Path(args.output).parent.mkdir(parents=True, exist_ok=True)
            Path(args.output).write_bytes(lines)
            print(terminal_text(args.output))
        elif len(traces) == 1:
            sys.stdout.buffer.write(dump_trace(traces[0]) + b"\n")
        else:
            sys.stdout.buffer.write(lines)
    print(f"imported {len(traces)} trace{'s' if len(traces) != 1 else ''}"
          + (f", {len(errors)} source{'s' if len(errors) != 1 else ''} failed" if errors else ""),
          file=sys.stderr)
    return 1 if errors else 0


def _store_annotations(traces: list[Trace], args: argparse.Namespace) -> None:
    """Store every Who&When annotation among the traces as imported labels in the store of
    `--db`, checked against the rubric of `--rubric` (default: the packaged one)."""
    from viz_app.cli.workspace import open_workspace

    ws = open_workspace(args, traces=())
    added = ws.labelling.import_published(traces)
    print(f"stored {added} published label{'s' if added != 1 else ''} in "
          f"{terminal_text(ws.settings.db_url)}", file=sys.stderr)
