"""`orchviz suggest ...`: run a producer (the rules, or a judge model) over traces and store its
suggested answers apart from the labels; `orchviz suggest agreement` measures producers against
blind human labels.

`orchviz suggest --traces DIR ...` is the same as `orchviz suggest run --traces DIR ...`.
"""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from viz_app.cli.models import ModelLine, print_model_table, training_options, training_workspace
from viz_app.cli.traces import add_traces_option, progress_bar, say_unread
from viz_app.cli.workspace import open_workspace, store_options
from viz_app.errors import OrchvizError
from viz_app.text import terminal_text
from viz_app.workspace import Workspace

FAILURES_SHOWN = 5
"""How many failures are printed one per line; the rest are counted."""


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `suggest` and its verbs (`run`, the default, and `agreement`)."""
    top = verbs.add_parser(
        "suggest", help="suggest labels with the rules or a judge model",
        description="Run a producer over traces and store what it suggests, apart from the "
        "labels: the deterministic rules (premature or late stop, dropped or unfaithful merge, "
        "over-spawning, redundant messages, re-delegated tasks; docs/suggestions.md) or a judge "
        "model behind any OpenAI-compatible endpoint. Running one producer version on one "
        "trace again adds nothing. Without a verb, `suggest` runs (`suggest run`).")
    _run_options(top)
    top.set_defaults(run=run_verb)
    sub = top.add_subparsers(dest="suggest_verb", metavar="VERB")
    p = sub.add_parser("run", help="run a producer over traces and store its suggestions "
                       "(the default verb)",
                       description="Run a producer over traces and store its suggestions.")
    _run_options(p)
    p.set_defaults(run=run_verb)
    # `orchviz suggest agreement` registers itself on `sub` below this line.
    p = sub.add_parser(
        "agreement", help="agreement of each producer with blind human labels",
        description="For each question and producer: Krippendorff's alpha and Cohen's kappa "
        "of its suggestions against the human labels made without suggestions in view, each "
        "with a bootstrap 95% interval over targets, a confusion matrix (rows: reviewers' "
        "answers, columns: the producer's), and the same between the reviewers for "
        "comparison. Labels made with suggestions in view are left out (docs/suggestions.md, "
        "Agreement).")
    store_options(p)
    p.add_argument("--question", metavar="Q", help="one question's id (default: every "
                   "question with a measurable answer)")
    p.add_argument("--resamples", type=int, default=1000,
                   help="bootstrap resamples of the targets (default: 1000)")
    p.add_argument("--seed", type=int, default=0, help="the bootstrap's seed (default: 0)")
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.add_argument("--versions", action="store_true",
                   help="each producer version measured alone, oldest first, and the versions "
                   "whose alpha left the previous version's 95%% interval (the Agreement "
                   "page's chart over time)")
    p.set_defaults(run=agreement_verb)
    p = sub.add_parser(
        "train", help="fit the learned producer on the team's blind labels of one question",
        description="Fit a calibrated classifier (scikit-learn: the `agreement` extra) on the "
        "features of each target of one question (the rules' signals, pending and late "
        "returns at a stop, how far an aggregate keeps each merged result, repeated "
        "sub-tasks, fan-out, depth, tokens, timing), learning from blind human labels: an "
        "adjudication replaces its target's answers; a target whose blind reviewers disagree "
        "and that is not adjudicated is left out; imported labels and suggestions are never "
        "learnt from. Reports its agreement with held-out human labels (folds of whole "
        "traces: Krippendorff's alpha and Cohen's kappa with bootstrap 95% intervals) and "
        "stores it under the hash of its training set; `orchviz suggest --producer learned` "
        "then uses the newest model of each question (docs/suggestions.md, The learned "
        "producer).")
    p.add_argument("--question", metavar="Q", required=True,
                   help="the question to learn (a categorical, scale or boolean question)")
    training_options(p)
    p.set_defaults(run=train_verb)
    p = sub.add_parser(
        "models", help="list the learned producer's stored models",
        description="Every stored model of the learned producer, newest first: its version "
        "(what its suggestions carry), question, campaign, when it was trained, how many "
        "targets it learnt from and its held-out alpha; the newest of each question is the "
        "one `--producer learned` uses.")
    store_options(p, rubric=False)
    p.add_argument("--question", metavar="Q", help="one question's models only")
    p.set_defaults(run=models_verb)


def _run_options(p: argparse.ArgumentParser) -> None:
    add_traces_option(p, help="a folder (or file) of traces to suggest labels for")
    store_options(p)
    p.add_argument("--producer", choices=("rules", "judge", "learned"), default="rules",
                   help="rules (deterministic detectors, the default), judge (a language "
                   "model; needs --judge-url and --judge-model) or learned (the newest model "
                   "`orchviz suggest train` stored for each question)")
    p.add_argument("--learned-question", metavar="Q", action="append",
                   dest="learned_questions",
                   help="learned: use only this question's model (repeat for more; default: "
                   "the newest model of every question that has one)")
    p.add_argument("--judge-url", metavar="URL",
                   help="judge: the OpenAI-compatible endpoint (https://api.openai.com/v1, a "
                   "vLLM or Ollama server, a gateway)")
    p.add_argument("--judge-model", metavar="M", help="judge: the model to ask")
    p.add_argument("--judge-key-env", metavar="VAR", default="OPENAI_API_KEY",
                   help="judge: the environment variable holding the API key (default: "
                   "OPENAI_API_KEY; the key itself is never an argument)")
    p.add_argument("--judge-timeout", metavar="SECONDS", type=float, default=60.0,
                   help="judge: the deadline of each question's whole call, retries included, "
                   "before it is a failure (default: 60)")
    p.add_argument("--judge-question", metavar="Q", action="append", dest="judge_questions",
                   help="judge: ask only this question (repeat for more; default: every "
                   "question with an answer to suggest, one request per target and question)")
    p.add_argument("--few-shot", metavar="K", type=int, default=0,
                   help="judge: show it up to K of the leads' adjudicated answers per question "
                   "as examples, spread over the answers (part of its prompt hash: other "
                   "examples make another version; default: none)")


def _judge(args: argparse.Namespace, ws: Workspace | None = None):
    """The judge the options describe, its few-shot examples read from the workspace;
    OrchvizError when it cannot be made."""
    if not args.judge_url or not args.judge_model:
        raise OrchvizError("--producer judge needs --judge-url and --judge-model")
    try:
        from viz_app.suggest import JudgeProducer
    except ImportError as err:
        raise OrchvizError(f"the judge is unavailable in this installation ({err})") from None
    if not args.judge_timeout > 0:
        raise OrchvizError("--judge-timeout is a number of seconds above 0")
    few = getattr(args, "few_shot", 0) or 0
    if few < 0:
        raise OrchvizError("--few-shot is a count of examples: 0 or more")
    examples = ws.suggestions.judge_examples(few, args.judge_questions) if few and ws is not None else ()
    return JudgeProducer(args.judge_url, args.judge_model, args.judge_key_env,
                         timeout=args.judge_timeout, questions=args.judge_questions,
                         examples=examples)


def run_verb(args: argparse.Namespace) -> int:
    """Read the traces, run the producer with a progress bar, store and summarise."""
    if not args.traces:
        raise OrchvizError("name the traces to suggest labels for: --traces DIR")
    if args.producer == "judge":
        _judge(args)  # a judge that cannot be made is refused before any trace is read
    ws = open_workspace(args)
    if args.producer == "learned":
        ws.suggestions.learned_producer(args.learned_questions)  # no model, no scikit-learn: say so first
    judge = _judge(args, ws) if args.producer == "judge" else None
    if judge is not None and judge.examples:
        counts: dict[str, int] = {}
        for example in judge.examples:
            counts[example.question.id] = counts.get(example.question.id, 0) + 1
        print(terminal_text(f"judge: {len(judge.examples)} few-shot examples ("
                            + ", ".join(f"{q} {n}" for q, n in counts.items())
                            + f"), prompt {judge.producer.prompt_sha256[:12]}"))
    found = ws.library.read_traces(progress_bar("reading traces"))
    say_unread(found.unread)
    bar: list[tqdm] = []

    def progress(done: int, total: int, trace_id: str) -> None:
        if not bar:
            bar.append(tqdm(total=total, desc=f"suggesting ({args.producer})", unit="trace",
                            disable=None, file=sys.stderr))
        bar[0].n = done
        bar[0].refresh()
        if done >= total:
            bar[0].close()

    learned = ws.suggestions.learned_producer(args.learned_questions) \
        if args.producer == "learned" else None
    report = ws.suggestions.run(found.traces, producer=args.producer, judge=judge, progress=progress,
                        learned=learned)
    print(terminal_text(report.text))
    for failure in report.failures[:FAILURES_SHOWN]:
        where = f"{failure.trace_id} {failure.event_id or 'trace'} {failure.question}".strip()
        print(f"failed: {terminal_text(where)}: {terminal_text(failure.error)}", file=sys.stderr)
    if len(report.failures) > FAILURES_SHOWN:
        print(f"... and {len(report.failures) - FAILURES_SHOWN} more failures", file=sys.stderr)
    return 0


def _stat(name: str, found) -> str:
    """'alpha 0.712 [0.601, 0.804]', or 'alpha -' when it cannot be computed."""
    if found.value is None:
        return f"{name} -"
    if found.low is None:
        return f"{name} {found.value:.3f}"
    return f"{name} {found.value:.3f} [{found.low:.3f}, {found.high:.3f}]"


def _versions(ws: Workspace, args: argparse.Namespace) -> int:
    """Print each producer version's agreement with blind labels, oldest first, and the
    versions that left their predecessor's interval (on stderr too: a script notices)."""
    from viz_app.labels import short_version

    history = ws.suggestions.agreement_history(args.question, resamples=args.resamples, seed=args.seed)
    if args.json:
        print(history.model_dump_json(indent=2))
        return 0
    print(f"{history.blind_labels} blind labels; each producer version measured alone; 95% "
          f"intervals from {history.resamples} resamples of the targets (seed {history.seed})")
    if not history.points:
        print("no producer version has a blind answer to compare with yet")
    shown = None
    for point in sorted(history.points, key=lambda p: (p.question, p.rater, p.created_at)):
        if (point.question, point.rater) != shown:
            shown = (point.question, point.rater)
            print(f"\n{terminal_text(point.question)} · {terminal_text(point.rater)}")
        moved = any((s.question, s.rater, s.version) == (point.question, point.rater,
                                                         point.version)
                    for s in history.shifts)
        print(f"  {terminal_text(short_version(point.version)):<28} since "
              f"{terminal_text(point.created_at[:16].replace('T', ' '))}  {point.targets:>5} "
              f"targets  {_stat('alpha', point.alpha)}" + ("  <- moved" if moved else ""))
    for shift in history.shifts:
        print(f"warning: {terminal_text(shift.text)}", file=sys.stderr)
    return 0


def agreement_verb(args: argparse.Namespace) -> int:
    """Print each producer's agreement with blind human labels, per question."""
    if args.resamples < 0:
        raise OrchvizError("--resamples is a count: 0 or more")
    ws = open_workspace(args, traces=())
    if args.versions:
        return _versions(ws, args)
    report = ws.suggestions.agreement(args.question, resamples=args.resamples, seed=args.seed)
    if args.json:
        print(report.model_dump_json(indent=2))
        return 0
    print(f"{report.blind_labels} blind labels; left out: {report.left_out_visible} made with "
          f"suggestions in view, {report.left_out_unknown} of unknown visibility made after "
          f"suggestions existed, {report.left_out_other} adjudications; 95% intervals from "
          f"{report.resamples} resamples of the targets (seed {report.seed}); confusion "
          "matrices: rows are the reviewers' answers, columns the producer's (reviewers: "
          "each pair counted both ways)")
    shown = None
    for row in report.rows:
        if row.question != shown:
            shown = row.question
            print(f"\n{terminal_text(row.question)} ({row.level})")
        rater = terminal_text(row.rater if row.rater == "reviewers" else
                              f"{row.rater} v{','.join(row.versions)}")
        print(f"  {rater:<28} {row.targets:>5} targets {row.pairs:>6} pairs  "
              f"{_stat('alpha', row.alpha)}  {_stat('kappa', row.kappa)}"
              + (f"  ({terminal_text(row.note)})" if row.note else ""))
        if row.pairs and row.labels:
            width = max(6, *(len(x) for x in row.labels)) + 1
            print("    " + " " * width + "".join(f"{terminal_text(x)[:width - 1]:>{width}}"
                                                   for x in row.labels))
            for name, counts in zip(row.labels, row.confusion):
                print(f"    {terminal_text(name)[:width - 1]:<{width}}"
                      + "".join(f"{c:>{width}}" for c in counts))
    return 0


def train_verb(args: argparse.Namespace) -> int:
    """Fit, cross-validate and store the learned producer's model of one question."""
    ws = training_workspace(args)
    model, added = ws.suggestions.train(args.question, args.campaign, folds=args.folds,
                                     resamples=args.resamples, seed=args.seed,
                                     progress=progress_bar("reading labelled traces"))
    if args.json:
        print(model.model_dump_json(include={"model_id", "question", "campaign",
                                             "features_version", "sklearn_version", "answers",
                                             "features", "report"}, indent=2))
        return 0
    r = model.report
    answers = ", ".join(f"{terminal_text(k)} {n}" for k, n in r.answers.items())
    bases = ", ".join(f"{n} {k}" for k, n in sorted(r.bases.items()))
    print(f"learned {terminal_text(model.question)} version {model.version}: {r.targets} "
          f"targets ({answers}; {bases}); left out: {terminal_text(r.left_out.text())}")
    print(f"held out ({r.folds} folds of whole traces), against {r.learned.pairs} blind "
          f"answers on {r.learned.targets} targets: {_stat('alpha', r.learned.alpha)}  "
          f"{_stat('kappa', r.learned.kappa)}"
          + (f"  ({terminal_text(r.learned.note)})" if r.learned.note else ""))
    print(f"reviewers among themselves on those targets ({r.reviewers.pairs} pairs): "
          f"{_stat('alpha', r.reviewers.alpha)}  {_stat('kappa', r.reviewers.kappa)}")
    print(f"held-out accuracy {r.accuracy:.3f}, mean confidence {r.mean_confidence:.3f}, "
          f"Brier {r.brier:.3f}")
    from viz_app.suggest import worse_than_chance

    worse = worse_than_chance(r)
    if worse is not None:
        print(f"WARNING: this model {worse}: `--producer learned` refuses it; label more "
              "targets (or check the labels) and train again", file=sys.stderr)
    print(("stored" if added else "already stored (the same training set)")
          + f"; suggest with it: orchviz suggest --producer learned --db {terminal_text(args.db)}"
          " --traces DIR")
    return 0


def models_verb(args: argparse.Namespace) -> int:
    """List the stored learned models, newest first, the one in use per question marked."""
    from viz_app.suggest import FEATURES_VERSION, LearnError, model_problem

    ws = open_workspace(args, traces=())
    used: set[str] = set()
    rubric = ws.rubric if ws.rubric_error is None else None
    lines: list[ModelLine | str] = []
    for m in ws.suggestions.model_listing(args.question):
        if isinstance(m, LearnError):  # a row that cannot be read: said in its place
            used.add(m.question)  # type: ignore[attr-defined]
            lines.append(f"REFUSED  {m}")
            continue
        mark = ""
        if m.question not in used:
            used.add(m.question)
            mark = "  (in use)"
        if m.features_version != FEATURES_VERSION:
            mark = f"  (stale: features {terminal_text(m.features_version)}, train again)"
        elif (problem := model_problem(m, rubric)) is not None:
            mark = f"  (NOT USED: {terminal_text(problem)})"
        alpha = _stat("held-out alpha", m.report.learned.alpha) if m.report else "-"
        lines.append(ModelLine(m.version, m.campaign, m.created_at, f"{len(m.rows):>5} targets",
                               alpha, question=m.question, mark=mark))
    print_model_table(lines, none="no learned model is stored: train one with `orchviz suggest "
                      "train --question Q`")
    return 0
