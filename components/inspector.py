"""The inspector: everything about the selected event, or about the selected agent."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd
import streamlit as st

from viz_app.analysis import Analysis, figure_text
from viz_app.model import Event, Trace
from viz_app.text import markdown_literal


def inspector(trace: Trace, analysis: Analysis, *, event_id: str | None, agent: str | None,
              key: str = "inspector",
              on_choose: Callable[[str], None] | None = None) -> str | None:
    """Show the selected event (its content, fields, edges, its agent's other events, previous
    and next) or else the selected agent (its figures and events). Returns the id of an event
    the reviewer moved to here (by previous/next or by picking a row), else None."""
    stash = f"_chosen:{key}"

    def choose(target: str) -> None:
        # runs as a widget callback, before the page's next run draws anything
        st.session_state[stash] = target
        if on_choose is not None:
            on_choose(target)

    if event_id is not None:
        _event(trace, analysis, trace.event(event_id), key, choose)
    elif agent is not None:
        _agent(analysis, agent, key, choose)
    else:
        st.caption("Click an agent in the tree or an event in the timeline to inspect it.")
    return st.session_state.pop(stash, None)


def _nav(key: str, label: str, target: str | None, help_text: str, choose) -> None:
    st.button(label, key=f"{key}:{label}", disabled=target is None,
              on_click=choose, args=(target,), help=help_text, width="stretch")


def _pick_table(frame: pd.DataFrame, column: str, key: str, choose, **options) -> None:
    """A dataframe whose row, when picked, chooses the event id in `column`."""

    def picked() -> None:
        state = st.session_state.get(key)
        rows = state["selection"]["rows"] if state else []
        if rows and rows[0] < len(frame):
            choose(str(frame.iloc[rows[0]][column]))

    st.dataframe(frame, key=key, hide_index=True, on_select=picked,
                 selection_mode="single-row", **options)


def _event(trace: Trace, analysis: Analysis, e: Event, key: str, choose) -> None:
    agent = analysis.actor[e.id]
    order, i = analysis.order, analysis.position[e.id]
    mine = analysis.events_of.get(agent, [])
    j = next(k for k, x in enumerate(mine) if x.id == e.id)
    st.markdown(f"**{markdown_literal(e.type)}** {markdown_literal(e.id, 40)} · "
                f"t = {e.t:g}s"
                + (f" → {e.end_t:g}s" if e.end_t is not None else ""))
    st.caption(f"agent: {markdown_literal(agent, 60)} · "
               f"role: {markdown_literal(analysis.role_of(agent), 40)}")
    prev_col, next_col = st.columns(2)
    with prev_col:
        _nav(key, "◀ previous", order[i - 1].id if i > 0 else None, "previous event in time",
             choose)
        _nav(key, "◀ agent's previous", mine[j - 1].id if j > 0 else None,
             "this agent's previous event", choose)
    with next_col:
        _nav(key, "next ▶", order[i + 1].id if i + 1 < len(order) else None,
             "next event in time", choose)
        _nav(key, "agent's next ▶", mine[j + 1].id if j + 1 < len(mine) else None,
             "this agent's next event", choose)
    st.markdown("**Content**")
    if e.text:
        st.code(e.text, language=None, wrap_lines=True, height=min(320, 40 + 18 * (1 + e.text.count("\n") + len(e.text) // 60)))
    else:
        st.caption("no content")
    st.markdown("**Fields**")
    st.json(e.to_dict(), expanded=1)
    link = analysis.link_of(e)
    if link is not None:
        st.caption(f"{link[0]} from {markdown_literal(link[1], 40)} "
                   f"to {markdown_literal(link[2], 40)}")
    _edges(trace, analysis, e, key, choose)
    st.markdown(f"**Other events of {markdown_literal(agent, 40)}** ({len(mine)})")
    _event_table(analysis, mine, f"{key}:agent-events", choose, highlight=e.id)


def _edges(trace: Trace, analysis: Analysis, e: Event, key: str, choose) -> None:
    dag = analysis.event_dag
    events = trace.events_by_id
    rows = [{"direction": "in", "type": data.get("type", ""), "event": src,
             "event type": events[src].type, "agent": analysis.actor[src]}
            for src, _, data in dag.in_edges(e.id, data=True)]
    rows += [{"direction": "out", "type": data.get("type", ""), "event": dst,
              "event type": events[dst].type, "agent": analysis.actor[dst]}
             for _, dst, data in dag.out_edges(e.id, data=True)]
    st.markdown(f"**Edges** ({len(rows)})")
    if not rows:
        st.caption("no incoming or outgoing edges")
        return
    _pick_table(pd.DataFrame(rows), "event", f"{key}:edges:{e.id}", choose,
                height=min(250, 38 + 35 * len(rows)))


def _event_table(analysis: Analysis, events: list[Event], key: str, choose,
                 highlight: str | None = None) -> None:
    frame = pd.DataFrame({
        "t": [e.t for e in events], "type": [e.type for e in events],
        "id": [e.id for e in events],
        "content": [" ".join(e.text.split())[:120] for e in events],
    })
    _pick_table(frame, "id", f"{key}:{highlight}", choose,
                height=min(320, 38 + 35 * len(events)),
                column_config={"t": st.column_config.NumberColumn("t (s)", format="%.2f")})


def _agent(analysis: Analysis, agent: str, key: str, choose) -> None:
    stats = analysis.agent_stats[agent]
    st.markdown(f"**Agent** {markdown_literal(agent, 60)}")
    st.caption(f"role: {markdown_literal(stats.role, 40)} · parent: "
               f"{markdown_literal(stats.parent, 40) if stats.parent else '— (a root)'} · "
               f"depth {stats.depth}")
    a, b, c = st.columns(3)
    a.metric("events", stats.events)
    b.metric("tool calls", stats.tool_calls)
    c.metric("messages", stats.messages_sent)
    a.metric("tokens", figure_text("tokens", stats.tokens))
    b.metric("lifetime", figure_text("makespan", stats.lifetime_s))
    c.metric("active", figure_text("makespan", stats.active_s))
    a.metric("cost", figure_text("cost", stats.cost_usd))
    b.metric("spawned", len(stats.children))
    c.metric("started", f"{stats.first_t:g}s")
    if stats.children:
        st.markdown("**Spawned**")
        st.dataframe(pd.DataFrame({"agent": stats.children,
                                   "role": [analysis.role_of(k) for k in stats.children]}),
                     hide_index=True, height=min(250, 38 + 35 * len(stats.children)))
    events = analysis.events_of.get(agent, [])
    st.markdown(f"**Events** ({len(events)})")
    _event_table(analysis, events, f"{key}:agent:{agent}", choose)
