"""The reference schema as pydantic models, used only to validate: when a trace is refused,
pydantic's errors say where and why (`native.describe_validation_error` turns them into one
plain sentence). What orchviz holds is built from the validated keys: `model.Trace`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from viz_app.model import EdgeType, EventType, Number, Topology


class Event(BaseModel):
    """An event's keys as the schema checks them; any other key allowed, as it comes."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

    id: str = Field(min_length=1)
    t: Number = Field(ge=0)
    type: EventType
    agent: str = Field(min_length=1)
    role: str = None  # type: ignore[assignment]
    from_: str = Field(None, alias="from")  # type: ignore[assignment]
    to: str = None  # type: ignore[assignment]
    tool: str = None  # type: ignore[assignment]
    content_ref: str = None  # type: ignore[assignment]
    trusted: bool = None  # type: ignore[assignment]


class Edge(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    src: str = Field(min_length=1)
    dst: str = Field(min_length=1)
    type: EdgeType


class Costs(BaseModel):
    """What the run cost; extra numeric channels are allowed, as the schema says."""

    model_config = ConfigDict(extra="allow", strict=True, allow_inf_nan=False)

    tokens: Number = Field(ge=0)
    wall_clock_s: Number = Field(ge=0)
    tool_calls: Number = Field(None, ge=0)
    messages: Number = Field(None, ge=0)

    __pydantic_extra__: dict[str, Number] = Field(init=False)  # type: ignore[assignment]


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    trace_id: str = Field(min_length=1)
    task_id: str = Field(min_length=1)
    system: str = None  # type: ignore[assignment]
    topology: Topology = None  # type: ignore[assignment]
    events: list[Event] = Field(min_length=1)
    edges: list[Edge]
    rewards: dict[str, Number]
    costs: Costs
    metrics: dict[str, Number] = None  # type: ignore[assignment]
