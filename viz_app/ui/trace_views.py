"""A trace's views as every page that shows one lays them out: the replay bar, the view controls,
the spawn tree (or the communication graph) over the message timeline, the selected event ringed.
The trace page, the review page and the adjudication page draw the same thing through here.

The page keeps the selection (the trace page in the URL, the review page with its claim) and says
what is selected; a click is handed back at once through the callbacks, in the widget's callback,
before anything is drawn.
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from components.graph import communication_graph
from components.replay import replay_bar
from components.timeline import message_timeline
from components.tree import TreeChoice, spawn_tree
from viz_app import charts
from viz_app.analysis import Analysis, task_words
from viz_app.model import Trace
from viz_app.text import markdown_literal
from viz_app.ui import session


def task_caption(trace: Trace, limit: int = 300) -> str:
    """A header's task line in Markdown: the task in the trace's words (a Who&When question,
    not its UUID) with its id beside it, or the id alone when that is all the trace records."""
    words = task_words(trace)
    if not words or words == trace.task_id:
        return f"task **{markdown_literal(trace.task_id, 100)}**"
    return f"task **{markdown_literal(words, limit)}** (id {markdown_literal(trace.task_id, 60)})"


def trace_views(trace: Trace, analysis: Analysis, *, event_id: str | None, agent: str | None,
                on_event: Callable[[str], None], on_agent: Callable[[str], None],
                key: str = "") -> None:
    """Draw the replay bar, the controls, the tree or graph and the timeline of a trace, with
    `event_id` ringed on the timeline and `agent` highlighted in the tree. A click on a timeline
    event calls `on_event(event_id)`; a click on a tree node calls `on_agent(agent)` (after
    opening what a collapsed node hides). `key` tells apart the widgets of two pages that keep
    different settings ('' for the trace page's own)."""

    def on_tree(choice: TreeChoice) -> None:
        if choice.expand:
            opened = tuple(session.view_state(trace, "expanded", ()))
            if choice.agent not in opened:
                session.set_view_state(trace, "expanded", opened + (choice.agent,))
        on_agent(choice.agent)

    until = replay_bar(analysis, key=f"{key}replay:{session.trace_key(trace)}", focus=event_id)
    controls = st.columns([2.6, 1.9, 1.4, 1.3], vertical_alignment="center")
    view = controls[0].segmented_control(
        "View", ["Spawn tree", "Communication graph"], default="Spawn tree",
        key=f"{key}trace_view", label_visibility="collapsed") or "Spawn tree"
    size_by = controls[1].segmented_control(
        "Node size", ["tokens", "active time"], default="tokens", key=f"{key}tree_size_by",
        label_visibility="collapsed", help="what a tree node's size shows") or "tokens"
    critical = controls[2].toggle("critical path", key=f"{key}show_critical",
                                  help="highlight the longest chain of dependent work")
    expanded = tuple(session.view_state(trace, "expanded", ()))
    if controls[3].button("collapse tree", key=f"{key}collapse_tree", disabled=not expanded,
                          help="fold the subtrees you opened back up"):
        session.set_view_state(trace, "expanded", ())
        expanded = ()
    if view == "Spawn tree":
        tree = session.tree_figure(trace, size_by=size_by, expanded=expanded, selected=agent,
                                   until=until)
        spawn_tree(tree, key=f"{key}tree:{session.trace_key(trace)}", on_choose=on_tree)
    else:
        communication_graph(session.communication_html(trace, selected=agent))
    big = len(analysis.order) > charts.WEBGL_EVENTS
    st.caption("**Message timeline** · one lane per agent in tree order · bars: lifetimes · "
               "arrows: spawn, delegation, message, return"
               + (f" ({' and '.join(k + 's' for k in charts.BIG_TIMELINE_HIDDEN_LINKS)} hidden: "
                  "click them in the legend)" if big else "")
               + " · rings: aggregates and stops · click an event to inspect it, drag to zoom"
               + (" · WebGL" if big else ""))
    timeline = session.timeline_figure(trace, until=until, critical=critical)
    chart_key, ring = _timeline_key(trace, analysis, event_id, f"{key}timeline")
    with session.overlaid(timeline, charts.timeline_highlight(analysis, ring)) as shown:
        message_timeline(shown, analysis, key=chart_key, on_choose=on_event)


def _timeline_key(trace: Trace, analysis: Analysis, event_id: str | None,
                  prefix: str) -> tuple[str, str | None]:
    """The timeline widget's key and the event to ring on it.

    An event clicked on the timeline is marked by Plotly in the browser (its selected style),
    so the figure stays the one the browser has: Streamlit then sends a reference to it, not
    the figure again (2 MB for 20,000 events). An event selected elsewhere is ringed, under a
    new key, so that no earlier click stays marked."""
    generation_key = f"_timeline_generation:{prefix}:{session.trace_key(trace)}"
    generation, ringed = st.session_state.get(generation_key, (0, None))
    chart_key = f"{prefix}:{session.trace_key(trace)}:{generation}"
    state = st.session_state.get(chart_key)
    points = state["selection"]["points"] if state else []
    position = points[0].get("customdata") if points else None
    if isinstance(position, list):
        position = position[0] if position else None
    clicked = (analysis.order[int(position)].id if isinstance(position, (int, float))
               and 0 <= int(position) < len(analysis.order) else None)
    if event_id is None or event_id == clicked:
        return chart_key, None
    if ringed != event_id:  # selected elsewhere: a fresh widget, no stale click marked
        generation, ringed = (generation + 1, event_id) if clicked is not None else (
            generation, event_id)
        st.session_state[generation_key] = (generation, ringed)
    return f"{prefix}:{session.trace_key(trace)}:{generation}", event_id
