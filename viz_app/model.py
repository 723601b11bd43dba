"""The orchestration trace, faithful to the reference schema: `Trace`, `Event`, `Edge`, msgspec
structs, the one kind of each that orchviz holds (the compiled reader decodes bytes straight into
them, `io.decode`; the general reader builds them once pydantic has validated, `io.native`).

The reference schema (``trace_schema.json``) closes the top level and leaves events open. orchviz
keeps every extra event key exactly as it came and reads a few of them (``content``, ``end_t``,
``tokens``, ``cost_usd``, ``model``, ``decision``) through typed properties; a value of the wrong
type is kept as it is (in `Event.other`), never refused, because the reference schema accepts it.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from operator import attrgetter
from typing import Annotated, Any, Literal, get_args

import msgspec
import orjson
from msgspec import Meta, Struct, field
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import core_schema

EventType = Literal[
    "orchestrator_decision",
    "spawn",
    "despawn",
    "message",
    "tool_call",
    "tool_result",
    "return",
    "aggregate",
    "human_intervention",
    "safety_event",
]
EdgeType = Literal[
    "temporal", "causal", "spawn", "message", "tool_dependency", "return", "aggregate", "safety_flow"
]
Topology = Literal[
    "centralized",
    "planner_executor_critic",
    "debate",
    "swarm",
    "hierarchical",
    "harness",
    "mixed",
    "unknown",
]
Decision = Literal["spawn", "delegate", "communicate", "aggregate", "stop", "continue"]

EVENT_TYPES: tuple[str, ...] = get_args(EventType)
EDGE_TYPES: tuple[str, ...] = get_args(EdgeType)
TOPOLOGIES: tuple[str, ...] = get_args(Topology)
DECISIONS: tuple[str, ...] = get_args(Decision)

EXTENSION_KEYS: dict[str, str] = {
    "content": "string: the event's inline text (a message, a tool query or result, an answer); "
    "`content_ref` stays a pointer or hash",
    "end_t": "number >= t: when the event's work ended, in seconds from the trace's start",
    "tokens": "number >= 0: tokens the event consumed",
    "cost_usd": "number >= 0: what the event cost in US dollars",
    "model": "string: the model that produced the event",
    "decision": "on orchestrator_decision: one of spawn, delegate, communicate, aggregate, stop, "
    "continue (which of the sub-decisions O1-O5 it is)",
}
"""Optional event keys beyond the reference schema that orchviz understands (with CALL_KEYS)."""

CALL_KEYS: dict[str, str] = {
    "llm_call_id": "string: id of the LLM call that produced the event",
    "response_id": "string: the provider's response id (OpenTelemetry `gen_ai.response.id`)",
    "call_id": "string: the tool or function call id the event belongs to",
    "tool_call_id": "string: the tool call id (OpenTelemetry `gen_ai.tool.call.id`)",
    "tool_use_id": "string: Anthropic's tool_use block id",
    "source_id": "string: the id of the record the event was read from (a span id, a uuid)",
    "prompt_token_ids": "list of int: the token ids the model was given",
    "response_token_ids": "list of int: the token ids the model produced",
}
"""Optional event keys naming the LLM call an event came from, and its token ids: training
exports pass them through unchanged (`viz_app.export.steps.call_of`), so a label can be joined
back to the call it judges and stored rollouts re-scored."""

EXTENSION_KEYS.update(CALL_KEYS)

INT_LIMIT = 2**63 - 1
"""The largest integer a trace holds (a 64-bit one): readers differ past it (JavaScript's rounds,
orjson refuses to write it, a float cannot hold a 400-digit one), so the compiled path leaves a
larger one to the general path, which refuses it naming the place (`io.native`)."""
Int64 = Annotated[int, Meta(ge=-INT_LIMIT, le=INT_LIMIT)]
Number = Int64 | float
NonNegative = Annotated[int, Meta(ge=0, le=INT_LIMIT)] | Annotated[float, Meta(ge=0)]
Text = Annotated[str, Meta(min_length=1)]
CallId = str | Int64

OTHER = "\ufdd0other"
"""The name `Event.other` is written under by msgspec: a noncharacter no trace uses. Writers
merge `other` back into the event's keys (`Event.to_dict`); the compiled reader sends a text
whose events give it to the general path (`io.decode`)."""


@contextmanager
def paused_gc(keep: bool = False) -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects at once: it would scan
    them again and again for cycles that parsed JSON cannot have.

    `keep`: what is built is kept (a reader's traces, acyclic). When the pause ends it joins the
    oldest generation as it is (`gc.freeze` then `gc.unfreeze`: two list splices), rather than
    being scanned at once as young objects and again as middle-aged ones: for 100,000 rollouts
    those scans of cold memory cost a tenth of the reading and more. A full collection still
    looks at it in its turn. Not done when someone froze objects (`gc.freeze`): theirs stay
    frozen."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if keep and not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


class Event(Struct, frozen=True, omit_defaults=True, forbid_unknown_fields=True, gc=False):
    """One event of an orchestration: a decision, a spawn, a message, a tool call, a return...

    The schema's keys, then the extension keys orchviz reads (`EXTENSION_KEYS`), each of the
    type orchviz documents, then `other`: every other key the event was given (the reference
    schema leaves events open), exactly as it came, an extension key of another type included
    (`content: 123`). An absent key reads None; an explicit null is refused, as the schema does.
    Frozen: an event is what its file said. Build one from its keys with `Event.of`.
    """

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
    prompt_token_ids: list[Int64] = None  # type: ignore[assignment]
    response_token_ids: list[Int64] = None  # type: ignore[assignment]
    other: dict[str, Any] = field(name=OTHER, default=None)  # type: ignore[assignment]

    def __hash__(self) -> int:
        # of the schema's required keys, which are always hashable (`other` may hold a dict);
        # equal events give equal ones
        return hash((self.id, self.t, self.type, self.agent))

    @classmethod
    def of(cls, **keys: Any) -> Event:
        """The event given these keys, by their names in the file (`**{"from": ...}`): the
        schema's keys and the extension keys of the documented type into their fields, every
        other key into `other`. Not validated (the caller validated the keys, or built them)."""
        return cls(**_sorted_keys(keys))

    @property
    def extras(self) -> dict[str, Any]:
        """The event's keys beyond the reference schema, exactly as they came."""
        found = {name: value for name, value in zip(_EXTENSIONS, _extension_values(self))
                 if value is not None}
        if self.other:
            found.update(self.other)
        return found

    def to_dict(self) -> dict[str, Any]:
        """The event as its file gives it: every key it was given (`from` spelled `from`)."""
        keys = msgspec.to_builtins(self)
        other = keys.pop(OTHER, None)
        if other:
            keys.update(other)
        return keys

    @property
    def end_t(self) -> float | None:
        """When the event's work ended, when given as a number not before `t`."""
        value = self.end_t_
        return float(value) if value is not None and value >= self.t else None

    @property
    def tokens(self) -> float | None:
        """Tokens the event consumed, when given as a non-negative number."""
        value = self.tokens_
        return float(value) if value is not None and value >= 0 else None

    @property
    def cost_usd(self) -> float | None:
        """Cost of the event in dollars, when given as a non-negative number."""
        value = self.cost_usd_
        return float(value) if value is not None and value >= 0 else None

    @property
    def decision(self) -> str | None:
        """Which orchestration decision an `orchestrator_decision` event is, when it says."""
        if self.type != "orchestrator_decision":
            return None
        value = self.decision_
        return value if value in DECISIONS else None

    @property
    def finish(self) -> float:
        """When the event's work ended: `end_t` where given, else `t`."""
        end = self.end_t
        return end if end is not None else float(self.t)

    @property
    def text(self) -> str:
        """What a reader sees of the event's content: inline text, else the pointer, else ''."""
        return self.content or self.content_ref or ""


_EXTENSIONS = ("content", "end_t", "tokens", "cost_usd", "model", "decision", "llm_call_id",
               "response_id", "call_id", "tool_call_id", "tool_use_id", "source_id",
               "prompt_token_ids", "response_token_ids")
"""The extension keys an `Event` holds in fields (`EXTENSION_KEYS`), in field order."""

_extension_values = attrgetter(
    "content", "end_t_", "tokens_", "cost_usd_", "model", "decision_", "llm_call_id",
    "response_id", "call_id", "tool_call_id", "tool_use_id", "source_id", "prompt_token_ids",
    "response_token_ids")


def _is_text(value: Any) -> bool:
    return value.__class__ is str


def _is_number(value: Any) -> bool:
    return value.__class__ in (int, float)


def _is_call_id(value: Any) -> bool:
    return value.__class__ in (str, int)


def _is_token_ids(value: Any) -> bool:
    return value.__class__ is list and all(item.__class__ is int for item in value)


FIELD_OF: dict[str, tuple[str, Callable[[Any], bool]]] = {
    "id": ("id", _is_text), "t": ("t", _is_number), "type": ("type", _is_text),
    "agent": ("agent", _is_text), "role": ("role", _is_text), "from": ("from_", _is_text),
    "to": ("to", _is_text), "tool": ("tool", _is_text), "content_ref": ("content_ref", _is_text),
    "trusted": ("trusted", lambda value: value.__class__ is bool),
    "content": ("content", _is_text), "end_t": ("end_t_", _is_number),
    "tokens": ("tokens_", _is_number), "cost_usd": ("cost_usd_", _is_number),
    "model": ("model", _is_text), "decision": ("decision_", _is_text),
    **{key: (key, _is_call_id) for key in ("llm_call_id", "response_id", "call_id",
                                           "tool_call_id", "tool_use_id", "source_id")},
    "prompt_token_ids": ("prompt_token_ids", _is_token_ids),
    "response_token_ids": ("response_token_ids", _is_token_ids),
}
"""Each key an event holds in a field, by its name in the file: the field, and whether a value
is of the type the field holds (of another type, the key is kept in `other`)."""


def _sorted_keys(keys: Mapping[str, Any]) -> dict[str, Any]:
    """An event's keys as `Event`'s fields: see `Event.of`."""
    fields: dict[str, Any] = {}
    other: dict[str, Any] = {}
    for key, value in keys.items():
        known = FIELD_OF.get(key)
        if known is not None and known[1](value):
            fields[known[0]] = value
        else:
            other[key] = value
    if other:
        fields["other"] = other
    return fields


class Edge(Struct, frozen=True, forbid_unknown_fields=True, gc=False):
    """A typed dependency between two events of the same trace."""

    src: Text
    dst: Text
    type: EdgeType

    def to_dict(self) -> dict[str, Any]:
        """The edge as its file gives it."""
        return {"src": self.src, "dst": self.dst, "type": self.type}


class Costs(Struct, frozen=True):
    """What the run cost, as the channels the schema names read (`Trace.costs`); the trace
    keeps every channel given, extra numeric ones included, in `Trace.costs_`."""

    tokens: Number
    wall_clock_s: Number
    tool_calls: Number | None = None
    messages: Number | None = None


class TraceWarning(BaseModel):
    """Structure that the schema allows but that a reviewer should know about."""

    model_config = ConfigDict(frozen=True)

    code: str = Field(description="A stable short name, such as `spawned_twice`.")
    message: str = Field(description="One plain sentence saying what is odd.")
    event_id: str | None = Field(None, description="The event the warning is about, if one.")


class Trace(Struct, kw_only=True, omit_defaults=True, forbid_unknown_fields=True, dict=True):
    """A whole orchestration trace in the reference schema (its top level is closed).

    Beside its fields a trace keeps what its reader and the analysis set, which are no keys of
    its file: `_source`, `_sha256`, `_source_format`, `_warnings`, `_analysis`, `_by_id`.
    Equality is of the fields alone; a copy or a pickle keeps the reader's state.
    """

    trace_id: Text
    task_id: Text
    system: str = None  # type: ignore[assignment]
    topology: Topology = None  # type: ignore[assignment]
    events: Annotated[list[Event], Meta(min_length=1)]
    edges: list[Edge]
    rewards: dict[str, Number]
    costs_: dict[str, Number] = field(name="costs")
    metrics: dict[str, Number] = None  # type: ignore[assignment]

    # set by readers and the analysis, not keys of the file (so not annotated: no fields);
    # written to the instance, read here until then
    _analysis = None
    _source = ""
    _sha256 = ""
    _source_format = "orchviz"
    _by_id = None

    @property
    def _warnings(self) -> list[TraceWarning]:
        """What its reader noted, this trace's own list (made on first use)."""
        state = self.__dict__
        found = state.get("_reader_warnings")
        if found is None:
            found = state["_reader_warnings"] = []
        return found

    @_warnings.setter
    def _warnings(self, warnings: list[TraceWarning]) -> None:
        self.__dict__["_reader_warnings"] = list(warnings)

    @property
    def costs(self) -> Costs:
        """What the run cost, by the channels the schema names."""
        given = self.costs_
        return Costs(given["tokens"], given["wall_clock_s"], given.get("tool_calls"),
                     given.get("messages"))

    @property
    def reader_warnings(self) -> list[TraceWarning]:
        """What its reader noted (an importer's skipped records). Every warning of the trace,
        these and the odd but legal structure the analysis finds on first use (so loading stays
        as fast as parsing), is `analyze(trace).warnings`: the model knows no analysis."""
        return list(self.__dict__.get("_reader_warnings") or ())

    @property
    def source(self) -> str:
        """The file (or upload name) the trace was read from, if any."""
        return self._source

    @property
    def sha256(self) -> str:
        """The trace's hash, the one labels and bookmarks record and caches are keyed by:
        SHA-256 of the bytes it was read from (its file, or its line of a JSONL file), else of
        its canonical JSON (`to_dict()` with sorted keys: an imported or built trace)."""
        if not self._sha256:
            canonical = orjson.dumps(self.to_dict(), option=orjson.OPT_SORT_KEYS)
            self._sha256 = hashlib.sha256(canonical).hexdigest()
        return self._sha256

    @property
    def source_format(self) -> str:
        """The format the trace was read from: `orchviz` or the name of an importer."""
        return self._source_format

    def event(self, event_id: str) -> Event:
        """The event with this id; KeyError when there is none."""
        return self.events_by_id[event_id]

    @property
    def events_by_id(self) -> dict[str, Event]:
        """Events keyed by id (built once per trace)."""
        if self._by_id is None:
            self._by_id = {e.id: e for e in self.events}
        return self._by_id

    def to_dict(self) -> dict[str, Any]:
        """The trace as the reference schema writes it: every key it was given."""
        written = msgspec.to_builtins(self)
        for event in written["events"]:
            other = event.pop(OTHER, None)
            if other:
                event.update(other)
        return written

    def __reduce__(self) -> tuple[Any, ...]:
        # a copy or a pickle keeps what the reader set (not the analysis, made again on use)
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("_analysis", "_by_id")}
        if "_reader_warnings" in state:
            state["_reader_warnings"] = list(state["_reader_warnings"])
        return _rebuilt, (type(self), msgspec.structs.asdict(self), state)


def _held_as_is(cls: type, source: Any, handler: Any) -> Any:
    """How a pydantic model holds a field of this type (a comparison's events, a workspace's
    traces): the instance as it is, checked only to be one."""
    return core_schema.is_instance_schema(cls)


for _kind in (Event, Edge, Costs, Trace):
    _kind.__get_pydantic_core_schema__ = classmethod(_held_as_is)  # type: ignore[attr-defined]


def _rebuilt(kind: type[Trace], fields: dict[str, Any], state: dict[str, Any]) -> Trace:
    trace = kind(**fields)
    trace.__dict__.update(state)
    return trace


def reference_schema() -> dict[str, Any]:
    """The reference JSON Schema exactly as shipped (`trace_schema.json`)."""
    import json
    from importlib.resources import files

    return json.loads(files("viz_app").joinpath("trace_schema.json").read_text("utf-8"))


def orchviz_schema() -> dict[str, Any]:
    """The schema orchviz reads and writes: the reference schema, its event object documenting
    the extra keys orchviz understands (events stay open, so any trace valid under the reference
    schema is valid here too)."""
    schema = reference_schema()
    event = schema["$defs"]["event"]["properties"]
    event["content"] = {"type": "string", "description": EXTENSION_KEYS["content"]}
    event["end_t"] = {"type": "number", "minimum": 0, "description": EXTENSION_KEYS["end_t"]}
    event["tokens"] = {"type": "number", "minimum": 0, "description": EXTENSION_KEYS["tokens"]}
    event["cost_usd"] = {"type": "number", "minimum": 0, "description": EXTENSION_KEYS["cost_usd"]}
    event["model"] = {"type": "string", "description": EXTENSION_KEYS["model"]}
    event["decision"] = {"enum": list(DECISIONS), "description": EXTENSION_KEYS["decision"]}
    for key, meaning in CALL_KEYS.items():
        event[key] = {"type": "array", "items": {"type": "integer"}, "description": meaning} \
            if key.endswith("_token_ids") else {"type": ["string", "integer"],
                                                "description": meaning}
    schema["$comment"] = ("orchviz extension keys are optional; a value of another type is kept "
                          "as it is and ignored by orchviz's analysis.")
    return schema
