"""`orchviz labels ...`: export, import, progress, agreement and the rubric, on the label store
the app uses."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import orjson
from tqdm import tqdm

from viz_app.errors import TraceError
from viz_app.export import FORMATS, NEEDS_TRACES, WRITES_FOLDER, export
from viz_app.export.bookmarks import write_bookmarks
from viz_app.export.preference import unplaced_pairs, write_preference
from viz_app.io.detect import read_any
from viz_app.io.files import trace_files
from viz_app.labels.agreement import agreement
from viz_app.store.bookmarks import BookmarkStore
from viz_app.labels.rubric import LabelError, RubricError, load_rubric
from viz_app.labels.store import LabelStore
from viz_app.model import Trace
from viz_app.settings import database_url


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `labels` and its verbs."""
    top = verbs.add_parser("labels", help="export, import and check reward labels",
                           description="Work on the label store: export labels for training, "
                           "import labels from elsewhere, show progress and agreement.")
    sub = top.add_subparsers(dest="labels_verb", metavar="VERB", required=True)

    p = sub.add_parser("export", help="write current labels in a training format",
                       description="Write the current labels (newest per reviewer, target and "
                       "question). jsonl, csv, parquet: one row per label with every field. "
                       "rewards: per target, the mean reward over reviewers with count and "
                       "spread. traces: each labelled trace with its rewards filled (-o is a "
                       "folder). stepwise, unpaired: reward-model shapes (JSON Lines). "
                       "preference: one {prompt, chosen, rejected, margin} row per judged pair "
                       "of traces (needs --traces). bookmarks: the bookmarks and their notes.")
    _common(p, traces_required=False)
    p.add_argument("--format", choices=[*FORMATS, *CASE_STUDY_FORMATS], required=True)
    p.add_argument("--from-scores", action="store_true",
                   help="preference: also pair traces of one task_id by their scalar labels")
    p.add_argument("-o", "--output", required=True, help="the file (or folder) to write")
    p.add_argument("--reviewer", help="only this reviewer's labels")
    p.set_defaults(run=export_verb)

    p = sub.add_parser("import", help="add labels from files in the jsonl export's shape",
                       description="Import label records (JSON Lines, or a JSON array). A record "
                       "needs trace_id, event_id (null for the trace), question, value and "
                       "reviewer; the reward comes from the rubric, missing times and hashes are "
                       "filled in, and a record without label_id gets one from its content, so "
                       "importing a file twice adds nothing. All or nothing per file.")
    p.add_argument("files", nargs="+", metavar="FILE")
    _common(p, traces_required=True)
    p.add_argument("--origin", help="where the labels come from (default: the file's name)")
    p.set_defaults(run=import_verb)

    p = sub.add_parser("progress", help="how many targets of each trace are labelled",
                       description="For each trace: 'n of m targets labelled'.")
    _common(p, traces_required=True)
    p.add_argument("--reviewer", help="count only this reviewer's labels")
    p.set_defaults(run=progress_verb)

    p = sub.add_parser("agreement", help="Krippendorff's alpha per question",
                       description="Inter-reviewer agreement per question and the most "
                       "disputed targets.")
    _common(p, traces_required=False, traces=False)
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.set_defaults(run=agreement_verb)

    p = sub.add_parser("rubric", help="check a rubric file and print it",
                       description="Load a rubric (default: the packaged one), report any error "
                       "with its place, and print its questions.")
    p.add_argument("--rubric", help="a rubric YAML file (default: the packaged rubric)")
    p.add_argument("--json", action="store_true", help="print the rubric as JSON")
    p.set_defaults(run=rubric_verb)


def _common(p: argparse.ArgumentParser, traces_required: bool, traces: bool = True) -> None:
    p.add_argument("--db", default="orchviz.db",
                   help="label store: a SQLAlchemy URL or a SQLite file (default: orchviz.db)")
    p.add_argument("--rubric", help="a rubric YAML file (default: the packaged rubric)")
    if traces:
        p.add_argument("--traces", nargs="+", metavar="DIR", required=traces_required,
                       help="folders or files of the labelled traces"
                       + ("" if traces_required else " (needed by " + ", ".join(NEEDS_TRACES)
                          + ")"))


def _store(args: argparse.Namespace) -> LabelStore:
    return LabelStore(database_url(args.db), load_rubric(args.rubric))


def load_trace_map(paths: list[str]) -> dict[str, Trace]:
    """Every readable trace under the paths, by trace id (unreadable files are reported)."""
    found: dict[str, Trace] = {}
    files = trace_files(paths)
    for path in tqdm(files, desc="reading traces", unit="file", disable=None, file=sys.stderr):
        try:
            for trace in read_any(path, on_error=lambda err: tqdm.write(str(err), sys.stderr)):
                found.setdefault(trace.trace_id, trace)
        except TraceError as err:
            tqdm.write(str(err), sys.stderr)
    return found


CASE_STUDY_FORMATS = ("preference", "bookmarks")
"""Export formats of case studies: pairwise preferences, and bookmarks with their notes."""


def export_verb(args: argparse.Namespace) -> int:
    """Write current labels in one format."""
    try:
        store = _store(args)
    except RubricError as err:
        print(err, file=sys.stderr)
        return 1
    if args.format in CASE_STUDY_FORMATS:
        return _case_study_export(args, store)
    if args.format in NEEDS_TRACES and not args.traces:
        print(f"--format {args.format} needs the traces: add --traces DIR", file=sys.stderr)
        return 2
    traces = load_trace_map(args.traces) if args.traces else {}
    labels = store.current_records(reviewer=args.reviewer)
    written = export(args.format, labels, traces, store.rubric, args.output)
    missing = sorted({x["trace_id"] for x in labels} - set(traces)) if args.format in NEEDS_TRACES \
        else []
    for trace_id in missing:
        print(f"labels on trace {trace_id} skipped: it is not among --traces", file=sys.stderr)
    where = f"{len(written)} traces in {args.output}" if args.format in WRITES_FOLDER \
        else str(written)
    print(f"{len(labels)} current labels -> {where}")
    return 0


def _case_study_export(args: argparse.Namespace, store: LabelStore) -> int:
    """Write the preference rows (judged pairs, optionally pairs from scores) or the bookmarks."""
    if args.format == "bookmarks":
        path = write_bookmarks(BookmarkStore(store.url), args.output, args.reviewer)
        print(f"{len(path.read_bytes().splitlines())} current bookmarks -> {path}")
        return 0
    if not args.traces:
        print("--format preference needs the traces: add --traces DIR", file=sys.stderr)
        return 2
    traces = load_trace_map(args.traces)
    labels = store.current_records(reviewer=args.reviewer)
    for first, second in unplaced_pairs(labels, traces):
        print(f"judgement of {first} vs {second} skipped: a trace is not among --traces",
              file=sys.stderr)
    path = write_preference(labels, traces, args.output, from_scores=args.from_scores)
    print(f"{len(path.read_bytes().splitlines())} preference pairs -> {path}")
    return 0


def read_records(path: str) -> list[dict]:
    """Label records from a JSON Lines file or a JSON array; LabelError naming the line."""
    data = Path(path).read_bytes()
    if data.lstrip().startswith(b"["):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as err:
            raise LabelError(f"{path}: not valid JSON ({err})") from None
    records = []
    for number, line in enumerate(data.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError as err:
            raise LabelError(f"{path}: line {number}: not valid JSON ({err})") from None
    return records


def import_verb(args: argparse.Namespace) -> int:
    """Import label files, each all or nothing."""
    try:
        store = _store(args)
    except RubricError as err:
        print(err, file=sys.stderr)
        return 1
    traces = load_trace_map(args.traces)
    failed = 0
    for path in tqdm(args.files, desc="importing", unit="file", disable=None, file=sys.stderr):
        try:
            origin = args.origin or Path(path).name
            report = store.import_records(read_records(path), traces, origin)
        except (LabelError, OSError) as err:
            tqdm.write(f"{path}: nothing imported: {err}", sys.stderr)
            failed += 1
            continue
        tqdm.write(f"{path}: {report.read} records, {report.added} new labels")
    return 1 if failed else 0


def progress_verb(args: argparse.Namespace) -> int:
    """Print each trace's progress."""
    store = _store(args)
    for trace_id, trace in sorted(load_trace_map(args.traces).items()):
        print(f"{trace_id}: {store.progress(trace, args.reviewer).text}")
    return 0


def agreement_verb(args: argparse.Namespace) -> int:
    """Print agreement per question."""
    store = _store(args)
    report = agreement(store.rubric, store.current_records())
    if args.json:
        print(json.dumps([q.model_dump() for q in report], indent=2, default=str))
        return 0
    for q in report:
        alpha = f"alpha {q.alpha:.3f}" if q.alpha is not None else f"alpha -  ({q.note})"
        print(f"{q.question:<24}{alpha}; {q.shared_targets} targets with 2+ reviewers "
              f"({q.level})")
        for d in q.disagreements[:5]:
            answers = ", ".join(f"{r}: {v}" for r, v in d.answers.items())
            print(f"    {d.trace_id} {d.event_id or '(trace)'}  spread {d.spread:.2f}  {answers}")
    return 0


def rubric_verb(args: argparse.Namespace) -> int:
    """Check and print a rubric."""
    try:
        rubric = load_rubric(args.rubric)
    except RubricError as err:
        print(err, file=sys.stderr)
        return 1
    if args.json:
        print(rubric.model_dump_json(indent=2))
        return 0
    print(f"{rubric.name} {rubric.version} (sha256 {rubric.sha256[:12]})")
    for q in rubric.questions:
        taxonomy = " ".join(x for x in (q.family, q.credit_unit, q.sub_decision) if x)
        print(f"  {q.id:<24}{q.kind:<12}on {q.target.kind:<10}{taxonomy}"
              + ("  (optional)" if q.optional else ""))
    return 0
