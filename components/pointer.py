"""The 'should have stopped at' pointer's check in the label form: when the event a reviewer
points at is one the stopping agent never saw, say so at once and offer the first event at which
it had it (`viz_app.labels.correction.pointer_advice` decides; this draws it)."""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from viz_app.analysis import Analysis
from viz_app.labels import pointer_advice
from viz_app.text import markdown_literal


def pointer_check(analysis: Analysis, stop_id: str | None, pointer: object, key: str,
                  point: Callable[[str], None]) -> None:
    """Under the pointer's answer: nothing when the stopping agent saw the event; else the
    sentence, and a button that points at the event where it had it."""
    if not stop_id:
        return
    advice = pointer_advice(analysis, stop_id, pointer)
    if advice is None:
        return
    st.warning(markdown_literal(advice.text, 400), icon=":material/visibility_off:")
    if advice.had_at is not None:
        st.button(f"Point at {markdown_literal(advice.had_at, 40)} instead",
                  key=f"{key}:had-at", on_click=point, args=(advice.had_at,),
                  help="The first event at which the stopping agent had what you pointed at")
