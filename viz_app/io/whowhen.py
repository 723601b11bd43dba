"""Who&When: the public failure-attribution dataset of multi-agent runs, one JSON object per
task: `question`, `ground_truth`, `history[]` of `{role, name, content}`, and the human
annotation `mistake_agent`, `mistake_step` (an index into `history`), `mistake_reason`.

Mapping: the runs carry no clock, so each history step `i` happens at `t = i` seconds (and keeps
`source_id = "history[i]"`). In the Magentic-One part, `Orchestrator (-> WebSurfer)` is a
delegation to WebSurfer (spawning it the first time), `Orchestrator (thought)` a decision,
`Orchestrator (termination condition)` the stop, `Orchestrator (final answer)` the aggregate; the
addressed agent's reply is its return. In the hand-crafted part (group chats) each step is a
message from `name` (or `role`) to the next speaker. The question opens the run as a human
intervention. The annotation goes on the mistaken step's event as extra keys (`mistake_agent`,
`mistake_reason`, `annotation_origin`) and `mistake_step` into the trace's metrics;
`annotation(trace)` reads it back for the label store.
"""

from __future__ import annotations

import re
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, parse_json, read_source
from viz_app.io.records import TraceDraft, as_text, first_value, head_has
from viz_app.model import Trace

NAME = "whowhen"
ORIGIN = "Who&When"
_ROLE = re.compile(r"^\s*(?P<agent>[^()]+?)\s*\((?P<note>[^)]*)\)\s*$")
HUMAN_ROLES = frozenset({"human", "user"})


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are a Who&When task (0 to 1)."""
    first = first_value(data)
    if isinstance(first, dict) and isinstance(first.get("history"), list) and (
            "mistake_agent" in first or "mistake_step" in first):
        return 1.0
    if isinstance(first, dict) and isinstance(first.get("history"), list) and "question" in first:
        return 0.6
    if first is None and head_has(data, b"history") and (
            head_has(data, b"mistake_agent") or b'"mistake_agent"' in data[-65536:]):
        return 0.7
    return 0.0


def import_whowhen(source: Source, *, name: str | None = None) -> list[Trace]:
    """The run of one Who&When task as a trace, its annotation kept on the mistaken step."""
    data, label = read_source(source, name)
    task = parse_json(data, label)
    if not isinstance(task, dict) or not isinstance(task.get("history"), list):
        raise TraceError(label, "top level", "is not a Who&When task (no `history` list)")
    return [task_trace(task, label)]


def speaker(step: dict[str, Any]) -> tuple[str, str | None]:
    """(agent, note) of a history step: `Orchestrator (-> WebSurfer)` is ('Orchestrator',
    '-> WebSurfer'); a plain role or name has no note."""
    role = step.get("role")
    named = step.get("name")
    text = role if isinstance(role, str) else ""
    match = _ROLE.match(text)
    if match:
        return match["agent"].strip(), match["note"].strip()
    if isinstance(named, str) and named and (not text or text in ("assistant", "user")):
        return named, None
    return (text or (named if isinstance(named, str) else "") or "agent"), None


def task_trace(task: dict[str, Any], label: str) -> Trace:
    """One Who&When task as a trace."""
    draft = TraceDraft()
    history = task["history"]
    steps: list[dict[str, Any] | None] = []
    spawned: set[str] = set()
    orchestrator = None
    speakers = [speaker(s)[0] if isinstance(s, dict) else None for s in history]
    for i, step in enumerate(history):
        if not isinstance(step, dict):
            draft.skip("history step that is not an object")
            steps.append(None)
            continue
        agent, note = speaker(step)
        content = as_text(step.get("content"))
        keys = {"source_id": f"history[{i}]", "content": content, "source_role": step.get("role")}
        if agent.lower() in HUMAN_ROLES:
            owner = orchestrator or next((s for s in speakers if s and s.lower()
                                          not in HUMAN_ROLES), "agent")
            steps.append(draft.add(i, "human_intervention", owner, from_=agent, **keys))
            continue
        if note is not None:
            orchestrator = orchestrator or agent
        low = (note or "").lower()
        if low.startswith("->"):
            target = note[2:].strip() or "agent"
            if target not in spawned:
                spawned.add(target)
                draft.add(i, "spawn", agent, to=target, role=target, source_id=f"history[{i}]",
                          inferred_by="importer")
            steps.append(draft.add(i, "orchestrator_decision", agent, decision="delegate",
                                   to=target, **keys))
        elif "termination" in low:
            steps.append(draft.add(i, "orchestrator_decision", agent, decision="stop", **keys))
        elif "final answer" in low:
            steps.append(draft.add(i, "aggregate", agent, **keys))
        elif note is not None:
            steps.append(draft.add(i, "orchestrator_decision", agent, decision="continue",
                                   **keys))
        elif orchestrator is not None and agent != orchestrator:
            steps.append(draft.add(i, "return", agent, from_=agent, to=orchestrator, **keys))
        else:
            after = next((s for s in speakers[i + 1:] if s and s != agent
                          and s.lower() not in HUMAN_ROLES), None)
            steps.append(draft.add(i, "message", agent, from_=agent, to=after, **keys))
    _annotate(draft, task, steps, label)
    if not any(e.get("decision") == "stop" for e in draft.events) and orchestrator:
        draft.conclude(orchestrator)
    task_id = as_text(task.get("question_ID") or task.get("question_id") or task.get("task_id"))
    question = as_text(task.get("question")) or ""
    if question and draft.events and draft.events[0]["type"] != "human_intervention":
        first = draft.events[0]
        asked = draft.add(0, "human_intervention", first["agent"], from_="human",
                          content=question, source_id="question")
        draft.events.insert(0, draft.events.pop())  # ties keep the order added: it opens the run
        asked["t"] = first["t"]
    for event in draft.events:
        if event["type"] == "aggregate" and task.get("ground_truth") is not None:
            event["ground_truth"] = as_text(task.get("ground_truth"))
    trace_id = task_id or _slug(question) or "whowhen"
    return draft.build(label, NAME, trace_id=f"whowhen-{trace_id}",
                       task_id=task_id or _slug(question) or "whowhen",
                       system="magentic-one" if orchestrator else "autogen-groupchat",
                       topology="centralized" if orchestrator else "unknown")


def _annotate(draft: TraceDraft, task: dict[str, Any], steps: list[dict[str, Any] | None],
              label: str) -> None:
    """Put the published annotation on the step it blames."""
    raw = task.get("mistake_step")
    try:
        index = int(raw) if raw is not None and str(raw).strip() != "" else None
    except (TypeError, ValueError):
        index = None
    if raw is not None and index is None:
        draft.note("annotation_unplaced", f"mistake_step {raw!r} is not a step number")
    if index is None:
        return
    draft.metrics["mistake_step"] = index
    if task.get("is_correct") is not True:
        draft.metrics["task_success"] = 0.0  # an annotated mistake means the run failed
    event = steps[index] if 0 <= index < len(steps) else None
    if event is None:
        draft.note("annotation_unplaced", f"mistake_step {index} is outside the history "
                   f"({len(steps)} steps)")
        return
    event["mistake_agent"] = as_text(task.get("mistake_agent"))
    event["mistake_reason"] = as_text(task.get("mistake_reason"))
    event["mistake_step"] = index
    event["annotation_origin"] = ORIGIN


def annotation(trace: Trace) -> dict[str, Any] | None:
    """The Who&When annotation an imported trace carries: {event_id, mistake_agent,
    mistake_step, mistake_reason, origin}, or None."""
    for event in trace.events:
        if event.extras.get("annotation_origin") == ORIGIN:
            return {"event_id": event.id, "mistake_agent": event.extras.get("mistake_agent"),
                    "mistake_step": event.extras.get("mistake_step"),
                    "mistake_reason": event.extras.get("mistake_reason"), "origin": ORIGIN}
    return None


def annotation_records(trace: Trace, questions: set[str]) -> list[dict[str, Any]]:
    """The published annotation as label records (the label store's import shape), for the
    rubric questions given: `task_outcome` = failure on the trace (a run Who&When annotates
    with a mistake failed), with the mistake in the comment; and `mistake_agent` /
    `mistake_step` on the trace when the rubric asks them."""
    found = annotation(trace)
    if found is None:
        return []
    comment = (f"Who&When: mistake by {found['mistake_agent']} at step {found['mistake_step']} "
               f"(event {found['event_id']}): {found['mistake_reason'] or ''}").strip()
    base = {"trace_id": trace.trace_id, "event_id": "", "reviewer": ORIGIN, "origin": ORIGIN,
            "comment": comment, "created_at": "2025-01-01T00:00:00.000000Z"}
    records = []
    if "task_outcome" in questions:
        records.append({**base, "question": "task_outcome", "value": "failure"})
    if "mistake_agent" in questions:
        records.append({**base, "question": "mistake_agent", "value": found["mistake_agent"]})
    if "mistake_step" in questions:
        records.append({**base, "question": "mistake_step", "value": found["event_id"]})
    return records


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48]
