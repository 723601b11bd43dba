"""The figures of a trace: spawn tree, message timeline and communication graph.

Pure builders over an `Analysis`, free of Streamlit, so the app and the offline report draw the
same pictures. Every string that came from the trace is made safe for where it goes: escaped for
Plotly (whose labels understand a little HTML: `viz_app.text.plotly_text`), kept as text for
pyvis, which draws labels on a canvas and shows titles as text (`viz_app.text.canvas_text`; it
writes both into its page as escaped JSON), and truncated where a label has to stay short.

Large traces stay fast and readable: when more than `TREE_BUDGET` nodes would stand side by
side, subtrees collapse into one node with a count (expanded on demand), and above
`WEBGL_EVENTS` events the timeline draws with WebGL (`Scattergl`).
The per-event work is done once per figure with plain lists, so a builder can be cached.
"""

from __future__ import annotations

import hashlib
import html
import math
import sys
import re
from collections.abc import Collection, Iterable
from typing import Literal

import numpy as np
import plotly.graph_objects as go
from pydantic import BaseModel, Field

from viz_app.analysis import Analysis, figure_text
from viz_app.model import EVENT_TYPES, Event
from viz_app.text import canvas_text, plotly_preview, plotly_text

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


class TreeNode(BaseModel):
    """One node the tree draws: an agent, possibly standing for its hidden subtree, or a group
    of siblings that did not fit."""

    key: str = Field(description="Unique key of the node in the figure.")
    agent: str = Field(description="The agent it stands for (for a group: the siblings' parent).")
    kind: Literal["agent", "collapsed", "more"] = Field(
        description="'collapsed': an agent whose subtree is hidden; 'more': hidden siblings.")
    parent: str | None = Field(description="Key of the node drawn above it.")
    depth: int = Field(description="Depth in the spawn tree.")
    members: list[str] = Field(default_factory=list,
                               description="The agents the node stands for (itself included).")

    @property
    def hidden(self) -> int:
        """How many agents the node hides."""
        return len(self.members) - (1 if self.kind == "collapsed" else 0)


MORE = "\x00more:"
"""Key prefix of 'more' nodes (no agent name starts with a NUL)."""


def visible_tree(analysis: Analysis, *, expanded: Collection[str] = (), focus: str | None = None,
                 budget: int = TREE_BUDGET, agents: Collection[str] | None = None) -> list[TreeNode]:
    """The nodes the tree draws, in tree order (each parent before its children).

    Levels open breadth-first, agent by agent in tree order, while the nodes side by side (the
    drawn tree's leaves) stay within `budget`, so the figure never packs more than its width
    holds; below that each agent with hidden children becomes a 'collapsed' node standing for
    its subtree. Agents in `expanded` always show their children, and `focus` is always
    visible (its ancestors open).
    When one parent has more children than fit, the rest become a single 'more' node. `agents`
    limits the tree to those agents (the replay's agents that exist at a time).
    """
    present = set(analysis.agents) if agents is None else set(agents)
    kids = {a: [c for c in analysis.children.get(a, []) if c in present] for a in present}
    roots = [a for a in analysis.agents if a in present
             and (analysis.parent.get(a) is None or analysis.parent[a] not in present)]
    opened: set[str] = {a for a in expanded if a in present}
    path: set[str] = set()
    walk = focus if focus in present else None
    while walk is not None:
        path.add(walk)
        walk = analysis.parent.get(walk) if analysis.parent.get(walk) in present else None
        if walk is not None:
            opened.add(walk)
    leaves, level = len(roots), list(roots)
    while level:
        nxt: list[str] = []
        for agent in level:
            children = kids.get(agent, [])
            # opening an agent puts its children (at most `budget`: the rest become one 'more'
            # node) where it stood; a root always opens (a swarm's one root would otherwise
            # hide everything)
            wider = min(len(children), budget) - 1
            if children and (agent in opened or leaves + wider <= budget or agent in roots):
                opened.add(agent)
                leaves += wider
                nxt.extend(children[:budget])
        level = nxt
    room = max(budget - 1, 1)
    nodes: list[TreeNode] = []
    stack: list[tuple[str, str | None] | TreeNode] = [(r, None) for r in reversed(roots)]
    while stack:
        item = stack.pop()
        if isinstance(item, TreeNode):
            nodes.append(item)
            continue
        agent, parent_key = item
        children = kids.get(agent, [])
        depth = analysis.depth_of.get(agent, 0)
        if children and agent not in opened:
            nodes.append(TreeNode(key=agent, agent=agent, kind="collapsed", parent=parent_key,
                                  depth=depth, members=_subtree(kids, agent)))
            continue
        nodes.append(TreeNode(key=agent, agent=agent, kind="agent", parent=parent_key,
                              depth=depth, members=[agent]))
        keep = children
        if len(children) > room and agent not in expanded:
            keep = [c for i, c in enumerate(children) if i < room - 1 or c in path]
            kept = set(keep)
            rest = [m for c in children if c not in kept for m in _subtree(kids, c)]
            stack.append(TreeNode(key=MORE + agent, agent=agent, kind="more", parent=agent,
                                  depth=depth + 1, members=rest))
        stack.extend((c, agent) for c in reversed(keep))
    return nodes


def _subtree(kids: dict[str, list[str]], agent: str) -> list[str]:
    found, stack = [], [agent]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(reversed(kids.get(node, [])))
    return found


def tree_layout(nodes: list[TreeNode]) -> dict[str, tuple[float, float]]:
    """A tidy top-down layout: leaves side by side in tree order, each parent centred over its
    first and last child, one row per depth (y = -depth)."""
    children: dict[str | None, list[str]] = {}
    depth = {n.key: n.depth for n in nodes}
    for n in nodes:
        children.setdefault(n.parent, []).append(n.key)
    x: dict[str, float] = {}
    next_leaf = 0.0
    for root in children.get(None, []):
        stack: list[tuple[str, bool]] = [(root, False)]
        while stack:  # post-order without recursion: deep chains are legal traces
            key, done = stack.pop()
            kids = children.get(key, [])
            if not kids:
                x[key] = next_leaf
                next_leaf += 1.0
            elif done:
                x[key] = (x[kids[0]] + x[kids[-1]]) / 2
            else:
                stack.append((key, True))
                stack.extend((k, False) for k in reversed(kids))
        next_leaf += 0.5
    return {k: (x[k], -float(depth[k])) for k in x}


def _weight(analysis: Analysis, agents: Iterable[str], size_by: SizeBy) -> float:
    stats = analysis.agent_stats
    if size_by == "tokens":
        return size_weight(sum(stats[a].tokens for a in agents))
    return size_weight(sum(stats[a].active_s for a in agents))


def size_weight(value: float) -> float:
    """A figure as a node's weight, to scale marker sizes by: a sum past the largest float
    (two agents of 1e308 tokens) counts as the largest float, so no ratio of two is NaN."""
    return value if value < sys.float_info.max else sys.float_info.max


def tree_figure(analysis: Analysis, *, size_by: SizeBy = "tokens", expanded: Collection[str] = (),
                selected: str | None = None, until: float | None = None,
                budget: int = TREE_BUDGET, height: int | None = None) -> go.Figure:
    """The spawn and delegation tree: agents in a tidy top-down layout, coloured by role, sized by
    tokens or active time; spawn edges solid, delegations and messages dashed and thicker with
    their count; collapsed subtrees drawn as one square node with their count.

    `until` draws the tree as it stood at that time (agents not yet started are left out, those
    at work are ringed); `selected` rings the selected agent. Each node's customdata is
    `[kind, agent]`, so a click tells which agent (or which collapsed subtree) it was.
    """
    start = analysis.order[0].t
    agents = None
    if until is not None:
        agents = {a for a, s in analysis.agent_stats.items() if s.first_t <= start + until}
        agents = agents or {analysis.root}
    nodes = visible_tree(analysis, expanded=expanded, focus=selected, budget=budget, agents=agents)
    pos = tree_layout(nodes)
    represent = _representatives(nodes)
    fig = go.Figure()
    spawn_x: list[float | None] = []
    spawn_y: list[float | None] = []
    for n in nodes:
        if n.parent is not None and n.parent in pos:
            (x0, y0), (x1, y1) = pos[n.parent], pos[n.key]
            spawn_x += [x0, x0, x1, x1, None]
            spawn_y += [y0, (y0 + y1) / 2, (y0 + y1) / 2, y1, None]
    fig.add_trace(go.Scatter(x=spawn_x, y=spawn_y, mode="lines", name="spawn",
                             line=dict(color="#adb5bd", width=1.5), hoverinfo="skip"))
    _add_link_edges(fig, analysis, pos, represent, until)
    weights = {n.key: _weight(analysis, n.members, size_by) for n in nodes}
    top = max(weights.values(), default=0.0) or 1.0
    biggest = _largest_node(pos)
    by_role: dict[str, list[TreeNode]] = {}
    for n in nodes:
        role = analysis.role_of(n.agent) if n.kind != "more" else "more agents"
        by_role.setdefault(role, []).append(n)
    leaves = len(nodes) - len({n.parent for n in nodes if n.parent is not None})
    labelled = len(nodes) <= LABELLED_NODES and leaves <= 16
    places = label_places(nodes, pos, labelled)
    active_keys = []
    for role, members in by_role.items():
        xs = [pos[n.key][0] for n in members]
        ys = [pos[n.key][1] for n in members]
        sizes = [10 + (biggest - 10) * math.sqrt(weights[n.key] / top) for n in members]
        symbols = ["circle" if n.kind == "agent" else "square" for n in members]
        texts = [places[n.key][0] for n in members]
        colour = role_colour(role) if role != "more agents" else "#ced4da"
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="markers+text" if any(texts) else "markers",
            name=plotly_text(role, 24),
            text=texts, textposition=[places[n.key][1] for n in members],
            textfont=dict(size=11, color="#343a40"),
            marker=dict(size=sizes, color=colour, symbol=symbols,
                        line=dict(color="white", width=1.5)),
            customdata=[[n.kind, n.agent] for n in members],
            hovertext=[_node_hover(analysis, n) for n in members], hoverinfo="text",
            unselected=dict(marker=dict(opacity=1)), selected=dict(marker=dict(opacity=1))))
        if until is not None:
            active_keys += [n.key for n in members if n.kind == "agent"
                            and analysis.agent_stats[n.agent].first_t <= start + until
                            <= analysis.agent_stats[n.agent].last_t]
    if active_keys:
        fig.add_trace(go.Scatter(
            x=[pos[k][0] for k in active_keys], y=[pos[k][1] for k in active_keys],
            mode="markers", name="at work", hoverinfo="skip",
            marker=dict(size=34, color="rgba(0,0,0,0)", line=dict(color="#fab005", width=3))))
    chosen = represent.get(selected) if selected else None
    if chosen in pos:
        fig.add_trace(go.Scatter(
            x=[pos[chosen][0]], y=[pos[chosen][1]], mode="markers", name="selected",
            hoverinfo="skip", showlegend=False,
            marker=dict(size=44, color="rgba(0,0,0,0)", line=dict(color=SELECTED, width=4))))
    levels = max((n.depth for n in nodes), default=0) - min((n.depth for n in nodes), default=0)
    fig.update_layout(
        height=height or min(380, 220 + 60 * levels),
        margin=dict(l=10, r=10, t=legend_margin(fig), b=10),
        showlegend=True, legend=dict(orientation="h", y=1.02, yanchor="bottom", x=0, font=dict(size=11)),
        xaxis=dict(visible=False), yaxis=dict(visible=False, range=_tree_y_range(fig)),
        plot_bgcolor="white", hovermode="closest", clickmode="event+select", dragmode="pan",
        uirevision="tree")
    return fig


def _largest_node(pos: dict[str, tuple[float, float]]) -> float:
    """The marker size (px) of the heaviest node: 42, or less where nodes stand so close that
    neighbours would overlap."""
    rows: dict[float, list[float]] = {}
    for x, y in pos.values():
        rows.setdefault(y, []).append(x)
    gaps = [b - a for row in rows.values() for a, b in zip(sorted(row), sorted(row)[1:])]
    if not gaps:
        return 42.0
    xs = [x for x, _ in pos.values()]
    px_per_unit = TREE_WIDTH_PX / (max(xs) - min(xs) + 1)
    return max(14.0, min(42.0, 0.85 * min(gaps) * px_per_unit))


def _tree_y_range(fig: go.Figure) -> list[float]:
    """The rows with room for the labels under the bottom one and every arc drawn."""
    ys = [y for trace in fig.data if trace.y is not None for y in trace.y if y is not None]
    ys = ys or [0.0]
    return [min(ys) - 0.6, max(ys) + 0.35]


LABEL_CHAR_PX = 6.6
"""About how wide one character of an 11 px tree label is drawn."""


def label_places(nodes: list[TreeNode], pos: dict[str, tuple[float, float]], labelled: bool,
                 width_px: float = TREE_WIDTH_PX) -> dict[str, tuple[str, str]]:
    """Each node's label and where it goes ('bottom center' or 'top center'), so that no two
    labels of a row print over one another: along each row, left to right, a label goes under
    its node when it clears the last label there, else over it, else it is left out (the
    node's hover still tells its name and count)."""
    xs = [x for x, _ in pos.values()] or [0.0]
    px_per_unit = width_px / (max(xs) - min(xs) + 1)
    rows: dict[float, list[TreeNode]] = {}
    for n in nodes:
        if n.key in pos:
            rows.setdefault(pos[n.key][1], []).append(n)
    places: dict[str, tuple[str, str]] = {}
    for row in rows.values():
        edge = {"bottom center": -math.inf, "top center": -math.inf}
        for n in sorted(row, key=lambda m: pos[m.key][0]):
            text = _node_label(n, labelled)
            place = "bottom center"
            if text:
                widest = max(len(html.unescape(re.sub(r"<[^>]+>", "", line)))
                             for line in text.split("<br>"))
                half = widest * LABEL_CHAR_PX / 2 + 3
                centre = pos[n.key][0] * px_per_unit
                free = [p for p in ("bottom center", "top center") if centre - half >= edge[p]]
                if free:
                    place = free[0]
                    edge[place] = centre + half
                else:
                    text = ""
            places[n.key] = (text, place)
    return places


def _node_label(node: TreeNode, labelled: bool) -> str:
    if node.kind == "more":
        return f"+{node.hidden} more"
    if node.kind == "collapsed":
        return (plotly_text(node.agent, 16) + "<br>" if labelled else "") + f"+{node.hidden}"
    return plotly_text(node.agent, 18) if labelled else ""


def _node_hover(analysis: Analysis, node: TreeNode) -> str:
    if node.kind == "more":
        return (f"{node.hidden} more agents under {plotly_text(node.agent, 40)}"
                "<br>click to show them")
    s = analysis.agent_stats[node.agent]
    lines = [f"<b>{plotly_text(s.name, 60)}</b> ({plotly_text(s.role, 30)})",
             f"parent: {plotly_text(s.parent, 40) if s.parent else '—'} · depth {s.depth}",
             f"events {s.events} · tool calls {s.tool_calls} · messages {s.messages_sent}",
             f"tokens {figure_text('tokens', s.tokens)} · cost {figure_text('cost', s.cost_usd)}",
             f"lifetime {s.lifetime_s:.1f}s · active {s.active_s:.1f}s",
             f"spawned {len(s.children)} agents"]
    if node.kind == "collapsed":
        lines.append(f"<i>{node.hidden} agents below are collapsed: click to expand</i>")
    return "<br>".join(lines)


def _representatives(nodes: list[TreeNode]) -> dict[str, str]:
    """For every drawn agent, the key of the node that draws it (itself, a collapsed ancestor,
    or the 'more' node of its hidden siblings)."""
    return {member: n.key for n in nodes for member in n.members}


def _add_link_edges(fig: go.Figure, analysis: Analysis, pos: dict[str, tuple[float, float]],
                    represent: dict[str, str], until: float | None) -> None:
    """Delegation, message and return edges between drawn nodes, thicker with their count.

    Between a parent and its child they are a straight dashed line (the spawn edge is the
    elbow beside it); between any other two nodes, a dotted arc bent to the side.
    """
    limit = None if until is None else analysis.order[0].t + until
    events = analysis.trace.events_by_id
    parent_of = {n: p for n, p in analysis.parent.items()}
    counts: dict[tuple[str, str], dict[str, int]] = {}
    for sender, recipient, data in analysis.communication.edges(data=True):
        a, b = represent.get(sender), represent.get(recipient)
        if a is None or b is None or a == b or a not in pos or b not in pos:
            continue
        for event_id in data["events"]:
            e = events[event_id]
            kind = analysis.link_of(e)[0]
            if kind == "spawn" or (limit is not None and e.t > limit):
                continue
            pair = (a, b) if a <= b else (b, a)
            tally = counts.setdefault(pair, {})
            tally[kind] = tally.get(kind, 0) + 1
    buckets: dict[tuple[bool, float], tuple[list, list]] = {}
    for (a, b), tally in counts.items():
        total = sum(tally.values())
        width = 1.0 if total < 3 else 2.0 if total < 8 else 3.5
        family = parent_of.get(a) == b or parent_of.get(b) == a
        xs, ys = ([pos[a][0], pos[b][0]], [pos[a][1], pos[b][1]]) if family else _arc(pos[a], pos[b])
        bx, by = buckets.setdefault((family, width), ([], []))
        bx += xs + [None]
        by += ys + [None]
    shown: set[bool] = set()
    for (family, width), (xs, ys) in sorted(buckets.items()):
        name = "delegation / return" if family else "message"
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=name, legendgroup=name, showlegend=family not in shown,
            line=dict(color="#5f3dc4" if family else "#1c7ed6", width=width,
                      dash="dash" if family else "dot"),
            opacity=0.5, hoverinfo="skip"))  # skipped lines never catch a click meant for a node
        shown.add(family)


def _arc(a: tuple[float, float], b: tuple[float, float], steps: int = 12) -> tuple[list, list]:
    """A gentle quadratic curve from a to b, bent to the side so it never hides a spawn edge."""
    (x0, y0), (x1, y1) = a, b
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    dx, dy = x1 - x0, y1 - y0
    length = math.hypot(dx, dy) or 1.0
    bend = 0.18 * length + 0.25
    cx, cy = mx - dy / length * bend, my + dx / length * bend
    xs, ys = [], []
    for i in range(steps + 1):
        t = i / steps
        xs.append((1 - t) ** 2 * x0 + 2 * (1 - t) * t * cx + t * t * x1)
        ys.append((1 - t) ** 2 * y0 + 2 * (1 - t) * t * cy + t * t * y1)
    return xs, ys


# -- the message timeline ------------------------------------------------------------------------


def timeline_figure(analysis: Analysis, *, selected: str | None = None,
                    until: float | None = None, critical: bool = False,
                    lanes_shown: int = 28, webgl: bool | None = None) -> go.Figure:
    """The message timeline: one lane per agent in tree order, a bar for each agent's lifetime, a
    marker per event (a distinct symbol and colour per type), arrows for spawns, delegations,
    messages and returns between lanes, aggregates and stops emphasised.

    `critical` overlays the critical path; `until` shows only what had happened by then (times
    are seconds from the trace's first event); `selected` rings an event. Markers carry the event's
    position in `analysis.order` as customdata (ids are trace text, positions are not). WebGL is used above WEBGL_EVENTS events unless `webgl` says otherwise.
    A WebGL timeline's hover says each event's id, agent and time (`_compact_hover`), and its
    peers' message links start hidden in the legend (`BIG_TIMELINE_HIDDEN_LINKS`): what the
    browser takes in and draws for 20,000 events.
    """
    order = analysis.order
    start = float(order[0].t)
    limit = None if until is None else start + until
    gl = len(order) > WEBGL_EVENTS if webgl is None else webgl
    scatter = go.Scattergl if gl else go.Scatter
    lane = {a: i for i, a in enumerate(analysis.lanes)}
    actor = analysis.actor
    duration = analysis.duration
    fig = go.Figure()
    _add_lifetimes(fig, analysis, lane, start, limit)
    _add_links(fig, analysis, lane, start, limit, scatter, arrows=not gl,
               hidden=BIG_TIMELINE_HIDDEN_LINKS if gl else ())
    grouped: dict[str, list[Event]] = {t: [] for t in EVENT_TYPES}
    for e in order:
        if limit is None or e.t <= limit:
            grouped[e.type].append(e)
    width, lines = 60, 4  # big (WebGL) timelines get `_compact_hover` instead
    for etype in EVENT_TYPES:
        events = grouped[etype]
        style = EVENT_STYLES[etype]
        fig.add_trace(scatter(
            x=np.fromiter((e.t - start for e in events), float, len(events)),
            y=np.fromiter((lane[actor[e.id]] for e in events), np.int32, len(events)),
            mode="markers", name=style.label, legendgroup=etype,
            marker=dict(symbol=style.symbol, color=style.colour, size=style.size,
                        line=dict(width=1, color="white") if not style.symbol.endswith("open")
                        else dict(width=1.5, color=style.colour)),
            customdata=np.fromiter((analysis.position[e.id] for e in events), np.int32,
                                   len(events)),
            # an object array spares Plotly's validator a walk over 20,000 strings
            text=np.array([_compact_hover(e, actor[e.id]) for e in events] if gl else
                          [_event_hover(e, actor[e.id], start, duration[e.id], width, lines)
                           for e in events], dtype=object),
            hovertemplate=(f"<b>{style.label}</b> %{{text}} · %{{x:.1f}}s<extra></extra>" if gl
                           else f"<b>{style.label}</b> %{{text}}<extra></extra>"),
            # a clicked event is marked in the browser at once, without a new figure
            unselected=dict(marker=dict(opacity=1)),
            selected=dict(marker=dict(color=SELECTED, size=max(style.size + 6, 14))),
            visible=True if events else "legendonly"))
    _add_decision_points(fig, analysis, lane, start, limit, scatter)
    if critical:
        _add_critical(fig, analysis, lane, start, limit, scatter)
    for trace in timeline_highlight(analysis, selected):
        fig.add_trace(trace)
    if limit is not None:
        fig.add_vline(x=until, line=dict(color="#f59f00", width=2, dash="dot"))
    lanes = len(analysis.lanes)
    visible_lanes = min(lanes, lanes_shown)
    labels = [plotly_text(a, 26) for a in analysis.lanes]
    span = max(analysis.makespan, 1e-9)
    fig.update_layout(
        height=int(min(560, max(280, 100 + 22 * visible_lanes))),
        margin=dict(l=lane_label_margin(labels[:visible_lanes]), r=10,
                    t=legend_margin(fig), b=66),
        plot_bgcolor="white", hovermode="closest",
        clickmode="event+select", dragmode="zoom", uirevision="timeline",
        legend=dict(orientation="h", y=1.01, yanchor="bottom", x=0, font=dict(size=11),
                    itemclick="toggle", itemdoubleclick="toggleothers"),
        xaxis=dict(title="seconds from start", range=[-0.01 * span, span * 1.01], showgrid=True,
                   gridcolor="#f1f3f5", zeroline=False),
        yaxis=dict(tickvals=list(range(lanes)), ticktext=labels,
                   range=[visible_lanes - 0.5, -0.5], showgrid=False, zeroline=False,
                   tickfont=dict(size=11), fixedrange=False))
    return fig


# Plotly grows a figure's margins to fit its legend and axis labels, and when they grow it draws
# the whole figure a second time (a fifth of the 20k-event timeline's drawing time). Margins that
# already fit, estimated from the text at its 11 px font, spare that second pass; a narrower
# screen than estimated still gets its margins grown.
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


def lane_label_margin(labels: Iterable[str]) -> int:
    """A left margin that fits the (escaped) lane labels the timeline first shows."""
    return int(14 + CHAR_PX * max((len(html.unescape(label)) for label in labels), default=4))


def _gapped(values: list) -> np.ndarray:
    """Line coordinates with None gaps as a float array (NaN gaps), which Plotly sends packed:
    32-bit, as a line is drawn no finer (a 20,000-event timeline's links in 160 KB, not 320)."""
    return np.array(values, dtype=np.float32)


def timeline_highlight(analysis: Analysis, event_id: str | None) -> list[go.Scatter]:
    """The ring the timeline draws around a selected event (none for no or an unknown event)."""
    if event_id is None or event_id not in analysis.position:
        return []
    e = analysis.trace.event(event_id)
    lane = analysis.lanes.index(analysis.actor[e.id])
    return [go.Scatter(x=[e.t - analysis.order[0].t], y=[lane], mode="markers", name="selected",
                       showlegend=False, hoverinfo="skip",
                       marker=dict(size=26, color="rgba(0,0,0,0)",
                                   line=dict(color=SELECTED, width=4)))]


def _event_hover(e: Event, agent: str, start: float, span: float, width: int, lines: int) -> str:
    """An event's hover text (after its type): id, agent, time, details and a content preview."""
    extra = [f"t={e.t - start:.2f}s"] + ([f"{span:.2f}s"] if span else [])
    if e.decision:
        extra.append(f"decision: {e.decision}")
    if e.to:
        extra.append(f"to {plotly_text(e.to, 40)}")
    if e.tool:
        extra.append(f"tool {plotly_text(e.tool, 40)}")
    body = plotly_preview(e.text, width, lines)
    return f"{plotly_text(e.id, 30)} · {plotly_text(agent, 40)}<br>{' · '.join(extra)}" + (
        f"<br>{body}" if body else "")


def _compact_hover(e: Event, agent: str) -> str:
    """A big (WebGL) trace's hover text: the event's id and agent, escaped; its time is the
    marker's x (`%{x}` in the hover template), its content is in the inspector on click.

    Hover text was most of what the browser received for a 20,000-event timeline (1.26 of
    2.25 MB, half of it a 24-character preview); this is 0.58 MB."""
    return f"{plotly_text(e.id, 12)} · {plotly_text(agent, 20)}"


def _add_lifetimes(fig: go.Figure, analysis: Analysis, lane: dict[str, int], start: float,
                   limit: float | None) -> None:
    """A pale bar per agent from its start to its last event's end, in its role's colour."""
    by_colour: dict[str, tuple[list, list]] = {}
    for agent, stats in analysis.agent_stats.items():
        if limit is not None and stats.first_t > limit:
            continue
        end = stats.last_t if limit is None else min(stats.last_t, limit)
        xs, ys = by_colour.setdefault(role_colour(stats.role), ([], []))
        xs += [stats.first_t - start, max(end, stats.first_t) - start, None]
        ys += [lane[agent], lane[agent], None]
    for colour, (xs, ys) in by_colour.items():
        fig.add_trace(go.Scatter(x=_gapped(xs), y=_gapped(ys), mode="lines",
                                 line=dict(color=colour, width=10),
                                 opacity=0.18, hoverinfo="skip", showlegend=False))


def _add_links(fig: go.Figure, analysis: Analysis, lane: dict[str, int], start: float,
               limit: float | None, scatter, arrows: bool, hidden: Collection[str] = ()) -> None:
    """Arrows between lanes for spawns, delegations, messages and returns: from the sender's lane
    at the event's time to the recipient's lane when the event's work ends. The kinds in
    `hidden` start hidden, listed in the legend (a click there draws them)."""
    segments: dict[str, tuple[list, list]] = {k: ([], []) for k in LINK_STYLES}
    for e in analysis.order:
        if limit is not None and e.t > limit:
            break
        link = analysis.link_of(e)
        if link is None:
            continue
        kind, sender, recipient = link
        xs, ys = segments[kind]
        xs += [e.t - start, e.finish - start, None]
        ys += [lane[sender], lane[recipient], None]
    for kind, (xs, ys) in segments.items():
        if not xs:
            continue
        colour, dash = LINK_STYLES[kind]
        extra: dict = {"mode": "lines"}
        if arrows:  # an arrowhead at each arrival point only (segments are start, end, gap)
            extra = dict(mode="lines+markers", marker=dict(
                symbol="arrow", angleref="previous", color=colour,
                size=np.tile(np.array([0, 9, 0], dtype=np.int8), len(xs) // 3)))
        fig.add_trace(scatter(x=_gapped(xs), y=_gapped(ys), name=f"{kind} →",
                              visible="legendonly" if kind in hidden else True,
                              legendgroup=f"link-{kind}", hoverinfo="skip", opacity=0.6,
                              line=dict(color=colour, width=1.2, dash=dash), **extra))


def _add_decision_points(fig: go.Figure, analysis: Analysis, lane: dict[str, int], start: float,
                         limit: float | None, scatter) -> None:
    """Rings around aggregates and stops: the decisions a reviewer grades."""
    events = analysis.trace.events_by_id
    for points, name, colour in ((analysis.aggregates, "aggregate point", "#ae3ec9"),
                                 (analysis.stops, "stop", "#e03131")):
        chosen = [events[p.event_id] for p in points
                  if limit is None or events[p.event_id].t <= limit]
        if not chosen:
            continue
        fig.add_trace(go.Scatter(  # numbers as typed arrays, which Plotly sends packed
            x=np.array([e.t - start for e in chosen], dtype=float),
            y=np.array([lane[analysis.actor[e.id]] for e in chosen], dtype=np.int32),
            mode="markers+text", name=name, text="STOP" if name == "stop" else "AGG",
            textposition="top center", textfont=dict(size=10, color=colour),
            customdata=np.array([analysis.position[e.id] for e in chosen], dtype=np.int32),
            hoverinfo="skip",
            marker=dict(size=22, color="rgba(0,0,0,0)", line=dict(color=colour, width=2.5))))


def _add_critical(fig: go.Figure, analysis: Analysis, lane: dict[str, int], start: float,
                  limit: float | None, scatter) -> None:
    events = analysis.trace.events_by_id
    chain = [events[i] for i in analysis.critical[1] if limit is None or events[i].t <= limit]
    fig.add_trace(scatter(
        x=np.array([e.t - start for e in chain], dtype=float),
        y=np.array([lane[analysis.actor[e.id]] for e in chain], dtype=np.int32),
        mode="lines+markers", name="critical path", hoverinfo="skip",
        line=dict(color="#fab005", width=4), opacity=0.75,
        marker=dict(size=6, color="#fab005")))


# -- the communication graph --------------------------------------------------------------------


def _tooltip(text: str) -> str:
    """A node's or edge's title for pyvis: text (vis-network shows a string title with
    `innerText`, so `<` must stay `<`, not `&lt;`), with `href` broken by a word joiner: pyvis
    swaps in its own popup, which sets `innerHTML`, when a node's title holds `href`."""
    return canvas_text(text).replace("href", "hre\u2060f")


GRAPH_GROUP_ABOVE = 60
"""Above this many agents the communication graph groups agents by subtree."""
GRAPH_BUDGET = 24
"""Nodes side by side in a grouped communication graph (as the tree's budget)."""


def communication_html(analysis: Analysis, *, height: int = 560, selected: str | None = None,
                       budget: int = GRAPH_BUDGET) -> str:
    """The communication graph as a self-contained pyvis page: agents as nodes coloured by role,
    an arrow per (sender, recipient) pair weighted by how many spawns, delegations, messages and
    returns it carries. Labels (drawn on a canvas) and titles (shown as text) are trace text as
    it is (`canvas_text`: no entity to show as `&lt;`); pyvis writes them into its script as
    JSON with `<`, `>`, `&` and quotes escaped, so none can end the script. The page has no
    heading, its JavaScript is inlined, and a Content-Security-Policy lets only those inline
    scripts run.

    Above `GRAPH_GROUP_ABOVE` agents the graph is grouped as the spawn tree is (`visible_tree`
    with `budget` nodes side by side): a collapsed subtree or a run of hidden siblings is one
    square node carrying every message of its members, the selected agent and its ancestors
    are always shown on their own, and the nodes stand where the tree puts them (laid out
    here, no live physics)."""
    from pyvis.network import Network

    graph = analysis.communication
    net = Network(height=f"{height}px", width="100%", directed=True, heading="",
                  cdn_resources="in_line", bgcolor="#ffffff", font_color="#343a40")
    big = len(analysis.agents) > GRAPH_GROUP_ABOVE
    if big:
        nodes = visible_tree(analysis, budget=budget, focus=selected)
    else:
        nodes = [TreeNode(key=a, agent=a, kind="agent", parent=analysis.parent.get(a),
                          depth=analysis.depth_of.get(a, 0), members=[a])
                 for a in analysis.agents]
    owner = {m: n.key for n in nodes for m in n.members}
    ids = {n.key: i for i, n in enumerate(nodes)}
    positions = tree_layout(nodes) if big else {}
    for n in nodes:
        stats = analysis.agent_stats[n.agent]
        events = sum(analysis.agent_stats[m].events for m in n.members)
        if n.kind == "agent":
            label = canvas_text(n.agent, 24, one_line=True)
            title = "\n".join([f"{stats.name} ({stats.role})", f"events {stats.events}",
                               f"tokens {figure_text('tokens', stats.tokens)}",
                               f"messages sent {stats.messages_sent}"])
        elif n.kind == "collapsed":
            label = canvas_text(n.agent, 15, one_line=True) + f" +{n.hidden}"
            title = (f"{stats.name} ({stats.role}) and the {n.hidden} agents under it\n"
                     f"events {events}")
        else:
            label = f"+{n.hidden} under " + canvas_text(n.agent, 14, one_line=True)
            title = f"{n.hidden} more agents spawned by {n.agent}\nevents {events}"
        role = stats.role if n.kind != "more" else "more agents"
        options = dict(label=label, title=_tooltip(title),
                       color=role_colour(role) if n.kind != "more" else "#ced4da",
                       size=10 + 4 * math.log1p(events),
                       shape="dot" if n.kind == "agent" else "square",
                       borderWidth=4 if selected is not None and n.agent == selected
                       and n.kind == "agent" else 1)
        if n.key in positions:
            x, y = positions[n.key]
            options.update(x=x * 150, y=-y * 330, physics=False, font={"size": 20})
        net.add_node(ids[n.key], **options)
    merged: dict[tuple[str, str], dict[str, float]] = {}
    for sender, recipient, data in graph.edges(data=True):
        pair = (owner.get(sender, sender), owner.get(recipient, recipient))
        if pair[0] == pair[1] or pair[0] not in ids or pair[1] not in ids:
            continue  # inside one group
        into = merged.setdefault(pair, {})
        for k in [*LINK_STYLES, "weight"]:
            into[k] = into.get(k, 0) + data.get(k, 0)
    names = {n.key: n.agent if n.kind != "more" else f"{n.hidden} under {n.agent}"
             for n in nodes}
    for (sender, recipient), data in merged.items():
        kinds = [f"{k} {data[k]:g}" for k in LINK_STYLES if data.get(k)]
        main = max(LINK_STYLES, key=lambda k: data.get(k, 0))
        net.add_edge(ids[sender], ids[recipient], value=data["weight"],
                     title=_tooltip(f"{names[sender]} → {names[recipient]}: " + ", ".join(kinds)),
                     color=LINK_STYLES[main][0], dashes=main != "spawn",
                     arrows="to")
    if big:
        net.toggle_physics(False)
        # messages between siblings arc a little over their row instead of running along it
        net.options.edges.smooth = {"enabled": True, "type": "curvedCW", "roundness": 0.12}
    else:
        net.barnes_hut(gravity=-4000, spring_length=140)
    page = net.generate_html(notebook=False)
    return harden_html(page)


_EXTERNAL = re.compile(r"<link[^>]+href=\"https?://[^>]*>\s*|<script[^>]+src=\"https?://[^>]*>\s*</script>",
                       re.IGNORECASE)
_COMMENTED = re.compile(r"<!--\s*<link[^>]*>\s*<script[^>]*>\s*</script>\s*-->")
_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>", re.IGNORECASE)
_INLINE_SCRIPT = re.compile(r"<script(?:\s+type=\"text/javascript\")?>(.*?)</script>", re.DOTALL)


def harden_html(page: str) -> str:
    """A generated page with no external resources, no empty heading, and a Content-Security-
    Policy that allows exactly its own inline scripts (so an injected handler could not run)."""
    import base64

    page = _EXTERNAL.sub("", page)
    page = _COMMENTED.sub("", page)
    page = _HEADING.sub("", page)
    hashes = sorted({"'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
                     + "'" for body in _INLINE_SCRIPT.findall(page)})
    policy = (f"default-src 'none'; script-src {' '.join(hashes)}; style-src 'unsafe-inline'; "
              "img-src data:; font-src data:")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    return page.replace("<head>", "<head>\n" + meta, 1)


# -- agreement over time ----------------------------------------------------------------------

PRODUCER_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
                    "#e377c2", "#7f7f7f")
"""One colour per producer on the agreement-over-time chart, in the order producers are met
(no red: red rings the versions that moved)."""


def agreement_history_figure(points: Iterable, question: str, *,
                             shifted: Collection[tuple[str, str]] = (),
                             reviewers: float | None = None) -> go.Figure:
    """Each producer version's alpha on one question against blind labels, over time: a line
    per producer through its versions (x: when the version's first suggestion was stored), a
    95 % bootstrap interval as error bars, the versions outside their predecessor's interval
    (`shifted`: (producer, version)) ringed in red, and the reviewers' own alpha among
    themselves as a dashed line when given. `points` are `labels.agreement.VersionPoint`s;
    producer names and versions are escaped for Plotly (a judge's model name is anyone's
    text)."""
    from datetime import UTC, datetime

    from viz_app.labels.agreement import short_version

    def when(stamp: str) -> datetime:  # naive UTC: Plotly reads no time zone
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        return (moment.astimezone(UTC) if moment.tzinfo else moment).replace(tzinfo=None)

    mine = sorted((p for p in points if p.question == question and p.alpha.value is not None
                   and p.created_at),
                  key=lambda p: (p.rater, p.created_at, p.version))
    fig = go.Figure()
    raters = list(dict.fromkeys(p.rater for p in mine))
    for i, rater in enumerate(raters):
        line = [p for p in mine if p.rater == rater]
        colour = PRODUCER_COLOURS[i % len(PRODUCER_COLOURS)]
        value = [p.alpha.value for p in line]
        high = [(p.alpha.high - p.alpha.value) if p.alpha.high is not None else 0.0
                for p in line]
        low = [(p.alpha.value - p.alpha.low) if p.alpha.low is not None else 0.0
               for p in line]
        hover = [f"<b>{plotly_text(rater, 60)}</b> {plotly_text(short_version(p.version), 40)}"
                 f"<br>alpha {p.alpha.value:.3f}"
                 + (f" [{p.alpha.low:.3f}, {p.alpha.high:.3f}]" if p.alpha.low is not None
                    else " (no interval)")
                 + f"<br>{p.targets} targets, {p.pairs} pairs<br>since "
                 f"{plotly_text(p.created_at[:16].replace('T', ' '))} UTC" for p in line]
        fig.add_trace(go.Scatter(
            x=[when(p.created_at) for p in line], y=value, mode="lines+markers",
            name=plotly_text(rater, 40), line=dict(color=colour, width=2),
            marker=dict(size=9, color=colour),
            error_y=dict(type="data", symmetric=False, array=high, arrayminus=low,
                         color=colour, thickness=1.5, width=6),
            hovertext=hover, hoverinfo="text"))
        for p in line:  # the version beside its point, clear of the error bar and the ring
            fig.add_annotation(x=when(p.created_at), y=p.alpha.value, showarrow=False,
                               text=plotly_text(p.version.split(" · ")[-1][:8]),
                               xanchor="left",
                               xshift=14, yshift=8, font=dict(size=11, color=colour))
    moved = [p for p in mine if (p.rater, p.version) in set(shifted)]
    if moved:
        fig.add_trace(go.Scatter(
            x=[when(p.created_at) for p in moved], y=[p.alpha.value for p in moved],
            mode="markers",
            name="outside the previous version's interval",
            marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(color="#d62728", width=3)),
            hoverinfo="skip"))
    if reviewers is not None:
        fig.add_hline(y=reviewers, line=dict(color="#555555", dash="dash", width=1),
                      annotation_text=f"reviewers among themselves {reviewers:.2f}",
                      annotation_position="bottom right")
    lows = [p.alpha.low for p in mine if p.alpha.low is not None] + [0.0]
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title="version first suggested (UTC)",
                      yaxis_title="Krippendorff's alpha vs blind labels",
                      yaxis=dict(range=[min(-0.05, min(lows) - 0.05), 1.05], zeroline=True),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
                      hovermode="closest")
    return fig
