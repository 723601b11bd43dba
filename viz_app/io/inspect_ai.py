"""Inspect AI evaluation logs: `.eval` (a zip with `header.json` and `samples/*.json`) or a
`.json` log; one trace per sample. Transcript events outside a full log read the same way, as
one sample: a sample's JSON alone, a transcript (`{id, source_id, ..., events}`), a JSON list of
events or one event a line.

Mapping: `span_begin` / `span_end` events with `type: "agent"` give the agents (named by `name`);
an agent span inside another agent's span is spawned by it and returns to it at `span_end`; events
outside every agent span belong to `main`, the solver. A `model` event is the agent's model call
(`output.usage` as tokens, `output.choices[0].message` as content); a `tool` event is a tool_call
and its tool_result, and a delegation when it names a handoff target in `agent`. Numeric sample
scores (and C/I grades as 1/0) become rewards. The root's end is the stop.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import (DEFAULT_MAX_BYTES, Source, limit_mb, parse_json, read_source,
                               size_mb)
from viz_app.io.records import (TraceDraft, as_text, first_value, head_has, json_values,
                                parse_time)
from viz_app.model import Trace

NAME = "inspect_ai"
SKIPPED_EVENTS = frozenset({"sample_init", "state", "store", "step", "subtask", "input",
                            "score", "sample_limit", "approval", "sandbox", "logger", "info",
                            "span_begin", "span_end", "error", "score_edit", "checkpoint"})
"""Events that hold nothing an orchestration trace shows (or that spans already give)."""
GRADES = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
"""Inspect's letter grades (correct, incorrect, partial, no answer) as numbers."""
MAIN = "main"


EVENT_KINDS = frozenset({"sample_init", "sample_limit", "state", "store", "model", "tool",
                         "approval", "input", "score", "score_edit", "error", "logger", "info",
                         "span_begin", "span_end", "step", "subtask", "sandbox", "checkpoint",
                         "compaction"})
"""The `event` discriminator of Inspect's transcript events."""
TELLING_KINDS = EVENT_KINDS - {"error", "info", "logger", "input", "score", "step"}
"""Event kinds no general log writes: a list or lines of events is Inspect's when one of these
opens it (a log of `{"event": "error", "timestamp": ...}` is not)."""


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are an Inspect AI log, or transcript events outside a log
    (a sample's, or a transcript's with its `events`, or the events alone) (0 to 1)."""
    if data[:4] == b"PK\x03\x04":
        try:
            names = zipfile.ZipFile(io.BytesIO(data)).namelist()
        except zipfile.BadZipFile:
            return 0.5 if name.endswith(".eval") else 0.0
        return 1.0 if "header.json" in names else 0.0
    first = first_value(data)
    if isinstance(first, dict) and "eval" in first and ("samples" in first or "plan" in first):
        return 1.0
    if isinstance(first, dict) and _is_event(first) and first["event"] in TELLING_KINDS:
        return 0.9  # JSON Lines of events
    events = first if isinstance(first, list) else (
        first.get("events") if isinstance(first, dict) else None)
    if isinstance(events, list) and events and all(_is_event(e) for e in events[:5]) \
            and any(e["event"] in TELLING_KINDS for e in events[:5]):
        return 0.9
    if first is None and head_has(data, b"eval", b"task", b"status"):
        return 0.7
    if first is None and head_has(data, b"event", b"span_begin", b"timestamp"):
        return 0.6
    return 0.0


def _is_event(value: Any) -> bool:
    return isinstance(value, dict) and value.get("event") in EVENT_KINDS and "timestamp" in value


def import_inspect(source: Source, *, name: str | None = None,
                   max_bytes: int = DEFAULT_MAX_BYTES) -> list[Trace]:
    """One trace per sample of an Inspect log (`.eval` zip or `.json`); `max_bytes` limits the
    file, and the members of a zip once inflated."""
    data, label = read_source(source, name, max_bytes)
    if data[:4] == b"PK\x03\x04":
        header, samples = _read_zip(data, label, max_bytes)
    else:
        values = json_values(data, label)
        log = values[0][1] if len(values) == 1 else None
        if isinstance(log, dict) and "eval" in log:
            header, samples = log, [(f"samples[{i}]", s) for i, s in
                                    enumerate(log.get("samples") or [])]
        else:
            header, samples = {}, [("events", _outside_a_log(values, label))]
    if not samples:
        raise TraceError(label, "", "the Inspect log holds no samples")
    ev = header.get("eval") if isinstance(header.get("eval"), dict) else {}
    return [_sample_trace(sample, ev, label, place) for place, sample in samples]


def _outside_a_log(values: list[tuple[int, Any]], label: str) -> dict[str, Any]:
    """Transcript events outside a full log, as a sample: a sample read alone (`id`, `epoch`,
    `events`, `scores`), a transcript (`id`, `source_id`, `events`), a JSON list of events, or
    one event a line. Its id is the record's, else the file's name."""
    record = values[0][1] if len(values) == 1 else None
    if isinstance(record, dict) and isinstance(record.get("events"), list):
        return record
    events = record if isinstance(record, list) else [value for _, value in values]
    for number, value in ([(i, v) for i, v in enumerate(events)] if isinstance(record, list)
                          else values):
        if not _is_event(value):
            place = f"item {number + 1}" if isinstance(record, list) else f"line {number}"
            raise TraceError(label, place, "is neither an Inspect AI log (no `eval` key) nor "
                             "an Inspect transcript event (`event` and `timestamp`)")
    return {"id": Path(label).stem or "events", "events": events}


def _read_zip(data: bytes, label: str,
              max_bytes: int) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """header.json and every samples/*.json of an .eval zip, parsed, within `max_bytes` in all
    once inflated: held to it by the sizes the members declare, before any is inflated, and
    again by the bytes that actually come out, so neither a member that inflates a thousandfold
    (a zip bomb) nor one whose header lies gets past; the error names the member."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = {info.filename: info for info in archive.infolist()}
    except (zipfile.BadZipFile, EOFError) as err:
        raise TraceError(label, "", f"is not a readable .eval zip ({err}); the file looks "
                         "truncated") from None
    if "header.json" not in members:
        raise TraceError(label, "", "is a zip without header.json: not an Inspect .eval log")
    wanted = ["header.json", *sorted(n for n in members
                                     if n.startswith("samples/") and n.endswith(".json"))]
    declared = 0
    for member in wanted:
        declared += members[member].file_size
        if declared > max_bytes:
            size = members[member].file_size
            raise TraceError(label, member, _over_limit(
                f"inflates to {size_mb(size, max_bytes)}" if size > max_bytes else
                f"brings the members inflated so far to {size_mb(declared, max_bytes)}", max_bytes))
    left, parsed = max_bytes, []
    for member in wanted:
        text = _inflate(archive, members[member], label, left, max_bytes)
        left -= len(text)
        parsed.append((member, parse_json(text, f"{label}:{member}")))
    header = parsed[0][1]
    return header if isinstance(header, dict) else {}, parsed[1:]


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, label: str, left: int,
             max_bytes: int) -> bytes:
    """A member's bytes, never more than `left` of them whatever its header declares."""
    try:
        with archive.open(info) as stream:
            text = stream.read(left + 1)
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as err:
        raise TraceError(label, info.filename, f"cannot be inflated ({err}): the file is damaged, "
                         "or its header does not tell the truth") from None
    if len(text) > left:
        raise TraceError(label, info.filename, _over_limit(
            "inflates beyond what its header declares", max_bytes))
    return text


def _over_limit(what: str, limit: int) -> str:
    return f"{what}, over the {limit_mb(limit)} limit (set ORCHVIZ_MAX_BYTES to raise it)"


def _sample_trace(sample: Any, ev: dict[str, Any], label: str, place: str) -> Trace:
    if not isinstance(sample, dict) or not isinstance(sample.get("events"), list):
        raise TraceError(label, place, "an Inspect sample needs an `events` list")
    draft = TraceDraft()
    events = [e for e in sample["events"] if isinstance(e, dict)]
    spans = {str(e.get("id")): e for e in events if e.get("event") == "span_begin"}
    ends = {str(e.get("id")): parse_time(e.get("timestamp")) for e in events
            if e.get("event") == "span_end"}

    enclosing: dict[str, str | None] = {}  # span id -> the agent span it is in, once found

    def agent_span(span_id: Any) -> str | None:
        walked: dict[str, None] = {}
        found = None
        while span_id is not None and str(span_id) in spans:
            key = str(span_id)
            if key in enclosing:
                found = enclosing[key]
                break
            if key in walked:  # parents in a loop: no agent encloses them
                break
            walked[key] = None
            if spans[key].get("type") == "agent":
                found = key
                break
            span_id = spans[key].get("parent_id")
        enclosing.update(dict.fromkeys(walked, found))
        return found

    def name_of(span_id: str | None) -> str:
        return str(spans[span_id].get("name") or "agent") if span_id else MAIN

    main_acts = any(e.get("event") in ("model", "tool") and agent_span(e.get("span_id")) is None
                    for e in events)  # then `main` exists and spawns the top-level agents
    spawned: dict[str, dict[str, Any]] = {}
    roots: list[str] = []
    for e in events:
        kind = e.get("event")
        t = parse_time(e.get("timestamp"))
        if t is None:
            draft.skip(f"{kind} event without a timestamp")
            continue
        done = parse_time(e.get("completed")) or _ended(e, t)
        if kind == "span_begin" and e.get("type") == "agent":
            agent = name_of(str(e.get("id")))
            parent_span = agent_span(e.get("parent_id"))
            if parent_span is None and not main_acts:
                roots.append(agent)
                continue
            parent = name_of(parent_span)
            if agent in spawned or agent == parent:
                continue
            spawn = draft.add(t, "spawn", parent, to=agent, role="agent", source_id=e.get("id"))
            spawned[agent] = spawn
            end = ends.get(str(e.get("id")))
            if end is not None:
                back = draft.add(end, "return", agent, from_=agent, to=parent,
                                 source_id=e.get("id"))
                draft.link(spawn, back, "return")
            continue
        owner = name_of(agent_span(e.get("span_id")))
        if kind == "model":
            output = e.get("output") if isinstance(e.get("output"), dict) else {}
            usage = output.get("usage") if isinstance(output.get("usage"), dict) else {}
            total = usage.get("total_tokens")
            draft.add(t, "message", owner, from_=owner, kind="generation", end_t=done,
                      model=as_text(e.get("model") or output.get("model")),
                      tokens=total if isinstance(total, (int, float)) else None,
                      content=_choice_text(output), source_id=e.get("uuid") or e.get("id"))
        elif kind == "tool":
            tool = str(e.get("function") or "tool")
            call = draft.add(t, "tool_call", owner, tool=tool, content=as_text(e.get("arguments")),
                             source_id=e.get("id"))
            result = draft.add(done, "tool_result", owner, tool=tool,
                               content=as_text(e.get("result")), error=as_text(e.get("error")),
                               source_id=e.get("id"), trusted=False)
            draft.link(call, result, "tool_dependency")
            if isinstance(e.get("agent"), str):
                draft.add(t, "orchestrator_decision", owner, decision="delegate", to=e["agent"],
                          content=f"hand off to {e['agent']}", source_id=e.get("id"))
        elif kind not in SKIPPED_EVENTS:
            draft.skip(f"{kind!r} event")
    root = roots[0] if roots else MAIN
    draft.conclude(root)
    draft.rewards.update(_scores(sample.get("scores")) or _scores({
        "score": e.get("score") for e in events  # events alone: their final score
        if e.get("event") == "score" and not e.get("intermediate")}))
    task = as_text(ev.get("task")) or "inspect"
    sample_id = as_text(sample.get("id")) or place
    epoch = sample.get("epoch")
    source = ev.get("eval_id") or ev.get("run_id") or sample.get("source_id") or task
    trace_id = f"{source}:{sample_id}" + (f":{epoch}" if epoch is not None else "")
    return draft.build(label, NAME, trace_id=trace_id, task_id=f"{task}/{sample_id}",
                       system=as_text(ev.get("model")) or "inspect-ai",
                       topology=draft.shape())


def _ended(event: dict[str, Any], t: float) -> float:
    """When an event without `completed` ended: its start plus the seconds the model call took
    (`output.time`, which logs of every version keep) or the tool's `working_time`; else its
    start."""
    output = event.get("output") if isinstance(event.get("output"), dict) else {}
    for took in (output.get("time"), event.get("working_time")):
        if isinstance(took, (int, float)) and not isinstance(took, bool) and 0 <= took < 1e7:
            return t + float(took)
    return t


def _choice_text(output: dict[str, Any]) -> str | None:
    choices = output.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return as_text(output.get("completion"))
    message = choices[0].get("message") if isinstance(choices[0].get("message"), dict) else {}
    content = message.get("content")
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, dict)
                 and isinstance(c.get("text"), str)]
        content = "\n".join(texts) if texts else as_text(content)
    calls = message.get("tool_calls")
    if not content and isinstance(calls, list):
        return as_text([{"function": c.get("function"), "arguments": c.get("arguments")}
                        for c in calls if isinstance(c, dict)])
    return as_text(content)


def _scores(scores: Any) -> dict[str, float]:
    found: dict[str, float] = {}
    if not isinstance(scores, dict):
        return found
    for name, score in scores.items():
        value = score.get("value") if isinstance(score, dict) else score
        if isinstance(value, bool):
            found[str(name)] = float(value)
        elif isinstance(value, (int, float)):
            found[str(name)] = float(value)
        elif isinstance(value, str) and value in GRADES:
            found[str(name)] = GRADES[value]
    return found

