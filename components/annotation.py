"""The annotation panel: the open trace's targets in order, each with its rubric questions in a
form, the context a reviewer needs to judge it, progress, and the way to the next unlabelled
target or trace.

Everything the reviewer saves goes through the Workspace the page gives (no SQL here, and the
rules of a save are the Workspace's).
Trace text is shown with `st.code`, dataframes and `literal`-escaped Markdown, never as HTML.
Keyboard: Streamlit's own button shortcuts, each key read from the one key map
(`components.keys`): digits pick the n-th answer, letters toggle tags, Ctrl+Enter saves, N / P /
S move on, back and skip, Shift+N opens the next trace, arrows and Enter pick where a stop should
have been, ? or H lists them (`keys.help_table("trace")`); `components.keyboard` adds ?, W and
Ctrl+Enter from a focused answer. Trace text never goes into a label that takes HTML.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from components import keys as key_map
from components.correction import correction_box
from components.keyboard import typing_note
from components.pointer import pointer_check
from components.suggestions import suggestions_view
from viz_app.analysis import Analysis
from viz_app.errors import LabelError, RubricError, StoreError
from viz_app.labels import (LATER_THAN_RECORDED, Label, LabelTarget, Question, Reviewer, Rubric,
                            Suggestion, asked, progress_of)
from viz_app.model import Event, Trace
from viz_app.text import markdown_literal
from viz_app.workspace import Workspace

CONTEXT_EVENTS = 4
"""Events shown before and after a stop decision."""

SCALE_KEYS = "".join(key_map.key("pick").presses())
"""Keys that pick the n-th answer of a scale or category question (Streamlit button shortcuts)."""


SaveAnswers = Callable[[dict[str, Any], str, float], list[Label]]
"""How a form saves: called with the answers by question id, the note and the seconds spent on
the target; returns the labels made. LabelError or StoreError keeps the answers in the form and
shows the sentence beside it. The trace page saves through `ws.labelling.save_answers`, the review
page through `ws.campaigns.submit`, the adjudication page through `ws.campaigns.adjudicate`."""


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


def _remembered(key: tuple, make: Callable[[], Any]) -> Any:
    """A value computed once per session for the open trace (the last two kept): the targets
    of a 20,000-event trace take half a second to find, too long for every key press."""
    memo = st.session_state.setdefault("_ann_memo", {})
    if key not in memo:
        memo[key] = make()
        while len(memo) > 2:
            memo.pop(next(iter(memo)))
    return memo[key]


def _event_labels(trace: Trace, analysis: Analysis) -> dict[str, str]:
    """Every event's one-line label, for the 'should have stopped here' list."""
    return _remembered(("event labels", trace.trace_id, trace.sha256),
                       lambda: {e.id: _event_label(e, analysis) for e in analysis.order})


def annotation_panel(trace: Trace, analysis: Analysis, workspace: Workspace,
                     reviewer: Reviewer | None, selected_event: str | None, *,
                     open_trace: Callable[[str], None],
                     on_choose: Callable[[str], None],
                     identify_first: str = "Sign in, or enter your name under **Reviewer**, "
                                           "in the sidebar to label this trace.") -> None:
    """Draw the panel for one trace. `open_trace(trace_id)` is called to go to the next trace
    the reviewer has left to label, `on_choose(event_id)` when the reviewer moves to a target
    (in the widget callback, before anything is drawn: the page selects it in the tree,
    timeline and inspector); `identify_first` is what the panel says while nobody is named
    (the page knows whether the app signs people in).

    The answers are plain widgets, not an `st.form`: each click or key reaches the server at
    once, so Ctrl+Enter saves whatever the focus, and an unsaved answer is kept (per target,
    for the session) when the reviewer moves away and comes back."""
    st.markdown("#### Labels")
    try:
        rubric = workspace.rubric
    except RubricError as err:
        st.error(f"The rubric cannot be used: {markdown_literal(err, 400)}")
        return
    if not reviewer:
        st.info(identify_first)
        return
    base = f"ann:{trace.trace_id}:{trace.sha256[:12]}"
    state = _state(base)
    _show_flash(base)

    found = _remembered(("targets", trace.trace_id, trace.sha256, id(rubric)),
                        lambda: workspace.library.targets(trace))
    mine = workspace.labelling.answers(trace.trace_id, reviewer.name)
    progress = progress_of(found, trace.trace_id, [x for d in mine.values() for x in d.values()])
    st.progress(progress.labelled / progress.total if progress.total else 1.0,
                text=f"{progress.text} by {markdown_literal(reviewer.name, 40)}")

    shown = [t for t in found if t.required or state["optional"]]
    keys = [t.key for t in shown]
    if not shown:
        st.caption("The rubric asks nothing about this trace.")
        return
    done = {t.key for t in found if set(t.required) <= set(mine.get(t.key, {}))}
    _follow_selection(state, selected_event, keys, base, found)
    if state["target"] not in keys:
        first = next_target_key(keys, done, None, state["skipped"])
        state["target"] = first if first is not None else keys[0]
    target = shown[keys.index(state["target"])]

    def move(new_key: str | None, *, skip: bool = False) -> None:
        if skip and state["target"] not in state["skipped"]:
            state["skipped"].append(state["target"])
        # the browser may hand the target box's shown label back after its labels change (a
        # save turns ○ into ✓): only a key of this trace's targets moves the panel
        if new_key is None or new_key not in keys or new_key == state["target"]:
            return
        if state["target"] not in done and not skip and _drafted(base, state["target"]):
            _flash(base, "warning", f"Your answer on {state['target'] or 'the whole trace'} is "
                                    "kept but not saved.")
        _leave(state, base, new_key)
        if new_key:  # the whole trace ("") selects no event
            on_choose(new_key)

    _navigation(trace, workspace, reviewer, state, keys, done, base, open_trace, move)
    st.selectbox("Target", keys, index=keys.index(target.key), key=f"{base}:target:{target.key}",
                 format_func=lambda k: _target_label(shown[keys.index(k)], analysis, k in done),
                 on_change=lambda: move(st.session_state.get(f"{base}:target:{target.key}")),
                 help="Everything the rubric asks about in this trace, in time order; "
                      "✓ marks the ones you have labelled.")
    saved_mine = mine.get(target.key, {})
    # blind first: the Workspace says whether the reviewer may see the suggestions yet, and
    # what the save records of it
    seen = workspace.suggestions.visible(trace, target, reviewer.name)

    def save(values: dict[str, Any], comment: str, seconds: float) -> list[Label]:
        return workspace.labelling.save_answers(
            trace, target, values, reviewer, comment=comment, seconds_spent=seconds,
            suggestions_visible=seen.suggestions_visible)

    above = _evidence_above(trace, analysis, target, base)
    _form(trace, analysis, rubric, target, saved_mine, state, base, save)
    suggestions_view(seen.suggestions, rubric, key=f"{base}:{target.key}",
                     on_select_event=on_choose, hidden=not seen.shown)
    _context(trace, analysis, target, base, stop_above=above)
    options = st.columns(2)
    options[0].toggle("blind mode", value=st.session_state.get("_ann_blind", True),
                      key=f"{base}:blind", on_change=_set_blind, args=(f"{base}:blind",),
                      help="Hide other reviewers' answers until you have saved yours.")
    options[1].toggle("optional targets", value=state["optional"], key=f"{base}:optional",
                      on_change=_set_optional, args=(state, f"{base}:optional"),
                      help="Also list targets whose questions are all optional (messages).")
    _others(workspace, trace, target, reviewer.name)


def target_form(trace: Trace, analysis: Analysis, rubric: Rubric, target: LabelTarget, *,
                key: str, save: SaveAnswers, saved: Mapping[str, Label] | None = None,
                suggestions: Sequence[Suggestion] = (), suggestions_hidden: bool = True,
                on_choose: Callable[[str], None] | None = None,
                note_label: str = "Note (optional)", save_label: str = "Save",
                evidence_apart: bool = False) -> None:
    """One target's questions (those of `target.questions`), with the keys of the labels panel,
    and the context a reviewer judges it by (merged inputs beside the output, the events around
    a stop), saving through `save`: the form the labels panel draws, for a page that chooses the
    target itself (the review page's claim, the adjudication page's disputed target).

    `key` keeps this form's widgets and drafts apart (one per claim, say); `saved` prefills the
    answers; `suggestions` are shown after the context, or only counted while
    `suggestions_hidden` (blind-first: the page decides). `on_choose(event_id)` is called when
    the reviewer picks an event (an evidence link). With `evidence_apart` the page draws the
    evidence itself (`target_evidence`, beside the form) and the form keeps, at a stop, its
    compact list of events to pick from and the cursor."""
    state = _state(key)
    _show_flash(key)
    above = _evidence_above(trace, analysis, target, key)
    _form(trace, analysis, rubric, target, saved or {}, state, key, save, note_label=note_label,
          save_label=save_label)
    suggestions_view(list(suggestions), rubric, key=f"{key}:{target.key}",
                     on_select_event=on_choose, hidden=suggestions_hidden)
    _context(trace, analysis, target, key, stop_above=above, evidence=not evidence_apart)


def asked_only(target: LabelTarget, questions: Sequence[str], rubric: Rubric) -> LabelTarget:
    """A target with only some of its questions (a campaign's subset), and the follow-ups of
    those; the required ones stay required."""
    wanted = set(questions)
    kept = [q for q in target.questions if q in wanted or (
        rubric.question(q).ask_when is not None and rubric.question(q).ask_when.question
        in wanted)]
    return target.model_copy(update={"questions": kept,
                                     "required": [q for q in target.required if q in kept]})


def _state(base: str) -> dict:
    """What the panel keeps for one trace (or one form) in the session: the target, the event
    last selected, when the target was opened, the skipped targets, the stop cursors."""
    state = st.session_state.setdefault(f"_{base}", {"target": None, "seen": None,
                                                     "opened": time.time(), "picking": False,
                                                     "optional": False})
    state.setdefault("skipped", [])
    return state


# -- which target ------------------------------------------------------------------------------


def next_target_key(keys: list[str], done: set[str], current: str | None,
                    skipped: list[str]) -> str | None:
    """The target N moves to: the first unlabelled target after `current` (in order, wrapping),
    never `current` itself; targets the reviewer skipped come last, in the order skipped.
    None when no other target is left to label."""
    start = keys.index(current) + 1 if current in keys else 0
    ordered = keys[start:] + keys[:start]
    left = [k for k in ordered if k not in done and k != current]
    fresh = [k for k in left if k not in skipped]
    if fresh:
        return fresh[0]
    later = [k for k in skipped if k in left]
    return later[0] if later else None


def previous_target_key(keys: list[str], current: str | None) -> str | None:
    """The target P moves to: the one before `current` in order (None at the first)."""
    if current not in keys:
        return None
    where = keys.index(current)
    return keys[where - 1] if where > 0 else None


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
        _set_answer(base, f"{base}:{state['target']}:pointer", selected)
        state["picking"] = False
        return
    if selected in keys and selected != state["target"]:
        _leave(state, base, selected)


def _leave(state: dict, base: str, new_key: str) -> None:
    state["target"] = new_key
    state["seen"] = new_key or state["seen"]
    state["opened"] = time.time()
    state["picking"] = False


def _set_blind(key: str) -> None:
    st.session_state["_ann_blind"] = st.session_state[key]


def _set_optional(state: dict, key: str) -> None:
    state["optional"] = st.session_state[key]


def _navigation(trace: Trace, workspace: Workspace, reviewer: Reviewer, state: dict,
                keys: list[str], done: set[str], base: str,
                open_trace: Callable[[str], None], move: Callable) -> None:
    upcoming = next_target_key(keys, done, state["target"], state["skipped"])
    before = previous_target_key(keys, state["target"])
    cols = st.columns(3, gap="small") + st.columns([2, 1], gap="small")
    cols[0].button("Back", key=f"{base}:previous", icon=":material/skip_previous:",
                   on_click=move, args=(before,), disabled=before is None, width="stretch",
                   shortcut=key_map.shortcut("previous-target"),
                   help=f"The target before this one (key {key_map.shortcut('previous-target')})")
    cols[1].button("Next target", key=f"{base}:next", icon=":material/skip_next:",
                   on_click=move, args=(upcoming,), disabled=upcoming is None,
                   width="stretch", shortcut=key_map.shortcut("next-target"),
                   help="The next target you have not labelled yet; skipped ones come last "
                        f"(key {key_map.shortcut('next-target')})")
    cols[2].button("Skip", key=f"{base}:skip", icon=":material/redo:", on_click=move,
                   args=(upcoming,), kwargs={"skip": True}, width="stretch",
                   shortcut=key_map.shortcut("skip-target"), disabled=state["target"] in done,
                   help="Leave this target for later: it comes back after the others "
                        f"(key {key_map.shortcut('skip-target')})")

    if cols[3].button("Next trace", key=f"{base}:next_trace", width="stretch",
                      icon=":material/fast_forward:", shortcut=key_map.shortcut("next-trace"),
                      help="The next trace in the library with targets you have not labelled "
                           f"({key_map.shortcut('next-trace')})"):
        following = workspace.labelling.next_unlabelled(reviewer.name, after=trace.trace_id)
        if following is None:
            st.toast("Every trace in the library is labelled. Thank you!",
                     icon=":material/check_circle:")
        else:
            open_trace(following)  # not from a callback: pages are known only to a run
    if cols[4].button("Keys", key=f"{base}:keys", shortcut=key_map.shortcut("keys"),
                      width="stretch", icon=":material/keyboard:",
                      help=f"The keys of the labels panel (key {key_map.shown('keys')})"):
        _keys_help()


@st.dialog("Keys of the labels panel")
def _keys_help() -> None:
    st.markdown(key_map.help_table("trace"))


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


def _evidence_above(trace: Trace, analysis: Analysis, target: LabelTarget, base: str) -> bool:
    """For a stop, the events around it with their content go above the answers, so the
    evidence is in view as the reviewer answers (the cursor and its keys stay below); True
    when drawn."""
    if target.event_id is None or "stop" not in target.kinds:
        return False
    _stop(trace, analysis, trace.event(target.event_id), target, base, part="window")
    return True


def _context(trace: Trace, analysis: Analysis, target: LabelTarget, base: str, *,
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
        "type": e.type, "text": _short(e.text, 200)} for e in window])

    def picked() -> None:
        rows = st.session_state[f"{base}:around:{event.id}"]["selection"]["rows"]
        if rows and frame.iloc[rows[0]]["event"] != event.id:
            chosen = str(frame.iloc[rows[0]]["event"])
            cursors[event.id] = analysis.position[chosen]
            _set_answer(base, pointer_key, chosen)

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
            _set_answer(base, pointer_key, order[at].id)

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


# -- the form ---------------------------------------------------------------------------------


def tag_letters(labels: list[str]) -> list[str]:
    """A letter key for each tag: the first letter of its label still free, else the first
    free letter of the alphabet ('' when none is left). Free: no other key of the form's pages
    binds it, nor Streamlit (`keys.tag_free`)."""
    allowed = set(key_map.tag_free())
    taken: set[str] = set()
    letters = []
    for label in labels:
        free = [c for c in label.upper() + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                if c in allowed and c not in taken]
        letter = free[0] if free else ""
        taken.add(letter)
        letters.append(letter)
    return letters


def _widget_key(base: str, target: LabelTarget, question: Question) -> str:
    if question.kind == "event":
        return f"{base}:{target.event_id}:pointer"
    return f"{base}:{target.key}:{question.id}"


def _drafts(base: str) -> dict[str, Any]:
    """Answers given but not saved, by widget key: kept for the session, so an answer is there
    again when the reviewer comes back to a target (Streamlit drops a widget's state when the
    widget is not drawn)."""
    return st.session_state.setdefault(f"_{base}:drafts", {})


def _drafted(base: str, target_key: str) -> bool:
    prefix = f"{base}:{target_key}:"
    return any(k.startswith(prefix) and v not in (None, "", []) for k, v in _drafts(base).items())


def _set_answer(base: str, key: str, value: Any) -> None:
    st.session_state[key] = value
    _drafts(base)[key] = value


def _keep(base: str, key: str) -> None:
    _drafts(base)[key] = st.session_state.get(key)


def _form(trace: Trace, analysis: Analysis, rubric: Rubric, target: LabelTarget,
          saved: Mapping[str, Label], state: dict, base: str, save: SaveAnswers, *,
          note_label: str = "Note (optional)", save_label: str = "Save") -> None:
    questions = [rubric.question(q) for q in target.questions]
    drafts = _drafts(base)
    note_key = f"{base}:{target.key}:note"
    for key, value in [(_widget_key(base, target, q), saved[q.id].value if q.id in saved
                        else None) for q in questions] + [
            (note_key, next(iter(saved.values())).comment if saved else None)]:
        if key not in st.session_state:  # a draft, else the saved answer, prefills the widget
            if key in drafts:
                st.session_state[key] = drafts[key]
            elif value is not None:
                st.session_state[key] = value
    choice_questions = [q for q in questions if q.kind in ("scale", "categorical", "boolean")]
    digits = {q.id: action for q, action in zip(choice_questions, ("pick", "pick-second"))}
    with st.container(border=True, key="ann-form"):
        with st.container(key="ann-keys", horizontal=True):
            for q in questions:
                if q.id in digits:
                    _choice_keys(q, _widget_key(base, target, q), digits[q.id], base)
                elif q.kind == "tags":
                    _tag_keys(q, _widget_key(base, target, q), base)
        stamp = max(x.created_at for x in saved.values()) if saved else ""
        status = (f"saved {stamp[:10]} at {stamp[11:16]} UTC" if saved
                  else ":orange[not saved yet]")
        if _drafted(base, target.key) and saved:
            status += " · :orange[changed, not saved]"
        failed = st.session_state.pop(f"_{base}:error", None)
        if failed:
            st.error(failed)

        def save_now() -> None:
            values = {q.id: st.session_state.get(_widget_key(base, target, q))
                      for q in questions}
            _save(save, target, values, st.session_state.get(note_key) or "", state, base)

        save_col, status_col = st.columns([1.3, 2], vertical_alignment="center")
        save_col.button(save_label, type="primary", shortcut=key_map.shortcut("save"),
                        icon=":material/save:",
                        key=f"{base}:save:{target.key}", on_click=save_now, width="stretch")
        status_col.caption(f"{status} · nothing is stored until you save")
        with st.container(key="ann-keys-save"):
            # Streamlit's radio and pills keep Enter to themselves while focused (after a click
            # on an answer); Ctrl+S reaches the page from anywhere
            st.button(f"Save ({key_map.shortcut('save-too')})", key=f"{base}:save-s:{target.key}",
                      shortcut=key_map.shortcut("save-too"), on_click=save_now)
        for q in questions:
            _widget(q, _widget_key(base, target, q), trace, analysis, target, base,
                    digits.get(q.id))
        st.text_area(note_label, key=note_key, height=68, on_change=_keep,
                     args=(base, note_key),
                     placeholder="anything a trainer or another reviewer should know")
        typing_note("form")  # last: showing it moves none of the answers


def _choice_keys(question: Question, key: str, action: str, base: str) -> None:
    """Buttons with the keys of `action` ("pick": 1..n, "pick-second": Alt+1..n) as shortcuts:
    each picks the n-th answer. Hidden by the page's style: the answers show their digit."""
    values = [c.value for c in question.choices][: len(SCALE_KEYS)]
    for n, value in enumerate(values, 1):
        press = key_map.digit_shortcut(action, n)
        st.button(str(n), key=f"{key}:key:{n}", shortcut=press,
                  on_click=_set_answer, args=(base, key, value),
                  help=f"{question.choice(value).label} (key {press})")


def _tag_keys(question: Question, key: str, base: str) -> None:
    """Buttons with a letter each as shortcut: each toggles its tag."""
    values = [c.value for c in question.choices]
    letters = tag_letters([c.label for c in question.choices])

    def toggle(value: Any) -> None:
        chosen = list(st.session_state.get(key) or [])
        chosen = [v for v in chosen if v != value] if value in chosen else chosen + [value]
        _set_answer(base, key, [v for v in values if v in chosen])

    for value, letter in zip(values, letters):
        if letter:
            st.button(letter, key=f"{key}:key:{letter}", shortcut=letter, on_click=toggle,
                      args=(value,), help=f"{question.choice(value).label} (key {letter})")


def _keyed(label: str, key: str) -> str:
    """A choice's label with its key, unless the label already starts with it."""
    return label if not key or label.startswith(f"{key} ") else f"{key} · {label}"


def _widget(q: Question, key: str, trace: Trace, analysis: Analysis, target: LabelTarget,
            base: str, digits: str | None = None) -> Any:
    """One question's widget; `digits` is the key map's action whose digits pick its answers
    ("pick", "pick-second"), None when no digit does."""
    label = markdown_literal(q.prompt, 200)
    if q.kind in ("scale", "categorical", "boolean"):
        values = [c.value for c in q.choices]
        if key not in st.session_state or st.session_state[key] not in values + [None]:
            # no answer yet (set here, so no default is passed); set only once: a value set
            # here would overwrite an answer the key script ticked while this run was under way
            st.session_state[key] = None
        shown = {v: _keyed(q.choice(v).label, key_map.digit_shortcut(digits, i) if digits
                           and i <= len(SCALE_KEYS) else "") for i, v in enumerate(values, 1)}
        guidance = "\n".join([q.guidance or ""] + [f"- **{c.label}**: {c.guidance}"
                                                    for c in q.choices if c.guidance]).strip()
        # the container names the digits' question for the page's key script (keyboard.js),
        # which ticks the answer in the browser at once, before the server hears of it
        holder = (st.container(key=f"ann-pick-{'alt' if digits == 'pick-second' else 'plain'}")
                  if digits is not None else st.container())
        with holder:
            return st.radio(label, values, key=key, help=guidance or None,
                            format_func=shown.__getitem__, on_change=_keep, args=(base, key))
    if q.kind == "tags":
        letters = dict(zip([c.value for c in q.choices],
                           tag_letters([c.label for c in q.choices])))
        with st.container(key=f"ann-tags-{q.id}"):  # found by keyboard.js, as the digits are
            return st.pills(label, [c.value for c in q.choices], selection_mode="multi",
                            key=key, format_func=lambda v: f"{q.choice(v).label} · {letters[v]}"
                            if letters[v] else q.choice(v).label,
                            on_change=_keep, args=(base, key), help=q.guidance or None)
    if q.kind == "correction":
        if q.ask_when is not None and not asked(q, {q.ask_when.question: st.session_state.get(
                f"{base}:{target.key}:{q.ask_when.question}")}):
            st.caption(f"{markdown_literal(q.prompt, 120)}: asked when "
                       f"{markdown_literal(q.ask_when.question)} is "
                       f"{markdown_literal(' or '.join(map(str, q.ask_when.values)))}")
            return None
        return correction_box(q, key, trace, analysis, target,
                              lambda k, v: _set_answer(base, k, v))
    if q.kind == "event":
        options = [None] + [e.id for e in analysis.order if e.id != target.event_id]
        if target.event_id and target.event_id in analysis.position:
            options.append(LATER_THAN_RECORDED)  # a premature stop: the run ended too soon
        if st.session_state.get(key) not in options:
            st.session_state.pop(key, None)
        when = f" (only when {', '.join(map(str, q.ask_when.values))})" if q.ask_when else ""
        chosen = st.selectbox(label + when, options, key=key, help=q.guidance or None,
                              on_change=_keep, args=(base, key),
                              format_func=lambda i: "—" if i is None else
                              "later than this run recorded" if i == LATER_THAN_RECORDED
                              and i not in analysis.position else
                              _event_labels(trace, analysis)[i])
        pointer_check(analysis, target.event_id, chosen, key,
                      lambda event_id: _set_answer(base, key, event_id))
        return chosen
    return st.text_area(label, key=key, help=q.guidance or None, height=68, on_change=_keep,
                        args=(base, key))


def _save(save: SaveAnswers, target: LabelTarget, values: dict[str, Any], comment: str,
          state: dict, base: str) -> None:
    """Save the target's answers through `save` (a widget callback: the panel then draws the
    new progress); when it refuses, the sentence shows beside the form and the answers stay."""
    try:
        made = save(values, comment or "", round(time.time() - state["opened"], 1))
    except (LabelError, StoreError) as err:  # nothing saved: the answers stay in the form
        st.session_state[f"_{base}:error"] = markdown_literal(err, 400)
        return
    prefix = f"{base}:{target.key}:"
    drafts = _drafts(base)
    for key in [k for k in drafts if k.startswith(prefix)]:
        del drafts[key]
    _flash(base, "success", f"Saved {len(made)} answer{'s' if len(made) != 1 else ''} on "
                            f"{target.event_id or 'the whole trace'}.")


def _others(workspace: Workspace, trace: Trace, target: LabelTarget, reviewer: str) -> None:
    """Other reviewers' answers on the target, as far as the Workspace lets this reviewer see
    them (`labels_in_view`): on a campaign's target none before their own save in the
    campaign, whatever the blind toggle says; elsewhere none before their own save while the
    toggle is on. Only a count of the rest reaches the browser."""
    blind = st.session_state.get("_ann_blind", True)
    everyone = {x.reviewer for x in workspace.labelling.current(trace.trace_id)
                if x.event_id == target.key and x.reviewer != reviewer}
    rows = [x for x in workspace.campaigns.labels_in_view(trace.trace_id, reviewer, blind=blind)
            if x.event_id == target.key and x.reviewer != reviewer]
    mine = workspace.labelling.history(trace.trace_id, target.key or "", reviewer=reviewer)
    if everyone and not rows:
        sealed = target.key in workspace.campaigns.sealed(trace.trace_id)
        st.caption(f"Other reviewers: {len(everyone)} · hidden until you save yours"
                   + (" in its review campaign (blind whatever the toggle)" if sealed
                      else " (blind mode)"))
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
