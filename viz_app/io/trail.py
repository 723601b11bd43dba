"""TRAIL (Patronus AI, arXiv:2505.08638): GAIA and SWE-bench runs of smolagents managers with
managed agents, as nested span trees, with human annotations of their errors.

A trace file is `{trace_id, spans: [...]}` where each span has `span_id`, `parent_span_id`,
`span_name`, `timestamp` (RFC 3339), `duration` (ISO 8601, `PT1M4.006348S`), `status_code` /
`status_message`, `span_attributes` (OpenInference: `openinference.span.kind`, `input.value`,
`output.value`, `llm.token_count.*`, `llm.model_name`, `tool.name`) and `child_spans`. The spans
are read by the span mapping every span-based format shares (`viz_app.io.otlp.span_events`): an
AGENT span inside another agent's span is spawned by it (delegated to when it runs again) and
returns to it; a TOOL span that only wraps a managed agent's run is that delegation, not a tool
call of its own.

An annotation file (`{trace_id?, errors: [{category, location, evidence, description,
impact}], scores: [{reliability_score, ..., overall}]}`, in TRAIL's `processed_annotations_*`
folders, named like the trace) is found beside the trace and kept verbatim: each error on the
event of the span it locates, the scores on the trace's first event. `annotation_records` maps
them to the rubric's questions (see docs/importers.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, parse_json, read_source
from viz_app.io.otlp import Span, classify, finish, flatten, span_events
from viz_app.io.records import (UNCERTAIN, TraceDraft, as_text, first_value, head_has,
                                label_record, parse_duration, parse_time, publish, published)
from viz_app.model import Trace

NAME = "trail"
ORIGIN = "TRAIL"
VERSION = "TRAIL (arXiv:2505.08638)"
CREATED_AT = "2025-05-13T00:00:00.000000Z"
"""When a published TRAIL label is said to be made (fixed, so importing twice adds nothing)."""
AGGREGATION_CATEGORIES = frozenset({"Task Orchestration"})
"""TRAIL categories that judge how an orchestrator merged its sub-agents' work."""


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are a TRAIL trace (or a TRAIL annotation file) (0 to 1)."""
    first = first_value(data)
    if isinstance(first, dict):
        spans = first.get("spans")
        if isinstance(spans, list) and spans and isinstance(spans[0], dict) and (
                "child_spans" in spans[0] or ("span_attributes" in spans[0]
                                              and "start_time" not in spans[0])):
            return 1.0
        if is_annotation(first):
            return 0.9
        return 0.0
    if first is None and head_has(data, b"child_spans", b"span_attributes", b"spans"):
        return 0.8
    return 0.0


def is_annotation(value: Any) -> bool:
    """Whether a parsed document is a TRAIL annotation (errors located by span, and scores)."""
    return isinstance(value, dict) and isinstance(value.get("errors"), list) and (
        "scores" in value) and all(isinstance(e, dict) and "location" in e
                                   for e in value["errors"])


def import_trail(source: Source, *, name: str | None = None,
                 annotation: Source | None = None) -> list[Trace]:
    """The run in a TRAIL trace file, with its annotation (the file given, else the one found
    beside the trace: `<trace_id>.json` in a `processed_annotations*` or `annotations` folder
    up to three levels up, or `<stem>.annotation.json` next to it)."""
    data, label = read_source(source, name)
    doc = parse_json(data, label)
    if is_annotation(doc):
        raise TraceError(label, "", "is a TRAIL annotation file, not a trace: import the trace "
                         "it annotates (orchviz finds this file beside it)")
    if not isinstance(doc, dict) or not isinstance(doc.get("spans"), list):
        raise TraceError(label, "top level", "is not a TRAIL trace (no `spans` list)")
    found = None
    if annotation is not None:
        found = parse_json(*read_source(annotation))
    else:
        path = _path_of(source, name)
        if path is not None:
            found = _annotation_beside(path, str(doc.get("trace_id") or path.stem))
    return [trail_trace(doc, label, found)]


def _path_of(source: Source, name: str | None) -> Path | None:
    if not isinstance(source, bytes):
        return Path(source)
    try:
        return Path(name) if name and Path(name).is_file() else None
    except OSError:
        return None


def _annotation_beside(path: Path, trace_id: str) -> dict[str, Any] | None:
    """The TRAIL annotation of a trace file, when it sits where TRAIL puts it."""
    names = {f"{trace_id}.json", f"{path.stem}.json"}
    candidates = [path.with_name(f"{path.stem}.annotation.json"),
                  path.with_name(f"{path.stem}.annotations.json")]
    for folder in list(path.parents)[:3]:
        try:
            subfolders = sorted(p for p in folder.iterdir() if p.is_dir()
                                and "annotation" in p.name.lower())
        except OSError:
            continue
        candidates += [sub / n for sub in subfolders for n in sorted(names)]
    for candidate in candidates:
        if candidate.is_file() and candidate.resolve() != path.resolve():
            try:
                value = parse_json(*read_source(candidate))
            except TraceError:
                continue
            if is_annotation(value) and value.get("trace_id", trace_id) == trace_id:
                return {"file": candidate.name, **value}
    return None


def trail_trace(doc: dict[str, Any], label: str,
                annotation: dict[str, Any] | None = None) -> Trace:
    """One TRAIL trace document (and its annotation) as a trace."""
    draft = TraceDraft()
    spans: list[Span] = []
    trace_id = as_text(doc.get("trace_id")) or Path(label).stem
    stack = [(s, None) for s in reversed(doc["spans"])]
    services: list[str] = []
    while stack:
        raw, parent = stack.pop()
        if not isinstance(raw, dict):
            draft.skip("span that is not an object")
            continue
        span = _span(raw, parent, draft)
        if span is not None:
            spans.append(span)
            if isinstance(raw.get("service_name"), str):
                services.append(raw["service_name"])
        children = raw.get("child_spans") if isinstance(raw.get("child_spans"), list) else []
        stack.extend((c, span.span_id if span else parent) for c in reversed(children))
    root = next((s.agent for s in spans if s.kind == "agent" and s.parent_id is None), None)
    finish(draft, span_events(draft, spans, root or "agent"))
    if annotation is not None:
        _annotate(draft, spans, annotation)
    question = next((s.inputs for s in spans if s.parent_id is None and s.inputs), None)
    return draft.build(label, NAME, trace_id=trace_id, task_id=_task(question, trace_id),
                       system=services[0] if services else "smolagents", topology=draft.shape())


def _span(raw: dict[str, Any], parent: str | None, draft: TraceDraft) -> Span | None:
    start = parse_time(raw.get("timestamp") or raw.get("start_time"))
    if start is None:
        draft.skip("span without a timestamp")
        return None
    length = parse_duration(raw.get("duration"))
    end = parse_time(raw.get("end_time")) or (start + length if length is not None else start)
    attrs = flatten(raw.get("span_attributes") if isinstance(raw.get("span_attributes"), dict)
                    else {})
    status = str(raw.get("status_code") or "")
    error = as_text(raw.get("status_message") or "error") if status.lower() == "error" else None
    return classify(Span(span_id=as_text(raw.get("span_id")), name=str(raw.get("span_name") or ""),
                         parent_id=as_text(raw.get("parent_span_id")) or parent, start=start,
                         end=max(start, end), attrs=attrs, error=error))


def _task(question: Any, trace_id: str) -> str:
    text = as_text(question) or ""
    return " ".join(text.split())[:80] or trace_id


def _annotate(draft: TraceDraft, spans: list[Span], annotation: dict[str, Any]) -> None:
    """Keep each published error on the event of the span it locates, the scores on the first
    event; an error whose span is not in the trace stays on the first event, with a warning."""
    by_id = {s.span_id: s for s in spans if s.span_id}
    events_of: dict[str, list[dict[str, Any]]] = {}
    for event in draft.events:
        events_of.setdefault(str(event.get("source_id")), []).append(event)
    first = min(draft.events, key=lambda e: e["t"])
    for error in annotation.get("errors") or ():
        if not isinstance(error, dict):
            continue
        location = as_text(error.get("location"))
        event = _event_at(location, by_id, events_of)
        if event is None:
            draft.note("annotation_unplaced", f"TRAIL error {error.get('category')!r} is located "
                       f"at span {location!r}, which is not in this trace; kept on the trace")
        publish(event or first, ORIGIN, VERSION, error, span=location, placed=event is not None)
    head = {k: v for k, v in annotation.items() if k != "errors"}
    publish(first, ORIGIN, VERSION, head, about="trace")


def _event_at(location: str | None, by_id: dict[str, Span],
              events_of: dict[str, list[dict[str, Any]]]) -> dict[str, Any] | None:
    """The event standing for a span: its own (the one its agent acts in, for an agent span),
    else the first event of a span inside it, else of a span enclosing it."""
    if not location or location not in by_id:
        return None
    span = by_id[location]
    own = events_of.get(location)
    if own:
        return next((e for e in own if e["agent"] == span.agent), own[0])
    inside = [e for s in by_id.values() if _within(s, location, by_id)
              for e in events_of.get(str(s.span_id), [])]
    if inside:
        return min(inside, key=lambda e: e["t"])
    parent = span.parent_id
    while parent in by_id:
        if events_of.get(parent):
            return events_of[parent][0]
        parent = by_id[parent].parent_id
    return None


def _within(span: Span, ancestor: str, by_id: dict[str, Span]) -> bool:
    parent, seen = span.parent_id, set()
    while parent and parent not in seen:
        if parent == ancestor:
            return True
        seen.add(parent)
        parent = by_id[parent].parent_id if parent in by_id else None
    return False


def annotation_records(trace: Trace, questions: set[str]) -> list[dict[str, Any]]:
    """The published TRAIL annotation as label records under the rubric's questions (see the
    mapping in docs/importers.md): a `Task Orchestration` error on an aggregate (or on the span
    that holds one) is `aggregation_quality` 2 ("major gaps"), marked uncertain because the
    scale point is orchviz's reading; every other category, impact and score stays a raw tag,
    named in the comments and kept on the trace."""
    kept = published(trace, ORIGIN)
    if not kept:
        return []
    errors = [(event_id, k) for event_id, k in kept if k.get("about") != "trace"]
    tags = [f"{k['record'].get('category')} ({k['record'].get('impact')}) at span {k.get('span')}"
            for _, k in errors if isinstance(k.get("record"), dict)]
    scores = next((k["record"].get("scores") for _, k in kept if k.get("about") == "trace"
                   and isinstance(k.get("record"), dict)), None)
    raw = "TRAIL errors: " + ("; ".join(tags) or "none")
    if scores:
        raw += f"; scores: {as_text(scores)}"
    records = []
    aggregates = _aggregates_by_span(trace)
    for event_id, k in errors:
        record = k.get("record") if isinstance(k.get("record"), dict) else {}
        if record.get("category") not in AGGREGATION_CATEGORIES or not k.get("placed"):
            continue
        target = aggregates.get(str(k.get("span"))) or (
            event_id if trace.event(event_id).type == "aggregate" else None)
        if target is None or "aggregation_quality" not in questions:
            continue
        comment = (f"TRAIL {record.get('category')} ({record.get('impact')}): "
                   f"{record.get('description') or ''} [{raw}]")
        records.append(label_record(
            trace, ORIGIN, "aggregation_quality", 2, comment, event_id=target, mapping=UNCERTAIN,
            why="TRAIL's Task Orchestration includes failing to merge sub-task results; "
                "scale point 2 is orchviz's reading", created_at=CREATED_AT))
    return records


def _aggregates_by_span(trace: Trace) -> dict[str, str]:
    """span id -> the aggregate event made from that span."""
    return {str(e.extras.get("source_id")): e.id for e in trace.events if e.type == "aggregate"}
