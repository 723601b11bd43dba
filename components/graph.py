"""The communication graph: the pyvis page built by `viz_app.charts.communication_html`."""

from __future__ import annotations

import base64

import streamlit as st

DATA_URL_LIMIT = 1_800_000
"""Largest page sent as a `data:` URL (Chromium refuses URLs over 2 MB)."""


def communication_graph(page: str, *, height: int = 580) -> None:
    """Show the communication graph. The page goes into the iframe as a `data:` URL, so it runs
    with an opaque origin and could not reach the app even if a script in it ran; a page too big
    for a URL falls back to an inline frame, still under the page's own Content-Security-Policy.
    Nothing can be selected in it, so it returns None."""
    url = "data:text/html;base64," + base64.b64encode(page.encode("utf-8")).decode("ascii")
    if len(url) <= DATA_URL_LIMIT:
        st.iframe(url, height=height)
    else:
        st.components.v1.html(page, height=height, scrolling=False)
    return None
