"""Read and write traces in orchviz's native format: the reference schema as JSON or JSONL.

Every failure becomes a `TraceError` naming the file, the place and the problem; nothing else
escapes. Odd but legal structure becomes warnings on the loaded trace.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator
from operator import attrgetter
from pathlib import Path
from typing import Any

import msgspec
import orjson
from pydantic import ValidationError
from pydantic_core import from_json

from viz_app.errors import TraceError
from viz_app.io import schema_models
from viz_app.io.decode import costs_plain, decode
from viz_app.model import (INT_LIMIT, EDGE_TYPES, EVENT_TYPES, FIELD_OF, OTHER, TOPOLOGIES, Edge, Event,
                           Trace, paused_gc)

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
        raw = _read_file(path, label, max_bytes)
    if raw.startswith(b"\x1f\x8b"):
        raw = _gunzip(raw, label, max_bytes)
    return raw, label


_NOT_FILES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _read_file(path: Path, label: str, max_bytes: int) -> bytes:
    """The bytes of a file. Anything but a regular file or a folder (whose reading fails as it
    always did) is refused before it is opened: reading a FIFO or a device can wait forever or
    never end. The file is opened without waiting and checked again, in case it was swapped."""
    limit = -1 if path.name.endswith(".gz") else max_bytes + 1  # gzip is limited once inflated
    try:
        _refuse_special(path.stat().st_mode, label)
        with open(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as stream:
            opened = os.fstat(stream.fileno())
            _refuse_special(opened.st_mode, label)
            if limit > 0 and opened.st_size >= limit:
                raise TraceError(label, "", _too_large(opened.st_size, max_bytes))
            raw = stream.read(min(limit, opened.st_size + 1) if limit > 0 else -1)
            if limit > 0 and len(raw) > opened.st_size:  # it grows while being read
                raw += stream.read(limit - len(raw))
    except OSError as err:
        raise TraceError(label, "", f"cannot be read ({err.strerror or err})") from None
    if limit > 0 and len(raw) >= limit:
        raise TraceError(label, "", _too_large(len(raw), max_bytes))
    return raw


def _refuse_special(mode: int, label: str) -> None:
    for test, kind in _NOT_FILES:
        if test(mode):
            raise TraceError(label, "", f"is {kind}, not a file: orchviz reads traces only "
                             "from regular files")


def _too_large(size: int, limit: int) -> str:
    return (f"the file is {size_mb(size, limit)}, over the {limit_mb(limit)} limit "
            "(set ORCHVIZ_MAX_BYTES to raise it)")


def size_mb(size: int, limit: int) -> str:
    """A size found over `limit`, in MB to a tenth, rounded up when rounding it to the nearest
    would show it no larger than `limit_mb(limit)`: the sentence never says a size over the
    limit is under it ("209.7 MB, over the 210 MB limit" is now "209.8 MB, over the 209.7 MB
    limit")."""
    nearest = round(size / 1e5) / 10
    if nearest <= math.floor(limit / 1e5) / 10:
        nearest = math.ceil(size / 1e5) / 10
    return f"{nearest:.1f} MB"


def limit_mb(limit: int) -> str:
    """A size limit in MB rounded down to a tenth ("200 MB", "209.7 MB" for 200 MiB)."""
    return f"{math.floor(limit / 1e5) / 10:g} MB"


def _gunzip(raw: bytes, label: str, max_bytes: int) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            data = stream.read(max_bytes + 1)
    except (OSError, EOFError) as err:
        raise TraceError(label, "", f"is not a readable gzip file ({err})") from None
    if len(data) > max_bytes:  # inflated no further: a bomb's whole size is never made
        raise TraceError(label, "", f"is {_bytes_text(len(raw))} of gzip that inflates past the "
                         f"{limit_mb(max_bytes)} limit once decompressed (inflating stopped "
                         "there; set ORCHVIZ_MAX_BYTES to raise it)")
    return data


def _bytes_text(size: int) -> str:
    """A file's size as people read it: bytes, kB or MB."""
    if size < 1000:
        return f"{size} bytes"
    return f"{size / 1e3:.1f} kB" if size < 1e6 else f"{size / 1e6:.1f} MB"


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
    if "infinity when parsed" in err.msg:  # orjson's words for 1e400 and a 400-digit integer
        return place, ("holds a number beyond the largest a float can hold (about 1.8e308), "
                       "which orchviz cannot read")
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


def _where(line: int | None) -> str:
    """How an error's place begins for a trace on a line of a JSON Lines file ('' otherwise)."""
    return f"line {line}: " if line else ""


def trace_from_json(data: bytes, label: str, line: int | None = None, *,
                    sha256: str = "") -> Trace:
    """Parse and validate one trace from JSON bytes; `sha256`, when the caller knows the hash
    the trace is known by (a pool keeps it), spares hashing the bytes.

    Plain text (every key one orchviz reads, of the type it documents) is decoded by the
    compiled path (`io.decode`) straight into the trace. Other text (extra keys of any kind):
    pydantic's parser builds the objects (one string for each repeated short string), which are
    checked for what JSON readers could read differently (a key twice in one object, a number
    that is not finite), then turned into the trace's structs a chunk at a time, msgspec
    checking them. Only when something fails does the slower path run: pydantic validates, to
    say where and why in plain words."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    with paused_gc():
        trace = decode(data)
    if trace is None:
        trace = _general(data, label, line)
    else:
        _check_references(trace, label, _where(line))
        trace._source = label
    trace._sha256 = sha256 or hashlib.sha256(data).hexdigest()
    return trace


def _general(data: bytes, label: str, line: int | None) -> Trace:
    prefix = _where(line)
    try:
        with paused_gc():
            tree = from_json(data, allow_inf_nan=False)
    except ValueError:  # not JSON (a NaN or Infinity included), or nested too deeply
        tree = None
    if tree is None or not _unambiguous(data, tree):
        _refuse_ambiguous(data, label, prefix)
    trace = None
    if tree is not None:
        with paused_gc():
            trace = _structs(tree, release=True)
    if trace is None:
        return trace_from_dict(parse_json(data, label, line), label, line=line)
    # the JSON parser already refused deeper nesting than MAX_NESTING
    _finish(trace, label, prefix, "orchviz", nesting_checked=True)
    return trace


CHUNK = 4096
"""Events (and edges) turned into structs at a time."""

_KNOWN = frozenset(FIELD_OF)
"""The keys an event holds in fields, by their names in the file."""
_SCHEMA_KEYS = frozenset(("id", "t", "type", "agent", "role", "from", "to", "tool",
                          "content_ref", "trusted"))
_TOP = frozenset(("trace_id", "task_id", "system", "topology", "events", "edges", "rewards",
                  "costs", "metrics"))
_EVENTS, _EDGES = list[Event], list[Edge]


def _structs(tree: Any, release: bool) -> Trace | None:
    """The trace of a parsed object, its events and edges checked by msgspec a chunk at a time
    (with `release`, each chunk's parsed objects are let go as soon as its structs stand, so
    the parsed trace and the structs never both stand whole in memory). None when msgspec
    refuses something: pydantic then validates, to say why (or, where msgspec refuses what
    the schema allows, such as an integer beyond 64 bits, the trace is built from the keys
    pydantic validated)."""
    if type(tree) is not dict or not _TOP.issuperset(tree):
        return None
    events, edges, costs = tree.get("events"), tree.get("edges"), tree.get("costs")
    if type(events) is not list or not events or type(edges) is not list \
            or type(costs) is not dict or not costs_plain(costs):
        return None
    built_events: list[Event] = []
    built_edges: list[Edge] = []
    try:
        for start in range(0, len(events), CHUNK):
            chunk = events[start:start + CHUNK]
            built = _event_chunk(chunk)
            if built is None:
                return None
            built_events += built
            if release:
                events[start:start + CHUNK] = [None] * len(chunk)
        for start in range(0, len(edges), CHUNK):
            chunk = edges[start:start + CHUNK]
            built_edges += msgspec.convert(chunk, _EDGES)
            if release:
                edges[start:start + CHUNK] = [None] * len(chunk)
        rest = dict(tree)
        rest["events"], rest["edges"] = built_events, built_edges  # structs pass as they are
        return msgspec.convert(rest, Trace)
    except msgspec.ValidationError:
        return None


def _event_chunk(chunk: list[Any]) -> list[Event] | None:
    """A chunk of parsed events as structs: each event's keys that no field holds are moved
    into `other` first; then, if msgspec refuses, the extension keys of another type than the
    field's too. None when msgspec still refuses (the schema's keys are wrong)."""
    given = []
    for event in chunk:
        if type(event) is not dict:
            return None
        given.append(event if _KNOWN.issuperset(event) else _split(event, _KNOWN))
    try:
        return msgspec.convert(given, _EVENTS)
    except msgspec.ValidationError:
        pass
    try:
        return msgspec.convert([_split(event, _SCHEMA_KEYS) for event in chunk], _EVENTS)
    except msgspec.ValidationError:
        return None


def _split(event: dict[str, Any], kept: frozenset[str]) -> dict[str, Any]:
    """An event's keys, those not in `kept` and not an extension key of the field's type moved
    into `other` (a new dict: the caller's stays as it is)."""
    fields: dict[str, Any] = {}
    other: dict[str, Any] = {}
    for key, value in event.items():
        if key in kept:
            fields[key] = value
            continue
        known = FIELD_OF.get(key)
        if known is not None and known[1](value):
            fields[key] = value
        else:
            other[key] = value
    if other:
        fields[OTHER] = other
    return fields


def _built(obj: dict[str, Any]) -> Trace:
    """The trace of a parsed object pydantic validated, built without checking again."""
    return Trace(trace_id=obj["trace_id"], task_id=obj["task_id"],
                 events=[Event.of(**event) for event in obj["events"]],
                 edges=[Edge(edge["src"], edge["dst"], edge["type"]) for edge in obj["edges"]],
                 rewards=obj["rewards"], costs_=obj["costs"], system=obj.get("system"),
                 topology=obj.get("topology"), metrics=obj.get("metrics"))


_SPELLED = re.compile(rb"\\u00(?:3[aA]|6[cCeE]|75)")
"""An escape that spells a colon or a letter of `null`, which a count of those would miss."""


WHOLE_BELOW = 4 * 1024 * 1024
"""Bytes up to which a trace's parsed objects are written back whole at once to compare."""


def _unambiguous(data: bytes, tree: Any) -> bool:
    """Whether parsed JSON holds everything its text says, as every reader reads it: no key
    twice in one object (readers differ on which value counts) and no number beyond the
    finite (1e400). Text that orjson wrote (a pool's row, a file `write_trace` wrote) is
    decided by one comparison: written back, the objects give the same bytes, and orjson
    writes neither a key twice nor a number that is not finite. Other text is decided by
    counting, at C speed: written back (a chunk of events at a time), the objects have as many
    colons as the text (one for each key, the others inside strings, which a key dropped would
    take with it) and as many `null`s (an infinity is written as null). False means only that
    the exact check must decide."""
    if len(data) <= WHOLE_BELOW:
        try:  # as orjson writes (compact or indented), the text is its own proof: one comparison
            again = orjson.dumps(tree, option=orjson.OPT_INDENT_2 if data[1:2] == b"\n" else 0)
        except orjson.JSONEncodeError:  # an integer beyond 64 bits, say
            return False
        if again == (data[:-1] if data.endswith(b"\n") else data):
            return True
    colons = nulls = 0
    parts: list[Any] = [tree]
    if isinstance(tree, dict):
        lists = [key for key in ("events", "edges") if isinstance(tree.get(key), list)]
        parts = [{key: value for key, value in tree.items() if key not in lists}]
        colons += len(lists)  # the colons after "events" and "edges"
        parts += [tree[key][start:start + CHUNK] for key in lists
                  for start in range(0, len(tree[key]), CHUNK)]
    try:
        for part in parts:
            again = orjson.dumps(part)
            colons += again.count(b":")
            nulls += again.count(b"null")
    except orjson.JSONEncodeError:  # an integer beyond 64 bits, say
        return False
    return (data.count(b":") == colons and data.count(b"null") == nulls
            and _SPELLED.search(data) is None)


class _Twice(dict):
    """A JSON object in which `key` came twice."""

    key = ""


class _NotFinite(str):
    """A number as written in the JSON text, which is not finite (NaN, Infinity, 1e400)."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                obj = _Twice(obj)
                obj.key = key
                break
            seen.add(key)
    return obj


def _float(text: str) -> Any:
    value = float(text)
    return value if math.isfinite(value) else _NotFinite(text)


class _TooLong(int):
    """An integer as written in the JSON text, beyond 64 bits (`model.INT_LIMIT`)."""


def _int(text: str) -> Any:
    value = int(text) if len(text) < 4000 else 10**4000
    return value if -INT_LIMIT <= value <= INT_LIMIT else _TooLong(value)


def _refuse_ambiguous(data: bytes, label: str, prefix: str) -> None:
    """Raise a TraceError naming the first key that comes twice in one object, the first
    number that is not finite or the first integer beyond 64 bits; return when there is none
    (or the text is not JSON at all)."""
    try:
        tree = json.loads(data, object_pairs_hook=_pairs, parse_constant=_NotFinite,
                          parse_float=_float, parse_int=_int, strict=False)
    except (ValueError, RecursionError):
        return
    stack: list[tuple[Any, str]] = [(tree, "")]
    while stack:
        value, path = stack.pop()
        if type(value) is _NotFinite:
            raise TraceError(label, prefix + (path or "top level"),
                             f"{value} is not a finite number, which a trace cannot hold")
        if type(value) is _TooLong:
            place, problem = _big_integer(int(value), path or "top level")  # type: ignore[misc]
            raise TraceError(label, prefix + place, problem)
        if isinstance(value, dict):
            if type(value) is _Twice:
                raise TraceError(label, prefix + (f"{path}.{value.key}" if path else value.key),
                                 f"the key {value.key!r} comes twice in one object, and JSON "
                                 "readers differ on which value counts")
            stack.extend((item, f"{path}.{key}" if path else key)
                         for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]")
                         for index, item in reversed(list(enumerate(value))))


def trace_from_dict(obj: Any, label: str, *, line: int | None = None,
                    source_format: str = "orchviz") -> Trace:
    """Validate a parsed trace object: the schema, then the rules the schema cannot state."""
    prefix = _where(line)
    if not isinstance(obj, dict):
        raise TraceError(label, f"{prefix}top level".strip(),
                         f"a trace is a JSON object, but this is {_JSON_TYPE.get(type(obj), 'a value')}")
    try:
        with paused_gc():
            schema_models.Trace.model_validate(obj)
    except ValidationError as err:
        place, problem = describe_validation_error(err)
        raise TraceError(label, prefix + place, problem) from None
    with paused_gc():
        trace = _structs(obj, release=False) or _built(obj)
    _finish(trace, label, prefix, source_format)
    return trace  # read from no bytes of its own: its hash is of its canonical JSON


def _finish(trace: Trace, label: str, prefix: str, source_format: str,
            nesting_checked: bool = False) -> None:
    """The rules the schema cannot state, then where the trace came from."""
    _check_references(trace, label, prefix)
    if not nesting_checked:
        _check_extras(trace, label, prefix)
    _check_integers(trace, label, prefix)
    trace._source = label
    trace._source_format = source_format


_ID, _SRC, _DST = attrgetter("id"), attrgetter("src"), attrgetter("dst")


def _check_references(trace: Trace, label: str, prefix: str) -> None:
    ids = set(map(_ID, trace.events))
    if len(ids) == len(trace.events) and ids.issuperset(map(_SRC, trace.edges)) \
            and ids.issuperset(map(_DST, trace.edges)):
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


def _check_extras(trace: Trace, label: str, prefix: str) -> None:
    """What the schema leaves open in events' extra keys, for objects that did not come from
    JSON text: no nesting deeper than MAX_NESTING, no number that is not finite."""
    for index, event in enumerate(trace.events):
        for key, value in event.extras.items():
            if type(value) in (dict, list, float):
                problem = _extra_problem(value)
                if problem:
                    raise TraceError(label, f"{prefix}events[{index}].{key}", problem)


_NUMERIC_FIELDS = (("t", "t"), ("end_t_", "end_t"), ("tokens_", "tokens"),
                   ("cost_usd_", "cost_usd"), ("llm_call_id", "llm_call_id"),
                   ("response_id", "response_id"), ("call_id", "call_id"),
                   ("tool_call_id", "tool_call_id"), ("tool_use_id", "tool_use_id"),
                   ("source_id", "source_id"), ("prompt_token_ids", "prompt_token_ids"),
                   ("response_token_ids", "response_token_ids"), ("other", ""))


def _check_integers(trace: Trace, label: str, prefix: str) -> None:
    """No integer beyond 64 bits (`model.INT_LIMIT`) anywhere in the trace: JSON readers differ
    on one (JavaScript's rounds it, orjson cannot write it, a float cannot hold 400 digits), so
    a figure, an index row or an export would not say what the file says. The compiled path
    holds none (msgspec checks the limit); this path walks what the structs keep."""
    for key in ("rewards", "costs_", "metrics"):
        place = _big_integer(getattr(trace, key), "costs" if key == "costs_" else key)
        if place is not None:
            raise TraceError(label, prefix + place[0], place[1])
    for index, event in enumerate(trace.events):
        for attribute, name in _NUMERIC_FIELDS:
            value = getattr(event, attribute)
            if value is None or value.__class__ is str:
                continue
            found = _big_integer(value, f"events[{index}]" + (f".{name}" if name else ""))
            if found is not None:
                raise TraceError(label, prefix + found[0], found[1])


def _big_integer(value: Any, path: str) -> tuple[str, str] | None:
    """(place, problem) of the first integer beyond 64 bits in a value, else None."""
    stack = [(value, path)]
    while stack:
        item, where = stack.pop()
        kind = item.__class__
        if kind is int:
            if -INT_LIMIT <= item <= INT_LIMIT:
                continue
            digits = str(abs(item)) if item.bit_length() < 4000 else ""
            shown = (f"{'-' if item < 0 else ''}{digits[:4]}…{digits[-4:]} ({len(digits)} digits)"
                     if len(digits) > 24 else (digits and str(item)) or "an integer of over "
                     "1,200 digits")
            return where, (f"{shown} is an integer beyond the 64 bits a trace's numbers can "
                           "hold (JSON readers differ past them)")
        if kind is dict:
            stack.extend((child, f"{where}.{key}" if where else key)
                         for key, child in item.items())
        elif kind is list:
            if item and all(child.__class__ is int for child in item) \
                    and -INT_LIMIT <= min(item) and max(item) <= INT_LIMIT:
                continue  # token ids, checked at C speed
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(item))
    return None


def _extra_problem(value: Any) -> str | None:
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if type(item) is float:
            if not math.isfinite(item):
                return f"holds {item}, which is not a finite number"
            continue
        if level > MAX_NESTING:
            return f"nests arrays or objects more than {MAX_NESTING} levels deep"
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, level + 1) for child in children
                     if type(child) in (dict, list, float))
    return None


def json_path(loc: tuple[Any, ...]) -> str:
    """A pydantic error location as a JSON path such as `events[4].t`."""
    path = ""
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path or "top level"


_UNION_BRANCHES = {"int", "float", "str", "bool", "function-after[_check(), str]"}


def describe_validation_error(err: ValidationError) -> tuple[str, str]:
    """The first problem of a validation error as a (JSON path, plain sentence) pair."""
    errors = err.errors(include_url=False)
    first = errors[0]
    if len(errors) > 1 and errors[1]["type"] == "finite_number" \
            and errors[1]["loc"][:-1] == first["loc"][:-1]:
        first = errors[1]  # a number, but not finite: the int branch's error says less
    loc = tuple(first["loc"])
    kind = first["type"]
    if len(loc) > 1 and loc[-1] in _UNION_BRANCHES and (kind.endswith("_type")
                                                         or kind == "finite_number"):
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
    if kind == "finite_number":
        return json_path(loc), f"{value} is not a finite number, which a trace cannot hold"
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
