"""`orchviz replay TRACE --event ID --decision TEXT -o OUT`: continue a trace from an edited
decision with a model behind an OpenAI-compatible endpoint, and write the branch."""

from __future__ import annotations

import argparse
import sys

from viz_app.cli.workspace import add_db_option, no_store, open_workspace
from viz_app.errors import OrchvizError
from viz_app.io.detect import read_any
from viz_app.model import DECISIONS
from viz_app.settings import ModelEndpoint, ReplayLimits
from viz_app.text import terminal_text

LIMITS = ReplayLimits()


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `replay`."""
    p = verbs.add_parser(
        "replay", help="continue a trace from an edited decision with a model",
        description="Put a decision of your own in place of the orchestrator's at one event, "
        "send the orchestrator's context up to it (the events it had seen, as its "
        "conversation) to a model behind an OpenAI-compatible endpoint, and record the "
        "orchestrator's next turns as a new trace (a branch) linked to the original by the "
        "edited event's `forked_from` and `fork_event`. Only the orchestrator's own turns are "
        "replayed: the sub-agents, tools and messages it asks for are recorded as requested, "
        "not run. A timeout, an HTTP error, a refusal or a reply that is not the turn asked "
        "for writes nothing. The API key is read from the environment variable "
        "--judge-key-env, never given here.")
    p.add_argument("trace", metavar="TRACE", help="a trace file (any format orchviz reads)")
    p.add_argument("--trace-id", help="the trace to continue when the file holds several")
    p.add_argument("--event", required=True, metavar="ID",
                   help="the orchestrator's event whose decision is replaced")
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument("--decision", metavar="TEXT",
                       help="the decision it should have made, in its words (the merge it "
                       "should have written, why it waits, the message it should have sent)")
    given.add_argument("--correction-by", metavar="REVIEWER",
                       help="start from the correction this reviewer saved at the event in "
                       "--db (a merge, a premature stop with its pointer, a message to send)")
    add_db_option(p, help="with --correction-by: the store (a SQLAlchemy URL or a SQLite "
                  "file; default: orchviz.db)")
    p.add_argument("--kind", choices=DECISIONS, default=None,
                   help="which decision that is (default: the event's own kind)")
    p.add_argument("--to", default="", metavar="AGENT",
                   help="the agent the decision spawns, delegates to or messages")
    p.add_argument("-o", "--output", required=True, help="the branch's file (.json or .json.gz)")
    p.add_argument("--judge-url", required=True, metavar="URL",
                   help="the OpenAI-compatible endpoint (https://api.openai.com/v1, a vLLM or "
                   "Ollama server, a gateway)")
    p.add_argument("--judge-model", required=True, metavar="M", help="the model to ask")
    p.add_argument("--judge-key-env", metavar="VAR", default="OPENAI_API_KEY",
                   help="the environment variable holding the API key (default: "
                   "OPENAI_API_KEY)")
    p.add_argument("--judge-timeout", metavar="SECONDS", type=float, default=60.0,
                   help="how long one request may take (default: 60)")
    p.add_argument("--turns", type=int, default=LIMITS.turns,
                   help=f"the orchestrator's turns asked for at most (default: {LIMITS.turns})")
    p.add_argument("--deadline", metavar="SECONDS", type=float, default=LIMITS.deadline,
                   help="how long the whole continuation may take (default: "
                   f"{LIMITS.deadline:g})")
    p.add_argument("--max-tokens", type=int, default=LIMITS.max_tokens,
                   help=f"tokens one turn may be (default: {LIMITS.max_tokens})")
    p.set_defaults(run=replay_verb)


def replay_verb(args: argparse.Namespace) -> int:
    """Continue the trace and write the branch."""
    from pydantic import ValidationError

    from viz_app.branch import Replacement, default_kind

    found = read_any(args.trace)
    traces = [t for t in found if args.trace_id is None or t.trace_id == args.trace_id]
    if len(traces) != 1:
        held = ", ".join(t.trace_id for t in found[:20])
        raise OrchvizError(f"{args.trace}: pick one trace with --trace-id (it holds: {held})")
    trace = traces[0]
    try:
        endpoint = ModelEndpoint(url=args.judge_url, model=args.judge_model,
                                 key_env=args.judge_key_env, timeout=args.judge_timeout)
        limits = ReplayLimits(turns=args.turns, deadline=args.deadline,
                              max_tokens=args.max_tokens)
        if args.decision is not None:
            kind = args.kind or default_kind(trace, args.event)
            replacement = Replacement(kind=kind, text=args.decision, to=args.to)
    except ValidationError as err:
        first = err.errors()[0]
        raise OrchvizError(f"--{'-'.join(map(str, first['loc']))}: {first['msg']}") from None
    if args.correction_by is not None:
        if no_store(args.db):
            raise OrchvizError(f"no label store at {args.db}: --correction-by reads the "
                               "reviewer's correction from it")
        ws = open_workspace(args)
        found = ws.branches.correction_at(trace, args.event, args.correction_by)
        if found is None:
            raise OrchvizError(f"{args.correction_by} saved no correction at {args.event} of "
                               f"{trace.trace_id} in {args.db}")
        replacement = found
    else:
        ws = open_workspace(args, db="sqlite://")  # writes no store: the branch goes to --output
    branch, path = ws.branches.continue_from(trace, args.event, replacement, endpoint=endpoint,
                                    limits=limits, output=args.output)
    ending = "the turn limit" if branch.fork.turn_limit_reached else "a stop"
    print(f"{terminal_text(branch.trace.trace_id)} -> {terminal_text(path)}: {branch.turns} "
          f"turns of {terminal_text(endpoint.model)} after {terminal_text(args.event)}, ended at "
          f"{ending}; {len(branch.fork.requested)} requests shown, not run "
          f"({branch.seconds:.1f} s)")
    for warning in branch.warnings:
        print(f"warning: {terminal_text(warning)}", file=sys.stderr)
    return 0

