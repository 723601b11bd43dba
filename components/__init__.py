"""The Streamlit view pieces of orchviz: tree, timeline, communication graph, inspector, replay.

Each is a function that takes domain objects (a Trace, its Analysis, a figure built by
`viz_app.charts`) and returns what the reviewer chose there, or None. None of them reads a file or
touches the database. A choice is also passed at once to the `on_choose` callback a page gives, so
the page sees it before it draws anything (the tree, timeline and inspector then agree in the
same run).

Trace text is hostile: it is shown through `st.text`, `st.code`, `st.json` and dataframes, which
print text as text; where a label takes Markdown, `literal` escapes it first.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import streamlit as st

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:=&\"'^@%])")
_CONTROL = re.compile("[\u0000-\u001f\u007f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def literal(text: object, limit: int | None = 80) -> str:
    """Trace text for a Markdown label: one line, shortened, every Markdown, HTML, LaTeX and
    emoji-shortcode character backslash-escaped, so it shows exactly as written."""
    value = " ".join(_CONTROL.sub(" ", str(text)).split())
    if limit is not None and len(value) > limit:
        value = value[: limit - 1] + "…"
    return _MARKDOWN_SPECIAL.sub(r"\\\1", value)


def plotly_choice(figure, *, key: str, decode: Callable[[dict], Any],
                  on_choose: Callable[[Any], None] | None, height: int | None = None) -> Any:
    """Draw a Plotly figure whose points can be clicked; return the point chosen in this run.

    `decode` turns a clicked point into a choice (or None to ignore it). The choice reaches
    `on_choose` in the widget's callback, before the page's next run draws anything.
    """
    stash = f"_chosen:{key}"

    def changed() -> None:
        state = st.session_state.get(key)
        points = state["selection"]["points"] if state else []
        for point in points:
            choice = decode(point)
            if choice is not None:
                st.session_state[stash] = choice
                if on_choose is not None:
                    on_choose(choice)
                return

    st.plotly_chart(figure, key=key, on_select=changed, selection_mode="points",
                    config={"displaylogo": False, "scrollZoom": True,
                            "modeBarButtonsToRemove": ["select2d", "lasso2d"]},
                    height=height or "content")
    return st.session_state.pop(stash, None)
