"""Replay: a time slider with play and step buttons, to walk through a run as it happened."""

from __future__ import annotations

from bisect import bisect_left, bisect_right

import streamlit as st

from viz_app.analysis import Analysis

STEPS_PER_PLAY = 40
"""A play from start to end takes this many ticks."""

TICK_S = 0.8
"""Seconds between two ticks while playing."""


def replay_bar(analysis: Analysis, *, key: str = "replay",
               focus: str | None = None) -> float | None:
    """Draw the replay controls and return the time (seconds from the start) the views should
    show, or None for the whole run.

    The time is kept per `key` for the session: a page that leaves the trace and comes back
    finds it where it was left (Streamlit forgets a widget's value while it is not drawn, so
    the bar keeps its own copy). `focus` is the event the page is about (a target, the event
    selected): when it changes, a replay standing before it moves on to its time, so the event
    being judged is never hidden by where the replay was left."""
    start = float(analysis.order[0].t)
    span = float(analysis.makespan)
    slider, playing, kept = f"{key}:t", f"{key}:playing", f"{key}:kept"
    if slider not in st.session_state:  # arriving (again): the page's event is new to the bar
        st.session_state.pop(f"{key}:focus", None)
    if slider not in st.session_state or not 0 <= st.session_state[slider] <= span:
        left = st.session_state.get(kept)
        st.session_state[slider] = left if left is not None and 0 <= left <= span else span
    st.session_state.setdefault(playing, False)
    _follow_focus(analysis, key, focus, start, span)

    def move(to: float) -> None:
        st.session_state[slider] = min(max(0.0, to), span)
        st.session_state[playing] = False

    def event_times() -> list[float]:  # only when a step asks: 20 ms on 20,000 events
        return sorted({float(e.t) - start for e in analysis.order})

    def back() -> None:
        times = event_times()
        i = bisect_left(times, st.session_state[slider]) - 1
        move(times[i] if i >= 0 else 0.0)

    def forward() -> None:
        times = event_times()
        i = bisect_right(times, st.session_state[slider])
        move(times[i] if i < len(times) else span)

    def toggle() -> None:
        if not st.session_state[playing] and st.session_state[slider] >= span:
            st.session_state[slider] = 0.0
        st.session_state[playing] = not st.session_state[playing]

    cols = st.columns([0.5, 0.5, 0.7, 0.5, 0.5, 9], vertical_alignment="bottom")
    is_playing = st.session_state[playing]
    cols[0].button("", icon=":material/first_page:", key=f"{key}:first", on_click=move,
                   args=(0.0,), help="the start")
    cols[1].button("", icon=":material/chevron_left:", key=f"{key}:back", on_click=back,
                   help="back to the previous event")
    cols[2].button("", icon=":material/pause:" if is_playing else ":material/play_arrow:",
                   key=f"{key}:play", on_click=toggle, help="pause" if is_playing else "play the run",
                   type="primary" if is_playing else "secondary")
    cols[3].button("", icon=":material/chevron_right:", key=f"{key}:forward", on_click=forward,
                   help="on to the next event")
    cols[4].button("", icon=":material/last_page:", key=f"{key}:last", on_click=move,
                   args=(span,), help="the whole run")
    cols[5].slider("Replay: the run as it stood at time t (seconds)", min_value=0.0,
                   max_value=max(span, 0.001), key=slider, step=max(span / 500, 0.001),
                   format="%.1f s")
    if st.session_state[playing]:
        _ticker(key, span)
    now = st.session_state[slider]
    st.session_state[kept] = now
    return None if now >= span else now


def _follow_focus(analysis: Analysis, key: str, focus: str | None, start: float,
                  span: float) -> None:
    """On a new focus event, move a replay that stands before it on to its time."""
    seen = f"{key}:focus"
    if focus is None or st.session_state.get(seen) == focus:
        return
    st.session_state[seen] = focus
    event = analysis.trace.events_by_id.get(focus)
    if event is None:
        return
    at = min(max(0.0, float(event.t) - start), span)
    if st.session_state[f"{key}:t"] < at:
        st.session_state[f"{key}:t"] = at
        st.session_state[f"{key}:playing"] = False


def _ticker(key: str, span: float) -> None:
    @st.fragment(run_every=TICK_S)
    def tick() -> None:
        slider, playing = f"{key}:t", f"{key}:playing"
        if not st.session_state.get(playing):
            return
        if st.session_state.get(f"{key}:ticked"):
            nxt = st.session_state[slider] + span / STEPS_PER_PLAY
            st.session_state[slider] = min(nxt, span)
            if nxt >= span:
                st.session_state[playing] = False
            st.session_state[f"{key}:ticked"] = False
            st.rerun()
        st.session_state[f"{key}:ticked"] = True

    tick()
