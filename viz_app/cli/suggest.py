"""`orchviz suggest ...`: run a producer (the rules, or a judge model) over traces and store its
suggested answers apart from the labels; `orchviz suggest agreement` measures producers against
blind human labels.

`orchviz suggest --traces DIR ...` is the same as `orchviz suggest run --traces DIR ...`.
"""

from __future__ import annotations

import argparse
import sys

from tqdm import tqdm

from viz_app.cli.traces import add_traces_option, progress_bar, say_unread
from viz_app.errors import OrchvizError
from viz_app.labels.rubric import load_rubric
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


def _run_options(p: argparse.ArgumentParser) -> None:
    add_traces_option(p, help="a folder (or file) of traces to suggest labels for")
    p.add_argument("--db", default="orchviz.db",
                   help="the store: a SQLAlchemy URL or a SQLite file (default: orchviz.db)")
    p.add_argument("--rubric", help="a rubric YAML file (default: the packaged rubric)")
    p.add_argument("--producer", choices=("rules", "judge"), default="rules",
                   help="rules (deterministic detectors, the default) or judge (a language "
                   "model; needs --judge-url and --judge-model)")
    p.add_argument("--judge-url", metavar="URL",
                   help="judge: the OpenAI-compatible endpoint (https://api.openai.com/v1, a "
                   "vLLM or Ollama server, a gateway)")
    p.add_argument("--judge-model", metavar="M", help="judge: the model to ask")
    p.add_argument("--judge-key-env", metavar="VAR", default="OPENAI_API_KEY",
                   help="judge: the environment variable holding the API key (default: "
                   "OPENAI_API_KEY; the key itself is never an argument)")


def _judge(args: argparse.Namespace):
    """The judge the options describe; OrchvizError when it cannot be made."""
    if not args.judge_url or not args.judge_model:
        raise OrchvizError("--producer judge needs --judge-url and --judge-model")
    try:
        from viz_app.suggest.judge import JudgeProducer
    except ImportError as err:
        raise OrchvizError(f"the judge is unavailable in this installation ({err})") from None
    return JudgeProducer(args.judge_url, args.judge_model, args.judge_key_env)


def run_verb(args: argparse.Namespace) -> int:
    """Read the traces, run the producer with a progress bar, store and summarise."""
    if not args.traces:
        raise OrchvizError("name the traces to suggest labels for: --traces DIR")
    judge = _judge(args) if args.producer == "judge" else None
    ws = Workspace.open(args.db, traces=args.traces, rubric=load_rubric(args.rubric))
    found = ws.read_traces(progress_bar("reading traces"))
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

    report = ws.suggest(found.traces, producer=args.producer, judge=judge, progress=progress)
    print(terminal_text(report.text))
    for failure in report.failures[:FAILURES_SHOWN]:
        where = f"{failure.trace_id} {failure.event_id or 'trace'} {failure.question}".strip()
        print(f"failed: {terminal_text(where)}: {terminal_text(failure.error)}", file=sys.stderr)
    if len(report.failures) > FAILURES_SHOWN:
        print(f"... and {len(report.failures) - FAILURES_SHOWN} more failures", file=sys.stderr)
    return 0
