"""The spawn tree: which agents show (collapsing subtrees beyond TREE_BUDGET), where they go,
their labels and hovers, and the figure with its message and delegation links."""

from __future__ import annotations

import html
import math
import re
import sys
from collections.abc import Collection, Iterable
from typing import Literal

import plotly.graph_objects as go
from pydantic import BaseModel, Field

from viz_app.analysis import Analysis, figure_text
from viz_app.charts._style import (LABELLED_NODES, SELECTED, TREE_BUDGET, TREE_WIDTH_PX, SizeBy,
                                   legend_margin, role_colour)
from viz_app.text import plotly_text


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
        xaxis=dict(visible=False, range=_tree_x_range(pos, places)),
        yaxis=dict(visible=False, range=_tree_y_range(fig)),
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
                half = label_half_px(text)
                centre = pos[n.key][0] * px_per_unit
                free = [p for p in ("bottom center", "top center") if centre - half >= edge[p]]
                if free:
                    place = free[0]
                    edge[place] = centre + half
                else:
                    text = ""
            places[n.key] = (text, place)
    return places


LABEL_LINE = 18
"""Characters of a tree label's line: a longer agent name goes on two lines, broken after a
`-`, `_`, `.` or `/` where it has one (`general-purpose-` / `subagent-3`), rather than cut."""

LABEL_LIMIT = 2 * LABEL_LINE + 4
"""The longest name a label shows whole; a longer one ends in `…` (its hover has it all)."""


def wrapped_name(name: str) -> str:
    """An agent's name as a tree label (Plotly HTML): one line when short, else two, broken
    after a separator within the first line's width (or at the width when it has none)."""
    name = " ".join(str(name).split())
    if len(name) <= LABEL_LINE:
        return plotly_text(name)
    cut = max((i + 1 for i, c in enumerate(name[:LABEL_LINE + 1]) if c in "-_./: "), default=0)
    cut = cut if cut >= 4 else LABEL_LINE
    first, rest = name[:cut].rstrip(), name[cut:].lstrip()
    return plotly_text(first) + "<br>" + plotly_text(rest, LABEL_LIMIT - len(first))


def _node_label(node: TreeNode, labelled: bool) -> str:
    if node.kind == "more":
        return f"+{node.hidden} more"
    if node.kind == "collapsed":
        return (wrapped_name(node.agent) + "<br>" if labelled else "") + f"+{node.hidden}"
    return wrapped_name(node.agent) if labelled else ""


def label_half_px(text: str) -> float:
    """Half the drawn width (px) of a label's widest line, with a little room."""
    if not text:
        return 0.0
    widest = max(len(html.unescape(re.sub(r"<[^>]+>", "", line))) for line in text.split("<br>"))
    return widest * LABEL_CHAR_PX / 2 + 3


def _tree_x_range(pos: dict[str, tuple[float, float]], places: dict[str, tuple[str, str]],
                  width_px: float = TREE_WIDTH_PX) -> list[float]:
    """The x range that holds every node and every label whole: a label at the tree's edge
    reaches past its node, and the plot would clip it."""
    xs = [x for x, _ in pos.values()] or [0.0]
    px_per_unit = width_px / (max(xs) - min(xs) + 1)
    left = min(xs) - 0.5
    right = max(xs) + 0.5
    for key, (text, _) in places.items():
        if text and key in pos:
            reach = label_half_px(text) / px_per_unit
            left = min(left, pos[key][0] - reach)
            right = max(right, pos[key][0] + reach)
    return [left, right]


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
