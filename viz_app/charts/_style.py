"""What the figures share: their budgets (when a tree collapses, when a timeline draws with
WebGL), the look of each event type, role and link, and the ring of a selection."""

from __future__ import annotations

import hashlib
import re
from typing import Literal

import plotly.graph_objects as go
from pydantic import BaseModel, Field

TREE_BUDGET = 36
"""Most tree nodes side by side (leaves of the drawn tree) before subtrees collapse: about what
the tree's 800 px width holds with a count label under each (expanded ones always show)."""

TREE_WIDTH_PX = 800
"""The width the tree is drawn at on a 1600 px screen, for sizing its nodes to their spacing."""

WEBGL_EVENTS = 1500
"""Above this many events the timeline draws its markers and arrows with WebGL."""

LABELLED_NODES = 60
"""Up to this many tree nodes carry a text label; beyond it names show on hover only."""

SizeBy = Literal["tokens", "active time"]

SELECTED = "#111111"
"""The ring around whatever is selected (near-black: the other rings are coloured)."""


class EventStyle(BaseModel):
    """How the timeline draws one event type."""

    label: str = Field(description="The legend entry.")
    colour: str = Field(description="Marker colour.")
    symbol: str = Field(description="Plotly marker symbol (one that WebGL also draws).")
    size: int = Field(description="Marker size in pixels.")


EVENT_STYLES: dict[str, EventStyle] = {
    # Decisions are what a reviewer grades: dark and large. Communication is blue/teal, tool work
    # orange, lifecycle (spawn/despawn) green/grey, and the two exceptional kinds red/purple.
    "orchestrator_decision": EventStyle(label="decision", colour="#1f2a44", symbol="diamond", size=11),
    "spawn": EventStyle(label="spawn", colour="#2b8a3e", symbol="triangle-down", size=11),
    "despawn": EventStyle(label="despawn", colour="#868e96", symbol="x", size=9),
    "message": EventStyle(label="message", colour="#1c7ed6", symbol="circle", size=8),
    "tool_call": EventStyle(label="tool call", colour="#f08c00", symbol="square", size=8),
    "tool_result": EventStyle(label="tool result", colour="#ffc078", symbol="square-open", size=8),
    "return": EventStyle(label="return", colour="#0ca678", symbol="triangle-left", size=10),
    "aggregate": EventStyle(label="aggregate", colour="#ae3ec9", symbol="star", size=15),
    "human_intervention": EventStyle(label="human", colour="#e64980", symbol="cross", size=11),
    "safety_event": EventStyle(label="safety", colour="#e03131", symbol="hexagon", size=12),
}
"""A distinct colour and symbol for each of the ten event types."""

ROLE_COLOURS: dict[str, str] = {
    "orchestrator": "#1f2a44", "lead": "#364fc7", "director": "#1f2a44", "manager": "#364fc7",
    "planner": "#5f3dc4", "executor": "#e8590c", "critic": "#c2255c", "reviewer": "#c2255c",
    "judge": "#862e9c", "researcher": "#1971c2", "worker": "#2f9e44", "analyst": "#0c8599",
    "coder": "#e67700", "debater": "#d9480f", "tester": "#5c940d", "fetcher": "#0b7285",
    "agent": "#495057", "human": "#e64980",
}
"""Colours of well-known roles: orchestration in dark blues, doers in greens and oranges, judges
and critics in reds and purples."""

_FALLBACK = ["#1098ad", "#f59f00", "#7048e8", "#37b24d", "#f03e3e", "#1c7ed6", "#d6336c",
             "#74b816", "#ae3ec9", "#fd7e14", "#0ca678", "#4263eb"]

LINK_STYLES: dict[str, tuple[str, str]] = {
    "spawn": ("#2b8a3e", "solid"),
    "delegate": ("#5f3dc4", "dash"),
    "message": ("#1c7ed6", "dot"),
    "return": ("#0ca678", "dashdot"),
}
"""Colour and dash of each agent-to-agent link kind (communication.COMMUNICATION_KINDS)."""
BIG_TIMELINE_HIDDEN_LINKS = ("message",)
"""Link kinds a WebGL (big) timeline starts with hidden, in its legend: peers' messages are
most of a large run's links, a tangle across its lanes, and drawing them was about a sixth of
the browser's first drawing of a 20,000-event timeline (spawns, delegations and returns, the
run's structure, stay drawn)."""


def role_colour(role: str) -> str:
    """The colour of a role: a fixed one for well-known roles (matched by the role's first word,
    so `researcher_2` is a researcher), else a stable colour from the role's hash."""
    key = re.split(r"[^a-z]+", role.lower().strip() or "agent")[0]
    if key in ROLE_COLOURS:
        return ROLE_COLOURS[key]
    for known, colour in ROLE_COLOURS.items():
        if key.startswith(known):
            return colour
    digest = int(hashlib.sha1(role.encode("utf-8", "replace")).hexdigest(), 16)
    return _FALLBACK[digest % len(_FALLBACK)]


# -- the spawn tree ----------------------------------------------------------------------------


CHAR_PX = 6.4
LEGEND_ROW_PX = 950


def legend_margin(fig: go.Figure) -> int:
    """A top margin that fits the figure's horizontal legend on a plot about 1,000 px wide."""
    widths = [44 + CHAR_PX * len(trace.name) for trace in fig.data
              if trace.name and trace.showlegend is not False]
    rows, used = 1, 0.0
    for width in widths:
        if used and used + width > LEGEND_ROW_PX:
            rows, used = rows + 1, 0.0
        used += width
    return 20 + 27 * rows
