"""OpenTelemetry traces in OTLP/JSON (`resourceSpans[].scopeSpans[].spans[]`), one export
request per file or one per line, ids in hex or base64.

Agent structure comes from either convention. GenAI semantic conventions:
`gen_ai.operation.name` = `invoke_agent` / `create_agent` (agents, named by `gen_ai.agent.name` or
`.id`), `execute_tool` (tool calls: `gen_ai.tool.name`, `gen_ai.tool.call.id`), `chat`,
`text_completion`, `generate_content` (model calls: `gen_ai.usage.*` tokens, and
`gen_ai.response.id` kept as the event's `response_id`, the LLM call id that training exports
pass through). Every event keeps the id of the span it came from as `source_id`. OpenInference:
`openinference.span.kind` = AGENT (`agent.name`, `graph.node.id`, `graph.node.parent_id`), TOOL,
LLM, RETRIEVER, GUARDRAIL; CHAIN spans are containers. An agent span nested in another agent's
span (or naming it as `graph.node.parent_id`) is spawned by it and returns to it at its end; a
tool named `transfer_to_<agent>` is a delegation to that agent. One trace per trace id.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field
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


def flatten(value: dict[str, Any], prefix: str = "", depth: int = 0) -> dict[str, Any]:
    """Attributes written as nested objects (`{"agentops": {"span": {"kind": "agent"}}}`, as
    AgentOps and some exporters write them) as the dotted keys of the conventions
    (`agentops.span.kind`); keys already dotted, and lists, are kept as they are."""
    found: dict[str, Any] = {}
    for key, item in value.items():
        name = f"{prefix}{key}"
        if isinstance(item, dict) and item and depth < 8:
            found.update(flatten(item, name + ".", depth + 1))
        else:
            found[name] = item
    return found


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
    rollout_of: dict[str, str] = {}
    requests = 0
    for line, value in json_values(data, label):
        if not isinstance(value, dict) or not isinstance(value.get("resourceSpans"), list):
            raise TraceError(label, f"line {line}", "is not an OTLP/JSON trace export "
                             "(no resourceSpans)")
        requests += 1
        for resource in value["resourceSpans"]:
            if not isinstance(resource, dict):
                continue
            held = attributes((resource.get("resource") or {}).get("attributes"))
            service = held.get("service.name")
            rollout = rollout_id_of(held)  # Agent Lightning's exporter says it here
            for scope in resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") \
                    or []:
                for span in (scope or {}).get("spans") or []:
                    if not isinstance(span, dict):
                        continue
                    trace_id = hex_id(span.get("traceId"), 16) or "trace"
                    spans_of[trace_id].append(span)
                    if isinstance(service, str):
                        service_of.setdefault(trace_id, service)
                    if rollout is not None:
                        rollout_of.setdefault(trace_id, rollout)
    if not spans_of:
        raise TraceError(label, "", "holds no spans")
    return [_trace(spans, label, trace_id, service_of.get(trace_id), rollout_of.get(trace_id))
            for trace_id, spans in spans_of.items()]


ROLLOUT_ID_KEYS = ("agentlightning.rollout_id", "rollout_id", "rollout.id", "session.id",
                   "gen_ai.conversation.id")
"""Attributes that name the rollout (the training episode) a span belongs to, surest first:
Agent Lightning's resource attribute (`LightningResourceAttributes.ROLLOUT_ID`, which its
LightningStore OTLP exporter requires), a `rollout_id` a harness sets on its spans, and the
session or conversation id of OpenInference and the GenAI conventions (a harness that runs one
rollout a session). A trainer's rollout file with the same id is joined with the spans
(`viz_app.io.rollouts.join`)."""

SPAN_ROLLOUT_KEY = "rollout_id"
"""The key of a span trace's first event that keeps the rollout id its spans named."""


def rollout_id_of(attrs: dict[str, Any]) -> str | None:
    """The rollout id some attributes name (the surest of ROLLOUT_ID_KEYS), or None."""
    for key in ROLLOUT_ID_KEYS:
        value = attrs.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


@dataclass
class Span:
    """One span of any span-based format, as the shared mapping reads it: formats fill what
    they know (ids, times, name, flat attributes, error) and may say what it is (`kind`,
    `agent`, `tool`...); `classify` fills the rest from the attribute conventions."""

    span_id: str | None
    parent_id: str | None
    name: str
    start: float
    end: float
    attrs: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    kind: str | None = None
    """agent, root (a workflow that stands for the run's root agent), task (work assigned to
    an agent), tool, model, guardrail, container, reward, or None (not understood)."""
    agent: str | None = None
    tool: str | None = None
    inputs: Any = None
    outputs: Any = None
    tokens: float | None = None
    model: str | None = None
    assignee: str | None = None
    """For a task: the agent it is assigned to."""
    keys: dict[str, Any] = field(default_factory=dict)
    """Extra keys for the events made from this span (the format's own facts)."""


AGENTOPS_KINDS = {"agent": "agent", "llm": "model", "tool": "tool", "workflow": "root",
                  "session": "root", "workflow.step": "task", "task": "task",
                  "operation": "container", "guardrail": "guardrail"}
"""`agentops.span.kind` values and what they are."""
OPENINFERENCE_KINDS = {"AGENT": "agent", "TOOL": "tool", "RETRIEVER": "tool", "LLM": "model",
                       "EMBEDDING": "model", "GUARDRAIL": "guardrail", "CHAIN": "container",
                       "RERANKER": "container", "EVALUATOR": "container"}


def classify(span: Span) -> Span:
    """Fill what a span is from its attributes, in the GenAI, OpenInference and AgentOps
    conventions (what the format already said is kept)."""
    attrs = span.attrs
    op = attrs.get("gen_ai.operation.name")
    oi = str(attrs.get("openinference.span.kind") or "").upper() or None
    ao = attrs.get("agentops.span.kind")
    if span.kind is None:
        if op in AGENT_OPS:
            span.kind = "agent"
        elif op == "execute_tool":
            span.kind = "tool"
        elif op in MODEL_OPS:
            span.kind = "model"
        elif oi in OPENINFERENCE_KINDS:
            span.kind = OPENINFERENCE_KINDS[oi]
        elif isinstance(ao, str) and ao.lower() in AGENTOPS_KINDS:
            span.kind = AGENTOPS_KINDS[ao.lower()]
        elif op is not None:
            span.kind = "container"
    if span.kind in ("agent", "root") and span.agent is None:
        span.agent = str(attrs.get("gen_ai.agent.name") or attrs.get("agent.name")
                         or attrs.get("graph.node.name") or attrs.get("graph.node.id")
                         or attrs.get("agent.role") or attrs.get("crewai.agent.role")
                         or (attrs.get("agentops.entity.name") if span.kind == "root" else None)
                         or _strip(span.name, ".agent", ".workflow") or "agent")
    if span.kind == "tool" and span.tool is None:
        span.tool = str(attrs.get("gen_ai.tool.name") or attrs.get("tool.name")
                        or _strip(span.name, ".tool") or "tool")
    if span.kind == "task" and span.assignee is None:
        found = attrs.get("crewai.task.agent") or attrs.get("task.agent")
        span.assignee = str(found) if found else None
    if span.inputs is None:
        span.inputs = _first(attrs, "gen_ai.tool.call.arguments", "input.value",
                             "gen_ai.input.messages", "agentops.entity.input", "gen_ai.prompt")
        if span.inputs is None and span.kind == "model":
            span.inputs = _indexed(attrs, "gen_ai.prompt.")
    if span.outputs is None:
        span.outputs = _first(attrs, "gen_ai.tool.call.result", "output.value",
                              "gen_ai.output.messages", "agentops.entity.output",
                              "gen_ai.completion")
        if span.outputs is None and span.kind == "model":
            span.outputs = _indexed(attrs, "gen_ai.completion.")
    if span.kind == "model":
        if span.tokens is None:
            span.tokens = _tokens(attrs)
        if span.model is None:
            span.model = as_text(attrs.get("gen_ai.response.model")
                                 or attrs.get("gen_ai.request.model")
                                 or attrs.get("llm.model_name"))
        response = attrs.get("gen_ai.response.id")
        if "response_id" not in span.keys and isinstance(response, (str, int)) \
                and not isinstance(response, bool) and str(response):
            span.keys["response_id"] = str(response)  # the LLM call id exports pass through
    return span


def _strip(name: str, *suffixes: str) -> str:
    for suffix in suffixes:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[:-len(suffix)]
    return name


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    """The first of some attributes that is set, a message list read as its last content."""
    for key in keys:
        value = attrs.get(key)
        if value is None:
            continue
        if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
            last = value[-1]
            return last.get("content", value) if isinstance(last, dict) else value
        return value
    return None


def _indexed(attrs: dict[str, Any], prefix: str) -> Any:
    """The content of the last of a message list written as flat attributes
    (`gen_ai.completion.0.content`, `gen_ai.completion.1.content`...), or None."""
    found: dict[int, Any] = {}
    for key, value in attrs.items():
        if key.startswith(prefix) and key.endswith(".content"):
            index = key[len(prefix):-len(".content")]
            if index.isdigit():
                found[int(index)] = value
    return found[max(found)] if found else None


def span_events(draft: TraceDraft, spans: list[Span], root: str) -> list[tuple[float, str]]:
    """Add the events of a tree of spans (classified) to a draft, and return the top-level
    agents as (end, name). An agent span inside another agent's span is spawned by it the
    first time (delegated to afterwards) and returns to it when its span ends; a top-level
    agent's input and output are messages of its own; tools, model calls and guardrails belong
    to the agent whose span encloses them (else the latest top-level agent, else `root`); a task
    span assigned to an agent is a delegation to it; a tool named `transfer_to_<agent>` is a
    delegation too, and a tool span that only wraps an agent's span (a managed agent called as
    a tool) is that agent's spawn or delegation, not a tool call. Spans of no kind are counted
    as warnings; containers show nothing."""
    spans = sorted(spans, key=lambda s: s.start)
    by_id = {s.span_id: s for s in spans if s.span_id}
    node_agent = {s.attrs["graph.node.id"]: s.agent for s in spans
                  if s.kind in ("agent", "root") and "graph.node.id" in s.attrs}

    def enclosing(span: Span) -> Span | None:
        parent, seen = span.parent_id, set()
        while parent and parent in by_id and parent not in seen:
            seen.add(parent)
            found = by_id[parent]
            if found.kind in ("agent", "root"):
                return found
            parent = found.parent_id
        return None

    def task_of(span: Span) -> Span | None:
        parent = by_id.get(span.parent_id) if span.parent_id else None
        return parent if parent is not None and parent.kind == "task" else None

    spawned: set[str] = set()
    tops: list[tuple[float, str]] = []
    wraps_agent = {s.parent_id for s in spans if s.kind == "agent" and s.parent_id}
    for span in spans:
        owner = enclosing(span)
        keys = {"source_id": span.span_id, **span.keys} if span.keys else {
            "source_id": span.span_id}
        if span.kind in ("agent", "root"):
            agent = span.agent or "agent"
            parent = node_agent.get(span.attrs.get("graph.node.parent_id")) or (
                owner.agent if owner is not None else None)
            if parent is not None and parent != agent:
                task = task_of(span)
                outputs = span.outputs if span.outputs is not None else (
                    task.outputs if task is not None else None)
                asked = task.inputs if task is not None and task.inputs is not None \
                    else span.inputs
                described = as_text(span.inputs) if asked is not span.inputs else None
                if agent not in spawned:
                    spawned.add(agent)
                    start = draft.add(span.start, "spawn", parent, to=agent,
                                      role=as_text(span.attrs.get("agent.role")) or "agent",
                                      content=as_text(asked), description=described, **keys)
                else:
                    start = draft.add(span.start, "orchestrator_decision", parent,
                                      decision="delegate", to=agent, content=as_text(asked),
                                      description=described, **keys)
                if span.attrs.get("gen_ai.operation.name") != "create_agent":
                    back = draft.add(span.end, "return", agent, from_=agent, to=parent,
                                     content=as_text(outputs), error=span.error, **keys)
                    draft.link(start, back, "return")
            elif parent is None:
                tops.append((span.end, agent))
                draft.add(span.start, "message", agent, from_=agent, kind="agent_run",
                          content=as_text(span.inputs), end_t=span.end, **keys)
                if span.outputs is not None:
                    draft.add(span.end, "message", agent, from_=agent,
                              content=as_text(span.outputs), error=span.error, **keys)
            continue
        who = owner.agent if owner is not None else (tops[-1][1] if tops else root)
        if span.kind == "task":
            if span.span_id not in wraps_agent and span.assignee and span.assignee != who:
                draft.add(span.start, "orchestrator_decision", who, decision="delegate",
                          to=span.assignee, content=as_text(span.inputs), **keys)
        elif span.kind == "tool" and span.span_id in wraps_agent:
            continue  # a tool that only runs a managed agent: that agent's spawn says it
        elif span.kind == "tool":
            tool = span.tool or "tool"
            call = draft.add(span.start, "tool_call", who, tool=tool, content=as_text(
                span.inputs), tool_call_id=span.attrs.get("gen_ai.tool.call.id"), **keys)
            result = draft.add(span.end, "tool_result", who, tool=tool, error=span.error,
                               content=as_text(span.outputs), trusted=False, **keys)
            draft.link(call, result, "tool_dependency")
            if tool.startswith("transfer_to_"):
                target = tool.removeprefix("transfer_to_")
                draft.add(span.start, "orchestrator_decision", who, decision="delegate",
                          to=target, content=f"transfer to {target}", **keys)
        elif span.kind == "model":
            draft.add(span.start, "message", who, from_=who, kind="generation", end_t=span.end,
                      model=span.model, tokens=span.tokens, content=as_text(span.outputs),
                      error=span.error, **keys)
        elif span.kind == "guardrail":
            draft.add(span.start, "safety_event", who, end_t=span.end,
                      content=as_text(span.outputs) or span.name, **keys)
        elif span.kind in ("container", "reward"):
            continue
        else:
            draft.skip("span without GenAI, OpenInference or AgentOps attributes")
    return tops


def finish(draft: TraceDraft, tops: list[tuple[float, str]]) -> None:
    """End a span-based run: the last top-level agent to finish stops when its span ends."""
    if tops:
        last_end, last_agent = max(tops)
        draft.conclude(last_agent, stop_at=last_end)
    elif draft.events:
        draft.conclude(draft.events[0]["agent"])


def _trace(spans: list[dict[str, Any]], label: str, trace_id: str, service: str | None,
           rollout: str | None = None) -> Trace:
    draft = TraceDraft()
    rows: list[Span] = []
    conversation = None
    for span in spans:
        attrs = attributes(span.get("attributes"))
        start = _nanos(span.get("startTimeUnixNano"))
        if start is None:
            draft.skip("span without startTimeUnixNano")
            continue
        conversation = conversation or attrs.get("gen_ai.conversation.id") or attrs.get(
            "session.id")
        rows.append(classify(Span(
            span_id=hex_id(span.get("spanId"), 8), parent_id=hex_id(span.get("parentSpanId"), 8),
            name=str(span.get("name") or ""), start=start,
            end=_nanos(span.get("endTimeUnixNano")) or start, attrs=attrs, error=_error(span))))
    finish(draft, span_events(draft, rows, service or "agent"))
    keep_rollout_id(draft, rollout or named_rollout([r.attrs for r in rows]))
    return draft.build(label, NAME, trace_id=trace_id, task_id=str(conversation or trace_id),
                       system=service or "opentelemetry", topology=draft.shape())


def named_rollout(attrs: list[dict[str, Any]]) -> str | None:
    """The rollout id spans' attributes name: by the surest key any of them has."""
    for key in ROLLOUT_ID_KEYS:
        for held in attrs:
            found = rollout_id_of({key: held[key]}) if key in held else None
            if found is not None:
                return found
    return None


def keep_rollout_id(draft: TraceDraft, rollout: str | None) -> None:
    """Keep the rollout id the spans named on the run's first event (SPAN_ROLLOUT_KEY)."""
    if rollout is not None and draft.events:
        min(draft.events, key=lambda e: e["t"])[SPAN_ROLLOUT_KEY] = rollout


def number(value: Any) -> float | None:
    """A count as a float, whether written as a number or as a numeric string (AgentOps writes
    token counts as strings); None for anything else, booleans and non-finite values included."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


TOTAL_TOKENS = ("llm.token_count.total", "gen_ai.usage.total_tokens")
PART_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens",
               "gen_ai.usage.prompt_tokens", "gen_ai.usage.completion_tokens",
               "llm.token_count.prompt", "llm.token_count.completion")


def _tokens(attrs: dict[str, Any]) -> float | None:
    for key in TOTAL_TOKENS:
        if key in attrs:
            total = number(attrs[key])
            if total is not None:
                return total
    numbers = [n for k in PART_TOKENS if k in attrs and (n := number(attrs[k])) is not None]
    return sum(numbers) if numbers else None


def _error(span: dict[str, Any]) -> str | None:
    status = span.get("status") if isinstance(span.get("status"), dict) else {}
    if status.get("code") in (2, "STATUS_CODE_ERROR", "ERROR"):
        return as_text(status.get("message") or "error")
    return None
