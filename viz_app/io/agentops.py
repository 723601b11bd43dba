"""AgentOps trace exports: `{trace: {trace_id, root_span_name, ...}, spans: [...]}` as the
AgentOps API and dashboard give them (a bare list of spans, or JSONL of them, too).

Each span has `span_id`, `parent_span_id` ('' at the root), `span_name`, `span_type`, ISO
`start_time` / `end_time`, `duration` in nanoseconds, `status_code` / `status_message`,
`span_attributes` as nested objects (`agentops.span.kind`, `agentops.entity.{name,input,output}`,
`agent.{role,id,models}`, `crewai.{crew,task,agent}.*`, `gen_ai.{prompt,completion,usage}`) and
`metrics` (`total_tokens`, ...). The attributes are flattened to their dotted names and read by
the span mapping every span-based format shares (`viz_app.io.otlp.span_events`):
`agentops.span.kind` = `workflow` (or `session`) is the run's root agent (its entity name,
`Crew` for CrewAI), `workflow.step` a task assigned to the agent `crewai.task.agent`, `agent` an
agent named by its `agent.role`, `llm` a model call, `tool` a tool call. A task's agent is spawned
by the agent whose span encloses it, with the task's description as its prompt, and returns the
task's output; the workflow's result after the returns is its aggregate.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.otlp import Span, classify, finish, flatten, number, span_events
from viz_app.io.records import TraceDraft, as_text, first_value, json_values, parse_time
from viz_app.model import Trace

NAME = "agentops"


def _spans_of(value: Any) -> tuple[dict[str, Any], list[Any]]:
    """(trace summary, spans) of one parsed value: the export document, a list of spans, or one
    span (a JSONL line)."""
    if isinstance(value, dict) and isinstance(value.get("spans"), list):
        head = value.get("trace") if isinstance(value.get("trace"), dict) else {}
        return head, value["spans"]
    if isinstance(value, list):
        return {}, value
    return {}, [value]


def _is_span(value: Any) -> bool:
    return isinstance(value, dict) and "span_id" in value and (
        "span_type" in value or isinstance(value.get("span_attributes"), dict)) and (
        "start_time" in value)


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are an AgentOps trace export (0 to 1)."""
    first = first_value(data)
    head, spans = _spans_of(first) if first is not None else ({}, [])
    if spans and _is_span(spans[0]):
        attrs = spans[0].get("span_attributes")
        return 1.0 if "span_type" in spans[0] or (isinstance(attrs, dict)
                                                  and "agentops" in attrs) else 0.7
    if first is None and b'"span_type"' in data[:65536] and b'"span_attributes"' in data[:65536]:
        return 0.8
    return 0.0


def import_agentops(source: Source, *, name: str | None = None) -> list[Trace]:
    """One trace per trace id in an AgentOps export."""
    data, label = read_source(source, name)
    heads: dict[str, dict[str, Any]] = {}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    other = 0
    for _line, value in json_values(data, label):
        head, spans = _spans_of(value)
        default = as_text(head.get("trace_id")) or "trace"
        for span in spans:
            if not _is_span(span):
                other += 1
                continue
            trace_id = as_text(span.get("trace_id")) or default
            groups[trace_id].append(span)
            heads.setdefault(trace_id, head)
    if not groups:
        raise TraceError(label, "", "is not an AgentOps trace export (no spans with span_id, "
                         "span_type and start_time)")
    return [_trace(spans, heads[trace_id], label, trace_id, other)
            for trace_id, spans in groups.items()]


def _trace(raw_spans: list[dict[str, Any]], head: dict[str, Any], label: str, trace_id: str,
           other: int) -> Trace:
    draft = TraceDraft()
    if other:
        draft.skip("record that is not a span", other)
    spans: list[Span] = []
    system = None
    for raw in raw_spans:
        start = parse_time(raw.get("start_time"))
        if start is None:
            draft.skip("span without start_time")
            continue
        end = parse_time(raw.get("end_time"))
        nanos = number(raw.get("duration"))
        if end is None and nanos is not None:
            end = start + nanos / 1e9
        attrs = flatten(raw["span_attributes"]) if isinstance(
            raw.get("span_attributes"), dict) else {}
        if isinstance(raw.get("attributes"), dict) and raw["attributes"]:
            attrs.update(flatten(raw["attributes"]))
        system = system or as_text(attrs.get("gen_ai.system"))
        metrics = raw.get("metrics") if isinstance(raw.get("metrics"), dict) else {}
        status = str(raw.get("status_code") or "").upper()
        span = Span(span_id=as_text(raw.get("span_id")),
                    parent_id=as_text(raw.get("parent_span_id")) or None,
                    name=str(raw.get("span_name") or ""), start=start,
                    end=max(start, end if end is not None else start), attrs=attrs,
                    error=as_text(raw.get("status_message") or "error")
                    if status in ("ERROR", "STATUS_CODE_ERROR") else None,
                    tokens=number(metrics.get("total_tokens")),
                    keys={"span_type": as_text(raw.get("span_type"))})
        classify(span)
        if span.kind == "root" and span.outputs is None:
            span.outputs = attrs.get("crewai.crew.result")
        if span.kind != "model":
            span.tokens = None  # a workflow's metrics sum its model calls: count them once
        spans.append(span)
    if not spans:
        raise TraceError(label, "", "holds no AgentOps span with a start_time")
    root = next((s.agent for s in spans if s.kind in ("root", "agent") and not s.parent_id),
                "agent")
    finish(draft, span_events(draft, spans, root or "agent"))
    first_task = next((s.inputs for s in sorted(spans, key=lambda s: s.start)
                       if s.kind == "task" and s.inputs), None)
    task = " ".join((as_text(first_task) or "").split())[:80]
    return draft.build(label, NAME, trace_id=trace_id, task_id=task or trace_id,
                       system=system or as_text(head.get("root_service_name")) or "agentops",
                       topology=draft.shape())
