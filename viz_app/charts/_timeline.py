"""The message timeline: a lane per agent, its events, links, decision points and critical
path, drawn with WebGL above WEBGL_EVENTS events."""

from __future__ import annotations

import html
from collections.abc import Collection, Iterable

import numpy as np
import plotly.graph_objects as go

from viz_app.analysis import Analysis
from viz_app.charts._style import (BIG_TIMELINE_HIDDEN_LINKS, CHAR_PX, EVENT_STYLES, LINK_STYLES,
                                   SELECTED, WEBGL_EVENTS, legend_margin, role_colour)
from viz_app.model import EVENT_TYPES, Event
from viz_app.text import plotly_preview, plotly_text


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
def lane_label_margin(labels: Iterable[str]) -> int:
    """A left margin that fits the (escaped) lane labels the timeline first shows."""
    return int(14 + CHAR_PX * max((len(html.unescape(label)) for label in labels), default=4))


def _gapped(values: list) -> np.ndarray:
    """Line coordinates with None gaps as a float array (NaN gaps), which Plotly sends packed:
    32-bit, as a line is drawn no finer (a 20,000-event timeline's links in 160 KB, not 320)."""
    return np.array(values, dtype=np.float32)


def timeline_point(analysis: Analysis, event_id: str | None) -> tuple[float, int] | None:
    """Where the timeline draws an event: seconds from the trace's first event, and its lane
    (None for no or an unknown event)."""
    if event_id is None or event_id not in analysis.position:
        return None
    e = analysis.trace.event(event_id)
    return e.t - analysis.order[0].t, analysis.lanes.index(analysis.actor[e.id])


def timeline_highlight(analysis: Analysis, event_id: str | None) -> list[go.Scatter]:
    """The ring the timeline draws around a selected event (none for no or an unknown event)."""
    point = timeline_point(analysis, event_id)
    if point is None:
        return []
    return [go.Scatter(x=[point[0]], y=[point[1]], mode="markers", name="selected",
                       showlegend=False, hoverinfo="skip",
                       marker=dict(size=RING_PX, color="rgba(0,0,0,0)",
                                   line=dict(color=SELECTED, width=4)))]


RING_PX = 26
"""The selection ring's diameter in pixels."""

TIMELINE_RING_SHAPE = dict(type="circle", xref="x", yref="y", xsizemode="pixel",
                           ysizemode="pixel", x0=-RING_PX / 2, x1=RING_PX / 2,
                           y0=-RING_PX / 2, y1=RING_PX / 2, fillcolor="rgba(0,0,0,0)",
                           line=dict(color=SELECTED, width=4), layer="above")
"""The same ring as a layout shape, anchored at an event (`xanchor`, `yanchor`): the live
timeline moves a shape rather than redraw its traces (`components.live_chart`)."""


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
