"""Langfuse trace exports: a trace with its observations, as the Langfuse API gives it
(`GET /api/public/traces/{id}`: `{id, name, timestamp, input, output, sessionId, ...,
observations: [...], scores: [...]}`), a list of such traces (or `{data: [...]}`), or the
observations alone (`GET /api/public/observations`, each naming its `traceId`).

Each observation has `id`, `type`, `name`, `startTime` / `endTime` (ISO), `parentObservationId`,
`input`, `output`, `model`, `usage` / `usageDetails` and `level` / `statusMessage`. They are read
by the span mapping every span-based format shares (`viz_app.io.otlp.span_events`) with their
`type` saying what they are: `AGENT` an agent (its name), `TOOL` and `RETRIEVER` a tool call,
`GENERATION` and `EMBEDDING` a model call, `GUARDRAIL` a safety event, `EVENT` a message of the
agent it happens in, `SPAN`, `CHAIN` and `EVALUATOR` containers. The trace itself is the root
agent (named by the trace) when no agent observation stands at the top. Numeric trace scores
become rewards; every score is kept verbatim on the first event.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.otlp import Span, classify, finish, number, span_events
from viz_app.io.records import TraceDraft, as_text, first_value, json_values, parse_time
from viz_app.model import Trace

NAME = "langfuse"
KINDS = {"AGENT": "agent", "TOOL": "tool", "RETRIEVER": "tool", "GENERATION": "model",
         "EMBEDDING": "model", "GUARDRAIL": "guardrail", "SPAN": "container",
         "CHAIN": "container", "EVALUATOR": "container", "EVENT": "event"}
"""Observation types and what they are."""
ROOT_ID = "__trace__"


def _is_observation(value: Any) -> bool:
    return isinstance(value, dict) and "id" in value and "startTime" in value and (
        value.get("type") in KINDS or "parentObservationId" in value)


def _traces_of(value: Any) -> list[dict[str, Any]]:
    """The traces in one parsed value: a trace with observations, a list of them, the API's
    `{data: [...]}` page, or observations alone (grouped by their `traceId`)."""
    if isinstance(value, dict) and isinstance(value.get("observations"), list):
        return [value]
    items = value.get("data") if isinstance(value, dict) else value
    if not isinstance(items, list):
        return [{"observations": [value]}] if _is_observation(value) else []
    traces = [t for t in items if isinstance(t, dict) and isinstance(t.get("observations"), list)]
    loose: dict[str, list[Any]] = defaultdict(list)
    for item in items:
        if _is_observation(item):
            loose[str(item.get("traceId") or "trace")].append(item)
    return traces + [{"id": trace_id, "observations": obs} for trace_id, obs in loose.items()]


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are a Langfuse trace export (0 to 1)."""
    first = first_value(data)
    found = _traces_of(first) if first is not None else []
    observations = [o for t in found for o in t["observations"]]
    if observations and _is_observation(observations[0]):
        return 1.0 if "parentObservationId" in observations[0] or "traceId" in \
            observations[0] else 0.7
    if first is None and b'"parentObservationId"' in data[:65536]:
        return 0.8
    return 0.0


def import_langfuse(source: Source, *, name: str | None = None) -> list[Trace]:
    """One trace per Langfuse trace in an export."""
    data, label = read_source(source, name)
    merged: dict[str, dict[str, Any]] = {}
    for _line, value in json_values(data, label):
        for found in _traces_of(value):
            trace_id = str(found.get("id") or "trace")
            held = merged.setdefault(trace_id, {**found, "observations": []})
            held["observations"].extend(o for o in found["observations"] if _is_observation(o))
    merged = {k: v for k, v in merged.items() if v["observations"]}
    if not merged:
        raise TraceError(label, "", "is not a Langfuse trace export (no observations with id, "
                         "type and startTime)")
    return [_trace(found, label, trace_id) for trace_id, found in merged.items()]


def _trace(found: dict[str, Any], label: str, trace_id: str) -> Trace:
    draft = TraceDraft()
    spans: list[Span] = []
    for raw in found["observations"]:
        start = parse_time(raw.get("startTime"))
        if start is None:
            draft.skip("observation without startTime")
            continue
        end = parse_time(raw.get("endTime"))
        kind = KINDS.get(str(raw.get("type") or "").upper())
        usage = raw.get("usageDetails") or raw.get("usage") or {}
        usage = usage if isinstance(usage, dict) else {}
        tokens = number(usage.get("total")) or (
            (number(usage.get("input")) or 0) + (number(usage.get("output")) or 0)) or None
        span = Span(span_id=as_text(raw.get("id")),
                    parent_id=as_text(raw.get("parentObservationId")),
                    name=str(raw.get("name") or ""), start=start,
                    end=max(start, end if end is not None else start),
                    attrs=raw.get("metadata") if isinstance(raw.get("metadata"), dict) else {},
                    error=as_text(raw.get("statusMessage") or "error")
                    if raw.get("level") == "ERROR" else None,
                    kind="container" if kind == "event" else kind,
                    inputs=_content(raw.get("input")),
                    outputs=_content(raw.get("output")), model=as_text(raw.get("model")),
                    tokens=tokens if kind == "model" else None,
                    keys={"observation_type": as_text(raw.get("type"))})
        if kind in ("agent", "tool"):
            span.agent = span.name or None if kind == "agent" else None
            span.tool = span.name or None if kind == "tool" else None
        if kind == "event":
            span.keys["event_input"] = raw.get("input")
        spans.append(classify(span))
    if not spans:
        raise TraceError(label, "", f"trace {trace_id} holds no observation with a startTime")
    ids = {s.span_id for s in spans}
    tops = [s for s in spans if not s.parent_id or s.parent_id not in ids]
    if not any(s.kind == "agent" for s in tops):  # the trace is the root agent
        root = Span(span_id=ROOT_ID, parent_id=None, name=str(found.get("name") or "trace"),
                    start=min([s.start for s in spans] + [parse_time(found.get("timestamp"))
                                                          or float("inf")]),
                    end=max(s.end for s in spans), kind="root",
                    agent=str(found.get("name") or "trace"), inputs=_content(found.get("input")),
                    outputs=_content(found.get("output")))
        for span in tops:
            span.parent_id = ROOT_ID
        spans.append(root)
    events = {s.span_id: s for s in spans if s.keys.get("observation_type") == "EVENT"}
    finish(draft, span_events(draft, spans, str(found.get("name") or "trace")))
    _events(draft, spans, events)
    _scores(draft, found.get("scores"))
    return draft.build(label, NAME, trace_id=trace_id,
                       task_id=as_text(found.get("sessionId")) or trace_id,
                       system=as_text(found.get("name")) or "langfuse", topology=draft.shape())


def _content(value: Any) -> Any:
    """What an output says: a chat message's content, the last message of a message list."""
    if isinstance(value, dict):
        messages = value.get("messages")
        if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
            return messages[-1].get("content", messages[-1])
        if "content" in value and value.get("content"):
            return value["content"]
    return value


def _events(draft: TraceDraft, spans: list[Span], events: dict[str, Span]) -> None:
    """An EVENT observation is a message of the agent it happens in."""
    by_id = {s.span_id: s for s in spans}
    for span_id, span in events.items():
        parent, agent = span.parent_id, None
        while parent in by_id and agent is None:
            holder = by_id[parent]
            agent = holder.agent if holder.kind in ("agent", "root") else None
            parent = holder.parent_id
        who = agent or spans[0].agent or "agent"
        draft.add(span.start, "message", who, from_=who, kind="event", content=span.name,
                  source_id=span_id, **{k: v for k, v in span.keys.items() if v is not None})


def _scores(draft: TraceDraft, scores: Any) -> None:
    """Numeric trace scores become rewards; every score is kept verbatim on the first event."""
    if not isinstance(scores, list) or not scores or not draft.events:
        return
    for score in scores:
        if not isinstance(score, dict) or score.get("observationId"):
            continue
        value = number(score.get("value"))
        if value is not None and isinstance(score.get("name"), str):
            draft.rewards[score["name"]] = value
    min(draft.events, key=lambda e: e["t"])["langfuse_scores"] = scores
