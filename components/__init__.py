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

