"""Read and write traces in orchviz's native format: the reference schema as JSON or JSONL.

Every failure becomes a `TraceError` naming the file, the place and the problem; nothing else
escapes. Odd but legal structure becomes warnings on the loaded trace.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from viz_app.errors import TraceError
from viz_app.model import EDGE_TYPES, EVENT_TYPES, TOPOLOGIES, Trace, paused_gc

DEFAULT_MAX_BYTES = int(os.environ.get("ORCHVIZ_MAX_BYTES", 200 * 1024 * 1024))
"""Largest file (after decompression) that orchviz reads; ORCHVIZ_MAX_BYTES overrides it."""

MAX_NESTING = 196
"""Deepest nesting of arrays and objects allowed inside an event's extra keys: the whole document
then nests at most 199 levels, as pydantic's JSON parser allows, and below orjson's writer limit
(254), so that every trace orchviz loads, it can also write."""

Source = str | os.PathLike | bytes

_JSON_TYPE = {str: "a string", int: "a number", float: "a number", bool: "true or false",
              type(None): "null", list: "an array", dict: "an object"}


def read_source(source: Source, name: str | None = None,
                max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[bytes, str]:
    """The decompressed bytes of a path or of uploaded bytes, with the name to report them by."""
    if isinstance(source, bytes):
        label = name or "<upload>"
        raw = source
        if len(raw) > max_bytes and not raw.startswith(b"\x1f\x8b"):
            raise TraceError(label, "", _too_large(len(raw), max_bytes))
    else:
        path = Path(source)
        label = name or str(path)
        try:
            size = path.stat().st_size
            if size > max_bytes and not path.name.endswith(".gz"):
                raise TraceError(label, "", _too_large(size, max_bytes))
            raw = path.read_bytes()
        except OSError as err:
            raise TraceError(label, "", f"cannot be read ({err.strerror or err})") from None
    if raw.startswith(b"\x1f\x8b"):
        raw = _gunzip(raw, label, max_bytes)
    return raw, label


def _too_large(size: int, limit: int) -> str:
    return (f"the file is {size / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit "
            "(set ORCHVIZ_MAX_BYTES to raise it)")


def _gunzip(raw: bytes, label: str, max_bytes: int) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            data = stream.read(max_bytes + 1)
    except (OSError, EOFError) as err:
        raise TraceError(label, "", f"is not a readable gzip file ({err})") from None
    if len(data) > max_bytes:
        raise TraceError(label, "", _too_large(len(data), max_bytes) + " once decompressed")
    return data


def is_pool_name(label: str) -> bool:
    """Whether a file name says JSONL: one trace a line."""
    low = label.lower().removesuffix(".gz")
    return low.endswith((".jsonl", ".ndjson"))


def parse_json(data: bytes, label: str, line: int | None = None) -> Any:
    """Parse JSON bytes, turning every failure into a TraceError with line and column."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if not data.strip():
        raise TraceError(label, f"line {line}" if line else "", "the file is empty" if line is None
                         else "the line is empty")
    try:
        with paused_gc():
            return orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise TraceError(label, *_parse_problem(data, err, line)) from None


def _parse_problem(data: bytes, err: orjson.JSONDecodeError, line: int | None) -> tuple[str, str]:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as bad:
        at_line = data.count(b"\n", 0, bad.start) + (line or 1)
        return (f"line {at_line}, byte {bad.start}",
                f"is not UTF-8 text (byte 0x{data[bad.start]:02x} cannot be decoded)")
    lineno = err.lineno + (line - 1 if line else 0)
    place = f"line {lineno}, column {err.colno}"
    if "recursion" in err.msg.lower() or "depth limit" in err.msg.lower():
        return place, "nests arrays or objects too deeply to be a trace"
    if err.pos >= len(data.rstrip()):
        return place, "the JSON ends too early: the file looks truncated"
    return place, f"is not valid JSON ({err.msg})"


def load_trace(source: Source, *, name: str | None = None,
               max_bytes: int = DEFAULT_MAX_BYTES) -> Trace:
    """Load one trace from a `.json` or single-line `.jsonl` file (gzip allowed), or from bytes."""
    data, label = read_source(source, name, max_bytes)
    if is_pool_name(label):
        traces = list(_pool(data, label, None))
        if len(traces) != 1:
            raise TraceError(label, "", f"holds {len(traces)} traces; load it with load_traces")
        return traces[0]
    return trace_from_json(data, label)


def load_traces(source: Source, *, name: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
                on_error: Callable[[TraceError], None] | None = None) -> Iterator[Trace]:
    """Yield every trace of a file: each line of a JSONL pool, or the one trace of a JSON file.

    A bad line raises its TraceError, unless `on_error` is given: then it is reported there and
    the lines after it still load.
    """
    data, label = read_source(source, name, max_bytes)
    if not is_pool_name(label):
        yield trace_from_json(data, label)
        return
    yield from _pool(data, label, on_error)


def _pool(data: bytes, label: str, on_error: Callable[[TraceError], None] | None) -> Iterator[Trace]:
    lines = data.split(b"\n")
    found = False
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        found = True
        try:
            yield trace_from_json(line, label, line=number)
        except TraceError as err:
            if on_error is None:
                raise
            on_error(err)
    if not found:
        raise TraceError(label, "", "the file is empty")


def trace_from_json(data: bytes, label: str, line: int | None = None) -> Trace:
    """Parse and validate one trace from JSON bytes.

    pydantic parses and validates in one pass, with no intermediate Python objects; only when
    that fails does the slower path run, to say where and why in plain words."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        with paused_gc():
            trace = Trace.model_validate_json(data)
    except ValidationError:
        trace = trace_from_dict(parse_json(data, label, line), label, line=line)
    else:  # the JSON parser already refused deeper nesting than MAX_NESTING
        _finish(trace, label, f"line {line}: " if line else "", "orchviz", nesting_checked=True)
    trace._sha256 = hashlib.sha256(data).hexdigest()
    return trace


def trace_from_dict(obj: Any, label: str, *, line: int | None = None,
                    source_format: str = "orchviz") -> Trace:
    """Validate a parsed trace object: the schema, then the rules the schema cannot state."""
    prefix = f"line {line}: " if line else ""
    if not isinstance(obj, dict):
        raise TraceError(label, f"{prefix}top level".strip(),
                         f"a trace is a JSON object, but this is {_JSON_TYPE.get(type(obj), 'a value')}")
    try:
        with paused_gc():
            trace = Trace.model_validate(obj)
    except ValidationError as err:
        place, problem = describe_validation_error(err)
        raise TraceError(label, prefix + place, problem) from None
    _finish(trace, label, prefix, source_format)
    return trace  # read from no bytes of its own: its hash is of its canonical JSON


def _finish(trace: Trace, label: str, prefix: str, source_format: str,
            nesting_checked: bool = False) -> None:
    """The rules the schema cannot state, then where the trace came from."""
    _check_references(trace, label, prefix)
    if not nesting_checked:
        _check_nesting(trace, label, prefix)
    trace._source = label
    trace._source_format = source_format


def _check_references(trace: Trace, label: str, prefix: str) -> None:
    ids = {e.id for e in trace.events}
    if len(ids) == len(trace.events) and all(
            edge.src in ids and edge.dst in ids for edge in trace.edges):
        return  # the common case, checked fast; otherwise find the first offender to name it
    seen: dict[str, int] = {}
    for index, event in enumerate(trace.events):
        if event.id in seen:
            raise TraceError(label, f"{prefix}events[{index}].id",
                             f"duplicate event id {event.id!r} (first used at events[{seen[event.id]}])")
        seen[event.id] = index
    for index, edge in enumerate(trace.edges):
        for end in ("src", "dst"):
            target = getattr(edge, end)
            if target not in seen:
                raise TraceError(label, f"{prefix}edges[{index}].{end}",
                                 f"the edge points at {target!r}, which is no event of this trace")


def _check_nesting(trace: Trace, label: str, prefix: str) -> None:
    for index, event in enumerate(trace.events):
        for key, value in (event.__pydantic_extra__ or {}).items():
            if type(value) in (dict, list) and _depth(value) > MAX_NESTING:
                raise TraceError(label, f"{prefix}events[{index}].{key}",
                                 f"nests arrays or objects more than {MAX_NESTING} levels deep")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if deepest > MAX_NESTING:
            break
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, level + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def json_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a JSON path such as `events[4].t`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "top level"


_UNION_BRANCHES = {"int", "float", "str", "bool", "function-after[_check(), str]"}


def describe_validation_error(err: ValidationError) -> tuple[str, str]:
    """The first problem of a validation error as a (JSON path, plain sentence) pair."""
    first = err.errors(include_url=False)[0]
    loc = tuple(first["loc"])
    kind = first["type"]
    if len(loc) > 1 and loc[-1] in _UNION_BRANCHES and kind.endswith("_type"):
        loc = loc[:-1]
    value = first.get("input")
    got = _JSON_TYPE.get(type(value), "a value")
    if kind == "missing":
        return json_path(loc[:-1]), f"the required key {loc[-1]!r} is missing"
    if kind == "extra_forbidden":
        where = "the top level" if len(loc) == 1 else "this object"
        return json_path(loc), f"{loc[-1]!r} is not a key that {where} of a trace may have"
    if kind == "literal_error":
        field = loc[-1]
        allowed = {"type": EVENT_TYPES if "events" in loc else EDGE_TYPES,
                   "topology": TOPOLOGIES}.get(str(field), ())
        noun = {"events": "event type", "edges": "edge type"}.get(str(loc[0]), str(field))
        if field == "topology":
            noun = "topology"
        return json_path(loc), f"unknown {noun} {value!r}; expected one of {', '.join(allowed)}"
    if kind in ("int_type", "float_type"):
        return json_path(loc), f"expected a number, got {got}"
    if kind == "string_type":
        return json_path(loc), f"expected a string, got {got}"
    if kind == "bool_type":
        return json_path(loc), f"expected true or false, got {got}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return json_path(loc), f"expected an object, got {got}"
    if kind == "list_type":
        return json_path(loc), f"expected an array, got {got}"
    if kind == "string_too_short":
        return json_path(loc), "must not be an empty string"
    if kind == "too_short":
        return json_path(loc), "must hold at least one item" + (
            " (a trace needs at least one event)" if loc == ("events",) else "")
    if kind in ("greater_than_equal", "greater_than"):
        return json_path(loc), f"must not be negative, got {value!r}"
    return json_path(loc), first["msg"]


def dump_trace(trace: Trace, *, indent: bool = True) -> bytes:
    """The trace as JSON bytes in the reference schema, keeping every key it was loaded with."""
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps(trace.to_dict(), option=option)


def write_trace(trace: Trace, path: str | os.PathLike) -> Path:
    """Write a trace as a `.json` file (gzip when the name ends in `.gz`)."""
    target = Path(path)
    data = dump_trace(trace)
    if target.name.endswith(".gz"):
        data = gzip.compress(data)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    return target
