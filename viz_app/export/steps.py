"""Steps: the labelled decision points of a trace, in time order, that every step-wise training
shape (stepwise, unpaired, openrlhf-prm, rllm, agent-lightning, agent-rewards) is written from.

A *step* is an event with at least one rewarded answer (see `viz_app.export.consensus`): an
aggregate, a stop, a message, or any event a rubric asks about. Its reward is the mean over its
rewarded answers; it names its agent (the actor of the event), the events an aggregate merged,
and the LLM call ids and token ids its event carries (`CALL_KEYS`).

**The 'should have stopped at' pointer.** A stop answered *premature* or *late* has a follow-up
answer pointing at the event where stopping would have been right (`stop_should_have_been`).
The pointer is a statement about the stopping agent's own decision, so it becomes a step of its
own, kind `should_have_stopped`: the agent's stop decision placed at the pointed event. Its
context is the orchestration up to and including the pointed event, without the stop it
corrects (`branch_positions`); its completion is that stop, re-timed to the pointed event
(`stop_line`), never the pointed event's own text (which may be another agent's return). Its
*implied* answer's reward is the best reward the stop question offers (1.0, `correct`, in the
default rubric), credited to the agent that stopped, and it stays a step of its own even where
the pointed event is a step already: it is never averaged with another step's reward, nor with
the stop it corrects (-1 for premature, -0.5 for late). The implied answer has resolution
`implied`, is disputed when the pointer or the stop it follows was, and carries the labels of
both (with any adjudication among them) as provenance; the pointer answer itself stays on the
stop's step. For a late stop the pointer comes before the stop; for a premature one, after it
(the events that arrived after the stop).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Any

from viz_app.analysis import Analysis, analyze
from viz_app.export.consensus import Answer, answers_labels
from viz_app.labels import LabelRecord, Rubric
from viz_app.model import CALL_KEYS, DECISIONS, Event, Trace

DECISION = "decision"
POINTER = "should_have_stopped"


_CALL_KEYS = tuple(CALL_KEYS)
_call_values = attrgetter(*CALL_KEYS)


def call_of(event: Event) -> dict[str, Any]:
    """The LLM call ids and token ids an event carries (`CALL_KEYS`): ids as strings, token ids
    as lists of ints (a token list of another shape is left out, as orchviz cannot vouch for
    it)."""
    found: dict[str, Any] = {}
    for key, value in zip(_CALL_KEYS, _call_values(event)):
        if value is not None:  # the struct holds each of the documented type, or in `other`
            found[key] = value if key.endswith("_token_ids") else str(value)
    return found


@dataclass(slots=True)
class Step:
    """One labelled decision point of a trace."""

    event_id: str
    position: int
    """Its place in the trace's time order."""
    agent: str
    """The agent credited: the event's actor, or for a step implied by a pointer, the agent
    that stopped."""
    kind: str
    """`decision` (it has answers of its own), or `should_have_stopped` (its only rewarded
    answers are implied by a stop's pointer)."""
    reward: float
    """The mean of its rewarded answers' rewards."""
    answers: list[Answer]
    """Every answer on it (rewarded or not), implied ones included."""
    merged: list[str] = field(default_factory=list)
    """For an aggregate: the ids of the returns and messages it merged."""
    call: dict[str, Any] = field(default_factory=dict)
    """The LLM call ids and token ids its event carries (none for a pointer's step: no call
    made that stop)."""
    corrects: str = ""
    """For a `should_have_stopped` step: the id of the stop it corrects."""

    @property
    def labels(self) -> list[LabelRecord]:
        """Every label behind it."""
        return answers_labels(self.answers)

    @property
    def pointer(self) -> bool:
        """Whether it is a stop placed where a pointer says it should have been."""
        return self.kind == POINTER

    def label(self, threshold: float) -> bool:
        """The bool a trainer needs: the reward is above the threshold."""
        return self.reward > threshold


@dataclass
class TraceSteps:
    """A trace's steps, its trace-level answers, and the answers no step holds."""

    trace: Trace
    analysis: Analysis
    steps: list[Step]
    """In time order."""
    outcome: list[Answer]
    """Answers on the trace itself (task outcome)."""
    unplaced: list[Answer] = field(default_factory=list)
    """Answers on events that have no rewarded answer (tags alone, a lone pointer), or on an
    event the trace does not have."""
    turns_of: dict[str, list[list]] = field(default_factory=dict, repr=False)
    """agent -> its conversation's turns, once made (`viz_app.export.prompts.turns`)."""
    heads: dict[bool, str] = field(default_factory=dict, repr=False)
    """Its prompts' header, without and with the system, once made
    (`viz_app.export.prompts.context`)."""
    messages_of: dict[tuple[str, str], tuple] = field(default_factory=dict, repr=False)
    """(agent, head) -> its conversation's messages, the positions each covers, and how far it
    was made, once made (`viz_app.export.prompts.conversation`)."""

    def let_go(self) -> None:
        """Drop what rows were made from (its prompt lines, turns and conversations; made
        again if asked), so that the next trace's rows reuse the memory while it is warm."""
        self.messages_of.clear()
        self.turns_of.clear()
        self.__dict__.pop("lines", None)

    @cached_property
    def lines(self) -> list[str]:
        """Every event as a prompt line (`event_line`), in time order."""
        return event_lines(self.analysis)

    @cached_property
    def events(self) -> dict[str, Event]:
        """The trace's events by id (`Trace.events_by_id`, looked up once)."""
        return self.trace.events_by_id

    @cached_property
    def last_step(self) -> dict[str, int]:
        """agent -> the position of its last step."""
        return {step.agent: step.position for step in self.steps}  # in time order: last wins

    @property
    def decisions(self) -> list[Step]:
        """Its steps as they happened (every step but the pointers' stops)."""
        return [s for s in self.steps if not s.pointer]

    @cached_property
    def merged(self) -> dict[str, list[str]]:
        """aggregate event id -> the ids of the returns and messages it merged."""
        return {p.event_id: list(p.inputs) for p in self.analysis.aggregates}

    @cached_property
    def outcome_reward(self) -> float | None:
        """The mean reward of the trace-level answers, if any has one (taken once: every row
        of the trace carries it)."""
        rewards = [a.reward for a in self.outcome if a.reward is not None]
        return statistics.fmean(rewards) if rewards else None

    @property
    def answers(self) -> list[Answer]:
        """Every answer of the trace: trace-level, then each step's, then the unplaced."""
        return [*self.outcome, *(a for s in self.steps for a in s.answers), *self.unplaced]

    @property
    def labels(self) -> list[LabelRecord]:
        """Every label behind the trace's answers."""
        return answers_labels(self.answers)


def best_reward(rubric: Rubric | None, question_id: str) -> float | None:
    """The best reward a question offers (what stopping at the right event earns)."""
    question = rubric.questions_by_id.get(question_id) if rubric is not None else None
    rewards = [c.reward for c in question.choices if c.reward is not None] if question else []
    return max(rewards) if rewards else None


def trace_steps(trace: Trace, answers: list[Answer], rubric: Rubric | None) -> TraceSteps:
    """The steps of one trace from its selected answers."""
    analysis = analyze(trace)
    position = analysis.position
    questions = rubric.questions_by_id if rubric is not None else {}
    by_event: dict[str, list[Answer]] = defaultdict(list)
    pointers: list[tuple[Answer, float]] = []
    outcome: list[Answer] = []
    unplaced: list[Answer] = []
    for answer in answers:
        if not answer.event_id:
            outcome.append(answer)
            continue
        if answer.event_id not in position:
            unplaced.append(answer)
            continue
        by_event[answer.event_id].append(answer)
        question = questions.get(answer.question)
        if question is None or question.kind != "event" or question.ask_when is None \
                or answer.value not in position or answer.value == answer.event_id:
            continue
        reward = best_reward(rubric, question.ask_when.question)
        if reward is not None:
            pointers.append((answer, reward))
    merged = {p.event_id: p.inputs for p in analysis.aggregates}
    steps: list[Step] = []
    events = trace.events_by_id
    for event_id, found in by_event.items():
        rewards = [a.reward for a in found if a.reward is not None]
        if not rewards:
            unplaced.extend(found)
            continue
        steps.append(Step(
            event_id=event_id, position=position[event_id], agent=analysis.actor[event_id],
            kind=DECISION, reward=statistics.fmean(rewards), answers=found,
            merged=list(merged.get(event_id, [])), call=call_of(events[event_id])))
    with_reward = {s.event_id for s in steps}
    for answer, reward in pointers:
        if answer.event_id not in with_reward:
            continue  # the stop it follows has no rewarded answer: it stays unplaced
        followed = [a for a in by_event[answer.event_id]
                    if a.question == questions[answer.question].ask_when.question]
        steps.append(Step(
            event_id=answer.value, position=position[answer.value],
            agent=analysis.actor[answer.event_id], kind=POINTER, reward=reward,
            answers=[Answer(
                trace_id=answer.trace_id, event_id=answer.value, question=answer.question,
                value=answer.event_id, reward=reward, reward_std=0.0,
                reviewers=answer.reviewers,
                disputed=answer.disputed or any(a.disputed for a in followed),
                resolution="implied",
                labels=answers_labels([answer, *followed]))],
            corrects=answer.event_id))
    steps.sort(key=lambda s: (s.position, s.pointer))
    return TraceSteps(trace=trace, analysis=analysis, steps=steps, outcome=outcome,
                      unplaced=unplaced)


def branch_positions(ts: TraceSteps, step: Step) -> list[int]:
    """The positions of a pointer's context: the orchestration up to and including the event
    pointed at, without the stop it corrects (had the agent stopped there, that stop would not
    have been made)."""
    stop = ts.analysis.position.get(step.corrects)
    return [p for p in range(step.position + 1) if p != stop]


def branch_steps(ts: TraceSteps, step: Step) -> list[Step]:
    """The steps as they happened within a pointer's context, the pointer's own stop last."""
    stop = ts.analysis.position.get(step.corrects)
    return [*(s for s in ts.decisions if s.position <= step.position and s.position != stop),
            step]


def stop_line(ts: TraceSteps, step: Step, lines: Sequence[str] | None = None) -> str:
    """A pointer's completion: the stop it corrects as a prompt line (of `lines`, by default
    the trace's), re-timed to the event pointed at (`[t=9] orchestrator orchestrator_decision
    (stop): ...`)."""
    line = (ts.lines if lines is None else lines)[ts.analysis.position[step.corrects]]
    return f"[t={float(ts.events[step.event_id].t):g}]" + line[line.index("]") + 1:]


def all_trace_steps(traces: dict[str, Trace] | Any, by_trace: dict[str, list[Answer]],
                    rubric: Rubric | None) -> list[TraceSteps]:
    """The steps of every trace that has answers and is among `traces`, by trace id."""
    return [trace_steps(traces[t], by_trace[t], rubric) for t in sorted(by_trace) if t in traces]


def event_line(event: Event, analysis: Analysis) -> str:
    """One event as a line of a prompt: `[t=12.5] orchestrator aggregate: <its text>`, the
    text on one line (what `Event.decision` and `Event.text` give, read from the event's keys
    directly: a prompt line is made for every event of every exported trace). Text that is
    printable with no double space holds no whitespace but single spaces (`str.isprintable` is
    False for every other whitespace character), so only the rest is split and joined."""
    kind = event.type
    what = kind
    if kind == "orchestrator_decision":
        if event.decision is not None:
            what += f" ({event.decision})"
    elif kind in ("message", "return", "spawn"):
        if event.to:
            what += f" -> {event.to}"
    elif kind in ("tool_call", "tool_result") and event.tool:
        what += f" [{event.tool}]"
    content = event.content
    text = content if content is not None else (event.content_ref or "")
    text = text.strip(" ") if text.isprintable() and "  " not in text \
        else " ".join(text.split())
    return f"[t={float(event.t):g}] {analysis.actor[event.id]} {what}: {text}\n"


_ADDRESSED = frozenset({"message", "return", "spawn"})
_TOOLS = frozenset({"tool_call", "tool_result"})
_DECISIONS = frozenset(DECISIONS)


def event_lines(analysis: Analysis) -> list[str]:
    """Every event of a trace as its `event_line`, in time order (the same lines, made in one
    loop: a prompt line is made for every event of every exported trace)."""
    actor = analysis.actor
    found: list[str] = []
    append = found.append
    for event in analysis.order:
        kind = event.type
        what = kind
        if kind == "orchestrator_decision":
            decision = event.decision_
            if decision in _DECISIONS:
                what = f"{kind} ({decision})"
        elif kind in _ADDRESSED:
            if event.to:
                what = f"{kind} -> {event.to}"
        elif kind in _TOOLS and event.tool:
            what = f"{kind} [{event.tool}]"
        content = event.content
        text = content if content is not None else (event.content_ref or "")
        text = text.strip(" ") if text.isprintable() and "  " not in text \
            else " ".join(text.split())
        append(f"[t={float(event.t):g}] {actor[event.id]} {what}: {text}\n")
    return found
