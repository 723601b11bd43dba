"""OpenTelemetry traces in OTLP/JSON (`resourceSpans[].scopeSpans[].spans[]`), one export
request per file or one per line, ids in hex or base64.

Agent structure comes from either convention. GenAI semantic conventions:
`gen_ai.operation.name` = `invoke_agent` / `create_agent` (agents, named by `gen_ai.agent.name` or
`.id`), `execute_tool` (tool calls: `gen_ai.tool.name`, `gen_ai.tool.call.id`), `chat`,
`text_completion`, `generate_content` (model calls: `gen_ai.usage.*` tokens). OpenInference:
`openinference.span.kind` = AGENT (`agent.name`, `graph.node.id`, `graph.node.parent_id`), TOOL,
LLM, RETRIEVER, GUARDRAIL; CHAIN spans are containers. An agent span nested in another agent's
span (or naming it as `graph.node.parent_id`) is spawned by it and returns to it at its end; a
tool named `transfer_to_<agent>` is a delegation to that agent. One trace per trace id.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import defaultdict
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import TraceDraft, as_text, first_value, json_values
from viz_app.model import Trace

NAME = "otlp"
AGENT_OPS = frozenset({"invoke_agent", "create_agent"})
MODEL_OPS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})
_HEX = re.compile(r"^[0-9a-fA-F]+$")


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are OTLP/JSON trace data (0 to 1)."""
    first = first_value(data)
    if isinstance(first, dict) and isinstance(first.get("resourceSpans"), list):
        return 1.0
    if b'"resourceSpans"' in data[:4096]:
        return 0.8
    return 0.0


def hex_id(value: Any, size: int) -> str | None:
    """An OTLP trace or span id as lowercase hex, whether written in hex (as the OTLP/JSON
    spec says) or base64 (as protobuf's JSON mapping writes bytes); None when empty."""
    if not isinstance(value, str) or not value:
        return None
    if len(value) == size * 2 and _HEX.match(value):
        return value.lower()
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=False)
    except (binascii.Error, ValueError):
        return value
    return raw.hex() if len(raw) == size else value


def attributes(items: Any) -> dict[str, Any]:
    """OTLP typed attributes (`[{key, value: {stringValue|intValue|...}}]`) as a plain dict."""
    found: dict[str, Any] = {}
    if not isinstance(items, list):
        return found
    for item in items:
        if isinstance(item, dict) and isinstance(item.get("key"), str):
            found[item["key"]] = any_value(item.get("value"))
    return found


def any_value(value: Any) -> Any:
    """One OTLP AnyValue as a Python value (intValue comes as a string in JSON)."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "arrayValue" in value:
        return [any_value(v) for v in (value["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _nanos(value: Any) -> float | None:
    try:
        return int(value) / 1e9
    except (TypeError, ValueError):
        return None


def import_otlp(source: Source, *, name: str | None = None) -> list[Trace]:
    """One trace per trace id in OTLP/JSON export requests."""
    data, label = read_source(source, name)
    spans_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
    service_of: dict[str, str] = {}
    requests = 0
    for line, value in json_values(data, label):
        if not isinstance(value, dict) or not isinstance(value.get("resourceSpans"), list):
            raise TraceError(label, f"line {line}", "is not an OTLP/JSON trace export "
                             "(no resourceSpans)")
        requests += 1
        for resource in value["resourceSpans"]:
            if not isinstance(resource, dict):
                continue
            service = attributes((resource.get("resource") or {}).get("attributes")).get(
                "service.name")
            for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") \
                    or []:
                for span in (scope or {}).get("spans") or []:
                    if not isinstance(span, dict):
                        continue
                    trace_id = hex_id(span.get("traceId"), 16) or "trace"
                    spans_of[trace_id].append(span)
                    if isinstance(service, str):
                        service_of.setdefault(trace_id, service)
    if not spans_of:
        raise TraceError(label, "", "holds no spans")
    return [_trace(spans, label, trace_id, service_of.get(trace_id))
            for trace_id, spans in spans_of.items()]


def _span_agent(attrs: dict[str, Any], span: dict[str, Any]) -> str | None:
    """The agent a span stands for, if it is an agent span in either convention."""
    if attrs.get("gen_ai.operation.name") in AGENT_OPS:
        return str(attrs.get("gen_ai.agent.name") or attrs.get("gen_ai.agent.id")
                   or span.get("name") or "agent")
    if attrs.get("openinference.span.kind") == "AGENT":
        return str(attrs.get("agent.name") or attrs.get("graph.node.name")
                   or attrs.get("graph.node.id") or span.get("name") or "agent")
    return None


def _trace(spans: list[dict[str, Any]], label: str, trace_id: str, service: str | None) -> Trace:
    draft = TraceDraft()
    rows = []
    for span in spans:
        attrs = attributes(span.get("attributes"))
        start = _nanos(span.get("startTimeUnixNano"))
        if start is None:
            draft.skip("span without startTimeUnixNano")
            continue
        end = _nanos(span.get("endTimeUnixNano")) or start
        rows.append((start, end, hex_id(span.get("spanId"), 8),
                     hex_id(span.get("parentSpanId"), 8), attrs, span))
    rows.sort(key=lambda r: r[0])
    by_id = {r[2]: r for r in rows if r[2]}
    agent_of = {r[2]: a for r in rows if (a := _span_agent(r[4], r[5])) is not None}
    node_agent = {r[4]["graph.node.id"]: agent_of[r[2]] for r in rows
                  if r[2] in agent_of and "graph.node.id" in r[4]}
    root = service or "agent"

    def enclosing(row: tuple) -> str | None:
        parent, seen = row[3], set()
        while parent and parent in by_id and parent not in seen:
            seen.add(parent)
            if parent in agent_of:
                return agent_of[parent]
            parent = by_id[parent][3]
        return None

    spawned: set[str] = set()
    tops: list[tuple[float, str]] = []
    conversation = None
    for start, end, span_id, _parent, attrs, span in rows:
        conversation = conversation or attrs.get("gen_ai.conversation.id") or attrs.get("session.id")
        op = attrs.get("gen_ai.operation.name")
        kind = attrs.get("openinference.span.kind")
        owner = enclosing((start, end, span_id, _parent, attrs, span)) or None
        error = _error(span)
        inputs = attrs.get("input.value") or attrs.get("gen_ai.input.messages")
        outputs = attrs.get("output.value") or attrs.get("gen_ai.output.messages")
        if span_id in agent_of:
            agent = agent_of[span_id]
            parent = node_agent.get(attrs.get("graph.node.parent_id")) or owner
            if parent is not None and parent != agent and agent not in spawned:
                spawned.add(agent)
                spawn = draft.add(start, "spawn", parent, to=agent, role="agent",
                                  content=as_text(inputs), source_id=span_id)
                if op != "create_agent":
                    back = draft.add(end, "return", agent, from_=agent, to=parent,
                                     content=as_text(outputs), source_id=span_id, error=error)
                    draft.link(spawn, back, "return")
            elif parent is None:
                tops.append((end, agent))
                draft.add(start, "message", agent, from_=agent, kind="agent_run",
                          content=as_text(inputs), source_id=span_id, end_t=end)
                if outputs is not None:
                    draft.add(end, "message", agent, from_=agent, content=as_text(outputs),
                              source_id=span_id, error=error)
            continue
        who = owner or (tops[-1][1] if tops else root)
        if op == "execute_tool" or kind in ("TOOL", "RETRIEVER"):
            tool = str(attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
                       or span.get("name") or "tool")
            call = draft.add(start, "tool_call", who, tool=tool, source_id=span_id,
                             content=as_text(attrs.get("gen_ai.tool.call.arguments") or inputs),
                             tool_call_id=attrs.get("gen_ai.tool.call.id"))
            result = draft.add(end, "tool_result", who, tool=tool, source_id=span_id,
                               content=as_text(attrs.get("gen_ai.tool.call.result") or outputs),
                               error=error, trusted=False)
            draft.link(call, result, "tool_dependency")
            if tool.startswith("transfer_to_"):
                target = tool.removeprefix("transfer_to_")
                draft.add(start, "orchestrator_decision", who, decision="delegate", to=target,
                          source_id=span_id, content=f"transfer to {target}")
        elif op in MODEL_OPS or kind in ("LLM", "EMBEDDING"):
            draft.add(start, "message", who, from_=who, kind="generation", end_t=end,
                      model=as_text(attrs.get("gen_ai.response.model")
                                    or attrs.get("gen_ai.request.model")
                                    or attrs.get("llm.model_name")),
                      tokens=_tokens(attrs), content=as_text(outputs), source_id=span_id,
                      error=error)
        elif kind == "GUARDRAIL":
            draft.add(start, "safety_event", who, content=as_text(outputs) or span.get("name"),
                      source_id=span_id, end_t=end)
        elif kind in ("CHAIN", "RERANKER", "EVALUATOR") or op is not None:
            continue  # containers and steps with nothing to show of their own
        else:
            draft.skip("span without GenAI or OpenInference attributes")
    if tops:
        last_end, last_agent = max(tops)
        draft.conclude(last_agent, stop_at=last_end)
    elif draft.events:
        draft.conclude(draft.events[0]["agent"])
    return draft.build(label, NAME, trace_id=trace_id, task_id=str(conversation or trace_id),
                       system=service or "opentelemetry",
                       topology=draft.shape())


def _tokens(attrs: dict[str, Any]) -> float | None:
    total = attrs.get("llm.token_count.total")
    if isinstance(total, (int, float)) and not isinstance(total, bool):
        return float(total)
    parts = [attrs.get(k) for k in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
                                    "llm.token_count.prompt", "llm.token_count.completion")]
    numbers = [p for p in parts if isinstance(p, (int, float)) and not isinstance(p, bool)]
    return float(sum(numbers)) if numbers else None


def _error(span: dict[str, Any]) -> str | None:
    status = span.get("status") if isinstance(span.get("status"), dict) else {}
    if status.get("code") in (2, "STATUS_CODE_ERROR", "ERROR"):
        return as_text(status.get("message") or "error")
    return None
