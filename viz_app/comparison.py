"""Comparing two runs: their figures with the differences, their spawn trees with agents aligned
by role and position, and their timelines on one time axis.

Agents are aligned by *slot* (`joint_slots`): the roots share a slot, and under two agents that
share one, their children of the same role pair up in spawn order, then the children left pair
up by position (marked: their roles differ), and any still left get a slot of their own. Two
rollouts of one task that spawn "researcher, researcher, critic" line up agent by agent even when
the agents' names differ; a slot that only one run fills shows as a gap in the other. Pure
functions over two `Analysis` objects, reusing the chart builders' layout, colours and escaping.
"""

from __future__ import annotations

import itertools
import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots
from pydantic import BaseModel, Field

from viz_app import charts
from viz_app.analysis import FIGURES, Analysis, figure_numbers, figure_text
from viz_app.branch import Fork, fork_of
from viz_app.model import Event, Trace
from viz_app.text import plotly_text

Slot = tuple[tuple[str, int], ...]

DIVERGENCE = "#e03131"
"""Colour of the line where a branch parts from its original."""

GHOST = "#adb5bd"
"""Colour of a slot the other run fills and this one does not."""


class FigureDiff(BaseModel):
    """One figure of two runs."""

    name: str = Field(description="The figure, as the trace page names it.")
    a: float = Field(description="Its value in the first run.")
    b: float = Field(description="Its value in the second run.")
    unit: str = Field("", description="'s', '$' or '' for counts.")
    lower_is_better: bool | None = Field(None, description="Which way is better, when one is "
                                         "(None: neither, such as depth).")

    @property
    def delta(self) -> float:
        """b - a."""
        return self.b - self.a

    @property
    def differs(self) -> bool:
        """Whether the two values differ (beyond rounding)."""
        return not math.isclose(self.a, self.b, rel_tol=1e-9, abs_tol=1e-9)

    @property
    def better(self) -> str | None:
        """'a' or 'b': the run whose value is better, when the figure has a better direction
        and the values differ."""
        if self.lower_is_better is None or not self.differs:
            return None
        return "b" if (self.b < self.a) == self.lower_is_better else "a"


COMPARED: dict[str, bool | None] = {
    "agents": None, "events": None, "depth": None, "fan-out": None, "messages": None,
    "tool calls": None, "makespan": True, "parallelism": None, "critical path": True,
    "tokens": True, "cost": True, "aggregates": None, "warnings": True}
"""The figures the compare page sets side by side, each with whether lower is better (None:
neither way is better)."""

_UNITS = {"seconds": "s", "dollars": "$"}


def figure_differences(a: Analysis, b: Analysis, *, judged: bool = True) -> list[FigureDiff]:
    """The orchestration figures of two runs side by side. `judged=False` (a branch beside its
    original, whose requested work was never run) says no value is the better one: a shorter
    makespan there is work left undone, not work done faster."""
    na, nb = figure_numbers(a.figures), figure_numbers(b.figures)
    return [FigureDiff(name=n, a=float(na[n]), b=float(nb[n]), unit=_UNITS.get(FIGURES[n], ""),
                       lower_is_better=low if judged else None) for n, low in COMPARED.items()]


def _roots(analysis: Analysis) -> list[str]:
    return [r for r in analysis.agents if analysis.parent.get(r) is None]


def _pair_children(a: Analysis, b: Analysis, kids_a: list[str], kids_b: list[str],
                   base: Slot) -> list[tuple[Slot, str | None, str | None]]:
    """Children of two matched agents paired into slots: first the k-th child of each role in
    both, then the rest by order (roles differ: tag '~'), then the ones left over alone."""
    paired: list[tuple[Slot, str | None, str | None]] = []
    rest_a, rest_b = [], []
    counts: dict[str, int] = {}
    roles_b: dict[str, list[str]] = {}
    for child in kids_b:
        roles_b.setdefault(b.role_of(child), []).append(child)
    used_b: set[str] = set()
    for child in kids_a:
        role = a.role_of(child)
        k = counts.get(role, 0)
        counts[role] = k + 1
        match = roles_b.get(role, [])
        if k < len(match):
            paired.append((base + ((role, k),), child, match[k]))
            used_b.add(match[k])
        else:
            rest_a.append(child)
    rest_b = [c for c in kids_b if c not in used_b]
    for i, (x, y) in enumerate(zip(rest_a, rest_b)):
        paired.append((base + (("~", i),), x, y))
    for i, x in enumerate(rest_a[len(rest_b):]):
        paired.append((base + (("a:" + a.role_of(x), i),), x, None))
    for i, y in enumerate(rest_b[len(rest_a):]):
        paired.append((base + (("b:" + b.role_of(y), i),), None, y))
    return paired


def joint_slots(a: Analysis, b: Analysis) -> tuple[dict[str, Slot], dict[str, Slot]]:
    """Each agent's slot in two runs: the roots share slot (); under two agents that share a
    slot, children of the same role pair up in spawn order, then the remaining children pair up
    by position (their roles differ), and any left over get a slot of their own."""
    in_a: dict[str, Slot] = {}
    in_b: dict[str, Slot] = {}
    roots_a, roots_b = _roots(a), _roots(b)
    todo: list[tuple[Slot, str | None, str | None]] = [
        ((("", i),) if max(len(roots_a), len(roots_b)) > 1 else (), x, y)
        for i, (x, y) in enumerate(itertools.zip_longest(roots_a, roots_b))]
    while todo:
        slot, x, y = todo.pop()
        if x is not None:
            in_a[x] = slot
        if y is not None:
            in_b[y] = slot
        kids_x = a.children.get(x, []) if x is not None else []
        kids_y = b.children.get(y, []) if y is not None else []
        todo.extend(_pair_children(a, b, kids_x, kids_y, slot))
    return in_a, in_b


class Alignment(BaseModel):
    """Where each slot of either run is drawn, and which agent of each run fills it."""

    positions: dict[Slot, tuple[float, float]] = Field(description="Slot -> (x, y) shared by "
                                                       "both trees.")
    parents: dict[Slot, Slot | None] = Field(description="Slot -> the slot above it.")
    a: dict[Slot, str] = Field(description="Slot -> the agent of the first run there.")
    b: dict[Slot, str] = Field(description="Slot -> the agent of the second run there.")

    @property
    def only_a(self) -> list[Slot]:
        """Slots only the first run fills."""
        return [s for s in self.positions if s in self.a and s not in self.b]

    @property
    def role_differs(self) -> list[Slot]:
        """Slots both runs fill with agents of different roles (paired by position)."""
        return [s for s in self.positions if s in self.a and s in self.b and s and s[-1][0] == "~"]

    @property
    def only_b(self) -> list[Slot]:
        """Slots only the second run fills."""
        return [s for s in self.positions if s in self.b and s not in self.a]


def align(a: Analysis, b: Analysis) -> Alignment:
    """The union of both runs' slots laid out as one tidy tree (`charts.tree_layout`)."""
    sa, sb = joint_slots(a, b)
    by_a = {s: agent for agent, s in sa.items()}
    by_b = {s: agent for agent, s in sb.items()}
    ordered: list[Slot] = []
    seen: set[Slot] = set()
    for s in [*sa.values(), *sb.values()]:
        if s not in seen:
            seen.add(s)
            ordered.append(s)
    # parents before children; siblings in the first run's spawn (tree) order, then the second's
    rank_a = {agent: i for i, agent in enumerate(a.agents)}
    rank_b = {agent: len(rank_a) + i for i, agent in enumerate(b.agents)}
    ordered.sort(key=lambda s: (len(s), rank_a[by_a[s]] if s in by_a else rank_b[by_b[s]]))
    parents = {s: (s[:-1] if s and s[:-1] in seen else None) for s in ordered}
    key = {s: str(i) for i, s in enumerate(ordered)}
    nodes, placed = [], set()
    stack = [s for s in reversed(ordered) if parents[s] is None]
    while stack:  # depth-first so that tree_layout sees each subtree together
        s = stack.pop()
        placed.add(s)
        nodes.append(charts.TreeNode(key=key[s], agent=key[s], kind="agent",
                                     parent=key[parents[s]] if parents[s] is not None else None,
                                     depth=len(s), members=[key[s]]))
        stack.extend(c for c in reversed(ordered) if parents[c] == s and c not in placed)
    layout = charts.tree_layout(nodes)
    return Alignment(positions={s: layout[key[s]] for s in ordered}, parents=parents,
                     a=by_a, b=by_b)


def aligned_tree_figure(analysis: Analysis, alignment: Alignment, side: str, *,
                        title: str = "", height: int = 380) -> go.Figure:
    """One run's spawn tree drawn on the shared alignment ('a' or 'b'): its agents coloured by
    role and sized by tokens, and a grey dashed ring where only the other run has an agent."""
    mine = alignment.a if side == "a" else alignment.b
    other = alignment.b if side == "a" else alignment.a
    pos = alignment.positions
    fig = go.Figure()
    ex, ey = [], []
    for s, parent in alignment.parents.items():
        if parent is not None and s in mine and parent in mine:
            (x0, y0), (x1, y1) = pos[parent], pos[s]
            ex += [x0, x0, x1, x1, None]
            ey += [y0, (y0 + y1) / 2, (y0 + y1) / 2, y1, None]
    fig.add_trace(go.Scatter(x=ex, y=ey, mode="lines", line=dict(color="#adb5bd", width=1.5),
                             hoverinfo="skip", showlegend=False))
    stats = analysis.agent_stats
    top = max((charts.size_weight(stats[a].tokens) for a in mine.values()), default=0) or 1.0
    by_role: dict[str, list[Slot]] = {}
    for s, agent in mine.items():
        by_role.setdefault(analysis.role_of(agent), []).append(s)
    leaves = sum(1 for s in pos if not any(p == s for p in alignment.parents.values()))
    labelled = len(mine) <= charts.LABELLED_NODES and leaves <= 8  # more would overlap
    for role, members in by_role.items():
        fig.add_trace(go.Scatter(
            x=[pos[s][0] for s in members], y=[pos[s][1] for s in members],
            mode="markers+text" if labelled else "markers", name=plotly_text(role, 24),
            text=[plotly_text(mine[s], 18) if labelled else "" for s in members],
            textposition="bottom center", textfont=dict(size=11, color="#343a40"),
            marker=dict(size=[12 + 26 * math.sqrt(charts.size_weight(stats[mine[s]].tokens) / top) for s in members],
                        color=charts.role_colour(role), line=dict(color="white", width=1.5)),
            hovertext=[f"{plotly_text(mine[s], 60)} ({plotly_text(role, 40)})<br>"
                       f"tokens {figure_text('tokens', stats[mine[s]].tokens)} · events {stats[mine[s]].events}"
                       + ("<br><b>no counterpart in the other run</b>" if s not in other else
                          f"<br>the other run has {plotly_text(other[s], 40)} here"
                          if s and s[-1][0] == "~" else "")
                       for s in members], hoverinfo="text"))
    missing = [s for s in other if s not in mine]
    if missing:
        fig.add_trace(go.Scatter(
            x=[pos[s][0] for s in missing], y=[pos[s][1] for s in missing], mode="markers+text",
            name="only in the other run", text=["missing"] * len(missing),
            textposition="bottom center", textfont=dict(size=10, color=GHOST),
            marker=dict(size=16, color=GHOST, line=dict(color=GHOST, width=2),
                        symbol="circle-open"),
            hovertext=[f"the other run has {plotly_text(other[s], 60)} here" for s in missing],
            hoverinfo="text"))
    extra = [s for s in mine if s not in other]
    if extra:
        fig.add_trace(go.Scatter(
            x=[pos[s][0] for s in extra], y=[pos[s][1] for s in extra], mode="markers",
            name="only in this run", hoverinfo="skip",
            marker=dict(size=36, color="rgba(0,0,0,0)", line=dict(color="#f59f00", width=2),
                        symbol="circle")))
    swapped = [s for s in alignment.role_differs if s in mine]
    if swapped:
        fig.add_trace(go.Scatter(
            x=[pos[s][0] for s in swapped], y=[pos[s][1] for s in swapped], mode="markers",
            name="role differs", hoverinfo="skip",
            marker=dict(size=38, color="rgba(0,0,0,0)", symbol="diamond",
                        line=dict(color="#7048e8", width=2))))
    ys = [y for _, y in pos.values()] or [0.0]
    xs = [x for x, _ in pos.values()] or [0.0]
    fig.update_layout(
        title=dict(text=plotly_text(title, 80), font=dict(size=14)) if title else None,
        height=height, margin=dict(l=10, r=10, t=60 if title else 30, b=10), plot_bgcolor="white",
        showlegend=True, legend=dict(orientation="h", y=1.0, yanchor="bottom", x=0,
                                     font=dict(size=11)),
        xaxis=dict(visible=False, range=[min(xs) - 0.6, max(xs) + 0.6]),
        yaxis=dict(visible=False, range=[min(ys) - 0.6, max(ys) + 0.35]), dragmode="pan")
    return fig


class Divergence(BaseModel):
    """Where one run of a pair is a branch of the other (`viz_app.branch`): the point where
    they part, and each run's events from there on."""

    branch: str = Field(description="'a' or 'b': the run that is the branch.")
    fork: Fork = Field(description="Where the branch leaves the original.")
    original: list[Event] = Field(description="The original's events from the edited one on.")
    continued: list[Event] = Field(description="The branch's events from the edited one on.")


def divergence(a: Trace, b: Trace) -> Divergence | None:
    """How two runs part, when one is a branch of the other; None otherwise."""
    for side, branch, original in (("b", b, a), ("a", a, b)):
        fork = fork_of(branch)
        if fork is None or fork.forked_from != original.trace_id \
                or fork.fork_event not in original.events_by_id:
            continue
        start = original.event(fork.fork_event).t

        def since(trace: Trace) -> list[Event]:
            return sorted((e for e in trace.events if e.t >= start), key=lambda e: e.t)

        return Divergence(branch=side, fork=fork, original=since(original),
                          continued=since(branch))
    return None


def shared_timeline(a: Analysis, b: Analysis, *, names: tuple[str, str] = ("A", "B"),
                    diverge_at: float | None = None) -> go.Figure:
    """Both runs' message timelines (`charts.timeline_figure`) stacked on one time axis (seconds
    from each run's first event), so their pace and length compare at a glance; when one run is
    a branch of the other, a red line in both marks where they part (`diverge_at`, seconds)."""
    figs = [charts.timeline_figure(a, webgl=False), charts.timeline_figure(b, webgl=False)]
    lanes = [len(a.agents), len(b.agents)]
    shown = [min(n, 20) for n in lanes]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        row_heights=[max(s, 2) for s in shown],
                        subplot_titles=[plotly_text(n, 80) for n in names])
    for row, part in enumerate(figs, 1):
        for trace in part.data:
            trace.showlegend = row == 1 and trace.showlegend is not False
            trace.legendgroup = trace.legendgroup or trace.name
            fig.add_trace(trace, row=row, col=1)
        axis = part.layout.yaxis
        fig.update_yaxes(tickvals=axis.tickvals, ticktext=axis.ticktext,
                         range=[shown[row - 1] - 0.5, -0.5], showgrid=False, zeroline=False,
                         tickfont=dict(size=11), row=row, col=1)
    span = max(a.makespan, b.makespan, 1e-9)
    fig.update_xaxes(range=[-0.01 * span, span * 1.01], showgrid=True, gridcolor="#f1f3f5",
                     zeroline=False)
    fig.update_xaxes(title="seconds from start", row=2, col=1)
    for makespan, row in ((a.makespan, 1), (b.makespan, 2)):
        fig.add_vline(x=makespan, line=dict(color="#868e96", width=1, dash="dot"), row=row, col=1)
    fig.update_layout(height=int(min(900, 200 + 24 * sum(shown))), plot_bgcolor="white",
                      margin=dict(l=10, r=10, t=40, b=110), hovermode="closest",
                      legend=dict(orientation="h", y=-0.12, yanchor="top", x=0,
                                  font=dict(size=11)))
    for title in fig.layout.annotations:  # the runs' names sit left, under the legend
        title.update(x=0, xanchor="left", font=dict(size=13, color="#343a40"))
    if diverge_at is not None:
        for row in (1, 2):
            fig.add_vline(x=diverge_at, line=dict(color=DIVERGENCE, width=2), row=row, col=1,
                          annotation_text="divergence", annotation_position="top left",
                          annotation=dict(bgcolor="rgba(255,255,255,0.85)"),
                          annotation_font=dict(color=DIVERGENCE, size=12))
    return fig
