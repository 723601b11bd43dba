"""OpenAI Agents SDK traces: `trace` and `trace.span` records, as a JSON list, JSONL, or the
`{"data": [...]}` batch the exporter sends.

Mapping: one trace per `trace_id`; every `agent` span is an agent, spawned by the agent span that
encloses it (and returning to it when its span ends); a `handoff` span is a delegation from
`from_agent` to `to_agent` (the target is spawned by the agent handing off the first time it
appears); a `function` span is a tool_call and its tool_result; `generation` and `response` spans
are the agent's model calls with their usage as tokens; a `guardrail` span is a safety event; a
`custom` span is a message. The last top-level agent's end is the stop.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import TraceDraft, as_text, first_value, json_values, parse_time
from viz_app.model import Trace

NAME = "openai_agents"
ROOT = "workflow"


OBJECTS = ("trace", "trace.span")
_MAX_DEPTH = 6


def _is_record(value: Any) -> bool:
    """A trace or span record: `object` says so, or (spans some exporters write without it) a
    `span_data` object with an `id`."""
    return isinstance(value, dict) and (value.get("object") in OBJECTS or (
        "object" not in value and isinstance(value.get("span_data"), dict) and "id" in value))


def _records(value: Any, depth: int = 0) -> list[Any]:
    """The trace and span records in a parsed value wherever their list is: the value itself,
    a list of them, the exporter's `{"data": [...]}` batch, or any wrapper (`{trace_id, spans:
    [...]}`, `{traces: [{..., spans: [...]}]}`). A wrapper that says which trace it holds
    (`trace_id` or `id`, `workflow_name`, `group_id`) stands for the trace record when there is
    none."""
    if _is_record(value):
        return [value]
    found: list[Any] = []
    if depth > _MAX_DEPTH:
        return found
    if isinstance(value, list):
        for item in value:
            found.extend(_records(item, depth + 1))
    elif isinstance(value, dict):
        for item in value.values():
            if isinstance(item, (list, dict)):
                found.extend(_records(item, depth + 1))
        trace_id = value.get("trace_id") or value.get("id")
        if found and isinstance(trace_id, str) and not any(
                r.get("object") == "trace" for r in found if isinstance(r, dict)):
            head = {k: value[k] for k in ("workflow_name", "group_id", "metadata") if k in value}
            found.insert(0, {"object": "trace", "id": trace_id, **head})
    return found


def _only(traces: dict[str, dict[str, Any]]) -> str:
    """The one trace id read so far (for spans that do not repeat it), else 'trace'."""
    return next(iter(traces)) if len(traces) == 1 else "trace"


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes hold OpenAI Agents SDK trace records (0 to 1)."""
    first = first_value(data)
    records = _records(first) if first is not None else []
    if records:
        return 1.0
    if b'"object":"trace.span"' in data[:65536] or b'"object": "trace.span"' in data[:65536]:
        return 0.9
    return 0.0


def import_openai_agents(source: Source, *, name: str | None = None) -> list[Trace]:
    """One trace per trace id in an Agents SDK export."""
    data, label = read_source(source, name)
    traces: dict[str, dict[str, Any]] = {}
    spans: dict[str, list[dict[str, Any]]] = defaultdict(list)
    other = 0
    for _line, value in json_values(data, label):
        records = _records(value)
        items = value.get("data") if isinstance(value, dict) else value
        if not records:
            other += 1
        elif isinstance(items, list):
            other += sum(1 for item in items if not _records(item))
        for record in records:
            if record.get("object") == "trace":
                traces.setdefault(str(record.get("id")), record)
            else:
                spans[str(record.get("trace_id") or _only(traces))].append(record)
    if not spans:
        raise TraceError(label, "", "is not an OpenAI Agents SDK trace export (no "
                         "`trace.span` records anywhere in it)")
    built = []
    for trace_id, group in spans.items():
        draft = TraceDraft()
        if other:
            draft.skip("record that is neither trace nor trace.span", other)
        built.append(_trace(draft, traces.get(trace_id, {}), group, label, trace_id))
    return built


def _trace(draft: TraceDraft, head: dict[str, Any], spans: list[dict[str, Any]], label: str,
           trace_id: str) -> Trace:
    by_id = {str(s.get("id")): s for s in spans}
    spans = sorted(spans, key=lambda s: (parse_time(s.get("started_at")) or 0.0))
    agent_of_span: dict[str, str] = {}
    for span in spans:
        data = span.get("span_data") or {}
        if data.get("type") == "agent":
            agent_of_span[str(span.get("id"))] = str(data.get("name") or "agent")

    def enclosing(span: dict[str, Any]) -> str | None:
        parent = span.get("parent_id")
        seen = set()
        while parent and parent in by_id and parent not in seen:
            seen.add(parent)
            if parent in agent_of_span:
                return agent_of_span[parent]
            parent = by_id[parent].get("parent_id")
        return None

    known: set[str] = set()
    spawned: dict[str, str] = {}
    last_top: tuple[float, str] | None = None
    for span in spans:
        data = span.get("span_data") if isinstance(span.get("span_data"), dict) else {}
        kind = data.get("type")
        start = parse_time(span.get("started_at"))
        end = parse_time(span.get("ended_at")) or start
        if start is None:
            draft.skip("span without started_at")
            continue
        owner = enclosing(span) or ROOT
        sid = span.get("id")
        error = as_text(span.get("error"))
        if kind == "agent":
            agent = agent_of_span[str(sid)]
            parent = enclosing(span)
            if parent is not None and agent not in known:
                spawn = draft.add(start, "spawn", parent, to=agent, role="agent", source_id=sid,
                                  tools=data.get("tools"), handoffs=data.get("handoffs"))
                spawned[agent] = parent
                back = draft.add(end, "return", agent, from_=agent, to=parent, source_id=sid)
                draft.link(spawn, back, "return")
            elif parent is None:
                if last_top is None or end >= last_top[0]:
                    last_top = (end, agent)
            known.add(agent)
            draft.add(start, "message", agent, from_=agent, kind="agent_run", end_t=end,
                      source_id=sid, content=f"{agent} runs", error=error)
        elif kind == "handoff":
            source_agent = str(data.get("from_agent") or owner)
            target = str(data.get("to_agent") or "agent")
            event = draft.add(start, "orchestrator_decision", source_agent, decision="delegate",
                              to=target, source_id=sid, content=f"hand off to {target}",
                              error=error)
            if target not in known and target not in spawned:
                spawned[target] = source_agent
                spawn = draft.add(start, "spawn", source_agent, to=target, role="agent",
                                  via="handoff", source_id=sid)
                draft.link(event, spawn, "causal")
        elif kind == "function":
            tool = str(data.get("name") or "function")
            call = draft.add(start, "tool_call", owner, tool=tool,
                             content=as_text(data.get("input")), source_id=sid)
            result = draft.add(end, "tool_result", owner, tool=tool,
                               content=as_text(data.get("output")), source_id=sid, error=error,
                               trusted=False)
            draft.link(call, result, "tool_dependency")
        elif kind in ("generation", "response"):
            usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
            tokens = _tokens(usage)
            draft.add(start, "message", owner, from_=owner, kind=kind, end_t=end,
                      model=as_text(data.get("model")), tokens=tokens, source_id=sid,
                      content=_generation_text(data), error=error,
                      response_id=data.get("response_id"))
        elif kind == "guardrail":
            draft.add(start, "safety_event", owner, content=f"guardrail {data.get('name')}"
                      + (" triggered" if data.get("triggered") else " passed"),
                      triggered=bool(data.get("triggered")), source_id=sid, end_t=end)
        elif kind == "custom":
            draft.add(start, "message", owner, from_=owner, kind="custom",
                      content=as_text(data.get("data")), name=as_text(data.get("name")),
                      source_id=sid, end_t=end)
        else:
            draft.skip(f"span type {kind!r}" if kind else "span without a type")
    root = _root(draft, last_top)
    if root is not None:
        draft.conclude(root, stop_at=last_top[0] if last_top else None)
    metadata = head.get("metadata") if isinstance(head.get("metadata"), dict) else {}
    task = head.get("group_id") or metadata.get("task_id") or head.get("workflow_name")
    return draft.build(label, NAME, trace_id=trace_id, task_id=str(task or trace_id),
                       system=as_text(head.get("workflow_name")) or "openai-agents",
                       topology=draft.shape())


def _tokens(usage: dict[str, Any]) -> float | None:
    total = usage.get("total_tokens")
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        return float(total)
    parts = [usage.get(k) for k in ("input_tokens", "output_tokens", "prompt_tokens",
                                    "completion_tokens")]
    numbers = [p for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
    return float(sum(numbers)) if numbers else None


def _generation_text(data: dict[str, Any]) -> str | None:
    output = data.get("output")
    if isinstance(output, list):
        texts = [m.get("content") for m in output if isinstance(m, dict)
                 and isinstance(m.get("content"), str)]
        if texts:
            return "\n".join(texts)
    return as_text(output)


def _root(draft: TraceDraft, last_top: tuple[float, str] | None) -> str | None:
    """The agent whose end is the run's stop: the last top-level agent to finish."""
    if last_top is not None:
        return last_top[1]
    agents = [e["agent"] for e in draft.events]
    return agents[0] if agents else None
