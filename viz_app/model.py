"""Pydantic models of an orchestration trace, faithful to the reference schema.

The reference schema (``trace_schema.json``) closes the top level and leaves events open. orchviz
keeps every extra event key exactly as it came and reads a few of them (``content``, ``end_t``,
``tokens``, ``cost_usd``, ``model``, ``decision``) through typed properties; a value of the wrong
type is kept as it is, never refused, because the reference schema accepts it.
"""

from __future__ import annotations

import gc
import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, get_args

import orjson
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

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

SUB_DECISION: dict[str, str] = {
    "spawn": "O1",
    "delegate": "O2",
    "communicate": "O3",
    "aggregate": "O4",
    "stop": "O5",
}
"""Which of the five orchestration sub-decisions (TAXONOMY.md) each `decision` value is."""

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

Number = int | float


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many objects at once: it would scan
    them again and again for cycles that parsed JSON cannot have."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _number(value: Any) -> float | None:
    """A JSON number as a float, or None for anything else (booleans included)."""
    kind = value.__class__
    if kind is float or kind is int:  # what JSON gives, decided at once
        return float(value)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


_NONE: dict[str, Any] = {}
"""No extra keys (never written to)."""


class EventReading:
    """What an event reads from its own keys, alike for a model (`Event`) and a decoded record
    (`io.decode.EventRecord`): each gives `t`, `end_t`, `content` and `content_ref`."""

    __slots__ = ()

    @property
    def finish(self) -> float:
        """When the event's work ended: `end_t` where given, else `t`."""
        end = self.end_t
        return end if end is not None else float(self.t)

    @property
    def text(self) -> str:
        """What a reader sees of the event's content: inline text, else the pointer, else ''."""
        return self.content or self.content_ref or ""


class Event(EventReading, BaseModel):
    """One event of an orchestration: a decision, a spawn, a message, a tool call, a return...

    Optional fields read None when absent; an explicit null is refused, as the schema does.
    Frozen, so that events given the same keys can share one set of them (`share_shapes`).
    """

    model_config = ConfigDict(extra="allow", strict=True, populate_by_name=True, frozen=True,
                              allow_inf_nan=False)

    id: str = Field(min_length=1, description="Unique id of the event within its trace.")
    t: Number = Field(ge=0, description="When the event happened, in seconds from the start.")
    type: EventType = Field(description="What kind of event this is.")
    agent: str = Field(min_length=1, description="The agent (or tool) the event belongs to.")
    role: str = Field(None, description="The agent's role; on a spawn, the child's role.")
    from_: str = Field(None, alias="from", description="Sender of a message or return.")
    to: str = Field(None, description="Recipient; on a spawn, the spawned child.")
    tool: str = Field(None, description="The tool of a tool_call or tool_result.")
    content_ref: str = Field(None, description="Pointer or hash of the content.")
    trusted: bool = Field(None, description="Whether the content comes from a trusted party.")

    @property
    def extras(self) -> dict[str, Any]:
        """The event's keys beyond the reference schema, exactly as they came."""
        return self.__pydantic_extra__ or {}

    # The typed extras below read __pydantic_extra__ straight (None or {} when the event has
    # no extra key): analysis reads them for every event of every trace it indexes.

    @property
    def content(self) -> str | None:
        """Inline text of the event, when it carries a string `content`."""
        value = (self.__pydantic_extra__ or _NONE).get("content")
        return value if isinstance(value, str) else None

    @property
    def end_t(self) -> float | None:
        """When the event's work ended, when given as a number not before `t`."""
        value = _number((self.__pydantic_extra__ or _NONE).get("end_t"))
        return value if value is not None and value >= self.t else None

    @property
    def tokens(self) -> float | None:
        """Tokens the event consumed, when given as a non-negative number."""
        value = _number((self.__pydantic_extra__ or _NONE).get("tokens"))
        return value if value is not None and value >= 0 else None

    @property
    def cost_usd(self) -> float | None:
        """Cost of the event in dollars, when given as a non-negative number."""
        value = _number((self.__pydantic_extra__ or _NONE).get("cost_usd"))
        return value if value is not None and value >= 0 else None

    @property
    def model(self) -> str | None:
        """The model that produced the event, when given as a string."""
        value = (self.__pydantic_extra__ or _NONE).get("model")
        return value if isinstance(value, str) else None

    @property
    def decision(self) -> str | None:
        """Which orchestration decision an `orchestrator_decision` event is, when it says."""
        if self.type != "orchestrator_decision":
            return None
        value = (self.__pydantic_extra__ or _NONE).get("decision")
        return value if value in DECISIONS else None


class Edge(BaseModel):
    """A typed dependency between two events of the same trace."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    src: str = Field(min_length=1, description="Id of the event the edge starts from.")
    dst: str = Field(min_length=1, description="Id of the event the edge points at.")
    type: EdgeType = Field(description="What the dependency is.")


class Costs(BaseModel):
    """What the run cost; extra numeric channels are allowed, as the schema says."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

    tokens: Number = Field(ge=0, description="Tokens used by the whole run.")
    wall_clock_s: Number = Field(ge=0, description="Wall-clock duration of the run in seconds.")
    tool_calls: Number = Field(None, ge=0, description="Number of tool calls.")
    messages: Number = Field(None, ge=0, description="Number of messages.")

    __pydantic_extra__: dict[str, Number] = Field(init=False)  # type: ignore[assignment]


class TraceWarning(BaseModel):
    """Structure that the schema allows but that a reviewer should know about."""

    model_config = ConfigDict(frozen=True)

    code: str = Field(description="A stable short name, such as `spawned_twice`.")
    message: str = Field(description="One plain sentence saying what is odd.")
    event_id: str | None = Field(None, description="The event the warning is about, if one.")


class Trace(BaseModel):
    """A whole orchestration trace in the reference schema."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    trace_id: str = Field(min_length=1, description="Unique id of this trace.")
    task_id: str = Field(min_length=1, description="The task the run attempted.")
    system: str = Field(None, description="The system that produced the trace.")
    topology: Topology = Field(None, description="The orchestration topology.")
    events: list[Event] = Field(min_length=1, description="The events, in any order.")
    edges: list[Edge] = Field(description="Typed dependencies between events.")
    rewards: dict[str, Number] = Field(description="Reward channels, such as team or orchestration.")
    costs: Costs = Field(description="What the run cost.")
    metrics: dict[str, Number] = Field(None, description="Optional benchmark metrics.")

    _warnings: list[TraceWarning] = PrivateAttr(default_factory=list)
    _analysis: Any = PrivateAttr(default=None)
    _source: str = PrivateAttr(default="")
    _sha256: str = PrivateAttr(default="")
    _source_format: str = PrivateAttr(default="orchviz")
    _by_id: dict[str, Event] | None = PrivateAttr(default=None)

    @property
    def reader_warnings(self) -> list[TraceWarning]:
        """What its reader noted (an importer's skipped records). Every warning of the trace,
        these and the odd but legal structure the analysis finds on first use (so loading stays
        as fast as parsing), is `analyze(trace).warnings`: the model knows no analysis."""
        return list(self._warnings)

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
        """The trace as the reference schema writes it: only the keys that were set."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)


def _fresh_private(self: Trace, context: Any, /) -> None:
    """A new trace's private attributes, their defaults written out. pydantic's own
    initialisation resolves each default in turn and inspects the signature of every default
    factory on every model it builds: a tenth of validating a trace."""
    if getattr(self, "__pydantic_private__", None) is None:
        object.__setattr__(self, "__pydantic_private__", {
            "_warnings": [], "_analysis": None, "_source": "", "_sha256": "",
            "_source_format": "orchviz", "_by_id": None})


def _private_reader(name: str) -> property:
    def read(self: Trace) -> Any:
        return self.__pydantic_private__[name]
    return property(read)


assert set(Trace.__private_attributes__) == {"_warnings", "_analysis", "_source", "_sha256",
                                             "_source_format", "_by_id"}
Trace.model_post_init = _fresh_private  # type: ignore[method-assign]
for _name in Trace.__private_attributes__:
    # pydantic reads a private attribute through __getattr__ after a failed lookup (7 us); a
    # property on the class reads it at once. Writes still go through pydantic's __setattr__.
    setattr(Trace, _name, _private_reader(_name))


def share_shapes(models: Iterable[BaseModel], shapes: dict[frozenset[str], set[str]]) -> None:
    """Let models given the same fields share one set of them: pydantic keeps such a set in
    every model (to write back only the keys that came), 216 bytes each: a third of what an
    event with only the required keys takes. `shapes` keeps the shared sets across calls. Only
    for frozen models, whose sets pydantic never changes in place."""
    setattr_ = object.__setattr__
    shared: set[str] | None = None
    for model in models:
        given = model.__pydantic_fields_set__
        if given != shared:  # neighbours often have one shape: no lookup then
            shared = shapes.setdefault(frozenset(given), given)
        setattr_(model, "__pydantic_fields_set__", shared)


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
