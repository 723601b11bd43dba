"""The compiled read path: trace bytes decoded by msgspec straight into typed structs.

`decode(data)` gives a `TraceRecord` (events, edges and the rest as msgspec structs, checked
against the reference schema in C) when the text is plain: every key one the structs know
(the schema's, and the extension keys orchviz reads, of the types it documents), no key twice,
every number finite. For anything else it gives None, and the general path of `io.native` reads
the text as it always did: it keeps every extra key, and it says in one sentence, naming the
file and the place, why a text is refused. So the compiled path refuses nothing and accepts
nothing on its own: it is a faster way to the same trace.

The records quack like the pydantic models (`Event`, `Edge`, `Trace`): the analysis and the pool
index read them without any model being built; `to_model` builds the models, unvalidated (they
were checked here), for the app and the library API.

Why the records are proof of what the text holds: msgspec refuses a number beyond the finite
(1e400) and any key of a closed object that its struct does not name, but it keeps the last of
a key given twice. Written back, the records hold one colon for each key they kept, and the
colons inside their strings; the text holds one for each key it gave, and the same colons inside
its strings. So the counts are equal exactly when no key was dropped, unless an escape spells a
colon (`\\u003a`), which sends the text to the general path.
"""

from __future__ import annotations

import hashlib
from operator import attrgetter
from typing import Annotated, Any

import msgspec
import orjson
import numpy as np
from msgspec import Meta, Struct, field
from pydantic import BaseModel

from viz_app.model import (DECISIONS, Costs, Edge, EdgeType, Event, EventReading, EventType,
                           Topology, Trace, TraceWarning)

NonNegative = Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0)]
Number = int | float
Text = Annotated[str, Meta(min_length=1)]
CallId = str | int

_EXTENSIONS = ("content", "end_t", "tokens", "cost_usd", "model", "decision", "llm_call_id",
               "response_id", "call_id", "tool_call_id", "tool_use_id", "source_id",
               "prompt_token_ids", "response_token_ids")
"""The extension keys an `EventRecord` holds (`model.EXTENSION_KEYS`), in the order written."""


class EventRecord(Struct, EventReading, omit_defaults=True, forbid_unknown_fields=True, gc=False):
    """One event as decoded: the schema's keys, then the extension keys orchviz reads, each of
    the type orchviz documents (another type sends the trace to the general path, which keeps
    it as it came). An absent key reads None (an explicit null is refused, as the schema does).
    Reads like `model.Event`."""

    id: Text
    t: NonNegative
    type: EventType
    agent: Text
    role: str = None  # type: ignore[assignment]
    from_: str = field(name="from", default=None)  # type: ignore[assignment]
    to: str = None  # type: ignore[assignment]
    tool: str = None  # type: ignore[assignment]
    content_ref: str = None  # type: ignore[assignment]
    trusted: bool = None  # type: ignore[assignment]
    content: str = None  # type: ignore[assignment]
    end_t_: Number = field(name="end_t", default=None)  # type: ignore[assignment]
    tokens_: Number = field(name="tokens", default=None)  # type: ignore[assignment]
    cost_usd_: Number = field(name="cost_usd", default=None)  # type: ignore[assignment]
    model: str = None  # type: ignore[assignment]
    decision_: str = field(name="decision", default=None)  # type: ignore[assignment]
    llm_call_id: CallId = None  # type: ignore[assignment]
    response_id: CallId = None  # type: ignore[assignment]
    call_id: CallId = None  # type: ignore[assignment]
    tool_call_id: CallId = None  # type: ignore[assignment]
    tool_use_id: CallId = None  # type: ignore[assignment]
    source_id: CallId = None  # type: ignore[assignment]
    prompt_token_ids: list[int] = None  # type: ignore[assignment]
    response_token_ids: list[int] = None  # type: ignore[assignment]

    # -- what `model.Event` reads, read the same way ----------------------------------------

    @property
    def extras(self) -> dict[str, Any]:
        """The extension keys given, by their names in the file."""
        return {name: value for name, value in zip(_EXTENSIONS, _extension_values(self))
                if value is not None}

    @property
    def end_t(self) -> float | None:
        value = self.end_t_
        return float(value) if value is not None and value >= self.t else None

    @property
    def tokens(self) -> float | None:
        value = self.tokens_
        return float(value) if value is not None and value >= 0 else None

    @property
    def cost_usd(self) -> float | None:
        value = self.cost_usd_
        return float(value) if value is not None and value >= 0 else None

    @property
    def decision(self) -> str | None:
        if self.type != "orchestrator_decision":
            return None
        value = self.decision_
        return value if value in DECISIONS else None


_extension_values = attrgetter(
    "content", "end_t_", "tokens_", "cost_usd_", "model", "decision_", "llm_call_id",
    "response_id", "call_id", "tool_call_id", "tool_use_id", "source_id", "prompt_token_ids",
    "response_token_ids")


class EdgeRecord(Struct, forbid_unknown_fields=True, gc=False):
    """A typed dependency between two events, as decoded (reads like `model.Edge`)."""

    src: Text
    dst: Text
    type: EdgeType


class CostsRecord(Struct):
    """The run's costs as decoded: the channels the schema names (reads like `model.Costs`)."""

    tokens: Number
    wall_clock_s: Number


class TraceRecord(Struct, omit_defaults=True, forbid_unknown_fields=True, dict=True):
    """A whole trace as decoded (reads like `model.Trace` where the analysis and the index
    read it). `costs` is kept as given (extra numeric channels are allowed) and checked in
    `decode`."""

    trace_id: Text
    task_id: Text
    events: Annotated[list[EventRecord], Meta(min_length=1)]
    edges: list[EdgeRecord]
    rewards: dict[str, Number]
    costs_: dict[str, Number] = field(name="costs")
    system: str = None  # type: ignore[assignment]
    topology: Topology = None  # type: ignore[assignment]
    metrics: dict[str, Number] = None  # type: ignore[assignment]

    @property
    def costs(self) -> CostsRecord:
        return CostsRecord(self.costs_["tokens"], self.costs_["wall_clock_s"])

    # set by readers and the analysis, not keys of the file (so not annotated: no fields)
    _by_id = None
    _analysis = None
    _source = ""
    _sha256 = ""
    _source_format = "orchviz"

    @property
    def source(self) -> str:
        """The file (or shard) the trace was read from."""
        return self._source

    @property
    def source_format(self) -> str:
        """The format the trace was read from: `orchviz` or the name of an importer."""
        return self._source_format

    @property
    def sha256(self) -> str:
        """The trace's hash, as `model.Trace.sha256` defines it: of the bytes it was read from
        when its reader knows them, else of its canonical JSON."""
        if not self._sha256:
            canonical = orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS)
            self._sha256 = hashlib.sha256(canonical).hexdigest()
        return self._sha256

    def to_dict(self) -> dict[str, Any]:
        """The trace as the reference schema writes it: only the keys the file gave."""
        return msgspec.to_builtins(self)

    @property
    def events_by_id(self) -> dict[str, EventRecord]:
        """Events keyed by id (built once per trace)."""
        if self._by_id is None:
            self._by_id = {e.id: e for e in self.events}
        return self._by_id

    def event(self, event_id: str) -> EventRecord:
        """The event with this id; KeyError when there is none."""
        return self.events_by_id[event_id]

    @property
    def reader_warnings(self) -> list[TraceWarning]:
        return []


_DECODER = msgspec.json.Decoder(TraceRecord)
_ENCODER = msgspec.json.Encoder()
_COSTS_REQUIRED = ("tokens", "wall_clock_s")
_COSTS_NON_NEGATIVE = ("tokens", "wall_clock_s", "tool_calls", "messages")
_COLON = ord(":")


PIECE = 1 << 16
"""Bytes compared at a time: a piece's comparison stays in the cache and in memory the process
already holds, where a whole 10 MB text's would take 10 MB afresh (2,500 page faults, as dear
as the comparison itself)."""


def colons(data: bytes | bytearray) -> int:
    """How many colons the bytes hold (numpy counts at memory speed, a piece at a time;
    `bytes.count` is a third as fast)."""
    text = np.frombuffer(data, dtype=np.uint8)
    found = 0
    for start in range(0, len(text), PIECE):
        found += int(np.count_nonzero(text[start:start + PIECE] == _COLON))
    return found


_BACKSLASH, _U, _ZERO, _THREE = (ord(c) for c in "\\u03")


def _colons_unless_escaped(data: bytes) -> int | None:
    """How many colons the bytes hold; None when an escape may spell one (`\\u003a`, or any
    `\\u003` to be quick): the text's colons then do not say how many its strings hold. The
    escapes are looked for among the few `\\u` of a text (a backslash alone is common in
    text: every newline and quote in a string), a piece at a time (see `PIECE`)."""
    text = np.frombuffer(data, dtype=np.uint8)
    last = len(text) - 4  # an escape starts before the text's last four bytes
    found = 0
    for start in range(0, len(text), PIECE):
        end = min(start + PIECE, last)
        if end > start:
            window = text[start:end + 4]
            escapes = np.flatnonzero((window[:-4] == _BACKSLASH) & (window[1:-3] == _U)) + start
            if len(escapes) and ((text[escapes + 2] == _ZERO) & (text[escapes + 3] == _ZERO)
                                 & (text[escapes + 4] == _THREE)).any():
                return None
        found += int(np.count_nonzero(text[start:start + PIECE] == _COLON))
    return found


WRITTEN_IN_PIECES = 1 << 20
"""Texts from this size on are written back a piece at a time for their colons to be counted
(`_colons_written_back`); smaller ones at once."""
_ITEMS = 256
"""Events (or edges) written back at a time: about 100 KB, from memory already held."""


def _colons_written_back(record: TraceRecord, size: int) -> int:
    """The colons of the records written back: `colons(_ENCODER.encode(record))`, counted for a
    large text a piece at a time into one small buffer, not into a copy as large as the text.
    The same count: JSON is written part by part, and what joins the parts (brackets, commas)
    holds no colon."""
    if size < WRITTEN_IN_PIECES:
        return colons(_ENCODER.encode(record))
    buffer = bytearray()
    _ENCODER.encode_into(msgspec.structs.replace(record, events=[], edges=[]), buffer)
    found = colons(buffer)
    for items in (record.events, record.edges):
        for start in range(0, len(items), _ITEMS):
            _ENCODER.encode_into(items[start:start + _ITEMS], buffer)
            found += colons(buffer)
    return found


def decode(data: bytes) -> TraceRecord | None:
    """The trace the bytes hold, as records, when the text is plain (see the module's note);
    None when only the general path can read it or say why not. References (duplicate event
    ids, edges to no event) are not checked here: `io.native` checks them on either path."""
    given = _colons_unless_escaped(data)
    if given is None:
        return None  # an escaped colon: the count below would not prove anything
    try:
        record = _DECODER.decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    costs = record.costs_
    for key in _COSTS_REQUIRED:
        if key not in costs:
            return None
    for key in _COSTS_NON_NEGATIVE:
        value = costs.get(key)
        if value is not None and value < 0:
            return None
    if _colons_written_back(record, len(data)) != given:
        return None
    return record


# -- records to models ---------------------------------------------------------------------------

_OPTIONAL = {"role": "role", "from": "from_", "to": "to", "tool": "tool",
             "content_ref": "content_ref", "trusted": "trusted"}
"""The reference schema's optional event keys, by their names in the file: the model's field."""
_ABSENT = dict.fromkeys(("id", "t", "type", "agent", "role", "from_", "to", "tool",
                         "content_ref", "trusted"))
"""An event model's fields, none given yet, in field order."""
_FIELDS_SET: dict[frozenset[str], set[str]] = {}
"""One set of given fields for each shape, shared by every event of that shape (they are
frozen: pydantic never changes the set in place)."""
_new = object.__new__
# pydantic's own slots, written through their descriptors (a fifth faster than setattr)
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_fields = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
to_builtins = msgspec.to_builtins


def _shape(keys: tuple[str, ...]) -> tuple[set[str], tuple[tuple[str, str], ...]]:
    """For an event given `keys` (in field order): the set of its model's given fields (the
    extension keys among them, as validation counts them), and the optional keys of the
    schema among them, each with its field."""
    names = frozenset(_OPTIONAL.get(key, key) for key in keys)
    given = _FIELDS_SET.get(names)
    if given is None:
        given = set(names)
        if len(_FIELDS_SET) < 4096:  # a few shapes are usual; a hostile trace keeps its own
            _FIELDS_SET[names] = given
    return given, tuple((key, _OPTIONAL[key]) for key in keys if key in _OPTIONAL)


def to_model(record: TraceRecord) -> Trace:
    """The pydantic `Trace` of a decoded record, its models built without validating again
    (the record was checked): what the app and the library API hold."""
    events = []
    append = events.append
    shapes: dict[tuple[str, ...], tuple[set[str], tuple[tuple[str, str], ...]]] = {}
    # each event's keys as given, in field order (msgspec writes every event back at once, in
    # C): the schema's keys are moved from it to the model's fields, and what is left, the
    # extension keys, is the model's extras
    for given_keys in to_builtins(record.events):
        keys = tuple(given_keys)
        shape = shapes.get(keys)
        if shape is None:
            shape = shapes[keys] = _shape(keys)
        given, optional = shape
        take = given_keys.pop
        fields = _ABSENT.copy()
        fields["id"], fields["t"] = take("id"), take("t")
        fields["type"], fields["agent"] = take("type"), take("agent")
        for key, name in optional:
            fields[name] = take(key)
        model = _new(Event)
        _set_dict(model, fields)
        _set_extra(model, given_keys)
        _set_fields(model, given)
        _set_private(model, None)
        append(model)
    edges = []
    append = edges.append
    for fields in to_builtins(record.edges):  # {src, dst, type}: an edge's fields as they are
        model = _new(Edge)
        _set_dict(model, fields)
        _set_extra(model, None)
        _set_fields(model, _EDGE_FIELDS)
        _set_private(model, None)
        append(model)
    costs = Costs.model_construct(**record.costs_)
    fields = {"trace_id": record.trace_id, "task_id": record.task_id,
              "system": record.system, "topology": record.topology, "events": events,
              "edges": edges, "rewards": record.rewards, "costs": costs,
              "metrics": record.metrics}
    trace = _new(Trace)
    _set_dict(trace, fields)
    _set_extra(trace, None)
    _set_fields(trace, {name for name, value in fields.items() if value is not None})
    _set_private(trace, None)
    trace.model_post_init(None)
    return trace


_EDGE_FIELDS = {"src", "dst", "type"}
