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
        # one key for every trace, as the timeline's below
        spawn_tree(tree, key=f"{key}tree", on_choose=on_tree, tag=trace.trace_id)
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
    # one key for every trace: the chart stays mounted, and Shift+N hands it the next figure
    message_timeline(timeline, analysis, key=f"{key}timeline", selected=event_id,
                     on_choose=on_event, tag=trace.trace_id)
