"""A target's form: its questions as widgets with the keys of the key map (`components.keys`),
the answers given but not saved (drafts, kept per target for the session), the save and what
it says. Domain objects in (the trace, the rubric, the target, the saved answers), the
reviewer's answers out through the `save` it is handed; no store is read here."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import streamlit as st

from components import keys as key_map
from components.correction import correction_box
from components.keyboard import typing_note
from components.navigation import event_label
from components.pointer import pointer_check
from viz_app.analysis import Analysis
from viz_app.errors import LabelError, StoreError
from viz_app.labels import LATER_THAN_RECORDED, Label, LabelTarget, Question, Rubric, asked
from viz_app.model import Trace
from viz_app.text import markdown_literal

SCALE_KEYS = "".join(key_map.key("pick").presses())
"""Keys that pick the n-th answer of a scale or category question (Streamlit button shortcuts)."""


SaveAnswers = Callable[[dict[str, Any], str, float], list[Label]]
"""How a form saves: called with the answers by question id, the note and the seconds spent on
the target; returns the labels made. LabelError or StoreError keeps the answers in the form and
shows the sentence beside it. The trace page saves through `ws.labelling.save_answers`, the review
page through `ws.campaigns.submit`, the adjudication page through `ws.campaigns.adjudicate`."""


def remembered(key: tuple, make: Callable[[], Any]) -> Any:
    """A value computed once per session for the open trace (the last two kept): the targets
    of a 20,000-event trace take half a second to find, too long for every key press."""
    memo = st.session_state.setdefault("_ann_memo", {})
    if key not in memo:
        memo[key] = make()
        while len(memo) > 2:
            memo.pop(next(iter(memo)))
    return memo[key]


def event_labels(trace: Trace, analysis: Analysis) -> dict[str, str]:
    """Every event's one-line label, for the 'should have stopped here' list."""
    return remembered(("event labels", trace.trace_id, trace.sha256),
                       lambda: {e.id: event_label(e, analysis) for e in analysis.order})


def form_state(base: str) -> dict:
    """What the panel keeps for one trace (or one form) in the session: the target, the event
    last selected, when the target was opened, the skipped targets, the stop cursors."""
    state = st.session_state.setdefault(f"_{base}", {"target": None, "seen": None,
                                                     "opened": time.time(), "picking": False,
                                                     "optional": False})
    state.setdefault("skipped", [])
    return state


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
    found = st.session_state.get(f"_{base}:drafts")
    if found is None:  # a new session (a reload, another tab): the kept draft comes back
        keeper = st.session_state.get(f"_{base}:keeper")
        found = st.session_state[f"_{base}:drafts"] = dict(keeper.load()) if keeper else {}
    return found


def keep_drafts(form: str, keeper: Any) -> None:
    """Keep the drafts of the form `form` (its key) beyond the session with `keeper` (an
    object with `load() -> dict` and `keep(dict)`: the pages' `viz_app.ui.drafts.DraftKeeper`,
    the Workspace's drafts); None keeps them for the session only."""
    if keeper is None:
        st.session_state.pop(f"_{form}:keeper", None)
    else:
        st.session_state[f"_{form}:keeper"] = keeper


def _persist(base: str) -> None:
    """Keep the form's drafts beyond the session, where a keeper is given."""
    keeper = st.session_state.get(f"_{base}:keeper")
    if keeper is not None:
        keeper.keep(_drafts(base))


def drafted(base: str, target_key: str) -> bool:
    prefix = f"{base}:{target_key}:"
    return any(k.startswith(prefix) and v not in (None, "", []) for k, v in _drafts(base).items())


def set_answer(base: str, key: str, value: Any) -> None:
    st.session_state[key] = value
    _drafts(base)[key] = value
    _persist(base)


def _keep(base: str, key: str) -> None:
    _drafts(base)[key] = st.session_state.get(key)
    _persist(base)


def draw_form(trace: Trace, analysis: Analysis, rubric: Rubric, target: LabelTarget,
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
        if drafted(base, target.key) and saved:
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
                  on_click=set_answer, args=(base, key, value),
                  help=f"{question.choice(value).label} (key {press})")


def _tag_keys(question: Question, key: str, base: str) -> None:
    """Buttons with a letter each as shortcut: each toggles its tag."""
    values = [c.value for c in question.choices]
    letters = tag_letters([c.label for c in question.choices])

    def toggle(value: Any) -> None:
        chosen = list(st.session_state.get(key) or [])
        chosen = [v for v in chosen if v != value] if value in chosen else chosen + [value]
        set_answer(base, key, [v for v in values if v in chosen])

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
                              lambda k, v: set_answer(base, k, v))
    if q.kind == "event":
        at = analysis.position.get(target.event_id) if target.event_id else None
        judged = st.session_state.get(f"{base}:{target.key}:{q.ask_when.question}") \
            if q.ask_when else None
        events = [e.id for e in analysis.order if e.id != target.event_id]
        if at is not None and judged == "premature":  # it should have gone on: only later
            events = [e for e in events if analysis.position[e] > at]
        elif at is not None and judged == "late":  # it should have stopped before
            events = [e for e in events if analysis.position[e] < at]
        options = [None] + events
        if at is not None and judged != "late":
            options.append(LATER_THAN_RECORDED)  # a premature stop: the run ended too soon
        if st.session_state.get(key) not in options:
            st.session_state.pop(key, None)
        if judged == "premature" and not events and st.session_state.get(key) is None:
            set_answer(base, key, LATER_THAN_RECORDED)  # the only answer the run allows
        when = f" (only when {', '.join(map(str, q.ask_when.values))})" if q.ask_when else ""
        chosen = st.selectbox(label + when, options, key=key, help=q.guidance or None,
                              on_change=_keep, args=(base, key),
                              format_func=lambda i: "—" if i is None else
                              "later than this run recorded" if i == LATER_THAN_RECORDED
                              and i not in analysis.position else
                              event_labels(trace, analysis)[i])
        if chosen == LATER_THAN_RECORDED and judged == "premature":
            st.caption(":orange[No later event in this run: saved as *later than this run "
                       "recorded*.]" if not events else "Saved as *later than this run "
                       "recorded*: what it should have waited for came after the run's end.")
        elif judged in ("premature", "late"):
            st.caption(f"Only events {'after' if judged == 'premature' else 'before'} the "
                       f"stop are offered: a {judged} stop points "
                       f"{'forward' if judged == 'premature' else 'back'}.")
        pointer_check(analysis, target.event_id, chosen, key,
                      lambda event_id: set_answer(base, key, event_id))
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
    _persist(base)
    flash(base, "success", f"Saved {len(made)} answer{'s' if len(made) != 1 else ''} on "
                            f"{target.event_id or 'the whole trace'}.")


def flash(base: str, kind: str, text: str) -> None:
    st.session_state[f"_{base}:flash"] = (kind, text)


def show_flash(base: str) -> None:
    found = st.session_state.pop(f"_{base}:flash", None)
    if found is None:
        return
    kind, text = found
    # a toast shows wherever the reviewer has scrolled to (the form may be far down the panel)
    st.toast(markdown_literal(text, 300), icon=":material/check_circle:" if kind == "success"
             else ":material/warning:")
