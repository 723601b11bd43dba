"""Groups from replays (`--format decision-groups`): at each fork point, the original decision
and every branch replayed from it (`viz_app.branch`: a trace continued by a model from an
edited decision) in one row, each with its continuation and its labels as its reward: the shape
group-relative trainers read (GRPO's group of completions to one prompt, each with a reward,
and its advantage against the group's mean), and the contrast LEMON-style training puts on the
decision that differs.

- **Members.** The original trace and each branch whose edited event names it (`forked_from`)
  and the same event (`fork_event`). A member's *completion* is its decision at the fork in the
  one form of the decision pairs (`viz_app.labels.correction.Decision.canonical`), then what
  its deciding agent saw after it, one line per event as every prompt writes events.
- **Rewards.** A member's reward is the mean reward of the answers reviewers gave on it, chosen
  as every training shape chooses them (`--min-reviewers`, `--adjudicated-only`, `--disputed`):
  on the trace itself and on its events from the fork on (what happened before the fork is the
  same in every member). `rewards_by_question` keeps each question's mean apart.
  `advantages` are the rewards less the group's mean. A member without such an answer is left
  out of its group; a group needs two members with rewards, else it is left out and named.
- **Prompt.** The deciding agent's context before the fork, as the decision pairs write it (the
  task in its words, then the events it had seen).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from statistics import fmean
from typing import Any

from viz_app.analysis import analyze
from viz_app.branch import fork_of
from viz_app.export.consensus import SHOWN, Answer, ExportOptions, provenance, select
from viz_app.export.decision_pairs import _Context
from viz_app.labels import LabelRecord, Rubric, made_decision, seen_positions
from viz_app.model import Trace

DECISION_GROUP_FIELDS = ("group_id", "prompt", "completions", "rewards", "advantages",
                         "members", "original", "rewards_by_question", "trace_id", "task_id",
                         "fork_event", "agent", "sub_decision", "reviewers", "provenance")
"""The keys of every decision-groups row, in order."""


@dataclass
class GroupRows:
    rows: Iterable[dict[str, Any]]
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _completion(trace: Trace, fork_event: str) -> tuple[str, str, str]:
    """(completion, deciding agent, sub-decision) of one member at the fork."""
    analysis = analyze(trace)
    decision, _ = made_decision(analysis, fork_event)
    agent = decision.agent
    start = analysis.position[fork_event]
    context = _Context(trace, ExportOptions())
    lines = context.lines
    after = [lines[p] for p in seen_positions(analysis, agent) if p > start]
    return decision.canonical + "\n" + "".join(after), agent, decision.sub_decision


def _reward(trace: Trace, fork_event: str, answers: list[Answer]
            ) -> tuple[float | None, dict[str, float], list[Answer]]:
    """A member's reward: the mean of its answers' rewards on the trace and from the fork on;
    each question's mean; the answers it rests on."""
    position = analyze(trace).position
    start = position[fork_event]
    by_question: dict[str, list[float]] = defaultdict(list)
    used = []
    for answer in answers:
        if answer.reward is None:
            continue
        if answer.event_id and position.get(answer.event_id, -1) < start:
            continue
        by_question[answer.question].append(answer.reward)
        used.append(answer)
    if not by_question:
        return None, {}, []
    means = {q: round(fmean(v), 6) for q, v in sorted(by_question.items())}
    return round(fmean([r for v in by_question.values() for r in v]), 6), means, used


def decision_group_export(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                          rubric: Rubric | None, options: ExportOptions = ExportOptions()
                          ) -> GroupRows:
    """One row per fork point with an original and at least one labelled branch."""
    if rubric is None:
        return GroupRows(rows=[])
    selection = select(list(labels), rubric, options)
    answers: dict[str, list[Answer]] = defaultdict(list)
    for answer in selection.answers:
        answers[answer.trace_id].append(answer)
    forks: dict[tuple[str, str], list[str]] = defaultdict(list)
    for trace_id, trace in sorted(traces.items()):
        fork = fork_of(trace)
        if fork is not None:
            forks[(fork.forked_from, fork.fork_event)].append(trace_id)
    found = GroupRows(rows=[], left_out=list(selection.left_out), notes=list(selection.notes))
    if not forks:
        found.notes.append("no branch among --traces: decision groups come from replays "
                           "(orchviz replay, or the app's Replay from here)")

    def rows() -> Iterator[dict[str, Any]]:
        missing, thin = [], []
        for (original_id, fork_event), branches in sorted(forks.items()):
            original = traces.get(original_id)
            if original is None or fork_event not in analyze(original).position:
                missing.append(f"{original_id} {fork_event}")
                continue
            members, completions, rewards, by_question, used = [], [], [], [], []
            agent = sub = ""
            for member_id in [original_id, *sorted(branches)]:
                member = traces[member_id]
                if fork_event not in analyze(member).position:
                    continue
                reward, means, rested = _reward(member, fork_event,
                                                answers.get(member_id, []))
                if reward is None:
                    continue
                text, who, decision_sub = _completion(member, fork_event)
                if member_id == original_id:
                    agent, sub = who, decision_sub
                members.append(member_id)
                completions.append(text)
                rewards.append(reward)
                by_question.append(means)
                used += rested
            if len(members) < 2:
                thin.append(f"{original_id} {fork_event}")
                continue
            context = _Context(original, options)
            analysis = context.analysis
            agent = agent or analysis.actor[fork_event]
            prompt = context.prompt(agent, analysis.position[fork_event])
            mean = fmean(rewards)
            labels_used = [r for a in used for r in a.labels]
            yield {"group_id": f"{original_id}@{fork_event}", "prompt": prompt,
                   "completions": completions, "rewards": rewards,
                   "advantages": [round(r - mean, 6) for r in rewards], "members": members,
                   "original": [m == original_id for m in members],
                   "rewards_by_question": by_question, "trace_id": original_id,
                   "task_id": original.task_id, "fork_event": fork_event, "agent": agent,
                   "sub_decision": sub or "O5",
                   "reviewers": sorted({r["reviewer"] for r in labels_used}),
                   "provenance": provenance(labels_used)}
        if missing:
            found.left_out.append(f"{len(missing)} branches fork from a trace or event not "
                                  "among --traces: " + "; ".join(missing[:SHOWN]))
        if thin:
            found.left_out.append(f"{len(thin)} fork points have fewer than two labelled "
                                  "members (the original and its branches): no group: "
                                  + "; ".join(thin[:SHOWN]))

    found.rows = rows()
    return found
