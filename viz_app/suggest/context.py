"""What a reviewer sees beside a target, as data: the context the labels panel shows and a judge
model reads, built in one place so the two see the same thing.

- an aggregate: every input it merged (returns and messages) beside what it produced;
- a stop: the events before and after it, in time order (`AROUND` each side);
- the trace itself: its task and its last event;
- any other event (a message, a spawn): the event itself, with its sender and recipient.

Pure: a Trace and its Analysis in, a `TargetContext` out. The text is the trace's own, not
escaped: whoever shows or sends it escapes it for its medium (`viz_app.text`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from viz_app.analysis import Analysis
from viz_app.labels import LabelTarget
from viz_app.model import Event

AROUND = 4
"""Events shown before and after a stop decision (the labels panel's `CONTEXT_EVENTS`)."""

Role = Literal["target", "input", "before", "after", "last"]


class ContextEvent(BaseModel):
    """One event of the context, and where it stands relative to the target."""

    role: Role = Field(description="`target` (the event judged), `input` (merged by the "
                       "aggregate), `before` / `after` (around a stop), `last` (the trace's "
                       "last event, for the trace itself).")
    event_id: str
    type: str
    agent: str = Field(description="The agent it belongs to (a tool's result: its caller).")
    sender: str = Field("", description="`from` of a message or return, when given.")
    recipient: str = Field("", description="`to` of a message, spawn or delegation, when given.")
    t: float = Field(description="When it happened, in seconds from the start.")
    text: str = Field(description="Its content as a reader sees it (`Event.text`), cut to the "
                      "builder's limit.")
    cut: int = Field(0, description="Characters left out of `text` by that limit.")


class TargetContext(BaseModel):
    """The context of one target: what it is and the events a reviewer reads to judge it."""

    trace_id: str
    task_id: str = Field(description="The task the trace ran (`Trace.task_id`).")
    event_id: str = Field(description="The target event; '' for the trace itself.")
    kinds: list[str] = Field(description="What the target is: aggregate, stop, message, events, "
                             "trace.")
    inferred_stop: bool = Field(False, description="A stop inferred by the analysis (the trace "
                                "has no explicit stop decision).")
    events: list[ContextEvent] = Field(description="In reading order: an aggregate's inputs "
                                       "then the aggregate; the window around a stop (an "
                                       "aggregate's inputs too, when it is the stop) in time "
                                       "order; the event itself; or the trace's last event.")
    inputs_left_out: int = Field(0, description="Inputs of an aggregate beyond the builder's "
                                 "limit.")

    def event(self, role: Role) -> list[ContextEvent]:
        """The events of the context with this role."""
        return [e for e in self.events if e.role == role]


def _item(event: Event, analysis: Analysis, role: Role, limit: int | None) -> ContextEvent:
    text = event.text
    cut = 0
    if limit is not None and len(text) > limit:
        cut, text = len(text) - limit, text[:limit]
    return ContextEvent(role=role, event_id=event.id, type=event.type,
                        agent=analysis.actor.get(event.id, event.agent),
                        sender=event.from_ or "", recipient=event.to or "",
                        t=float(event.t), text=text, cut=cut)


def stop_window(analysis: Analysis, event_id: str, around: int = AROUND) -> list[Event]:
    """The events from `around` before a stop to `around` after it, in time order."""
    where = analysis.position[event_id]
    return analysis.order[max(0, where - around): where + around + 1]


def target_context(analysis: Analysis, target: LabelTarget, *, around: int = AROUND,
                   text_limit: int | None = None, max_inputs: int | None = None
                   ) -> TargetContext:
    """The context of one target of `analysis.trace` (see the module's docstring).
    `text_limit` cuts each event's text to that many characters, `max_inputs` keeps that many
    of an aggregate's inputs (the first ones); None keeps everything (the panel scrolls)."""
    trace = analysis.trace
    base = {"trace_id": trace.trace_id, "task_id": trace.task_id or "",
            "event_id": target.key, "kinds": list(target.kinds),
            "inferred_stop": bool(target.inferred)}
    if target.event_id is None:
        last = analysis.order[-1]
        return TargetContext(**base, events=[_item(last, analysis, "last", text_limit)])
    event = trace.event(target.event_id)
    events: list[ContextEvent] = []
    left_out = 0
    if "aggregate" in target.kinds:
        inputs = [i for i in target.inputs if i in trace.events_by_id]
        if max_inputs is not None and len(inputs) > max_inputs:
            left_out, inputs = len(inputs) - max_inputs, inputs[:max_inputs]
        events += [_item(trace.event(i), analysis, "input", text_limit) for i in inputs]
    if "stop" in target.kinds:
        where = analysis.position[event.id]
        for other in stop_window(analysis, event.id, around):
            if other.id == event.id:
                continue
            role: Role = "before" if analysis.position[other.id] < where else "after"
            if not any(e.event_id == other.id for e in events):
                events.append(_item(other, analysis, role, text_limit))
    events.append(_item(event, analysis, "target", text_limit))
    if "stop" in target.kinds:  # the window reads in time order, the target in its place
        events.sort(key=lambda e: analysis.position[e.event_id])
    return TargetContext(**base, events=events, inputs_left_out=left_out)
