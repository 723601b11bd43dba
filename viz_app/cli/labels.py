"""`orchviz labels ...`: export, import, progress, agreement and the rubric, on the workspace
the app uses (its database, its rubric, the traces named by `--traces`)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

import orjson
from pydantic import ValidationError
from tqdm import tqdm

from viz_app.cli.traces import add_traces_option, progress_bar, say_unread
from viz_app.cli.workspace import add_rubric_option, open_workspace, store_options
from viz_app.errors import LabelError, OrchvizError
from viz_app.export import (CONFIRMATIONS, DISPUTED, FORMATS, NEEDS_TRACES, TRAINING,
                            ExportOptions, check_options)
from viz_app.labels import load_rubric, rubric_agreement
from viz_app.text import terminal_text
from viz_app.workspace import TraceSet, Workspace


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `labels` and its verbs."""
    top = verbs.add_parser("labels", help="export, import and check reward labels",
                           description="Work on the label store: export labels for training, "
                           "import labels from elsewhere, show progress and agreement.")
    sub = top.add_subparsers(dest="labels_verb", metavar="VERB", required=True)

    formats = "\n".join(textwrap.fill(
        f"{f.name:<16}{f.title}" + (f" [{f.trainer}]" if f.trainer
                                    else f" [{f.framework}]" if f.framework else "")
        + (" (needs --traces)" if f.needs_traces else ""), 90, initial_indent="  ",
        subsequent_indent=" " * 18, break_on_hyphens=False) for f in FORMATS.values())
    p = sub.add_parser("export", help="write current labels in a training format",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       description=textwrap.fill(
                           "Write the current labels (newest per reviewer, target and "
                           "question), or the current bookmarks, in one format:", 90) + "\n\n"
                       f"{formats}\n\n" + textwrap.fill(
                           f"The training shapes ({', '.join(TRAINING)}) leave out a target "
                           "whose reviewers disagree and say so (--disputed), keep the "
                           "provenance of every label on their rows, and can be written as a "
                           "Hugging Face datasets folder (--hf-dataset). docs/trainers/ has a "
                           "page per framework.", 90))
    _common(p, traces_required=False)
    p.add_argument("--format", choices=list(FORMATS), required=True, metavar="FORMAT",
                   help="one of: " + ", ".join(FORMATS))
    p.add_argument("-o", "--output", required=True, help="the file (or folder) to write")
    p.add_argument("--reviewer", help="only this reviewer's labels")
    p.add_argument("--from-scores", action="store_true", default=None,
                   help="preference, openrlhf-rm: also pair traces of one task_id by their "
                   "scalar labels")
    p.add_argument("--min-reviewers", type=int, metavar="K",
                   help="training shapes: leave out targets answered by fewer than K "
                   "reviewers (default 1)")
    p.add_argument("--disputed", choices=DISPUTED,
                   help="training shapes: a target whose reviewers disagree is left out and "
                   "reported (drop, the default), averaged and marked disputed (mean), or "
                   "given an adjudicator's answer (adjudicated)")
    p.add_argument("--adjudicated-only", action="store_true", default=None,
                   help="training shapes: only targets with an adjudicated label (none exist "
                   "until review campaigns adjudicate)")
    p.add_argument("--threshold", type=float, metavar="T",
                   help="where a shape needs a bool (stepwise, unpaired, openrlhf-prm, rllm, "
                   "agent-lightning): True when the reward is above T (default 0: a neutral "
                   "answer is not a desirable one)")
    p.add_argument("--prompt-with-system", action="store_true", default=None,
                   help="put the trace's free-text system description at the head of prompts "
                   "(left out by default: it can state the answer)")
    p.add_argument("--conversational", action="store_true", default=None,
                   help="unpaired, preference, openrlhf-rm: prompts and completions as lists "
                   "of {role, content} messages")
    p.add_argument("--allow-cross-task", action="store_true", default=None,
                   help="preference, openrlhf-rm: write judged pairs whose traces attempt "
                   "different tasks (left out and counted by default)")
    p.add_argument("--max-length", type=int, metavar="N",
                   help="training shapes: leave out rows longer than N (tokens with "
                   "--tokenizer, else characters) and name them")
    p.add_argument("--tokenizer", metavar="DIR",
                   help="training shapes: count lengths in the tokens of this local tokenizer "
                   "folder (needs transformers) instead of characters")
    p.add_argument("--confirmations", choices=CONFIRMATIONS,
                   help="decision-pairs shapes: the pairs of decisions judged sound (the "
                   "decision made chosen over the alternative its corrections name): all, as "
                   "many as the corrections of each sub-decision (balanced, the default), or "
                   "none")
    p.add_argument("--hf-dataset", action="store_true",
                   help="training shapes: write a Hugging Face datasets folder (Parquet shards "
                   "and a dataset card) at -o")
    p.add_argument("--other-versions", choices=("keep", "drop"),
                   help="labels made on another version of their trace than the library holds "
                   "now (the file changed since): keep them (each row names its trace_sha256) "
                   "or drop them; the export says which and how many either way (default: "
                   "keep)")
    p.set_defaults(run=export_verb)

    p = sub.add_parser("import", help="add labels from files in the jsonl export's shape",
                       description="Import label records (JSON Lines, or a JSON array). A record "
                       "needs trace_id, event_id (null for the trace), question, value and "
                       "reviewer; the reward comes from the rubric, missing times and hashes are "
                       "filled in, and a record without label_id gets one from its content, so "
                       "importing a file twice adds nothing. All or nothing per file. Options "
                       "may come first: orchviz labels import --traces DIR FILE...")
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="label files: JSON Lines, or a JSON array of records")
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

    p = sub.add_parser("check-signal", help="does an export teach the decision? a pairwise "
                       "model's held-out accuracy beside the baselines that read no context",
                       description="Fit a small pairwise model (scikit-learn) on part of a "
                       "pairwise export's rows (decision-pairs, openrlhf-decision-pairs, "
                       "preference, openrlhf-rm; a file or a --hf-dataset folder) and report, "
                       "per sub-decision and for corrections and confirmations apart and "
                       "together, its held-out pairwise accuracy with a Wilson 95 % interval, "
                       "beside the length baseline (the longer side wins), the template "
                       "baseline (the action that won more often in training wins) and the "
                       "same model reading the answers alone; it warns when the rows can be "
                       "told apart without reading the prompt. docs/trainers/decision-pairs.md "
                       "says what the figures mean.")
    p.add_argument("export", metavar="EXPORT", help="the export file or folder")
    p.add_argument("--held-out", metavar="EXPORT",
                   help="score on this export's rows instead (train on all of EXPORT): "
                   "another split, such as later traces")
    p.add_argument("--share", type=float, default=0.3,
                   help="without --held-out, the share of EXPORT's traces held out "
                   "(default 0.3; a hash of the trace id picks them)")
    p.add_argument("--json", action="store_true", help="print the figures as JSON")
    p.set_defaults(run=check_signal_verb)

    p = sub.add_parser("rubric", help="check a rubric file and print it",
                       description="Load a rubric (default: the packaged one), report any error "
                       "with its place, and print its questions.")
    add_rubric_option(p)
    p.add_argument("--json", action="store_true", help="print the rubric as JSON")
    p.set_defaults(run=rubric_verb)


def _common(p: argparse.ArgumentParser, traces_required: bool, traces: bool = True) -> None:
    store_options(p)
    if traces:
        add_traces_option(p, required=traces_required, help="a folder (or file) of the "
                          "labelled traces" + ("" if traces_required else
                                               " (needed by " + ", ".join(NEEDS_TRACES) + ")"))


def _read_traces(ws: Workspace) -> TraceSet:
    """The workspace's traces, saying once what it skipped."""
    found = ws.library.read_traces(progress_bar("reading traces"))
    say_unread(found.unread)
    return found


OPTIONS = ("min_reviewers", "adjudicated_only", "disputed", "threshold", "prompt_with_system",
           "conversational", "from_scores", "allow_cross_task", "max_length", "tokenizer",
           "confirmations")
"""The export options a format may or may not take (`ExportFormat.accepts`)."""


def export_verb(args: argparse.Namespace) -> int:
    """Write current labels (or bookmarks) in one format."""
    found = FORMATS[args.format]
    given = {name: getattr(args, name) for name in OPTIONS if getattr(args, name) is not None}
    if args.hf_dataset and not found.training:
        print(f"--hf-dataset writes the training shapes ({', '.join(TRAINING)}), not "
              f"{args.format}", file=sys.stderr)
        return 2
    try:
        check_options(args.format, given)
    except OrchvizError as err:
        print(err, file=sys.stderr)
        return 2
    if found.needs_traces and not args.traces:
        print(f"--format {args.format} needs the traces: add --traces DIR", file=sys.stderr)
        return 2
    from_scores = bool(given.pop("from_scores", False))
    try:
        options = ExportOptions(**given) if found.training else None
    except ValidationError as err:
        print("; ".join(f"--{e['loc'][0].replace('_', '-')}: {e['msg']}" for e in err.errors()),
              file=sys.stderr)
        return 2
    ws = open_workspace(args)
    traces = _read_traces(ws).traces if found.needs_traces else None
    result = ws.exports.write(args.format, args.output, traces=traces, reviewer=args.reviewer,
                       from_scores=from_scores, options=options, hf_dataset=args.hf_dataset,
                       other_versions=args.other_versions)
    for sentence in [*result.left_out, *result.notes]:
        print(terminal_text(sentence), file=sys.stderr)
    print(terminal_text(result.text))
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
    """Import label files, each all or nothing; 1 when any file was refused."""
    ws = open_workspace(args)
    traces = _read_traces(ws).traces
    failed = 0
    for path in tqdm(args.files, desc="importing", unit="file", disable=None, file=sys.stderr):
        try:
            origin = args.origin or Path(path).name
            report = ws.labelling.import_labels(read_records(path), traces, origin)
        except (LabelError, OSError) as err:
            reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
            tqdm.write(f"{terminal_text(path)}: nothing imported: "
                       f"{terminal_text(reason.removeprefix(origin + ': '))}", sys.stderr)
            failed += 1
            continue
        tqdm.write(f"{terminal_text(path)}: {report.text}")
    return 1 if failed else 0


def progress_verb(args: argparse.Namespace) -> int:
    """Print each trace's progress."""
    ws = open_workspace(args)
    for trace_id, trace in sorted(_read_traces(ws).traces.items()):
        print(f"{terminal_text(trace_id)}: {ws.labelling.progress(trace, args.reviewer).text}")
    return 0


def agreement_verb(args: argparse.Namespace) -> int:
    """Print agreement per question."""
    ws = open_workspace(args)
    report = rubric_agreement(ws.rubric, ws.labelling.current_records())
    if args.json:
        print(json.dumps([q.model_dump() for q in report], indent=2, default=str))
        return 0
    for q in report:
        alpha = f"alpha {q.alpha:.3f}" if q.alpha is not None else f"alpha -  ({q.note})"
        print(f"{terminal_text(q.question):<24}{alpha}; {q.shared_targets} targets with 2+ "
              f"reviewers ({q.level})")
        for d in q.disagreements[:5]:
            answers = ", ".join(f"{r}: {v}" for r, v in d.answers.items())
            print(f"    {terminal_text(d.trace_id)} {terminal_text(d.event_id or '(trace)')}  "
                  f"spread {d.spread:.2f}  {terminal_text(answers)}")
    return 0


def rubric_verb(args: argparse.Namespace) -> int:
    """Check and print a rubric (RubricError, printed by `main`, names the place)."""
    rubric = load_rubric(args.rubric)
    if args.json:
        print(rubric.model_dump_json(indent=2))
        return 0
    print(f"{terminal_text(rubric.name)} {terminal_text(rubric.version)} "
          f"(sha256 {rubric.sha256[:12]})")
    for q in rubric.questions:
        taxonomy = " ".join(x for x in (q.family, q.credit_unit, q.sub_decision) if x)
        print(f"  {q.id:<24}{q.kind:<12}on {q.target.kind:<10}{taxonomy}"
              + ("  (optional)" if q.optional else ""))
    return 0


def check_signal_verb(args: argparse.Namespace) -> int:
    """Fit the pairwise model on part of an export and print the held-out figures."""
    from viz_app.labels import check_signal, pairs_of, read_rows, split_rows

    try:
        pairs = pairs_of(read_rows(args.export))
        if args.held_out:
            train, test = pairs, pairs_of(read_rows(args.held_out))
        else:
            if not 0 < args.share < 1:
                print("--share is a share of the traces, between 0 and 1", file=sys.stderr)
                return 2
            train, test = split_rows(pairs, args.share)
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        print(f"{terminal_text(args.export)}: not read: {terminal_text(reason)}",
              file=sys.stderr)
        return 1
    except ImportError:
        print("check-signal needs scikit-learn: pip install 'orchviz[agreement]'",
              file=sys.stderr)
        return 1
    if len(train) < 2 or not test:
        print(f"{terminal_text(args.export)}: too few pairs to fit and score ({len(train)} to "
              f"train, {len(test)} held out)", file=sys.stderr)
        return 1
    report = check_signal(train, test)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2))
        return 0
    for line in report.lines():
        print(terminal_text(line))
    return 0

