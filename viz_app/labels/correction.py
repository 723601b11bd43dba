"""Corrections: what the orchestrator should have done instead, at the node where it decided.

A correction is the answer to a rubric question of kind `correction`: a JSON object whose
`action` names the better decision and whose other keys say what it is:

| action         | decision | keys                                   | meaning                                  |
|----------------|----------|----------------------------------------|------------------------------------------|
| `merge`        | O4       | `text`                                 | the merge it should have made            |
| `stop`         | O5       | `text` (optional)                      | the final answer it should have given    |
| `do_it_itself` | O1 / O2  | `text` (optional: how)                 | no sub-agent: the decider does it        |
| `reuse_agent`  | O1       | `agent`                                | hand it to an agent that already exists  |
| `spawn`        | O1       | `role`, `text` (the task)              | a sub-agent it should have spawned       |
| `delegate`     | O2       | `agent` (of the trace) or `role` (new) | the agent the task should have gone to   |
| `not_sent`     | O3       |                                        | the message should not have been sent    |
| `send`         | O3       | `to`, `text`                           | the message that should have been sent   |

A stop's correction is mostly implied by the answers that already exist: *premature* at a stop
means "continue (waiting for the event pointed at) rather than stop" there, and "stop rather than
continue" at the pointer; *late* means "stop rather than go on" at the pointer. The optional
`stop` correction adds the final answer it should have given.

`corrected_decision(rubric, trace, event_id, answers)` gives the better decision at a node as a
`Decision` (a canonical structure, with its one-line canonical `text`); `decision_pairs` gives
every (chosen, rejected) pair a target's answers imply, which the `decision-pairs` exports write
and replay starts from. Pure: no store, no SQL.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from rapidfuzz.distance import Indel

from viz_app.analysis import Analysis, analyze
from viz_app.errors import LabelError
from viz_app.labels.knowledge import first_had, outstanding, saw, waited_for
from viz_app.model import Event, Trace

if TYPE_CHECKING:
    from viz_app.labels.rubric import Question

Action = Literal["merge", "stop", "continue", "do_it_itself", "reuse_agent", "spawn",
                 "delegate", "not_sent", "send", "as_recorded"]
"""What a decision does. `continue` and `as_recorded` are never answers: `continue` is the
decision a premature stop implies, `as_recorded` the decision the trace shows at a node when it
holds no words for it."""

ACTIONS: dict[str, str] = {
    "merge": "O4", "stop": "O5", "do_it_itself": "O1", "reuse_agent": "O1", "spawn": "O1",
    "delegate": "O2", "not_sent": "O3", "send": "O3",
}
"""The actions a correction may take, each with the sub-decision it belongs to (do_it_itself
also answers a delegation, O2)."""

ACTION_LABELS: dict[str, str] = {
    "merge": "the merge it should have made", "stop": "the final answer it should have given",
    "do_it_itself": "do it itself", "reuse_agent": "reuse an agent it already had",
    "spawn": "spawn a sub-agent for ...", "delegate": "delegate to another agent",
    "not_sent": "not sent", "send": "send this message instead",
}
"""How the panel names each action."""

LATER_THAN_RECORDED = "<later than this run recorded>"
"""The answer of a 'should have stopped at' pointer after a premature stop when the right moment
comes after the last event the trace holds (the run ended at the stop): not an event id."""

_TEXT_LIMIT = 100_000
"""Longest text a correction keeps (a merge is long; an endless paste is refused)."""


class Correction(BaseModel):
    """A correction answer, as stored (only the keys its action uses are kept)."""

    model_config = ConfigDict(extra="forbid")
    action: str = Field(description="One of ACTIONS.")
    text: str | None = Field(None, description="The merge, message, task, final answer or how.")
    agent: str | None = Field(None, description="An agent of the trace (reuse, delegate).")
    role: str | None = Field(None, description="A new agent's role (spawn, delegate).")
    to: str | None = Field(None, description="The recipient of a message to send.")

    def stored(self) -> dict[str, Any]:
        """The answer as a label stores it: the action and the keys given."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


def correction_text(value: Any, limit: int = 400) -> str:
    """A stored correction as a person reads it, in plain text (escape it for its medium):
    "the merge it should have made: Root cause is …", "delegate to another agent: db_analyst
    (role: analyst) — check the index"; never the Python dict it is stored as."""
    if not isinstance(value, dict) or "action" not in value:
        return str(value)
    action = str(value.get("action"))
    head = ACTION_LABELS.get(action, action).removesuffix(" ...")
    who = [str(value[k]) for k in ("agent", "to") if value.get(k)]
    if value.get("role"):
        who.append(f"(role: {value['role']})")
    text = " ".join(str(value.get("text") or "").split())
    if len(text) > limit:
        text = text[:limit - 1] + "…"
    parts = " ".join(who)
    return head + (f": {parts}" if parts else "") + (f" — {text}" if text and parts else
                                                     f": {text}" if text else "")


def parse_correction(value: Any, actions: list[str], analysis: Analysis) -> Correction:
    """The correction an answer holds; LabelError naming what is wrong (an action the question
    does not take, a missing text, an agent the trace does not have)."""
    if not isinstance(value, Mapping):
        raise LabelError(f"a correction is an object with an action (one of "
                         f"{', '.join(actions)}), not {str(value)[:60]!r}")
    try:
        found = Correction.model_validate(dict(value))
    except Exception:  # noqa: BLE001 - pydantic's message names internals; one sentence here
        keys = ", ".join(sorted(map(str, value)))
        raise LabelError(f"a correction has the keys action, text, agent, role, to (not "
                         f"{keys}), each text") from None
    if found.action not in actions:
        raise LabelError(f"{found.action!r} is not a correction this question takes (it takes "
                         f"{', '.join(actions)})")
    for name in ("text", "agent", "role", "to"):
        given = getattr(found, name)
        if given is not None and len(given) > _TEXT_LIMIT:
            raise LabelError(f"the correction's {name} is longer than {_TEXT_LIMIT:,} characters")
        if given is not None and not given.strip():
            setattr(found, name, None)
    agents = set(analysis.agents)
    action = found.action
    if action in ("merge", "send", "spawn") and not found.text:
        what = {"merge": "the merge it should have made", "send": "the message to send",
                "spawn": "the task of the sub-agent"}[action]
        raise LabelError(f"write {what}")
    if action == "spawn" and not found.role:
        raise LabelError("name the role of the sub-agent it should have spawned")
    if action == "send" and not found.to:
        raise LabelError("name who the message should have gone to")
    if action == "reuse_agent" and found.agent not in agents:
        raise LabelError(f"pick the agent to reuse among the trace's agents, not "
                         f"{str(found.agent)[:40]!r}")
    if action == "delegate":
        if found.agent and found.role:
            raise LabelError("delegate to an agent of the trace or to a new role, not both")
        if found.agent and found.agent not in agents:
            raise LabelError(f"{found.agent[:40]!r} is not an agent of this trace: name a new "
                             "role instead")
        if not found.agent and not found.role:
            raise LabelError("pick the agent it should have delegated to, or name a new role")
    if action in ("not_sent",) and (found.text or found.agent or found.role or found.to):
        raise LabelError("'not sent' takes nothing more")
    return found


# -- decisions --------------------------------------------------------------------------------


class Decision(BaseModel):
    """A decision at one node of a trace, as a canonical structure: the one replay puts in the
    orchestrator's place and the one the decision-pairs exports write."""

    model_config = ConfigDict(frozen=True)
    event_id: str = Field(description="The node: the event where the decision is (or was) made.")
    agent: str = Field(description="The deciding agent (the event's actor).")
    sub_decision: str = Field(description="O1 spawn, O2 delegate, O3 communicate, O4 aggregate, "
                              "O5 stop.")
    action: Action = Field(description="What it does (see the module's table).")
    text: str = Field("", description="The merge, message, task or final answer.")
    agent_to: str = Field("", description="The agent it goes to (delegate, reuse, send).")
    role: str = Field("", description="A new agent's role (spawn, delegate to a new role).")
    wait_for: str = Field("", description="For `continue`: the event it should have waited for "
                          "(or LATER_THAN_RECORDED); `agent_to` names who brings it.")

    @property
    def canonical(self) -> str:
        """The decision in the one canonical form (documented in docs/trainers/decision-pairs.md):
        `<action>` then what it is, on one line."""
        text = " ".join(self.text.split())
        action = self.action
        if action == "merge":
            return f"aggregate: {text}"
        if action == "stop":
            return f"stop: {text}" if text else "stop"
        if action == "continue":
            if self.agent_to:
                return f"continue: wait for {self.agent_to}"
            if text:
                return f"continue: {text}"
            if self.wait_for == LATER_THAN_RECORDED:
                return "continue: wait for results the run did not record"
            return "continue"
        if action == "do_it_itself":
            return f"do it itself: {text}" if text else "do it itself"
        if action == "reuse_agent":
            return f"reuse {self.agent_to}: {text}" if text else f"reuse {self.agent_to}"
        if action == "spawn":
            return f"spawn {self.role}: {text}"
        if action == "delegate":
            who = self.agent_to or f"a new {self.role} agent"
            return f"delegate -> {who}: {text}" if text else f"delegate -> {who}"
        if action == "not_sent":
            return "no message"
        if action == "send":
            return f"message -> {self.agent_to}: {text}"
        return text

    def same_as(self, other: Decision) -> bool:
        """Whether two decisions are one decision: the same action, agent, role, awaited agent
        and words (whitespace aside). A stop and an aggregate with the same words differ; a
        merge left as it was does not."""
        return (self.action, self.agent_to, self.role) == (other.action, other.agent_to,
                                                           other.role) \
            and self.text.split() == other.text.split()


def _sub_decision(event: Event, fallback: str) -> str:
    decision = event.decision
    return {"spawn": "O1", "delegate": "O2", "communicate": "O3", "aggregate": "O4",
            "stop": "O5", "continue": "O5"}.get(decision or "", fallback)


def _own_index(analysis: Analysis, agent: str, event_id: str) -> int:
    """Where an event stands among its agent's own events (`Analysis.events_of`)."""
    return bisect_left(analysis._positions_of.get(agent, []), analysis.position[event_id])


def spawned_task(analysis: Analysis, event_id: str) -> str:
    """A spawn's task in the spawner's own words: the message (or delegation) it sent the child
    as its next own event, when it did, else the spawn's own text."""
    event = analysis.trace.event(event_id)
    spawner = analysis.actor[event_id]
    own = analysis.events_of.get(spawner, [])
    at = _own_index(analysis, spawner, event_id) + 1
    if at < len(own):
        later = own[at]
        if later.to == event.to and later.type in ("message", "orchestrator_decision") \
                and later.text.strip():
            return later.text.strip()
    return event.text.strip()


def made_decision(analysis: Analysis, event_id: str) -> tuple[Decision, bool]:
    """The decision the trace shows at a node, and whether it is in the orchestrator's own words
    (the event's recorded text; a spawn's task, the message that gave it) rather than only what
    its type and fields say."""
    event = analysis.trace.event(event_id)
    agent = analysis.actor[event_id]
    words = event.text.strip()  # as recorded: `canonical` puts it on one line
    kind = event.type
    if kind == "aggregate":
        made = Decision(event_id=event_id, agent=agent, sub_decision="O4", action="merge",
                        text=words)
    elif kind == "spawn":
        words = spawned_task(analysis, event_id)
        made = Decision(event_id=event_id, agent=agent, sub_decision="O1", action="spawn",
                        role=event.role or event.to or "", text=words)
    elif kind == "message":
        made = Decision(event_id=event_id, agent=agent, sub_decision="O3", action="send",
                        agent_to=event.to or "", text=words)
    elif kind == "orchestrator_decision" and event.decision == "delegate":
        made = Decision(event_id=event_id, agent=agent, sub_decision="O2", action="delegate",
                        agent_to=event.to or "", text=words)
    elif kind == "orchestrator_decision" and event.decision == "stop":
        made = Decision(event_id=event_id, agent=agent, sub_decision="O5", action="stop",
                        text=words)
    elif kind == "orchestrator_decision" and event.decision == "continue":
        made = Decision(event_id=event_id, agent=agent, sub_decision="O5", action="continue",
                        text=words)
    else:
        made = Decision(event_id=event_id, agent=agent, sub_decision=_sub_decision(event, "O5"),
                        action="as_recorded", text=f"{kind}" + (f" ({event.decision})"
                                                                 if event.decision else "")
                        + (f": {words}" if words else ""))
    return made, bool(words)


Words = Literal["own_words", "reviewer_words", "own_words_edited", "canonical"]
"""Whose words a side's text is: the trace's (the event's own, or another event's of the same
agent), a reviewer's, the agent's own with one part taken out (a confirmation's counterfactual
merge), or none (the canonical form alone)."""


def _words(decision: Decision, source: Words) -> Words:
    return source if decision.text else "canonical"


def _from_correction(found: Correction, made: Decision, question_sub: str | None
                     ) -> tuple[Decision, Words]:
    action = found.action
    sub = question_sub or ACTIONS.get(action, made.sub_decision)
    base = {"event_id": made.event_id, "agent": made.agent, "sub_decision": sub}
    own = "own_words" if made.action != "as_recorded" else "canonical"
    if action == "merge":
        return Decision(**base, action="merge", text=found.text or ""), "reviewer_words"
    if action == "stop":
        return Decision(**base, action="stop", text=found.text or ""), "reviewer_words"
    if action == "do_it_itself":
        if found.text:
            return Decision(**base, action="do_it_itself", text=found.text), "reviewer_words"
        return Decision(**base, action="do_it_itself", text=_task_words(made)), own
    if action == "reuse_agent":
        return Decision(**base, action="reuse_agent", agent_to=found.agent or "",
                        text=_task_words(made)), own
    if action == "spawn":
        return Decision(**base, action="spawn", role=found.role or "",
                        text=found.text or ""), "reviewer_words"
    if action == "delegate":
        return Decision(**base, action="delegate", agent_to=found.agent or "",
                        role=found.role or "", text=_task_words(made)), own
    if action == "not_sent":
        return Decision(**base, action="not_sent"), "canonical"
    return Decision(**base, action="send", agent_to=found.to or "",
                    text=found.text or ""), "reviewer_words"


def _task_words(made: Decision) -> str:
    """The task a decision hands over, in its own words (a recorded decision without words of
    its own has none)."""
    return "" if made.action == "as_recorded" else made.text


Origin = Literal["correction", "stop_at_stop", "stop_at_pointer", "confirm_stop",
                 "confirm_continue", "confirm_merge", "confirm_spawn", "confirm_delegate",
                 "confirm_message"]
"""Where a pair comes from: a correction answer; a stop answered premature or late (the pair
at the stop, or at the event pointed at); or a decision judged sound (a confirmation,
`viz_app.labels.confirmation`)."""


class DecisionPair(BaseModel):
    """A better decision beside a worse one, at one node, in the deciding agent's context."""

    model_config = ConfigDict(frozen=True)
    chosen: Decision = Field(description="The better decision (a correction, or the decision "
                             "made when it was judged sound).")
    rejected: Decision = Field(description="The worse one (the decision made, or the "
                               "alternative a sound decision's kind of correction names).")
    chosen_words: Words = Field("canonical", description="Whose words the chosen side's text is.")
    rejected_words: Words = Field("canonical", description="Whose words the rejected side's "
                                  "text is.")
    question: str = Field(description="The question whose answer gives the pair.")
    origin: Origin = Field(description="Where the pair comes from (see `Origin`).")
    after_node: bool = Field(False, description="Whether the decision comes right after the "
                             "node's event (a stop at a pointer: the agent has that event), "
                             "rather than in its place.")
    corrected_stop: str = Field("", description="At a premature stop's pointer: the stop being "
                                "corrected, which the context leaves out with the agent's own "
                                "events after it (it waited instead).")
    pointed_at: str = Field("", description="The event the reviewer pointed at, when the pair "
                            "is at the first event at which the stopping agent had it.")

    @property
    def kind(self) -> Literal["correction", "confirmation"]:
        """Whether reviewers corrected the decision or judged it sound."""
        return "confirmation" if self.origin.startswith("confirm") else "correction"

    @property
    def rejected_own_words(self) -> bool:
        return self.rejected_words == "own_words"


_QUESTIONS: list[Any] = [None, None, {}]
"""The last rubric asked of `questions_of`, its list of questions, and its questions by id."""


def questions_of(rubric) -> dict[str, Any]:
    """`rubric.questions_by_id`, made once for the rubric last asked of while its questions
    stay the same list (an export asks it for every target)."""
    if _QUESTIONS[0] is not rubric or _QUESTIONS[1] is not rubric.questions \
            or len(_QUESTIONS[2]) != len(rubric.questions):
        _QUESTIONS[:] = [rubric, rubric.questions, rubric.questions_by_id]
    return _QUESTIONS[2]


def _stop_question(rubric, questions: Mapping[str, Any], answers: Mapping[str, Any]):
    """(stop question, its answer's choice, pointer question id) among a target's answers."""
    for qid, value in answers.items():
        question = questions.get(qid)
        if question is None or question.kind not in ("categorical",):
            continue
        choice = question.choice(value)
        if choice is not None and choice.pointer is not None:
            pointer = next((q.id for q in rubric.questions if q.kind == "event" and q.ask_when
                            and q.ask_when.question == qid), None)
            return question, choice, pointer
    return None, None, None


def final_answer(analysis: Analysis, stop_id: str) -> str:
    """The answer a stop gives, in the stopping agent's own words: its last merge before the
    stop (what it answers with), else the stop's own words ('' when it has neither)."""
    agent = analysis.actor[stop_id]
    own = analysis.events_of.get(agent, [])
    for event in reversed(own[:_own_index(analysis, agent, stop_id)]):
        if event.type == "aggregate" and event.text.strip():
            return event.text.strip()
    return analysis.trace.event(stop_id).text.strip()


def stopped(analysis: Analysis, event_id: str) -> tuple[Decision, Words]:
    """The stop a stop target shows, in one form: `stop: <its final answer>` (`final_answer`),
    as a reviewer's corrected stop states the final answer it should have given."""
    made, _ = made_decision(analysis, event_id)
    made = Decision(event_id=event_id, agent=made.agent, sub_decision="O5", action="stop",
                    text=final_answer(analysis, event_id))
    return made, _words(made, "own_words")


def pointer_node(analysis: Analysis, stop_id: str, pointer: Any) -> str | None:
    """Where a 'should have stopped at' pointer puts the stop: the first event at which the
    stopping agent had what the event pointed at says (the event itself when it made or
    received it); None when the pointer names no event of the trace, the agent never had it,
    or (a late stop) had it only at the stop or after."""
    if not isinstance(pointer, str) or pointer not in analysis.position:
        return None
    agent = analysis.actor[stop_id]
    node = first_had(analysis, pointer, agent)
    if node is None:
        return None
    if analysis.position[pointer] < analysis.position[stop_id] <= analysis.position[node]:
        return None
    return node


class PointerAdvice(BaseModel):
    """What the label form says when a 'should have stopped at' pointer names an event the
    stopping agent did not see: one sentence, and the event to offer instead (if any)."""

    model_config = ConfigDict(frozen=True)
    pointer: str
    agent: str
    had_at: str | None = Field(description="The first event at which the agent had what the "
                               "pointer names (the pair will sit there), or None.")
    text: str


def pointer_advice(analysis: Analysis, stop_id: str, pointer: Any) -> PointerAdvice | None:
    """None when the stopping agent made or received the event pointed at (or the pointer
    names no event of the trace); else the sentence the form shows at once, and the first
    event at which the agent had what it says (`pointer_node`: where the pair goes)."""
    if not isinstance(pointer, str) or pointer not in analysis.position \
            or stop_id not in analysis.position:
        return None
    agent = analysis.actor[stop_id]
    if saw(analysis, agent, pointer):
        return None
    event = analysis.trace.event(pointer)
    what = f"{event.type} of {analysis.actor[pointer]}" + (f" to {event.to}" if event.to
                                                          else "")
    node = pointer_node(analysis, stop_id, pointer)
    head = f"{agent} never saw {pointer} ({what}), so it could not have stopped on it"
    if node is None:
        return PointerAdvice(pointer=pointer, agent=agent, had_at=None, text=(
            f"{head}; nothing after it brought it to {agent}"
            + (" before its stop" if analysis.position[pointer] < analysis.position[stop_id]
               else "") + ": point at an event it had, or at 'later than this run recorded'."))
    carrier = analysis.trace.event(node)
    return PointerAdvice(pointer=pointer, agent=agent, had_at=node, text=(
        f"{head}: it first had it at {node} ({carrier.type} of {analysis.actor[node]}); "
        f"the pair will sit there."))


def _bringer(analysis: Analysis, node: str, agent: str) -> str:
    """Who brings the deciding agent what `node` says: the sender of the event when it is
    addressed to the agent, else the agent it waits for there."""
    link = analysis.link_of(analysis.trace.event(node))
    if link is not None and link[2] == agent:
        return link[1]
    return waited_for(analysis, agent, analysis.position[node])


def decision_pairs(rubric, trace: Trace, event_id: str | None,
                   answers: Mapping[str, Any]) -> list[DecisionPair]:
    """Every (chosen, rejected) pair one target's corrections imply (`answers`: question id ->
    value, as a save gives them): one per correction answer, and for a stop answered premature
    or late the pairs the module describes, both sides in one form. Refers to events of
    `trace` only."""
    if not event_id:
        return []
    analysis = analyze(trace)
    if event_id not in analysis.position:
        return []
    made, own = made_decision(analysis, event_id)
    made_words: Words = "own_words" if own else "canonical"
    pairs: list[DecisionPair] = []
    final_answer = ""
    questions = questions_of(rubric)
    for qid, value in answers.items():
        question = questions.get(qid)
        if question is None or question.kind != "correction" or value is None:
            continue
        found = parse_correction(value, question.actions, analysis)
        if found.action == "stop":
            final_answer = " ".join((found.text or "").split())
            continue
        chosen, words = _from_correction(found, made, question.sub_decision)
        pairs.append(DecisionPair(chosen=chosen, rejected=made, chosen_words=words,
                                  rejected_words=made_words, question=qid, origin="correction"))
    stop_q, choice, pointer_q = _stop_question(rubric, questions, answers)
    if stop_q is None:
        return pairs
    pointer = answers.get(pointer_q) if pointer_q else None
    agent = analysis.actor[event_id]
    where = analysis.position[event_id]
    stop, stop_words = stopped(analysis, event_id)
    node = pointer_node(analysis, event_id, pointer)
    if choice.pointer == "later":  # premature: at the stop, go on rather than stop
        if node is not None:
            awaited = _bringer(analysis, node, agent)
        else:
            waiting = outstanding(analysis, agent, where)
            awaited = waiting[0] if waiting else ""
        chosen = Decision(event_id=event_id, agent=agent, sub_decision="O5", action="continue",
                          agent_to=awaited, wait_for=pointer if isinstance(pointer, str) else "")
        pairs.append(DecisionPair(chosen=chosen, rejected=stop, rejected_words=stop_words,
                                  question=stop_q.id, origin="stop_at_stop"))
    if node is None:
        return pairs
    # at the pointer (or where the agent first had it): stop there
    answer = stop.model_copy(update={"event_id": node, "text": final_answer or stop.text})
    answer_words: Words = "reviewer_words" if final_answer else stop_words
    if choice.pointer == "earlier":  # late: rather than what it did next
        went_on = _went_on(analysis, node, agent)
        if went_on is not None:
            rejected, words = made_decision(analysis, went_on)
            rejected = rejected.model_copy(update={"event_id": node})
            rejected_words: Words = "own_words" if words else "canonical"
        else:
            rejected, rejected_words = Decision(event_id=node, agent=agent, sub_decision="O5",
                                                action="continue"), "canonical"
        corrected = ""
    else:  # premature: rather than go on waiting
        rejected = Decision(event_id=node, agent=agent, sub_decision="O5", action="continue",
                            agent_to=waited_for(analysis, agent, analysis.position[node] + 1))
        rejected_words, corrected = "canonical", event_id
    pairs.append(DecisionPair(chosen=answer, rejected=rejected, chosen_words=answer_words,
                              rejected_words=rejected_words, question=pointer_q or stop_q.id,
                              origin="stop_at_pointer", after_node=True,
                              corrected_stop=corrected,
                              pointed_at=pointer if node != pointer else ""))
    return pairs


def _went_on(analysis: Analysis, after: str, agent: str) -> str | None:
    """The deciding agent's first own event after `after` (what it did instead of stopping)."""
    start = analysis.position[after] + 1
    for event in analysis.order[start:]:
        if analysis.actor[event.id] == agent:
            return event.id
    return None


def corrected_decision(rubric, trace: Trace, event_id: str,
                       answers: Mapping[str, Any]) -> Decision | None:
    """The better decision at `event_id` that a target's answers give (`answers`: question id
    -> value, the target's saved answers), or None when they give none: a correction answer's
    decision, else for a premature stop `continue` (waiting for the pointer's event). What
    replay puts in the orchestrator's place; `Decision.canonical` is its text."""
    for pair in decision_pairs(rubric, trace, event_id, answers):
        if pair.chosen.event_id == event_id:
            return pair.chosen
    return None


# -- the edit of a text -------------------------------------------------------------------------

_WORDS = re.compile(r"^\s+|\S+\s*")


def word_diff(before: str, after: str) -> list[tuple[Literal["=", "-", "+"], str]]:
    """The word-level edit from `before` to `after` as (op, text) runs: '=' kept, '-' removed,
    '+' added (each word carries the whitespace after it), the removal before the addition
    where both replace some words. The words both texts share at their start and end are kept
    as they are; between them the longest common subsequence of words is kept (rapidfuzz's
    Indel alignment), so a long merge with one sentence edited costs the sentence; a middle of
    more than ALIGN_LIMIT word pairs is one removal and one addition."""
    before, after = before or "", after or ""
    head = _shared_start(before, after)
    while head and not (_between_words(before, head) and _between_words(after, head)):
        head -= 1
    tail = _shared_start(before[head:][::-1], after[head:][::-1])
    while tail and not (_between_words(before, len(before) - tail)
                        and _between_words(after, len(after) - tail)):
        tail -= 1
    a = _WORDS.findall(before[head:len(before) - tail])
    b = _WORDS.findall(after[head:len(after) - tail])
    runs: list[tuple[Literal["=", "-", "+"], str]] = [("=", before[:head])]
    if not a or not b or len(a) * len(b) > ALIGN_LIMIT or set(a).isdisjoint(b):
        runs += [("-", "".join(a)), ("+", "".join(b))]  # no word to align
    else:  # the longest common subsequence of words (rapidfuzz's Indel, in C++)
        removed: list[str] = []
        added: list[str] = []
        for op in Indel.opcodes(a, b):
            if op.tag == "equal":
                runs += [("-", "".join(removed)), ("+", "".join(added)),
                         ("=", "".join(a[op.src_start:op.src_end]))]
                removed, added = [], []
            elif op.tag == "delete":
                removed += a[op.src_start:op.src_end]
            else:
                added += b[op.dest_start:op.dest_end]
        runs += [("-", "".join(removed)), ("+", "".join(added))]
    runs.append(("=", before[len(before) - tail:]))
    return [r for r in runs if r[1]]


ALIGN_LIMIT = 25_000_000
"""Most word pairs aligned in one edit (5,000 words against 5,000)."""


def _shared_start(a: str, b: str) -> int:
    """How many characters two texts share at their start (by halving: slices compare in C)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _between_words(text: str, at: int) -> bool:
    """Whether position `at` falls between two of `word_diff`'s words (a word carries the
    whitespace after it)."""
    return at == 0 or at == len(text) or (text[at - 1].isspace() and not text[at].isspace())


def diff_spans(before: str, after: str) -> tuple[list[list[int]], list[list[int]]]:
    """Where two texts differ, as character spans `[start, end)`: those of `before` that the
    word diff removes and those of `after` it adds (`word_diff`, the edit the label panel
    draws; the whitespace after a word's last letter is left out of its span)."""
    removed: list[list[int]] = []
    added: list[list[int]] = []
    a = b = 0
    for op, text in word_diff(before, after):
        size, core = len(text), len(text.rstrip())
        if op == "=":
            a, b = a + size, b + size
            continue
        spans, start = (removed, a) if op == "-" else (added, b)
        if core:
            spans.append([start, start + core])
        if op == "-":
            a += size
        else:
            b += size
    return removed, added


def answer_text(question: Question | None, value: Any) -> str:
    """An answer as a person reads it: the choice's label for a scale, category or boolean, the
    labels of the tags, a correction's words, the event id of a pointer (plain text, not
    escaped: the Adjudicate page, the suggestions and `orchviz campaign thread` escape it)."""
    if question is None:
        return str(value)
    if question.kind == "correction" or (isinstance(value, dict) and "action" in value):
        return correction_text(value)
    if question.kind == "tags" and isinstance(value, list):
        return ", ".join(answer_text(question, v) for v in value) or "no issue"
    choice = question.choice(value)
    return choice.label if choice is not None else str(value)
