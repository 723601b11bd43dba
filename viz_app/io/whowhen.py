"""Who&When: the public failure-attribution dataset of multi-agent runs (arXiv:2505.00212), one
JSON object per task: `question`, `ground_truth` (or `groundtruth`), `history[]`, and the human
annotation `mistake_agent`, `mistake_step` (an index into `history`), `mistake_reason`, with
`mistake_type` and `labels` in some files.

Two subsets. Hand-Crafted runs are Magentic-One: steps are `{role, content}` and the role says
who acts (`Orchestrator (-> WebSurfer)` is a delegation to WebSurfer, spawning it the first time;
`Orchestrator (thought)` a decision; `Orchestrator (termination condition)` the stop;
`Orchestrator (final answer)` the aggregate; the addressed agent's reply is its return).
Algorithm-Generated runs are CaptainAgent group chats: steps are `{name, role, content}`, the
name is the speaker (the role is the logging agent's point of view and means nothing), each step
a message to the next speaker, and `system_prompt` holds each expert's prompt (kept on the
expert's first event). A group chat's last expert answer is its aggregate (of the other experts'
latest messages) and its stop follows the run's last step.

The runs carry no clock: step `i` happens at `t = i` seconds (`source_id = "history[i]"`). The
published annotation is kept verbatim on the blamed step's event (`published_annotation`: every
key of the task but the history and the prompts, which are the events); `annotation_records`
maps it to the rubric's questions (see docs/importers.md).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, parse_json, read_source
from viz_app.io.records import (CERTAIN, UNCERTAIN, TraceDraft, as_text, first_value, head_has,
                                label_record, publish, published)
from viz_app.model import Trace

NAME = "whowhen"
ORIGIN = "Who&When"
VERSION = "Who&When (arXiv:2505.00212)"
CREATED_AT = "2025-01-01T00:00:00.000000Z"
"""When a published Who&When label is said to be made (fixed, so importing twice adds nothing)."""
_ROLE = re.compile(r"^\s*(?P<agent>[^()]+?)\s*\((?P<note>[^)]*)\)\s*$")
HUMAN_ROLES = frozenset({"human", "user"})
TERMINAL = "Computer_terminal"
"""The group chats' code executor: it answers code, never the task."""
BODY_KEYS = frozenset({"history", "system_prompt"})
"""Keys of a task that become events, not part of the verbatim annotation."""


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


def subset(task: dict[str, Any]) -> str:
    """`Hand-Crafted` (Magentic-One: roles with notes) or `Algorithm-Generated` (group chats)."""
    for step in task.get("history") or ():
        if isinstance(step, dict) and speaker(step)[1] is not None:
            return "Hand-Crafted"
    return "Algorithm-Generated"


def task_trace(task: dict[str, Any], label: str) -> Trace:
    """One Who&When task as a trace."""
    draft = TraceDraft()
    history = task["history"]
    steps: list[dict[str, Any] | None] = []
    spawned: set[str] = set()
    orchestrator = None
    speakers = [speaker(s)[0] if isinstance(s, dict) else None for s in history]
    prompts = task.get("system_prompt") if isinstance(task.get("system_prompt"), dict) else {}
    introduced: set[str] = set()
    for i, step in enumerate(history):
        if not isinstance(step, dict):
            draft.skip("history step that is not an object")
            steps.append(None)
            continue
        agent, note = speaker(step)
        content = as_text(step.get("content"))
        keys = {"source_id": f"history[{i}]", "content": content, "source_role": step.get("role")}
        if agent not in introduced and agent in prompts:
            keys["system_prompt"] = as_text(prompts[agent])
        introduced.add(agent)
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
    if orchestrator is None:
        _conclude_group_chat(draft, steps)
    elif not any(e.get("decision") == "stop" for e in draft.events):
        draft.conclude(orchestrator)
    task_id = as_text(task.get("question_ID") or task.get("question_id") or task.get("task_id"))
    question = as_text(task.get("question")) or ""
    if question and draft.events and draft.events[0]["type"] != "human_intervention":
        first = draft.events[0]
        asked = draft.add(0, "human_intervention", first["agent"], from_="human",
                          content=question, source_id="question")
        draft.events.insert(0, draft.events.pop())  # ties keep the order added: it opens the run
        asked["t"] = first["t"]
    truth = task.get("ground_truth", task.get("groundtruth"))
    for event in draft.events:
        if event["type"] == "aggregate" and truth is not None:
            event["ground_truth"] = as_text(truth)
    _annotate(draft, task, steps)
    return draft.build(label, NAME, trace_id=run_id(task, label, task_id or _slug(question)),
                       task_id=task_id or _slug(question) or "whowhen",
                       system="magentic-one" if orchestrator else "captainagent-groupchat",
                       topology="centralized" if orchestrator else "unknown")


def run_id(task: dict[str, Any], label: str, task_id: str) -> str:
    """The trace id of one run: its subset and file (`whowhen-ag-12` for
    `Algorithm-Generated/12.json`), since the dataset runs one question several times (45 of
    its 184 runs share their `question_ID` with another); the question itself for bytes
    without a file name."""
    short = "hc" if subset(task) == "Hand-Crafted" else "ag"
    name = Path(label).stem if label and not label.startswith("<") else ""
    return f"whowhen-{short}-{_slug(name) or task_id or 'run'}"


def _conclude_group_chat(draft: TraceDraft, steps: list[dict[str, Any] | None]) -> None:
    """A group chat's end: its last expert answer (not the code executor's output, not a bare
    TERMINATE) aggregates the other speakers' latest messages, and the agent who spoke last
    stops after the run's last step."""
    said = [e for e in steps if e is not None and e["type"] == "message"]
    if not said:
        return
    answers = [e for e in said if e["agent"] != TERMINAL
               and (e.get("content") or "").strip().upper().rstrip(".") != "TERMINATE"]
    if answers:
        final = answers[-1]
        final["type"] = "aggregate"
        final["inferred_by"] = "importer"
        final.pop("to", None)
        final.pop("from", None)
        latest: dict[str, dict[str, Any]] = {}
        for event in said:
            if event["t"] >= final["t"]:
                break
            if event["agent"] != final["agent"]:
                latest[event["agent"]] = event
        for event in sorted(latest.values(), key=lambda e: e["t"]):
            draft.link(event, final, "aggregate")
    experts = [e for e in said if e["agent"] != TERMINAL] or said
    draft.conclude(experts[-1]["agent"], aggregate=False)


def _step_number(raw: Any) -> int | None:
    try:
        return int(raw) if raw is not None and str(raw).strip() != "" else None
    except (TypeError, ValueError):
        return None


def _same_agent(a: str | None, b: str | None) -> bool:
    """Whether two spellings name one agent (`Verification_Expert` and `verification expert`)."""
    def norm(x: str | None) -> str:
        return re.sub(r"[\s_\-]+", "", (x or "").lower())
    return bool(a) and norm(a) == norm(b)


def _annotate(draft: TraceDraft, task: dict[str, Any],
              steps: list[dict[str, Any] | None]) -> None:
    """Keep the published annotation verbatim on the step it blames (on the first event when
    the step cannot be placed), with what orchviz found there; warn when the blamed agent is
    not the one speaking at that step."""
    record = {k: v for k, v in task.items() if k not in BODY_KEYS}
    if "mistake_agent" not in record and "mistake_step" not in record:
        return
    raw = task.get("mistake_step")
    index = _step_number(raw)
    event = steps[index] if index is not None and 0 <= index < len(steps) else None
    found: dict[str, Any] = {"subset": subset(task), "step": index, "placed": event is not None}
    if raw is not None and index is None:
        draft.note("annotation_unplaced", f"mistake_step {raw!r} is not a step number")
    elif index is not None and event is None:
        draft.note("annotation_unplaced", f"mistake_step {index} is outside the history "
                   f"({len(steps)} steps)")
    if index is not None:
        draft.metrics["mistake_step"] = index
    if task.get("is_correct", task.get("is_corrected")) is not True:
        draft.metrics["task_success"] = 0.0  # an annotated mistake means the run failed
    blamed = as_text(task.get("mistake_agent"))
    if event is not None:
        spoke = speaker(task["history"][index])[0]
        found["speaker"] = spoke
        if blamed and not _same_agent(blamed, spoke):
            found["agent_mismatch"] = True
            draft.note("annotation_agent_mismatch", f"Who&When blames {blamed} for step {index}, "
                       f"but {spoke} speaks there; both are kept, and the labels made from it are "
                       "marked uncertain")
        event["mistake_agent"] = blamed
        event["mistake_reason"] = as_text(task.get("mistake_reason"))
        event["mistake_step"] = index
        event["annotation_origin"] = ORIGIN
    target = event if event is not None else (draft.events[0] if draft.events else None)
    if target is not None:
        publish(target, ORIGIN, f"{VERSION}, {found['subset']} subset", record, found=found)


def annotation(trace: Trace) -> dict[str, Any] | None:
    """The Who&When annotation an imported trace carries: {event_id, mistake_agent,
    mistake_step, mistake_reason, origin, record, found}, or None. `event_id` is the blamed
    step's event, '' when the step could not be placed."""
    for event_id, kept in published(trace, ORIGIN):
        record = kept.get("record") if isinstance(kept.get("record"), dict) else {}
        found = kept.get("found") if isinstance(kept.get("found"), dict) else {}
        return {"event_id": event_id if found.get("placed") else "",
                "mistake_agent": as_text(record.get("mistake_agent")),
                "mistake_step": _step_number(record.get("mistake_step")),
                "mistake_reason": as_text(record.get("mistake_reason")), "origin": ORIGIN,
                "record": record, "found": found}
    return None


def annotation_records(trace: Trace, questions: set[str]) -> list[dict[str, Any]]:
    """The published annotation as label records under the rubric's questions (see the mapping
    in docs/importers.md): `task_outcome` = failure on the trace; `mistake_agent` and
    `mistake_step` on the trace when the rubric asks them, uncertain when the blamed agent does
    not speak at the blamed step. `mistake_type` and `labels` have no published vocabulary: they
    stay raw tags, named in the comments."""
    found = annotation(trace)
    if found is None:
        return []
    record, facts = found["record"], found["found"]
    tags = [f"{key}={as_text(record[key])}" for key in ("mistake_type", "labels")
            if record.get(key) not in (None, "", [])]
    place = f" (event {found['event_id']})" if found["event_id"] else " (not placed)"
    comment = (f"Who&When: mistake by {found['mistake_agent']} at step {found['mistake_step']}"
               f"{place}: {found['mistake_reason'] or ''}").strip()
    if tags:
        comment += " [raw tags: " + "; ".join(tags) + "]"
    records = []

    def add(question: str, value: Any, mapping: str = CERTAIN, why: str = "") -> None:
        records.append(label_record(trace, ORIGIN, question, value, comment, mapping=mapping,
                                    why=why, created_at=CREATED_AT))

    solved = record.get("is_correct", record.get("is_corrected"))
    if "task_outcome" in questions and solved is not True:
        add("task_outcome", "failure")
    mismatch = bool(facts.get("agent_mismatch"))
    why = (f"Who&When blames {found['mistake_agent']}, but {facts.get('speaker')} speaks at "
           f"step {found['mistake_step']}") if mismatch else ""
    if "mistake_agent" in questions and found["mistake_agent"]:
        add("mistake_agent", found["mistake_agent"], UNCERTAIN if mismatch else CERTAIN, why)
    if "mistake_step" in questions and found["event_id"]:
        add("mistake_step", found["event_id"], UNCERTAIN if mismatch else CERTAIN, why)
    return records


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48]
