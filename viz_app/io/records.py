"""What every importer shares: reading JSON records with their line numbers, reading times, and
a `TraceDraft` that collects events in source time and becomes a validated `Trace`.

An importer reads its format's records, adds events to a draft (absolute times in seconds, the
source's own id on each), and calls `draft.build(...)`: times become seconds from the trace's
start, ids become short and unique, and the result goes through `trace_from_dict`, so an imported
trace is validated exactly like a native one and carries the same warnings, plus one
`unknown_record` warning per kind of record the importer skipped.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import orjson

from viz_app.errors import TraceError
from viz_app.io.native import parse_json, trace_from_dict
from viz_app.model import Trace, TraceWarning


NOT_ANSWERS = frozenset({"thinking", "agent_run", "generation_request", "compaction"})
"""Message kinds that are never a run's final answer."""


def json_lines(data: bytes, label: str, first_line: int = 1,
               start: int = 0) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line of JSONL bytes from `start` on
    (numbered from `first_line`). A line that is not JSON raises TraceError naming it; a
    cut-off last line is reported as a truncated file, and a pretty-printed JSON document
    (whose first line is not JSON on its own) as one document rather than JSON Lines."""
    number, size = first_line - 1, len(data)
    seen = False
    view = memoryview(data)  # each line parsed where it lies: no copy of it (nor of its strip)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        number += 1
        line = view[start:end]
        start = end + 1
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            line = bytes(line)
            if not line.strip():
                continue  # a blank line holds no value (told by the parse failing, then checked)
            if not seen and first_line == 1 and _one_document(data):
                raise TraceError(label, f"line {number}", "is one JSON document spread over "
                                 "several lines, not JSON Lines (one JSON value a line): it is "
                                 "not in this format; let orchviz detect the format, or name "
                                 "another with --from") from None
            parse_json(line, label, line=number)  # raises the precise TraceError
            raise  # pragma: no cover - parse_json always raises for bad JSON
        seen = True
        yield number, value


def _one_document(data: bytes) -> bool:
    """Whether bytes hold one JSON document that spans several lines."""
    if data.count(b"\n", 0, len(data.rstrip())) == 0:
        return False
    try:
        orjson.loads(data)
    except orjson.JSONDecodeError:
        return False
    return True


def json_values(data: bytes, label: str) -> list[tuple[int, Any]]:
    """The JSON values of a file that holds either one JSON document or one value per line:
    [(line, value)], line 1 for a single document. A first line that is JSON on its own means
    JSONL; otherwise the file is one document, and its parse error names line and column."""
    return list(each_json_value(data, label))


def each_json_value(data: bytes, label: str) -> Iterator[tuple[int, Any]]:
    """`json_values` one at a time: a reader that is done with a line's value before it reads
    the next keeps one in memory, not the file's."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    skipped = len(data) - len(data.lstrip())
    blank_lines = data.count(b"\n", 0, skipped)
    body = data[skipped:]
    cut = body.find(b"\n")
    try:
        first = orjson.loads(body if cut < 0 else body[:cut])
    except orjson.JSONDecodeError:
        yield 1, parse_json(data, label)
        return
    yield blank_lines + 1, first  # parsed once: a one-line document can be large
    if cut >= 0:  # the rest read where it is, not copied
        yield from json_lines(body, label, first_line=blank_lines + 2, start=cut + 1)


_first_seen: list[Any] = [None, None]  # [bytes, value]: detectors share one parse of a file


def first_value(data: bytes, limit: int = 65536) -> Any:
    """The first JSON value of a file (its first line, or the whole document up to 1 MB), or
    None; detection looks at this and never raises. Every detector asks about the same bytes,
    so the last answer is kept."""
    if _first_seen[0] is data:
        return _first_seen[1]
    value = None
    line = data[:limit * 16].split(b"\n", 1)[0]
    for candidate in (line, data if len(data) <= limit * 16 else b""):
        if not candidate.strip():
            continue
        try:
            value = orjson.loads(candidate)
            break
        except orjson.JSONDecodeError:
            continue
    _first_seen[0], _first_seen[1] = data, value
    return value


def head_has(data: bytes, *keys: bytes, limit: int = 65536) -> bool:
    """Whether every one of these JSON keys (quoted) appears in the file's first bytes; the
    fallback of detection for documents too large to parse just to look at them."""
    head = data[:limit]
    return all(b'"' + key + b'"' in head for key in keys)


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from an ISO 8601 string (a trailing Z allowed) or a number of
    seconds; None when the value is neither."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str) or not value:
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


_DURATION = re.compile(r"^P(?:(?P<d>\d+(?:\.\d+)?)D)?(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?"
                       r"(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$")


def parse_duration(value: Any) -> float | None:
    """Seconds from an ISO 8601 duration (`PT1M4.006348S`, `P1DT2H`) or a number of seconds;
    None when the value is neither (or is an empty `P`/`PT`)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value >= 0 else None
    if not isinstance(value, str):
        return None
    if value.startswith("PT") and value.endswith("S") and "M" not in value and "H" not in value:
        try:  # the common `PT4.000000S`, without the regular expression
            seconds = float(value[2:-1])
        except ValueError:
            seconds = -1.0
        if seconds >= 0:
            return seconds
    match = _DURATION.match(value.strip().upper())
    if match is None or not any(match.groupdict().values()):
        return None
    parts = {k: float(v) for k, v in match.groupdict().items() if v}
    return (parts.get("d", 0.0) * 86400 + parts.get("h", 0.0) * 3600 + parts.get("m", 0.0) * 60
            + parts.get("s", 0.0))


def as_text(value: Any) -> str | None:
    """A value as inline text: strings as they are, anything else as compact JSON."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return str(value)


def content_hash(text: str) -> str:
    """The content hash orchviz writes in `content_ref` when inline content is dropped."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


ANNOTATION_KEY = "published_annotation"
"""The event key under which a dataset's published annotation is kept verbatim."""

CERTAIN, UNCERTAIN = "certain", "uncertain"
"""How sure an importer is that a published label means what the rubric's question asks."""


def publish(event: dict[str, Any], origin: str, version: str, record: Any,
            **about: Any) -> dict[str, Any]:
    """Keep a dataset's published annotation verbatim on the event it is about (the first
    event for an annotation of the whole run): its origin, the dataset version and the record
    as published (keys in `about`, such as the span it located, are added beside them). An
    event can carry several annotations. Returns what was kept."""
    kept = {"origin": origin, "dataset_version": version, "record": record, **about}
    event.setdefault(ANNOTATION_KEY, []).append(kept)
    return kept


def published(trace: Trace, origin: str | None = None) -> list[tuple[str, dict[str, Any]]]:
    """(event id, annotation) of every published annotation a trace carries (of one origin, or
    of all), in event order; the trace may have been imported or read back from a native
    file, which keeps them."""
    found = []
    for event in trace.events:
        for kept in event.extras.get(ANNOTATION_KEY) or ():
            if isinstance(kept, dict) and (origin is None or kept.get("origin") == origin):
                found.append((event.id, kept))
    return found


def label_record(trace: Trace, origin: str, question: str, value: Any, comment: str, *,
                 event_id: str = "", mapping: str = CERTAIN, why: str = "",
                 created_at: str = "2025-01-01T00:00:00.000000Z") -> dict[str, Any]:
    """One published annotation as a label record (the label store's import shape), answered
    by `origin` as reviewer. An uncertain mapping says so twice: `mapping: uncertain` (for a
    store that keeps it) and at the head of the comment, with why (for one that does not)."""
    if mapping == UNCERTAIN:
        comment = f"[uncertain mapping: {why}] {comment}".strip()
    return {"trace_id": trace.trace_id, "event_id": event_id, "question": question,
            "value": value, "reviewer": origin, "origin": origin, "comment": comment,
            "created_at": created_at, "mapping": mapping}


class TraceDraft:
    """Events of one trace being imported, in absolute source time, before validation."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.edges: list[dict[str, str]] = []
        self.unknown: Counter[str] = Counter()
        self.notes: list[TraceWarning] = []
        self.rewards: dict[str, float] = {}
        self.metrics: dict[str, float] = {}

    def add(self, t: float, type_: str, agent: str, **keys: Any) -> dict[str, Any]:
        """Add an event at absolute time `t`; keys that are None are left out. Returns the event
        (its `id` is final) so that edges and later keys can refer to it."""
        event = {"id": f"e{len(self.events) + 1}", "t": t, "type": type_, "agent": agent}
        event.update((k, v) for k, v in keys.items() if v is not None)
        if "from_" in event:
            event["from"] = event.pop("from_")
        self.events.append(event)
        return event

    def link(self, src: dict[str, Any], dst: dict[str, Any], type_: str) -> None:
        """Add a typed edge between two events already added."""
        self.edges.append({"src": src["id"], "dst": dst["id"], "type": type_})

    def skip(self, kind: str, count: int = 1) -> None:
        """Count a record the importer does not understand (reported as a warning)."""
        self.unknown[kind] += count

    def note(self, code: str, message: str) -> None:
        """A warning of the importer's own, kept on the built trace."""
        self.notes.append(TraceWarning(code=code, message=message))

    def conclude(self, root: str, *, stop_at: float | None = None,
                 aggregate: bool = True) -> dict[str, Any] | None:
        """Mark how the root ends: its final message becomes an aggregate when returns reached
        it before (unless `aggregate` is False: the importer placed its aggregates itself), and
        a stop decision follows the run's last event, whoever's it is (or lands at `stop_at`,
        where the source says the root stopped). Returns the stop event."""
        if not any(e["agent"] == root for e in self.events):
            return None
        if aggregate:
            spoken = [e for e in self.events if e["agent"] == root and e["type"] == "message"
                      and e.get("kind") not in NOT_ANSWERS]
            final = None
            for event in spoken:  # the latest; on a tie, the one added last
                if final is None or event["t"] >= final["t"]:
                    final = event
            if final is not None and final.get("to") is None and any(
                    e["type"] == "return" and e.get("to") == root and e["t"] <= final["t"]
                    for e in self.events):
                final["type"] = "aggregate"
                final.pop("from", None)
        end = max(max(e["t"], e.get("end_t", e["t"])) for e in self.events)
        own_end = max(max(e["t"], e.get("end_t", e["t"])) for e in self.events
                      if e["agent"] == root)
        t = stop_at if stop_at is not None and stop_at >= own_end else end
        return self.add(t, "orchestrator_decision", root, decision="stop",
                        inferred_by="importer", content="run ended")

    def shape(self) -> str | None:
        """The topology the spawns show: hierarchical when a spawned agent spawns too,
        centralized when only roots spawn, None (unknown) without spawns."""
        spawned = {e.get("to") for e in self.events if e["type"] == "spawn"}
        if not spawned:
            return None
        spawners = {e["agent"] for e in self.events if e["type"] == "spawn"}
        return "hierarchical" if spawners & spawned else "centralized"

    def build(self, label: str, source_format: str, *, trace_id: str, task_id: str,
              system: str | None = None, topology: str | None = None) -> Trace:
        """Validate the draft as a trace in the reference schema: times from the first event,
        events in time order (ties keep the order added), costs summed, warnings attached."""
        if not self.events:
            raise TraceError(label, "", f"holds no {source_format} records that make events")
        start = min(e["t"] for e in self.events)
        ordered = sorted(self.events, key=lambda e: e["t"])
        renamed = {e["id"]: f"e{i}" for i, e in enumerate(ordered, start=1)}
        for event in ordered:
            event["id"] = renamed[event["id"]]  # ids follow time order, which reads naturally
        for edge in self.edges:
            edge["src"], edge["dst"] = renamed[edge["src"]], renamed[edge["dst"]]
        tokens = 0.0
        end = 0.0
        for event in ordered:
            event["t"] = _seconds(event["t"] - start)
            if "end_t" in event:
                event["end_t"] = max(event["t"], _seconds(event["end_t"] - start))
                end = max(end, event["end_t"])
            end = max(end, event["t"])
            value = event.get("tokens")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                tokens += value
        costs = {"tokens": tokens, "wall_clock_s": end,
                 "tool_calls": sum(e["type"] == "tool_call" for e in ordered),
                 "messages": sum(e["type"] == "message" for e in ordered)}
        obj: dict[str, Any] = {"trace_id": trace_id or "trace", "task_id": task_id or "task",
                               "events": ordered, "edges": self.edges,
                               "rewards": self.rewards, "costs": costs}
        if system:
            obj["system"] = system
        if topology:
            obj["topology"] = topology
        if self.metrics:
            obj["metrics"] = self.metrics
        trace = trace_from_dict(obj, label, source_format=source_format)
        trace._warnings.extend(self.notes)
        for kind, count in sorted(self.unknown.items()):
            trace._warnings.append(TraceWarning(
                code="unknown_record",
                message=f"{count} {kind} record{'s' if count != 1 else ''} not understood by the "
                        f"{source_format} importer; left out"))
        return trace


def _seconds(value: float) -> float:
    """Seconds rounded to the microsecond, so that float noise never reorders events."""
    return round(max(0.0, value), 6)
