"""The Streamlit view pieces of orchviz: tree, timeline, communication graph, inspector, replay.

Each is a function that takes domain objects (a Trace, its Analysis, a figure built by
`viz_app.charts`) and returns what the reviewer chose there, or None. None of them reads a file or
touches the database. A choice is also passed at once to the `on_choose` callback a page gives, so
the page sees it before it draws anything (the tree, timeline and inspector then agree in the
same run).

Trace text is hostile: it is shown through `st.text`, `st.code`, `st.json` and dataframes, which
print text as text; where a label takes Markdown, `viz_app.text.markdown_literal` escapes it first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

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
