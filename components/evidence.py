"""What a reviewer judges a target by: the content of its event, an aggregate's merged inputs
beside its output, the events around a stop with a cursor the arrow keys walk. Trace text
is shown with `literal`-escaped Markdown and dataframes, never as HTML."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import keys as key_map
from components.form import set_answer
from components.navigation import short
from viz_app.analysis import Analysis
from viz_app.labels import LabelTarget
from viz_app.model import Event, Trace
from viz_app.text import markdown_literal

CONTEXT_EVENTS = 4
"""Events shown before and after a stop decision."""


def _content(event: Event, height: int = 160, per_line: int = 18) -> None:
    """An event's text in a box that scrolls beyond `height` pixels (`per_line`: characters a
    line of the box holds). Proportional type reads better in a narrow column than code; every
    line is `literal`-escaped, so Markdown and HTML in it show as written."""
    if not event.text:
        st.caption("no content")
        return
    lines = [markdown_literal(line, None) for line in event.text.splitlines() if line.strip()]
    rows = sum(1 + len(line) // per_line for line in lines)
    with st.container(height=min(height, 34 + 26 * rows), border=True):
        st.markdown("  \n".join(lines))


def evidence_above(trace: Trace, analysis: Analysis, target: LabelTarget, base: str) -> bool:
    """For a stop, the events around it with their content go above the answers, so the
    evidence is in view as the reviewer answers (the cursor and its keys stay below); True
    when drawn."""
    if target.event_id is None or "stop" not in target.kinds:
        return False
    _stop(trace, analysis, trace.event(target.event_id), target, base, part="window")
    return True


def draw_context(trace: Trace, analysis: Analysis, target: LabelTarget, base: str, *,
             stop_above: bool = False, evidence: bool = True) -> None:
    if evidence:
        _evidence(trace, analysis, target, base)
    if target.event_id is not None and "stop" in target.kinds:
        _stop(trace, analysis, trace.event(target.event_id), target, base,
              part="walk" if stop_above else "all")


def target_evidence(trace: Trace, analysis: Analysis, target: LabelTarget, key: str) -> None:
    """What a target's question is about, for a page that shows it beside the form
    (`target_form(..., evidence_apart=True)`): the whole run's last event, an aggregate's
    merged inputs beside its output, a stop's last events beside those that came after it
    (the form keeps its compact list to pick from and the cursor its keys walk), another
    event's content."""
    if target.event_id is not None and "stop" in target.kinds and \
            "aggregate" not in target.kinds:
        _stop_story(trace, analysis, trace.event(target.event_id), target)
        return
    _evidence(trace, analysis, target, key)


STORY_EVENTS = 3
"""Events shown before a stop (and after it) beside the form, with their content."""


def _stop_story(trace: Trace, analysis: Analysis, event: Event, target: LabelTarget) -> None:
    where = analysis.position[event.id]
    before = analysis.order[max(0, where - STORY_EVENTS): where + 1]
    after = analysis.order[where + 1: where + 1 + STORY_EVENTS]
    left, right = st.columns(2, gap="small")
    with left:
        st.markdown("**The last events, up to the stop**" + (
            " (inferred: the trace has no stop decision)" if target.inferred else ""))
        for item in before:
            _story_event(item, analysis, "■ stop · " if item.id == event.id else "")
    with right:
        later = len(analysis.order) - where - 1
        st.markdown(f"**After the stop** ({later} event{'s' if later != 1 else ''})")
        if not after:
            st.caption("nothing: the run ends with the stop")
        for item in after:
            _story_event(item, analysis, "")


def _story_event(item: Event, analysis: Analysis, mark: str) -> None:
    st.caption(f"{mark}**{markdown_literal(item.id, 20)}** {markdown_literal(item.type)} from "
               f"{markdown_literal(item.from_ or analysis.actor[item.id], 30)} · "
               f"t={float(item.t):g}s")
    _content(item, 100, per_line=40)


def _evidence(trace: Trace, analysis: Analysis, target: LabelTarget, key: str) -> bool:
    """The whole run's last event, an aggregate's merged inputs beside its output, another
    event's content: all a target's evidence but a stop's (drawn with its cursor)."""
    if target.event_id is None:
        last = analysis.order[-1]
        st.caption(f"The whole run on task **{markdown_literal(trace.task_id, 80)}**. "
                   "Its last event:")
        _content(last, 120)
        return True
    event = trace.event(target.event_id)
    if "aggregate" in target.kinds:
        _aggregate(trace, analysis, event, target, key)
        return True
    if "stop" in target.kinds:
        return False
    st.caption(f"**{markdown_literal(event.type)}** from "
               f"{markdown_literal(event.from_ or event.agent, 40)}"
               + (f" to {markdown_literal(event.to, 40)}" if event.to else ""))
    _content(event, 140)
    return True


def _aggregate(trace: Trace, analysis: Analysis, event: Event, target: LabelTarget,
               base: str) -> None:
    inputs = [trace.event(i) for i in target.inputs]
    left, right = st.columns(2, gap="small")
    with left:
        st.markdown(f"**Merged** ({len(inputs)})")
        if not inputs:
            st.caption("no inputs found")
        for item in inputs:
            st.caption(f"**{markdown_literal(item.id, 20)}** {markdown_literal(item.type)} from "
                       f"{markdown_literal(item.from_ or analysis.actor[item.id], 30)}")
            _content(item, 130)
    with right:
        st.markdown("**Produced**")
        st.caption(f"**{markdown_literal(event.id, 20)}** by "
                   f"{markdown_literal(analysis.actor[event.id], 30)}")
        _content(event, max(130, 150 * max(1, len(inputs))))
    if st.button("Compare in a wide view", key=f"{base}:compare:{event.id}",
                 icon=":material/open_in_full:"):
        _compare(trace, analysis, event, inputs)


@st.dialog("Inputs and aggregate", width="large")
def _compare(trace: Trace, analysis: Analysis, event: Event, inputs: list[Event]) -> None:
    left, right = st.columns(2)
    with left:
        for item in inputs:
            st.markdown(f"**{markdown_literal(item.id, 20)}** {markdown_literal(item.type)} from "
                        f"{markdown_literal(item.from_ or analysis.actor[item.id], 40)}")
            _content(item, 260, per_line=70)
    with right:
        st.markdown(f"**{markdown_literal(event.id, 20)}** aggregate by "
                    f"{markdown_literal(analysis.actor[event.id], 40)}")
        _content(event, 620, per_line=70)


def _stop(trace: Trace, analysis: Analysis, event: Event, target: LabelTarget, base: str,
          part: str = "all") -> None:
    """The events around a stop, with their content, and a cursor the arrow keys walk: Enter
    makes the event under it the 'should have stopped here' answer. `part`: "window" draws the
    events only, "walk" the cursor and its keys only, "all" both."""
    state = st.session_state[f"_{base}"]
    cursors = state.setdefault("cursor", {})
    order = analysis.order
    where = analysis.position[event.id]
    at = cursors.get(event.id, min(where + 1, len(order) - 1))
    around = (1, 2) if part == "window" else (CONTEXT_EVENTS, CONTEXT_EVENTS)  # above: compact
    low = max(0, min(where, at) - around[0])
    window = order[low: max(where, at) + around[1] + 1]
    pointer_key = f"{base}:{event.id}:pointer"
    if part == "walk":
        _walk(analysis, event, base, state, cursors, at, pointer_key)
        return
    st.markdown("**Around the stop**" + (" (inferred: the trace has no stop decision)"
                                         if target.inferred else ""))

    def mark(e: Event) -> str:
        place = "■ stop" if e.id == event.id else (
            "after" if analysis.position[e.id] > where else "before")
        return ("▶ " if analysis.position[e.id] == at else "") + place

    frame = pd.DataFrame([{
        "": mark(e), "event": e.id, "t": float(e.t), "agent": analysis.actor[e.id],
        "type": e.type, "text": short(e.text, 200)} for e in window])

    def picked() -> None:
        rows = st.session_state[f"{base}:around:{event.id}"]["selection"]["rows"]
        if rows and frame.iloc[rows[0]]["event"] != event.id:
            chosen = str(frame.iloc[rows[0]]["event"])
            cursors[event.id] = analysis.position[chosen]
            set_answer(base, pointer_key, chosen)

    shown = frame.drop(columns=["event", "t"]) if part == "window" else frame  # text in view
    st.dataframe(shown, key=f"{base}:around:{event.id}", hide_index=True, on_select=picked,
                 selection_mode="single-row", width="stretch",
                 column_config={"": st.column_config.TextColumn(width=70),
                                "event": st.column_config.TextColumn(width=50),
                                "t": st.column_config.NumberColumn(format="%.1f", width=50),
                                "agent": st.column_config.TextColumn(width=100),
                                "type": st.column_config.TextColumn(width=80),
                                "text": st.column_config.TextColumn(width="large")})

    if part == "all":
        _walk(analysis, event, base, state, cursors, at, pointer_key)


def _walk(analysis: Analysis, event: Event, base: str, state: dict, cursors: dict, at: int,
          pointer_key: str) -> None:
    """The cursor ▶ over the events around a stop, the keys that walk it, and its content."""
    order = analysis.order

    def walk(step: int) -> None:
        cursors[event.id] = max(0, min(len(order) - 1, at + step))

    def pick() -> None:
        if order[at].id != event.id:
            set_answer(base, pointer_key, order[at].id)

    keys = st.columns([1, 1, 1.3], gap="small")
    keys[0].button("earlier", key=f"{base}:walk-up:{event.id}", icon=":material/arrow_upward:",
                   on_click=walk, args=(-1,), shortcut=key_map.shortcut("walk-earlier"),
                   width="stretch", disabled=at == 0,
                   help="Move the cursor ▶ to the event before (↑)")
    keys[1].button("later", key=f"{base}:walk-down:{event.id}",
                   icon=":material/arrow_downward:", on_click=walk, args=(1,),
                   shortcut=key_map.shortcut("walk-later"),
                   width="stretch", disabled=at == len(order) - 1,
                   help="Move the cursor ▶ to the event after (↓)")
    keys[2].button("stop here", key=f"{base}:walk-pick:{event.id}", on_click=pick,
                   shortcut=key_map.shortcut("walk-pick"), width="stretch",
                   disabled=order[at].id == event.id,
                   icon=":material/keyboard_return:",
                   help="Make the event under the cursor the 'should have stopped here' "
                        "answer (Enter)")
    under = order[at]
    st.caption(f"▶ **{markdown_literal(under.id, 20)}** {markdown_literal(under.type)} from "
               f"{markdown_literal(under.from_ or analysis.actor[under.id], 30)} · "
               f"t={float(under.t):g}s")
    _content(under, 150)
    st.caption("Pick a row, walk with ↑ ↓ and press Enter, or use the timeline:")
    st.toggle("pick on the timeline", value=state["picking"], key=f"{base}:picking:{event.id}",
              on_change=lambda: state.update(picking=st.session_state[
                  f"{base}:picking:{event.id}"]),
              help="While on, the next event you click in the tree, timeline or inspector "
                   "becomes the 'should have stopped here' answer.")
