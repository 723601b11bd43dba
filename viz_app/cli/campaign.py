"""`orchviz campaign ...`: review campaigns from the command line: create one over the library,
list them, see where one stands, export its labels, and name the members who lead and review.
Reviewers work in the app's Review page (or call `ws.campaigns.claim_next` / `submit`)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap
from pathlib import Path

from pydantic import ValidationError
from tqdm import tqdm

from viz_app.cli.traces import add_traces_option, say_unread
from viz_app.cli.workspace import open_workspace, store_options
from viz_app.errors import LabelError
from viz_app.export import FORMATS, ExportOptions
from viz_app.labels import (FIGURES, ORDERS, ROLES, STRATA, CampaignSpec, CampaignStatus,
                            DisputeThread, Filter, Reviewer, Sample, answer_text,
                            optional_questions, spec_error)
from viz_app.text import terminal_text

FILTER_KEYS = {"system": "systems", "topology": "topologies", "task": "tasks",
               "format": "formats", "folder": "folders", "text": "text"}
"""`--filter KEY=VALUE` keys, and the Filter field each fills."""

LABEL_FORMATS = [f for f, v in FORMATS.items() if v.reads == "labels"]
"""The formats a campaign's labels can be exported in."""

SHOWN = 10
"""Unresolved disagreements a status or export names before it says how many more."""


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `campaign` and its verbs."""
    top = verbs.add_parser(
        "campaign", help="review campaigns: a team labels a sampled pool",
        description="Review campaigns: a sample of the library's targets, K reviewers per "
        "target with reservations enforced by the database, gold items, adjudication. "
        "Reviewers work in the app's Review page; leads create, follow and export here.")
    sub = top.add_subparsers(dest="campaign_verb", metavar="VERB", required=True)

    p = sub.add_parser(
        "create", help="create a campaign over the library",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description=textwrap.fill(
            "Create a campaign: the traces under --traces that every --filter keeps, sampled "
            "(all by default), each target with the campaign's questions that apply; K "
            "reviewers per target (--per-target), a share given more for agreement, gold items "
            "from a labels file mixed in unannounced. The rubric (--rubric, default the "
            "packaged one) is pinned: every label of the campaign is saved under it. A pool "
            "given as --traces (docs/pools.md) is filtered and sampled in its index. A "
            "question asked only where nothing must be answered (spawn_necessity, "
            "delegation_fit, message_necessity) is asked on every target of its kind when "
            "named with --questions; the sampled traces are read to find them.", 90)
        + "\n\n" + textwrap.fill(
            "--filter KEY=VALUE (repeatable; a key given twice means any of its values): "
            f"{', '.join(FILTER_KEYS)}; and figure bounds FIGURE>=N or FIGURE<=N with FIGURE "
            f"one of {', '.join(FIGURES)}.", 90))
    p.add_argument("name", metavar="NAME", help="the campaign's name (unique in the database)")
    store_options(p)
    add_traces_option(p, required=True, help="a folder (or file) of the library's traces")
    p.add_argument("--filter", action="append", default=[], metavar="COND",
                   help="KEY=VALUE, FIGURE>=N or FIGURE<=N (see above)")
    sample = p.add_mutually_exclusive_group()
    sample.add_argument("--stratify", choices=STRATA, help="spread the sample evenly over the "
                        "values of this field")
    sample.add_argument("--groups", action="store_true", help="whole GRPO groups: every "
                        "rollout of the same task_id (--sample N counts groups)")
    sample.add_argument("--per-step", type=int, metavar="N", help="a trainer's rollouts: N "
                        "whole groups of each training step, and of each step that arrives "
                        "later (the campaign keeps sampling as the run trains)")
    p.add_argument("--sample", type=int, metavar="N", help="take N traces at random (N groups "
                   "with --groups; N traces spread over strata with --stratify)")
    p.add_argument("--seed", type=int, default=0, help="seed of every random choice "
                   "(default 0)")
    p.add_argument("--questions", nargs="+", metavar="Q", help="ask only these rubric "
                   "questions (their follow-ups come along); default: the required ones, and "
                   "those asked on the same targets (never spawn_necessity, delegation_fit or "
                   "message_necessity unless named)")
    p.add_argument("--per-target", type=int, default=1, metavar="K",
                   help="reviewers per target (default 1)")
    p.add_argument("--agreement-share", type=float, default=0.0, metavar="F",
                   help="share of targets given --agreement-k reviewers, to measure agreement "
                   "(such as 0.1)")
    p.add_argument("--agreement-k", type=int, default=2, metavar="K",
                   help="reviewers of a target kept for agreement (default 2)")
    p.add_argument("--gold", metavar="FILE", help="a labels file (the jsonl export's shape) "
                   "whose answers make gold items")
    p.add_argument("--gold-campaign", metavar="NAME", help="an earlier campaign whose "
                   "adjudicated answers make gold items")
    p.add_argument("--assisted", action="store_true", help="show reviewers the suggestions "
                   "before they answer")
    p.add_argument("--instructions", metavar="FILE.md", help="a Markdown file of instructions "
                   "for the reviewers, shown on the Review page beside the first target")
    p.add_argument("--order", choices=ORDERS, default="sample", help="queue order: the "
                   "sample's (default); flagged by suggestions first; agreement targets first; "
                   "uncertain: the learned producer's least certain targets first; contested: "
                   "where producers disagree with each other or with a first reviewer first; "
                   "reward: in a pool a reward server logged (orchviz reward serve --audit), "
                   "what the reward model is least sure of or furthest from a first reviewer "
                   "on first (docs/campaigns.md)")
    p.add_argument("--lease", type=int, default=600, metavar="SECONDS",
                   help="how long a claimed target stays reserved unless renewed (default 600)")
    p.add_argument("--lead", default=os.environ.get("USER", "lead"), metavar="NAME",
                   help="who creates it (default: $USER)")
    p.set_defaults(run=create_verb)

    p = sub.add_parser("list", help="list the campaigns",
                       description="Every campaign: name, targets, K, questions, creator.")
    store_options(p)
    p.add_argument("--json", action="store_true", help="print a machine-readable list")
    p.set_defaults(run=list_verb)

    p = sub.add_parser("status", help="where a campaign stands",
                       description="Targets, complete, in progress; per reviewer their saves "
                       "and gold accuracy; Krippendorff's alpha per question; the disagreements "
                       "no adjudication settled yet (never averaged).")
    p.add_argument("name", metavar="NAME", help="the campaign")
    store_options(p)
    p.add_argument("--json", action="store_true", help="print a machine-readable report")
    p.set_defaults(run=status_verb)

    p = sub.add_parser("close", help="close a campaign: no more claims",
                       description="Close a campaign (a lead's call): no reviewer is offered "
                       "a target of it any more (a target held now may still be saved until "
                       "its reservation ends); its labels, status and exports stay.")
    p.add_argument("name", metavar="NAME", help="the campaign")
    store_options(p, rubric=False)
    p.add_argument("--lead", default=os.environ.get("USER", "lead"), metavar="NAME",
                   help="who closes it (default: $USER)")
    p.set_defaults(run=close_verb)

    p = sub.add_parser("reopen", help="open a closed campaign again",
                       description="Reopen a closed campaign (a lead's call): its open "
                       "targets are offered to reviewers again.")
    p.add_argument("name", metavar="NAME", help="the campaign")
    store_options(p, rubric=False)
    p.add_argument("--lead", default=os.environ.get("USER", "lead"), metavar="NAME",
                   help="who reopens it (default: $USER)")
    p.set_defaults(run=reopen_verb)

    p = sub.add_parser("add", help="add traces of the library to a campaign",
                       description="Add traces to an open campaign (a lead's call): their "
                       "targets, with its questions and K, join its queue.")
    p.add_argument("name", metavar="NAME", help="the campaign")
    p.add_argument("trace_ids", nargs="+", metavar="TRACE_ID", help="traces of the library")
    add_traces_option(p, required=True, help="a folder (or file) of the library's traces")
    store_options(p)
    p.add_argument("--lead", default=os.environ.get("USER", "lead"), metavar="NAME",
                   help="who adds them (default: $USER)")
    p.set_defaults(run=add_verb)

    p = sub.add_parser("export", help="export a campaign's labels in any labels format",
                       description="Write the current (unretracted) labels of one campaign in "
                       "one of the labels export formats: every label (--all, the default) or "
                       "only the leads' adjudicated answers (--adjudicated-only). The training "
                       "shapes take, per target and question, the answer its reviewers agree "
                       "on, else the adjudicated one (with --adjudicated-only: only targets "
                       "with an adjudicated answer, what a trainer should read). Disagreements "
                       "without an adjudication are left out and reported, never averaged.")
    p.add_argument("name", metavar="NAME", help="the campaign")
    store_options(p)
    add_traces_option(p, help="a folder (or file) of the labelled traces (needed by the "
                      "formats that read traces)")
    p.add_argument("--format", choices=LABEL_FORMATS, required=True, metavar="FORMAT",
                   help="one of: " + ", ".join(LABEL_FORMATS))
    which = p.add_mutually_exclusive_group()
    which.add_argument("--adjudicated-only", action="store_true",
                       help="only the adjudicated labels")
    which.add_argument("--all", action="store_true", help="every current label (the default)")
    p.add_argument("-o", "--output", required=True, help="the file (or folder) to write")
    p.set_defaults(run=export_verb)

    p = sub.add_parser("thread", help="list a dispute's thread: notes, comments, reason",
                       description="The thread of a campaign's disputed targets: both "
                       "reviewers' answers, then, oldest first, each reviewer's notes from "
                       "their labels, the comments posted on the dispute, and the lead's "
                       "reason for the final answer. NAME alone lists every dispute of the "
                       "campaign; with TRACE_ID, those on one trace; with EVENT_ID too, one "
                       "target ('-' for the trace itself).")
    p.add_argument("name", metavar="NAME", help="the campaign")
    p.add_argument("trace_id", nargs="?", metavar="TRACE_ID", help="a trace of the campaign")
    p.add_argument("event_id", nargs="?", metavar="EVENT_ID",
                   help="the disputed event ('-' for the trace itself)")
    store_options(p)
    p.add_argument("--as", dest="viewer", default=os.environ.get("USER", "lead"),
                   metavar="NAME", help="who reads it: a lead, or a reviewer of the dispute "
                   "(default: $USER)")
    p.add_argument("--json", action="store_true", help="one JSON object per dispute and line")
    p.set_defaults(run=thread_verb)

    p = sub.add_parser("comment", help="post a comment on a dispute, or hide one or show it "
                       "again (a lead)",
                       description="Append a comment to the thread of a disputed target: a "
                       "reviewer on a dispute they are one side of, a lead on any target. "
                       "Comments are never edited; the text is Markdown, shown made safe. "
                       "A lead hides one with --hide ID --reason WHY (`campaign thread` "
                       "names each comment's id): reviewers then read 'hidden by LEAD: WHY' "
                       "in its place; its text is kept. A lead shows a hidden one again with "
                       "--show ID (--reason optional): another row, the hiding kept beside it; "
                       "the latest decides.")
    p.add_argument("name", metavar="NAME", help="the campaign")
    p.add_argument("trace_id", metavar="TRACE_ID", help="the trace of the target")
    p.add_argument("event_id", metavar="EVENT_ID", help="the event ('-' for the trace itself)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="what to say")
    what.add_argument("--hide", metavar="COMMENT_ID", help="hide this comment of the target's "
                      "thread (a lead; with --reason)")
    what.add_argument("--show", metavar="COMMENT_ID", help="show this hidden comment of the "
                      "target's thread again (a lead)")
    p.add_argument("--reason", default="", help="with --hide: why, as the reviewers read it; "
                   "with --show: why, if you like")
    store_options(p)
    p.add_argument("--as", dest="author", default=os.environ.get("USER", "lead"),
                   metavar="NAME", help="who says it (default: $USER)")
    p.set_defaults(run=comment_verb)

    members = sub.add_parser("members", help="who leads and who reviews",
                             description="With the app's sign-in configured, roles come from "
                             "this list: leads create campaigns, follow everyone's progress, "
                             "adjudicate and retract. Without sign-in names are not verified "
                             "and everyone may act as a lead.")
    msub = members.add_subparsers(dest="members_verb", metavar="VERB", required=True)
    p = msub.add_parser("add", help="add a member or change their role",
                        description="Add a member by the e-mail they sign in with, or change "
                        "their role.")
    p.add_argument("email", metavar="EMAIL", help="the e-mail they sign in with")
    p.add_argument("--role", choices=ROLES, required=True, help="lead or reviewer")
    p.add_argument("--by", default=os.environ.get("USER", "cli"), metavar="NAME",
                   help="who adds them (default: $USER)")
    store_options(p, rubric=False)
    p.set_defaults(run=members_add_verb)
    p = msub.add_parser("list", help="list the members", description="Every member and role.")
    store_options(p, rubric=False)
    p.add_argument("--json", action="store_true", help="print a machine-readable list")
    p.set_defaults(run=members_list_verb)


def parse_filter(conditions: list[str]) -> Filter:
    """A Filter from `--filter` conditions; LabelError naming one it cannot read."""
    found: dict = {"figures": {}}
    for condition in conditions:
        for op in (">=", "<=", "="):
            key, sep, value = condition.partition(op)
            if sep:
                break
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise LabelError(f"--filter {condition!r}: write KEY=VALUE, FIGURE>=N or FIGURE<=N")
        if op != "=" or key in FIGURES:
            if key not in FIGURES:
                raise LabelError(f"--filter {condition!r}: no figure {key!r} (figures: "
                                 f"{', '.join(FIGURES)})")
            try:
                number = float(value)
            except ValueError:
                raise LabelError(f"--filter {condition!r}: {value!r} is not a number") from None
            low, high = found["figures"].get(key, (None, None))
            if op == ">=":
                low = number
            elif op == "<=":
                high = number
            else:
                low = high = number
            found["figures"][key] = (low, high)
            continue
        field = FILTER_KEYS.get(key)
        if field is None:
            raise LabelError(f"--filter {condition!r}: no key {key!r} (keys: "
                             f"{', '.join(FILTER_KEYS)}, or a figure)")
        if field == "text":
            found["text"] = f"{found.get('text', '')} {value}".strip()
        else:
            found.setdefault(field, []).append(value)
    try:
        return Filter(**found)
    except ValidationError as err:
        raise spec_error(err) from None


def spec_of(args: argparse.Namespace) -> CampaignSpec:
    """The campaign spec the arguments of `campaign create` describe."""
    try:
        if args.per_step is not None:
            sample = Sample(kind="per_step", n=args.per_step, seed=args.seed)
        elif args.groups:
            sample = Sample(kind="groups", n=args.sample, seed=args.seed)
        elif args.stratify:
            sample = Sample(kind="stratified", n=args.sample, seed=args.seed,
                            field=args.stratify)
        elif args.sample is not None:
            sample = Sample(kind="random", n=args.sample, seed=args.seed)
        else:
            sample = Sample(kind="all", seed=args.seed)
        return CampaignSpec(
            name=args.name, questions=args.questions or [], per_target=args.per_target,
            agreement_share=args.agreement_share, agreement_k=args.agreement_k,
            filter=parse_filter(args.filter), sample=sample, gold=args.gold,
            gold_campaign=args.gold_campaign, assisted=args.assisted, order=args.order,
            lease_seconds=args.lease, instructions=_instructions(args.instructions))
    except ValidationError as err:
        raise spec_error(err) from None


def _instructions(path: str | None) -> str:
    """The text of an instructions file ('' for none); LabelError naming an unreadable one."""
    if not path:
        return ""
    try:
        return Path(path).read_text("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise LabelError(f"{path}: the instructions could not be read "
                         f"({getattr(err, 'strerror', None) or err})") from None


def creation_bar():
    """A progress callback for `create`: one bar while the library is indexed, one while
    traces are read for their targets (a question the index does not place), another while
    the targets are written (on stderr, in a terminal)."""
    bars: dict[str, tqdm] = {}

    def update(done: int, total: int, what: str) -> None:
        phase = {"targets": "writing targets", "reading": "reading traces"}.get(
            what, "indexing traces")
        bar = bars.get(phase)
        if bar is None:
            bar = bars[phase] = tqdm(total=total, desc=phase, disable=None, file=sys.stderr,
                                     unit={"targets": "row", "reading": "trace"}.get(what, "file"))
        bar.n = done
        bar.refresh()
        if done >= total:
            bar.close()

    return update


def create_verb(args: argparse.Namespace) -> int:
    """Create a campaign and say what it holds."""
    spec = spec_of(args)
    ws = open_workspace(args)
    campaign = ws.campaigns.create(spec, Reviewer(name=args.lead, via="cli"),
                                  progress=creation_bar())
    status = ws.campaigns.status(campaign.name)
    print(f"campaign {terminal_text(campaign.name)}: {campaign.targets} targets, "
          f"{status.slots} reviews to make (K={campaign.per_target}), {status.gold} gold; "
          f"questions {terminal_text(', '.join(campaign.questions))}; rubric "
          f"{terminal_text(campaign.rubric_version)} ({campaign.rubric_sha256[:12]})")
    left_out = [q for q in optional_questions(ws.rubric) if q not in campaign.questions]
    if not spec.questions and left_out:
        print("no --questions: the required questions are asked, with those on the same "
              f"targets; {terminal_text(', '.join(left_out))} (optional, on targets of their "
              "own) only when named with --questions")
    return 0


def list_verb(args: argparse.Namespace) -> int:
    """List the campaigns."""
    found = open_workspace(args).campaigns.all()
    if args.json:
        print(json.dumps([c.model_dump(mode="json") for c in found], indent=2))
        return 0
    if not found:
        print("no campaigns yet (orchviz campaign create NAME --traces DIR)")
    for c in found:
        closed = f", closed {c.closed_at}" if c.closed_at else ""
        print(f"{terminal_text(c.name)}: {c.targets} targets, K={c.per_target}, "
              f"{len(c.questions)} questions, by {terminal_text(c.created_by)} on "
              f"{c.created_at[:10]}{closed}")
    return 0


def _unresolved_lines(status: CampaignStatus) -> list[str]:
    lines = []
    if status.unresolved:
        count = len(status.unresolved)
        lines.append(f"{count} disagreement{'s' if count != 1 else ''} without an "
                     "adjudication (left unresolved, never averaged):")
        for d in status.unresolved[:SHOWN]:
            questions = ", ".join(f"{q} (spread {s:.2f})" for q, s in d.disputed.items())
            lines.append(f"  {terminal_text(d.trace_id)} {terminal_text(d.event_id or '(trace)')}"
                         f": {terminal_text(questions)}")
        if len(status.unresolved) > SHOWN:
            lines.append(f"  and {len(status.unresolved) - SHOWN} more (campaign status --json)")
    return lines


def status_verb(args: argparse.Namespace) -> int:
    """Print where a campaign stands."""
    status = open_workspace(args).campaigns.status(args.name)
    if args.json:
        print(json.dumps(status.as_json(), indent=2, default=str))
        return 0
    closed = f"; closed {status.closed_at[:16].replace('T', ' ')}" if status.closed_at else ""
    print(f"campaign {terminal_text(status.name)}: {status.targets} targets, "
          f"{status.complete} complete, {status.in_progress} in progress; "
          f"{status.saved} of {status.slots} reviews saved; {status.gold} gold{closed}")
    for r in status.reviewers:
        accuracy = (f"gold {r.gold_correct}/{r.gold_seen} ({r.accuracy:.0%})"
                    if r.accuracy is not None else "no gold yet")
        print(f"  {terminal_text(r.reviewer):<28} {r.saved} saved, {r.leased} reserved, "
              f"{r.skipped} skipped; {accuracy}")
    for q in status.agreement:
        alpha = f"alpha {q.alpha:.3f}" if q.alpha is not None else f"alpha -  ({q.note})"
        print(f"  {terminal_text(q.question):<24} {alpha}; {q.shared_targets} targets with 2+ "
              "reviewers")
    for line in _unresolved_lines(status):
        print(line)
    return 0


def close_verb(args: argparse.Namespace) -> int:
    """Close a campaign."""
    found = open_workspace(args).campaigns.close(args.name, Reviewer(name=args.lead, via="cli"))
    print(f"campaign {terminal_text(found.name)} is closed: no more claims "
          f"({found.targets} targets)")
    return 0


def reopen_verb(args: argparse.Namespace) -> int:
    """Reopen a campaign."""
    found = open_workspace(args).campaigns.reopen(args.name, Reviewer(name=args.lead, via="cli"))
    print(f"campaign {terminal_text(found.name)} is open again ({found.targets} targets)")
    return 0


def add_verb(args: argparse.Namespace) -> int:
    """Add traces to a campaign."""
    added = open_workspace(args).campaigns.add_traces(args.name, args.trace_ids,
                                                  Reviewer(name=args.lead, via="cli"))
    print(f"campaign {terminal_text(args.name)}: {added} targets added")
    return 0


def export_verb(args: argparse.Namespace) -> int:
    """Export a campaign's labels; the unresolved disagreements are reported on stderr."""
    found = FORMATS[args.format]
    if found.needs_traces and not args.traces:
        print(f"--format {args.format} needs the traces: add --traces DIR", file=sys.stderr)
        return 2
    ws = open_workspace(args)
    status = ws.campaigns.status(args.name)
    traces = None
    if found.needs_traces and not ws.library.folders:  # a pool's: read through its index, as labelled
        traces = {}
    elif found.needs_traces:
        read = ws.library.read_traces()
        say_unread(read.unread)
        traces = read.traces
    if found.training:  # the consensus rules choose: agreed answers, else the adjudication
        options = ExportOptions(adjudicated_only=True) if args.adjudicated_only else \
            ExportOptions(disputed="adjudicated")
        result = ws.exports.write(args.format, args.output, traces=traces, campaign=args.name,
                           options=options)
    else:
        result = ws.exports.write(args.format, args.output, traces=traces, campaign=args.name,
                           adjudicated_only=args.adjudicated_only)
    for sentence in [*result.left_out, *result.notes]:
        print(terminal_text(sentence), file=sys.stderr)
    for line in _unresolved_lines(status):  # escaped already
        print(line, file=sys.stderr)
    print(terminal_text(result.text))
    return 0


def _event(given: str | None) -> str | None:
    """An EVENT_ID argument: '-' (or nothing) names the trace itself."""
    return None if given in (None, "-", "") else given


def _thread_lines(found: DisputeThread, rubric) -> list[str]:
    """A dispute and its thread as terminal lines (every string escaped)."""
    d = found.dispute
    state = "settled" if d.resolved else "unsettled"
    disputed = ", ".join(f"{q} (spread {s:.2f})" for q, s in d.disputed.items())
    lines = [f"{terminal_text(found.campaign)} · {terminal_text(d.trace_id)} · "
             f"{terminal_text(d.event_id or '(trace)')} · disputed: {terminal_text(disputed)}"
             f" · {state}"]

    def said(answers: dict) -> str:
        return "; ".join(f"{q} = {answer_text(rubric.questions_by_id.get(q), v)}"
                         for q, v in answers.items())

    for who, answers in sorted(d.answers.items()):
        lines.append(f"  {terminal_text(who)}: {terminal_text(said(answers))}")
    if d.adjudicated:
        lines.append(f"  final (adjudicated): {terminal_text(said(d.adjudicated))}")
    if not found.entries:
        lines.append("  nothing said yet")
    for e in found.entries:
        heading = f"comment {e.source_id}" if e.kind == "comment" else e.heading
        lines.append(f"  {e.created_at[:19].replace('T', ' ')}  {terminal_text(e.author)} "
                     f"({e.role}) · {terminal_text(heading)}")
        for row in e.moderation[:-1] if e.hidden is not None else e.moderation:
            lines.append(f"      [{terminal_text(row.line)} ({row.when})]")  # earlier rows
        if e.hidden is not None:
            lines.append(f"      [{terminal_text(e.hidden.line)}]"
                         + (" its text, for leads only:" if e.text else ""))
            if not e.text:
                continue
        lines += [f"      {terminal_text(line)}" for line in e.text.splitlines() or [""]]
    return lines


def thread_verb(args: argparse.Namespace) -> int:
    """Print the thread of one dispute, of a trace's disputes, or of a campaign's."""
    ws = open_workspace(args)
    viewer = Reviewer(name=args.viewer, via="cli")
    if args.event_id is not None:
        event_id = _event(args.event_id)
        dispute = ws.disputes.dispute(args.name, args.trace_id, event_id)
        if dispute is None:
            print(f"the reviewers of {terminal_text(args.trace_id)} "
                  f"{terminal_text(event_id or '(trace)')} agree: there is no dispute there",
                  file=sys.stderr)
            return 1
        found = [DisputeThread(campaign=args.name, dispute=dispute, entries=ws.disputes.thread(
            args.name, args.trace_id, event_id, viewer))]
    else:
        found = ws.disputes.threads(args.name, viewer, args.trace_id)
    if args.json:
        for t in found:
            print(json.dumps({"campaign": t.campaign, **t.dispute.model_dump(mode="json"),
                              "resolved": t.dispute.resolved,
                              "thread": [e.model_dump(mode="json") for e in t.entries]},
                             ensure_ascii=False))
        return 0
    if not found:
        print(f"no dispute in campaign {terminal_text(args.name)}"
              + (f" on {terminal_text(args.trace_id)}" if args.trace_id else ""))
    for i, t in enumerate(found):
        if i:
            print()
        print("\n".join(_thread_lines(t, ws.rubric)))
    return 0


def comment_verb(args: argparse.Namespace) -> int:
    """Post a comment on a dispute, or hide one or show it again (a lead)."""
    if args.hide:
        return _hide(args)
    if args.show:
        return _show(args)
    made = open_workspace(args).disputes.comment(args.name, args.trace_id, _event(args.event_id),
                                             args.text, Reviewer(name=args.author, via="cli"))
    print(f"comment posted on {terminal_text(made.trace_id)} "
          f"{terminal_text(made.event_id or '(trace)')} in campaign "
          f"{terminal_text(made.campaign)} as {terminal_text(made.author)} ({made.role})")
    return 0


def _hide(args: argparse.Namespace) -> int:
    """Hide a comment of a dispute's thread (a lead)."""
    made = open_workspace(args).disputes.hide(args.name, args.trace_id, _event(args.event_id),
                                              args.hide, args.reason,
                                              Reviewer(name=args.author, via="cli"))
    print(f"comment {terminal_text(made.comment_id)} hidden by {terminal_text(made.hidden_by)}"
          f": reviewers read 'hidden by {terminal_text(made.hidden_by)}: "
          f"{terminal_text(made.reason)}' in its place; its text is kept")
    return 0


def _show(args: argparse.Namespace) -> int:
    """Show a hidden comment of a dispute's thread again (a lead)."""
    made = open_workspace(args).disputes.show(args.name, args.trace_id, _event(args.event_id),
                                              args.show, Reviewer(name=args.author, via="cli"),
                                              args.reason)
    print(f"comment {terminal_text(made.comment_id)} {terminal_text(made.line)}: reviewers "
          "read its text again; its hiding is kept beside it")
    return 0


def members_add_verb(args: argparse.Namespace) -> int:
    """Add a member or change their role."""
    member = open_workspace(args).campaigns.add_member(args.email, args.role, Reviewer(name=args.by, via="cli"))
    print(f"{terminal_text(member.email)} is a {member.role}")
    return 0


def members_list_verb(args: argparse.Namespace) -> int:
    """List the members."""
    found = open_workspace(args).campaigns.members()
    if args.json:
        print(json.dumps([m.model_dump() for m in found], indent=2))
        return 0
    if not found:
        print("no members: without sign-in everyone may act as a lead "
              "(orchviz campaign members add EMAIL --role lead)")
    for m in found:
        print(f"{terminal_text(m.email):<36} {m.role:<9} added by {terminal_text(m.added_by)} "
              f"on {m.added_at[:10]}")
    return 0
