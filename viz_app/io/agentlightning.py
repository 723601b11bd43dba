"""Agent Lightning rollouts and spans (microsoft/agent-lightning): the spans a LightningStore
keeps (`agentlightning.Span`: `rollout_id`, `attempt_id`, `sequence_id`, `trace_id`, `span_id`,
`parent_id`, `name`, `status {status_code, description}`, flat OpenTelemetry `attributes`,
`start_time` / `end_time` in seconds), as a JSON list, JSONL (one span a line), or
`{rollout(s): ..., spans: [...]}` with the `Rollout` records (`rollout_id`, `input`, `mode`,
`status`, `start_time`, ...).

One trace per rollout attempt (`<rollout_id>`, or `<rollout_id>/<attempt_id>` when a rollout
has several). The spans are read by the span mapping every span-based format shares
(`viz_app.io.otlp.span_events`), whichever tracer wrote them (AgentOps, OpenInference, GenAI
conventions). Agent Lightning's own spans: a reward (`agentlightning.reward`, or an
`agentlightning.annotation` with `agentlightning.reward.<i>.name` / `.value`) becomes the trace's
`rewards` (the primary dimension as `reward`); `agentlightning.message` a message
(`agentlightning.message.body`); `agentlightning.exception` a message with its `error`.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.otlp import (Span, classify, finish, flatten, keep_rollout_id, number,
                             span_events)
from viz_app.io.records import TraceDraft, as_text, first_value, json_values
from viz_app.model import Trace

NAME = "agentlightning"
REWARD_SPANS = frozenset({"agentlightning.reward", "agentlightning.annotation"})
MESSAGE_SPANS = frozenset({"agentlightning.message", "agentlightning.exception",
                           "agentlightning.object"})


def _is_span(value: Any) -> bool:
    return isinstance(value, dict) and "rollout_id" in value and "span_id" in value and (
        "attributes" in value)


def _parts(value: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    """(rollout records, spans) of one parsed value."""
    if isinstance(value, dict) and isinstance(value.get("spans"), list):
        rollouts = value.get("rollouts") if isinstance(value.get("rollouts"), list) else (
            [value["rollout"]] if isinstance(value.get("rollout"), dict) else [])
        return [r for r in rollouts if isinstance(r, dict)], value["spans"]
    if isinstance(value, list):
        return [], value
    return [], [value]


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes hold Agent Lightning spans (0 to 1)."""
    first = first_value(data)
    _, spans = _parts(first) if first is not None else ([], [])
    if spans and _is_span(spans[0]):
        return 1.0 if "attempt_id" in spans[0] or "sequence_id" in spans[0] else 0.8
    if first is None and b'"rollout_id"' in data[:65536] and b'"sequence_id"' in data[:65536]:
        return 0.8
    return 0.0


def import_agentlightning(source: Source, *, name: str | None = None) -> list[Trace]:
    """One trace per rollout attempt in an Agent Lightning span export."""
    data, label = read_source(source, name)
    rollouts: dict[str, dict[str, Any]] = {}
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    other = 0
    for _line, value in json_values(data, label):
        found, spans = _parts(value)
        rollouts.update((str(r.get("rollout_id")), r) for r in found)
        for span in spans:
            if _is_span(span):
                groups[(str(span["rollout_id"]), str(span.get("attempt_id") or ""))].append(span)
            else:
                other += 1
    if not groups:
        raise TraceError(label, "", "holds no Agent Lightning spans (records with rollout_id, "
                         "span_id and attributes)")
    attempts: dict[str, int] = defaultdict(int)
    for rollout_id, _attempt in groups:
        attempts[rollout_id] += 1
    return [_trace(spans, rollouts.get(rollout_id, {}), label,
                   rollout_id if attempts[rollout_id] == 1 else f"{rollout_id}/{attempt}", other)
            for (rollout_id, attempt), spans in groups.items()]


def _seconds(value: Any) -> float | None:
    """A span time in seconds (Agent Lightning converts nanoseconds; an unconverted one is too)."""
    found = number(value)
    if found is None:
        return None
    return found / 1e9 if found > 1e12 else found


def _trace(raw_spans: list[dict[str, Any]], rollout: dict[str, Any], label: str, trace_id: str,
           other: int) -> Trace:
    draft = TraceDraft()
    if other:
        draft.skip("record that is not an Agent Lightning span", other)
    spans: list[Span] = []
    raw_spans = sorted(raw_spans, key=lambda s: (number(s.get("sequence_id")) or 0))
    service = None
    for raw in raw_spans:
        start = _seconds(raw.get("start_time"))
        if start is None:
            draft.skip("span without start_time")
            continue
        end = _seconds(raw.get("end_time"))
        attrs = flatten(raw["attributes"]) if isinstance(raw.get("attributes"), dict) else {}
        resource = raw.get("resource") if isinstance(raw.get("resource"), dict) else {}
        service = service or as_text((resource.get("attributes") or {}).get("service.name"))
        status = raw.get("status") if isinstance(raw.get("status"), dict) else {}
        name = str(raw.get("name") or "")
        error = as_text(status.get("description") or "error") \
            if str(status.get("status_code")).upper() == "ERROR" else None
        span = Span(span_id=as_text(raw.get("span_id")), parent_id=as_text(raw.get("parent_id")),
                    name=name, start=start, end=max(start, end if end is not None else start),
                    attrs=attrs, error=error,
                    keys={"sequence_id": raw.get("sequence_id")})
        if name in REWARD_SPANS or any(k.startswith("agentlightning.reward") for k in attrs):
            _rewards(draft, attrs)
            span.kind = "reward"
        elif name in MESSAGE_SPANS:
            span.kind = "container"
            span.keys["message"] = as_text(attrs.get("agentlightning.message.body")
                                           or attrs.get("message") or attrs.get("object")
                                           or attrs.get("exception.message"))
            span.error = span.error or as_text(attrs.get("exception.message"))
        spans.append(classify(span))
    if not spans:
        raise TraceError(label, "", f"rollout {trace_id} holds no span with a start_time")
    root = next((s.agent for s in spans if s.kind in ("agent", "root") and not s.parent_id),
                None) or service or "agent"
    tops = span_events(draft, spans, root)
    for span in spans:  # the framework's own messages, in the agent they happen in
        if span.name in MESSAGE_SPANS:
            draft.add(span.start, "message", root, from_=root, kind=span.name.split(".")[-1],
                      content=span.keys.get("message"), error=span.error,
                      source_id=span.span_id)
    finish(draft, tops)
    task = rollout.get("input")
    if isinstance(task, dict):
        task = task.get("question") or task.get("task") or task.get("prompt") or task
    for key in ("mode", "status", "resources_id"):
        if rollout.get(key) is not None and draft.events:
            min(draft.events, key=lambda e: e["t"])[f"rollout_{key}"] = as_text(rollout[key])
    keep_rollout_id(draft, as_text(raw_spans[0].get("rollout_id")) if raw_spans else None)
    return draft.build(label, NAME, trace_id=trace_id,
                       task_id=" ".join((as_text(task) or "").split())[:80] or trace_id,
                       system=service or "agent-lightning", topology=draft.shape())


def _rewards(draft: TraceDraft, attrs: dict[str, Any]) -> None:
    """The reward dimensions of a reward span, into the trace's rewards (the latest wins)."""
    legacy = number(attrs.get("reward"))
    if legacy is not None:
        draft.rewards["reward"] = legacy
    names: dict[str, str] = {}
    values: dict[str, float] = {}
    for key, value in attrs.items():
        if key.startswith("agentlightning.reward."):
            index, _, field = key[len("agentlightning.reward."):].partition(".")
            if field == "name" and isinstance(value, str):
                names[index] = value
            elif field == "value" and number(value) is not None:
                values[index] = number(value)  # type: ignore[assignment]
    for index, value in values.items():
        name = names.get(index, index)
        draft.rewards["reward" if name == "primary" else name] = value
