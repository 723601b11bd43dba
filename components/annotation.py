"""The annotation panel: the open trace's targets in order, each with its rubric questions in a
form, the context a reviewer needs to judge it, progress, and the way to the next unlabelled
target or trace.

Everything the reviewer saves goes through the Workspace the page gives (no SQL here, and the
rules of a save are the Workspace's).
Trace text is shown with `st.code`, dataframes and `literal`-escaped Markdown, never as HTML.
Keyboard: Streamlit's own button shortcuts (no script of ours runs in the page): keys 1-5 pick
a point of the scale question, Ctrl+Enter saves the form, N goes to the next unlabelled target.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pandas as pd
import streamlit as st

from viz_app.analysis import Analysis
from viz_app.errors import LabelError, RubricError
from viz_app.labels.label import Label, Reviewer, progress_of
from viz_app.labels.rubric import LabelTarget, Question, targets
from viz_app.model import Event, Trace
from viz_app.store.labels import LabelStore
from viz_app.text import markdown_literal
from viz_app.workspace import Workspace

CONTEXT_EVENTS = 4
"""Events shown before and after a stop decision."""

SCALE_KEYS = "123456789"
"""Keys that pick the points of a scale (Streamlit button shortcuts)."""


def _short(text: object, limit: int = 60) -> str:
    """Trace text for a plain-text option label: one line, shortened."""
    value = " ".join(str(text).split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def _target_label(target: LabelTarget, analysis: Analysis, done: bool) -> str:
    mark = "✓" if done else "○"
    if target.event_id is None:
        return f"{mark} the whole trace"
    kinds = " + ".join("inferred stop" if k == "stop" and target.inferred else k
                       for k in target.kinds)
    return f"{mark} {_short(target.event_id, 24)} · {kinds} · {_short(target.agent, 24)} · " \
           f"t={target.t:g}s"


def _event_label(event: Event, analysis: Analysis) -> str:
    return f"{_short(event.id, 20)} · {event.type} · {_short(analysis.actor[event.id], 20)} · " \
           f"t={float(event.t):g}s"


def annotation_panel(trace: Trace, analysis: Analysis, workspace: Workspace,
                     reviewer: Reviewer | None, selected_event: str | None, *,
                     open_trace: Callable[[str], None]) -> str | None:
    """Draw the panel for one trace. Returns the event id of a target the reviewer moved to
    here (the page then selects it in the tree, timeline and inspector), else None;
    `open_trace(trace_id)` is called to go to the next trace the reviewer has left to label."""
    st.markdown("#### Labels")
    try:
        store = workspace.labels
    except RubricError as err:
        st.error(f"The rubric cannot be used: {markdown_literal(err, 400)}")
        return None
    if not reviewer:
        st.info("Enter your name under **Reviewer** in the sidebar to label this trace.")
        return None
    rubric = store.rubric
    base = f"ann:{trace.trace_id}:{trace.sha256[:12]}"
    state = st.session_state.setdefault(f"_{base}", {"target": None, "seen": None,
                                                     "opened": time.time(), "picking": False,
                                                     "optional": False})
    stash = f"_{base}:chosen"
    _show_flash(base)

    found = targets(rubric, analysis)
    mine = store.answers(trace.trace_id, reviewer.name)
    progress = progress_of(found, trace.trace_id, [x for d in mine.values() for x in d.values()])
    st.progress(progress.labelled / progress.total if progress.total else 1.0,
                text=f"{progress.text} by {markdown_literal(reviewer.name, 40)}")

    shown = [t for t in found if t.required or state["optional"]]
    keys = [t.key for t in shown]
    if not shown:
        st.caption("The rubric asks nothing about this trace.")
        return None
    _follow_selection(state, selected_event, keys, base, found)
    if state["target"] not in keys:
        state["target"] = progress.next_target if progress.next_target in keys else keys[0]
    target = shown[keys.index(state["target"])]

    _navigation(trace, workspace, reviewer, state, progress, base, stash, open_trace)
    done = {t.key for t in found if set(t.required) <= set(mine.get(t.key, {}))}
    st.selectbox("Target", keys, index=keys.index(target.key), key=f"{base}:target:{target.key}",
                 format_func=lambda k: _target_label(shown[keys.index(k)], analysis, k in done),
                 on_change=_picked_target, args=(state, base, stash, target.key, mine),
                 help="Everything the rubric asks about in this trace, in time order; "
                      "✓ marks the ones you have labelled.")
    options = st.columns(2)
    options[0].toggle("blind mode", value=st.session_state.get("_ann_blind", True),
                      key=f"{base}:blind", on_change=_set_blind, args=(f"{base}:blind",),
                      help="Hide other reviewers' answers until you have saved yours.")
    options[1].toggle("optional targets", value=state["optional"], key=f"{base}:optional",
                      on_change=_set_optional, args=(state, f"{base}:optional"),
                      help="Also list targets whose questions are all optional (messages).")

    _context(trace, analysis, target, base)
    _form(trace, analysis, workspace, reviewer, target, mine.get(target.key, {}), state, base)
    _others(store, trace, target, reviewer.name, bool(mine.get(target.key)))
    chosen = st.session_state.pop(stash, None)
    return chosen or None


# -- which target ------------------------------------------------------------------------------


def _follow_selection(state: dict, selected: str | None, keys: list[str], base: str,
                      found: list[LabelTarget]) -> None:
    """An event selected elsewhere (tree, timeline, inspector) becomes the current target when
    it is one; while picking a 'should have stopped here' event, it becomes that answer."""
    if selected == state["seen"]:
        return
    state["seen"] = selected
    if selected is None:
        return
    if state["picking"] and state["target"] and selected != state["target"]:
        st.session_state[f"{base}:{state['target']}:pointer"] = selected
        state["picking"] = False
        return
    if selected in keys and selected != state["target"]:
        _leave(state, base, selected)


def _leave(state: dict, base: str, new_key: str) -> None:
    state["target"] = new_key
    state["opened"] = time.time()
    state["picking"] = False


def _picked_target(state: dict, base: str, stash: str, old_key: str,
                   mine: dict[str, dict[str, Label]]) -> None:
    new_key = st.session_state.get(f"{base}:target:{old_key}")
    if new_key is None or new_key == old_key:
        return
    if old_key not in mine:
        _flash(base, "warning", f"You left {old_key or 'the whole trace'} without saving an "
                                "answer.")
    _leave(state, base, new_key)
    st.session_state[stash] = new_key


def _set_blind(key: str) -> None:
    st.session_state["_ann_blind"] = st.session_state[key]


def _set_optional(state: dict, key: str) -> None:
    state["optional"] = st.session_state[key]


def _navigation(trace: Trace, workspace: Workspace, reviewer: Reviewer, state: dict, progress,
                base: str, stash: str, open_trace: Callable[[str], None]) -> None:
    left, right = st.columns(2)

    def next_target() -> None:
        if progress.next_target is not None and progress.next_target != state["target"]:
            _leave(state, base, progress.next_target)
            st.session_state[stash] = progress.next_target

    left.button("Next target", key=f"{base}:next", icon=":material/skip_next:",
                on_click=next_target,
                disabled=progress.next_target is None, width="stretch", shortcut="N",
                help="The first target of this trace you have not labelled yet (key N)")
    if right.button("Next trace", key=f"{base}:next_trace", width="stretch",
                    icon=":material/fast_forward:",
                    help="The next trace in the library with targets you have not labelled"):
        following = workspace.next_unlabelled(reviewer.name, after=trace.trace_id)
        if following is None:
            _flash(base, "success", "Every trace in the library is labelled. Thank you!")
            st.rerun()
        open_trace(following)


# -- what the reviewer judges -------------------------------------------------------------------


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


def _context(trace: Trace, analysis: Analysis, target: LabelTarget, base: str) -> None:
    if target.event_id is None:
        last = analysis.order[-1]
        st.caption(f"The whole run on task **{markdown_literal(trace.task_id, 80)}**. "
                   "Its last event:")
        _content(last, 120)
        return
    event = trace.event(target.event_id)
    if "aggregate" in target.kinds:
        _aggregate(trace, analysis, event, target, base)
    if "stop" in target.kinds:
        _stop(trace, analysis, event, target, base)
    if not {"aggregate", "stop"} & set(target.kinds):
        st.caption(f"**{markdown_literal(event.type)}** from "
                   f"{markdown_literal(event.from_ or event.agent, 40)}"
                   + (f" to {markdown_literal(event.to, 40)}" if event.to else ""))
        _content(event, 140)


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


def _stop(trace: Trace, analysis: Analysis, event: Event, target: LabelTarget, base: str) -> None:
    where = analysis.position[event.id]
    window = analysis.order[max(0, where - CONTEXT_EVENTS): where + CONTEXT_EVENTS + 1]
    st.markdown("**Around the stop**" + (" (inferred: the trace has no stop decision)"
                                         if target.inferred else ""))
    frame = pd.DataFrame([{
        "": "■ stop" if e.id == event.id else ("after" if analysis.position[e.id] > where
                                                 else "before"),
        "event": e.id, "t": float(e.t), "agent": analysis.actor[e.id], "type": e.type,
        "text": _short(e.text, 200)} for e in window])
    pointer_key = f"{base}:{event.id}:pointer"

    def picked() -> None:
        rows = st.session_state[f"{base}:around:{event.id}"]["selection"]["rows"]
        if rows and frame.iloc[rows[0]]["event"] != event.id:
            st.session_state[pointer_key] = str(frame.iloc[rows[0]]["event"])

    st.dataframe(frame, key=f"{base}:around:{event.id}", hide_index=True, on_select=picked,
                 selection_mode="single-row", width="stretch",
                 column_config={"": st.column_config.TextColumn(width=60),
                                "event": st.column_config.TextColumn(width=50),
                                "t": st.column_config.NumberColumn(format="%.1f", width=50),
                                "agent": st.column_config.TextColumn(width=110),
                                "text": st.column_config.TextColumn(width="large")})
    st.caption("Pick a row to set where it should have stopped, or use the timeline:")
    state = st.session_state[f"_{base}"]
    st.toggle("pick on the timeline", value=state["picking"], key=f"{base}:picking:{event.id}",
              on_change=lambda: state.update(picking=st.session_state[
                  f"{base}:picking:{event.id}"]),
              help="While on, the next event you click in the tree, timeline or inspector "
                   "becomes the 'should have stopped here' answer.")


# -- the form ---------------------------------------------------------------------------------


def _widget_key(base: str, target: LabelTarget, question: Question) -> str:
    if question.kind == "event":
        return f"{base}:{target.event_id}:pointer"
    return f"{base}:{target.key}:{question.id}"


def _form(trace: Trace, analysis: Analysis, workspace: Workspace, reviewer: Reviewer,
          target: LabelTarget, saved: dict[str, Label], state: dict, base: str) -> None:
    rubric = workspace.rubric
    questions = [rubric.question(q) for q in target.questions]
    scale = next((q for q in questions if q.kind == "scale"), None)
    if scale is not None:
        _scale_keys(scale, _widget_key(base, target, scale))
    for q in questions:  # saved answers prefill the form, once per target
        key = _widget_key(base, target, q)
        if key not in st.session_state and q.id in saved:
            st.session_state[key] = saved[q.id].value
    with st.form(f"{base}:form:{target.key}", border=True):
        values: dict[str, Any] = {}
        for q in questions:
            values[q.id] = _widget(q, _widget_key(base, target, q), trace, analysis, target)
        note_key = f"{base}:{target.key}:note"
        if note_key not in st.session_state and saved:
            st.session_state[note_key] = next(iter(saved.values())).comment
        comment = st.text_area("Note (optional)", key=note_key, height=68,
                               placeholder="anything a trainer or another reviewer should know")
        stamp = max(x.created_at for x in saved.values()) if saved else ""
        status = (f"saved {stamp[:10]} at {stamp[11:16]} UTC" if saved
                  else ":orange[not saved yet]")
        st.caption(f"{status} · nothing is stored until you press Save (Ctrl+Enter)")
        submitted = st.form_submit_button("Save", type="primary", shortcut="Ctrl+Enter",
                                          icon=":material/save:")
    if submitted:
        _save(workspace, trace, reviewer, target, values, comment, state, base)


def _scale_keys(question: Question, key: str) -> None:
    """Buttons 1..n with the keys 1..n as shortcuts: each sets the scale's answer."""
    points = [c.value for c in question.choices][: len(SCALE_KEYS)]
    columns = st.columns([1.6] + [1] * len(points), vertical_alignment="center")
    columns[0].caption("keys")
    for column, point, shortcut in zip(columns[1:], points, SCALE_KEYS):
        column.button(str(point), key=f"{key}:key:{point}", shortcut=shortcut,
                      on_click=st.session_state.__setitem__, args=(key, point), width="stretch",
                      help=f"{question.choice(point).label} (key {shortcut})")


def _widget(q: Question, key: str, trace: Trace, analysis: Analysis, target: LabelTarget) -> Any:
    label = markdown_literal(q.prompt, 200)
    if q.kind in ("scale", "categorical", "boolean"):
        values = [c.value for c in q.choices]
        if st.session_state.get(key) not in values:
            st.session_state[key] = None  # no answer yet (set here, so no default is passed)
        return st.radio(label, values, key=key, help=q.guidance or None,
                        format_func=lambda v: q.choice(v).label,
                        captions=[c.guidance for c in q.choices])
    if q.kind == "tags":
        return st.pills(label, [c.value for c in q.choices], selection_mode="multi", key=key,
                        format_func=lambda v: q.choice(v).label, help=q.guidance or None)
    if q.kind == "event":
        options = [None] + [e.id for e in analysis.order if e.id != target.event_id]
        if st.session_state.get(key) not in options:
            st.session_state.pop(key, None)
        when = f" (only when {', '.join(map(str, q.ask_when.values))})" if q.ask_when else ""
        return st.selectbox(label + when, options, key=key, help=q.guidance or None,
                            format_func=lambda i: "—" if i is None else
                            _event_label(trace.event(i), analysis))
    return st.text_area(label, key=key, help=q.guidance or None, height=68)


def _save(workspace: Workspace, trace: Trace, reviewer: Reviewer, target: LabelTarget,
          values: dict[str, Any], comment: str, state: dict, base: str) -> None:
    try:
        made = workspace.save_answers(trace, target, values, reviewer, comment=comment or "",
                                      seconds_spent=round(time.time() - state["opened"], 1))
    except LabelError as err:
        st.error(markdown_literal(err, 400))
        return
    _flash(base, "success", f"Saved {len(made)} answer{'s' if len(made) != 1 else ''} on "
                            f"{target.event_id or 'the whole trace'}.")
    st.rerun()


def _others(store: LabelStore, trace: Trace, target: LabelTarget, reviewer: str,
            saved_mine: bool) -> None:
    rows = [x for x in store.current(trace.trace_id) if x.event_id == target.key
            and x.reviewer != reviewer]
    mine = store.history(trace.trace_id, target.key or "", reviewer=reviewer)
    if st.session_state.get("_ann_blind", True) and not saved_mine:
        st.caption(f"Other reviewers: {len({x.reviewer for x in rows})} · hidden until you save "
                   "yours (blind mode)")
    elif rows:
        with st.expander(f"Other reviewers ({len({x.reviewer for x in rows})})"):
            st.dataframe(pd.DataFrame([{"reviewer": x.reviewer, "question": x.question,
                                        "answer": str(x.value), "reward": x.reward,
                                        "note": x.comment} for x in rows]),
                         hide_index=True, width="stretch")
    if mine:
        with st.expander(f"Your history here ({len(mine)} saves)"):
            st.dataframe(pd.DataFrame([{"when": x.created_at[:19], "question": x.question,
                                        "answer": str(x.value), "reward": x.reward}
                                       for x in reversed(mine)]),
                         hide_index=True, width="stretch")


# -- messages that survive a rerun -----------------------------------------------------------------


def _flash(base: str, kind: str, text: str) -> None:
    st.session_state[f"_{base}:flash"] = (kind, text)


def _show_flash(base: str) -> None:
    found = st.session_state.pop(f"_{base}:flash", None)
    if found is None:
        return
    kind, text = found
    # a toast shows wherever the reviewer has scrolled to (the form may be far down the panel)
    st.toast(markdown_literal(text, 300), icon=":material/check_circle:" if kind == "success"
             else ":material/warning:")
