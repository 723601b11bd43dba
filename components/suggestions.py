"""Suggested answers on one target: each producer's answer on the question's own scale, how sure
it is, why, and its evidence as buttons that select the event in the tree and timeline.

Suggestions point a reviewer at something; they are not answers. A page shows them after the
reviewer has saved their own answer on the target (blind-first), unless the campaign is
assisted: `suggestions_view(..., hidden=True)` says only how many there are. Which of the two
applies is the page's decision, not this component's.

Every piece of text here came from a trace or a producer (a judge model's explanation is model
output): it goes through `viz_app.text.markdown_literal` before any Markdown label, and evidence
event ids are button labels escaped the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from viz_app.labels import Rubric, Suggestion, answer_text
from viz_app.text import markdown_literal

EVIDENCE_SHOWN = 8
"""Evidence events shown as buttons per suggestion; the rest are counted."""


def producer_text(suggestion: Suggestion) -> str:
    """'rules', or 'judge (gpt-4o-mini)' for a producer that asked a model (plain text)."""
    p = suggestion.producer
    return f"{p.name} ({p.model})" if p.model else p.name


def suggestion_text(suggestion: Suggestion, rubric: Rubric) -> str:
    """One line a reviewer reads, in plain text (escape it for its medium):
    'rules: premature — e7 returned after the stop'."""
    question = rubric.questions_by_id.get(suggestion.question)
    answer = answer_text(question, suggestion.value)
    why = suggestion.explanation.strip()
    for lead in (f"{answer}:", f"{answer} :", f"{suggestion.value}:"):
        if why.lower().startswith(lead.lower()):  # 'premature: e7 ...' says the answer twice
            why = why[len(lead):].strip()
            break
    line = f"{producer_text(suggestion)}: {answer}"
    return f"{line} — {why}" if why else line


def suggestions_view(suggestions: Sequence[Suggestion], rubric: Rubric, *, key: str,
                     on_select_event: Callable[[str], None] | None = None,
                     hidden: bool = False) -> str | None:
    """Draw the suggestions on one target (already filtered to it by the page), grouped by
    question in rubric order. Returns the evidence event the reviewer clicked in this run, else
    None; `on_select_event(event_id)` is called at once, in the button's callback, so the page
    selects it before it draws the tree and timeline.

    `hidden`: show only how many suggestions there are and that they appear after the
    reviewer's own answer (blind-first). `key` makes the buttons' keys unique on the page."""
    if not suggestions:
        return None
    count = len(suggestions)
    plural = "s" if count != 1 else ""
    if hidden:
        st.caption(f"{count} suggested answer{plural} · hidden until you save yours, so they do "
                   "not steer your answer")
        return None
    stash = f"_suggestions:{key}:chosen"

    def choose(event_id: str) -> None:
        st.session_state[stash] = event_id
        if on_select_event is not None:
            on_select_event(event_id)

    order = {q.id: i for i, q in enumerate(rubric.questions)}
    ranked = sorted(suggestions, key=lambda s: (order.get(s.question, len(order)), s.question,
                                                -s.confidence, s.producer.name))
    with st.container(border=True, key=_css_key(f"suggestions-{key}")):
        st.markdown(f"**Suggested answers** ({count}) · pointers, not verdicts")
        shown_question = None
        for index, suggestion in enumerate(ranked):
            if suggestion.question != shown_question:
                shown_question = suggestion.question
                question = rubric.questions_by_id.get(suggestion.question)
                st.caption(markdown_literal(question.prompt if question else suggestion.question,
                                            120))
            _one(suggestion, rubric, f"{key}:{index}:{suggestion.suggestion_id[:12]}", choose)
    return st.session_state.pop(stash, None)


def _css_key(key: str) -> str:
    """A container key Streamlit can make a CSS class of (st-key-...)."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", key)


def _one(suggestion: Suggestion, rubric: Rubric, key: str,
         choose: Callable[[str], None]) -> None:
    st.markdown(f"{markdown_literal(suggestion_text(suggestion, rubric), 300)}  \n"
                f":gray[confidence {suggestion.confidence:.2f}]")
    evidence = list(dict.fromkeys(suggestion.evidence))
    if not evidence:
        return
    with st.container(horizontal=True, key=_css_key(f"evidence-{key}")):
        for event_id in evidence[:EVIDENCE_SHOWN]:
            st.button(markdown_literal(event_id, 24), key=f"{key}:evidence:{event_id}",
                      on_click=choose, args=(event_id,), type="tertiary",
                      icon=":material/my_location:",
                      help="Select this event in the tree and timeline")
        if len(evidence) > EVIDENCE_SHOWN:
            st.caption(f"and {len(evidence) - EVIDENCE_SHOWN} more")
