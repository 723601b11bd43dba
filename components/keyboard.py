"""The keys Streamlit's button shortcuts cannot give: `?` opens the list of keys, and
Ctrl+Enter (or Ctrl+S) saves the labels form wherever the focus is, also right after a click
on a radio or a tag (a focused radio or pills button keeps Enter to itself).

The script (`static/keyboard.js`) is a constant file: no trace text and nothing a user typed
goes into it, and it only clicks the panel's own buttons, so the hostile trace still runs
nothing. It installs one listener per browser tab, whatever the number of runs."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import streamlit as st

SCRIPT = Path(__file__).resolve().parent / "static" / "keyboard.js"


@cache
def _script() -> str:
    return ("<style>.st-key-orchviz-keyboard { display: none !important; }</style>"
            f"<script>{SCRIPT.read_text(encoding='utf-8')}</script>")


def keyboard() -> None:
    """Install the page's keys (call once per run, on any page: the labels form and the review
    page are found by their keys)."""
    with st.container(key="orchviz-keyboard"):
        st.html(_script(), unsafe_allow_javascript=True)
