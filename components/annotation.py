"""The annotation panel: the open trace's targets in order, each with its rubric questions in a
form, the context a reviewer needs to judge it, progress, and the way to the next unlabelled
target or trace.

Domain objects in, the reviewer's choice out: the page gathers through the Workspace's facets
what the panel shows and lays out its parts (`shown_target`, `labels_head`, `labels_form`,
`others_answers`): the trace's targets, the reviewer's answers, on the target shown the
suggestions `ws.suggestions.visible` lets them see and the others' answers (`OthersAnswers`);
it carries out what the reviewer chose: a save through the `save` it hands (as `target_form`'s
pages do, called in the save button's callback, so a refusal shows beside the form and the
answers stay), a move to the next trace returned as a `LabelsChoice`. Drafts
are kept beyond the session by the keeper the page gives `components.form.keep_drafts`.
No SQL here, and the rules of a save are the Workspace's.
Trace text is shown with `st.code`, dataframes and `literal`-escaped Markdown, never as HTML.
Keyboard: Streamlit's own button shortcuts, each key read from the one key map
(`components.keys`): digits pick the n-th answer, letters toggle tags, Ctrl+Enter saves, N / P /
S move on, back and skip, Shift+N opens the next trace, arrows and Enter pick where a stop should
have been, ? or H lists them (`keys.help_table("trace")`); `components.keyboard` adds ?, W and
Ctrl+Enter from a focused answer. Trace text never goes into a label that takes HTML.

The panel assembles its rooms: `components.navigation` (which target, pure), `components.form`
(the questions, keys and drafts) and `components.evidence` (what the target is judged by).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd
import streamlit as st

from components import keys as key_map
from components.evidence import draw_context, evidence_above
from components.form import (SaveAnswers, drafted, draw_form, flash, form_state, keep_drafts,
                             set_answer, show_flash)
from components.navigation import follow, leave, next_target_key, previous_target_key, target_label
from components.suggestions import suggestions_view
from viz_app.analysis import Analysis
from viz_app.labels import Label, LabelTarget, Reviewer, Rubric, Suggestion, progress_of
from viz_app.model import Trace
from viz_app.text import markdown_literal

__all__ = ["LabelsChoice", "OthersAnswers", "asked_only", "blind_mode", "keep_drafts",
           "labels_form", "labels_head", "others_answers", "panel_key", "shown_target",
           "target_form"]


@dataclass(frozen=True)
class OthersAnswers:
    """What the page gathers through the facets on the target shown, beside the reviewer's own
    answers: the others' answers as far as they may see them, and their own history."""

    others: list[Label] = field(default_factory=list)
    """Other reviewers' current answers there that the reviewer may see (`labels_in_view`)."""
    answered: int = 0
    """How many other reviewers answered there, seen or not."""
    sealed: bool = False
    """Whether a review campaign holds the target (blind whatever the toggle)."""
    history: list[Label] = field(default_factory=list)
    """Every answer the reviewer saved there, oldest first."""


@dataclass(frozen=True)
class LabelsChoice:
    """What the reviewer chose in the labels panel beyond a save, for the page to carry out."""

    action: Literal["next-trace"]
    """open the next trace the reviewer has left to label."""


def panel_key(trace: Trace) -> str:
    """The key of the labels panel's form on a trace (this version of it): its widgets', its
    state's and its draft's."""
    return f"ann:{trace.trace_id}:{trace.sha256[:12]}"


def blind_mode() -> bool:
    """Whether the reviewer hides other reviewers' answers until they save theirs (the
    panel's toggle, on unless turned off)."""
    return bool(st.session_state.get("_ann_blind", True))


def _shown(targets: Sequence[LabelTarget], state: dict) -> list[LabelTarget]:
    return [t for t in targets if t.required or state["optional"]]


def _done(targets: Sequence[LabelTarget], mine: Mapping[str, Mapping[str, Label]]) -> set[str]:
    return {t.key for t in targets if set(t.required) <= set(mine.get(t.key, {}))}


def shown_target(trace: Trace, targets: Sequence[LabelTarget],
                 mine: Mapping[str, Mapping[str, Label]],
                 selected_event: str | None) -> LabelTarget | None:
    """The target the labels panel shows on this run (None when the rubric asks nothing it
    lists): the one the reviewer moved to, an event selected elsewhere when it is a target (or,
    while they pick where a stop should have been, the answer recorded), else the first left
    to label. The page asks it first, once a run, then draws `labels_head`, `labels_form` and
    `others_answers` on it."""
    base = panel_key(trace)
    state = form_state(base)
    keys = [t.key for t in _shown(targets, state)]
    if not keys:
        return None
    picked = follow(state, selected_event, keys)
    if picked is not None:  # picked on the tree, timeline or inspector
        set_answer(base, f"{base}:{state['target']}:pointer", picked)
    if state["target"] not in keys:
        first = next_target_key(keys, _done(targets, mine), None, state["skipped"])
        state["target"] = first if first is not None else keys[0]
    return _shown(targets, state)[keys.index(state["target"])]


def labels_head(trace: Trace, analysis: Analysis, reviewer: Reviewer,
                targets: Sequence[LabelTarget], mine: Mapping[str, Mapping[str, Label]], *,
                on_choose: Callable[[str], None],
                on_next_trace: Callable[[], None] | None = None) -> LabelsChoice | None:
    """The head of the labels panel, on the target `shown_target` chose: the reviewer's
    progress over the trace's `targets` (`mine`: their answers, target key -> question ->
    label), the moves (back, next target, skip, next trace, keys) and the Target box.
    `on_choose(event_id)` is called when the reviewer moves to a target (in the widget
    callback, before anything is drawn: the page selects it in the tree, timeline and
    inspector). `on_next_trace()` is called in the Next trace button's callback (Shift+N), where
    the page can open the next trace at once, before this panel is drawn again. Returns the
    reviewer's choice to open the next trace, else None. The page then
    draws `labels_form` and `others_answers` under it (drawn in this order, the Target box
    reaches the browser before the page asks for the rest)."""
    base = panel_key(trace)
    state = form_state(base)
    show_flash(base)
    progress = progress_of(targets, trace.trace_id, [x for d in mine.values() for x in d.values()])
    st.progress(progress.labelled / progress.total if progress.total else 1.0,
                text=f"{progress.text} by {markdown_literal(reviewer.name, 40)}")

    shown = _shown(targets, state)
    keys = [t.key for t in shown]
    if not shown or state["target"] not in keys:
        st.caption("The rubric asks nothing about this trace.")
        return None
    done = _done(targets, mine)
    target = shown[keys.index(state["target"])]

    def move(new_key: str | None, *, skip: bool = False) -> None:
        if skip and state["target"] not in state["skipped"]:
            state["skipped"].append(state["target"])
        # the browser may hand the target box's shown label back after its labels change (a
        # save turns ○ into ✓): only a key of this trace's targets moves the panel
        if new_key is None or new_key not in keys or new_key == state["target"]:
            return
        if state["target"] not in done and not skip and drafted(base, state["target"]):
            flash(base, "warning", f"Your answer on {state['target'] or 'the whole trace'} is "
                                    "kept but not saved.")
        leave(state, new_key)
        if new_key:  # the whole trace ("") selects no event
            on_choose(new_key)

    choice = _navigation(state, keys, done, base, move, on_next_trace)
    st.selectbox("Target", keys, index=keys.index(target.key), key=f"{base}:target:{target.key}",
                 format_func=lambda k: target_label(shown[keys.index(k)], analysis, k in done),
                 on_change=lambda: move(st.session_state.get(f"{base}:target:{target.key}")),
                 help="Everything the rubric asks about in this trace, in time order; "
                      "✓ marks the ones you have labelled.")
    return choice


def labels_form(trace: Trace, analysis: Analysis, rubric: Rubric, target: LabelTarget,
                saved: Mapping[str, Label], suggestions: Sequence[Suggestion],
                suggestions_shown: bool, *, save: SaveAnswers,
                on_choose: Callable[[str], None]) -> None:
    """The labels panel's form on its target: the questions (prefilled with the reviewer's
    `saved` answers, else their draft), the suggestions (only counted unless
    `suggestions_shown`: blind first, as `ws.suggestions.visible` says), the context it is
    judged by, and the panel's toggles. `save(values, comment, seconds)` saves the reviewer's
    answers (in the save button's callback: a LabelError or StoreError it raises shows beside
    the form and the answers stay).

    The answers are plain widgets, not an `st.form`: each click or key reaches the server at
    once, so Ctrl+Enter saves whatever the focus, and an unsaved answer is kept (per target,
    for the session) when the reviewer moves away and comes back."""
    base = panel_key(trace)
    state = form_state(base)
    above = evidence_above(trace, analysis, target, base)
    draw_form(trace, analysis, rubric, target, saved, state, base, save)
    suggestions_view(list(suggestions), rubric, key=f"{base}:{target.key}",
                     on_select_event=on_choose, hidden=not suggestions_shown)
    draw_context(trace, analysis, target, base, stop_above=above)
    options = st.columns(2)
    options[0].toggle("blind mode", value=blind_mode(),
                      key=f"{base}:blind", on_change=_set_blind, args=(f"{base}:blind",),
                      help="Hide other reviewers' answers until you have saved yours.")
    options[1].toggle("optional targets", value=state["optional"], key=f"{base}:optional",
                      on_change=_set_optional, args=(state, f"{base}:optional"),
                      help="Also list targets whose questions are all optional (messages).")


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
    state = form_state(key)
    show_flash(key)
    above = evidence_above(trace, analysis, target, key)
    draw_form(trace, analysis, rubric, target, saved or {}, state, key, save, note_label=note_label,
          save_label=save_label)
    suggestions_view(list(suggestions), rubric, key=f"{key}:{target.key}",
                     on_select_event=on_choose, hidden=suggestions_hidden)
    draw_context(trace, analysis, target, key, stop_above=above, evidence=not evidence_apart)


def asked_only(target: LabelTarget, questions: Sequence[str], rubric: Rubric) -> LabelTarget:
    """A target with only some of its questions (a campaign's subset), and the follow-ups of
    those; the required ones stay required."""
    wanted = set(questions)
    kept = [q for q in target.questions if q in wanted or (
        rubric.question(q).ask_when is not None and rubric.question(q).ask_when.question
        in wanted)]
    return target.model_copy(update={"questions": kept,
                                     "required": [q for q in target.required if q in kept]})


def _set_blind(key: str) -> None:
    st.session_state["_ann_blind"] = st.session_state[key]


def _set_optional(state: dict, key: str) -> None:
    state["optional"] = st.session_state[key]


def _navigation(state: dict, keys: list[str], done: set[str], base: str,
                move: Callable, on_next_trace: Callable[[], None] | None) -> LabelsChoice | None:
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

    chosen = None
    if cols[3].button("Next trace", key=f"{base}:next_trace", width="stretch",
                      icon=":material/fast_forward:", shortcut=key_map.shortcut("next-trace"),
                      on_click=on_next_trace,
                      help="The next trace in the library with targets you have not labelled "
                           f"({key_map.shortcut('next-trace')})"):
        chosen = LabelsChoice("next-trace")  # the page finds it and opens it
    if cols[4].button("Keys", key=f"{base}:keys", shortcut=key_map.shortcut("keys"),
                      width="stretch", icon=":material/keyboard:",
                      help=f"The keys of the labels panel (key {key_map.shown('keys')})"):
        _keys_help()
    return chosen


@st.dialog("Keys of the labels panel")
def _keys_help() -> None:
    st.markdown(key_map.help_table("trace"))


def others_answers(here: OthersAnswers) -> None:
    """Other reviewers' answers on the labels panel's target, as far as the Workspace lets this
    reviewer see them (the page asks `labels_in_view`): on a campaign's target none before
    their own save in the campaign, whatever the blind toggle says; elsewhere none before their
    own save while the toggle is on. Only a count of the rest reaches the browser. Then the
    reviewer's own saves there."""
    rows, mine = here.others, here.history
    if here.answered and not rows:
        st.caption(f"Other reviewers: {here.answered} · hidden until you save yours"
                   + (" in its review campaign (blind whatever the toggle)" if here.sealed
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
