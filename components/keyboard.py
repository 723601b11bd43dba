"""The keys Streamlit's button shortcuts cannot give: `?` opens the list of keys, and
Ctrl+Enter (or Ctrl+S) saves the labels form wherever the focus is, also right after a click
on a radio or a tag (a focused radio or pills button keeps Enter to itself), except in a text box
of another Streamlit form (a dispute's comment, a reason to skip or retract), which it submits. Which key does
what is `components.keys`: the script is handed its map (`keys.script_keys()`) as JSON.

The script (`static/keyboard.js`) is a constant file: no trace text and nothing a user typed
goes into it or into the key map (the code's own), and it only clicks the panel's own buttons,
so the hostile trace still runs nothing. It installs one listener per browser tab, whatever the
number of runs. Enter in the Reviewer box and Esc in any text box hand the focus to the page,
and `typing_note` tells the reviewer while their keys type into a box. A form's text box hands
its text to the server a moment after the last key (Streamlit's boxes do so only on leaving),
so the draft of a note survives a reload before the box loses the focus."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import streamlit as st

from components.keys import script_keys

SCRIPT = Path(__file__).resolve().parent / "static" / "keyboard.js"


TYPING_NOTE = "typing-note"
"""The key of a container `typing_note` draws (its class shows it while the focus is in a text
box; the script marks that on the page's root)."""


@cache
def _script() -> str:
    notes = ", ".join(f"html:not(.orchviz-typing) .st-key-{TYPING_NOTE}-{place}"
                      for place in NOTE_PLACES)
    return ("<style>.st-key-orchviz-keyboard { display: none !important; }"
            f" {notes} {{ display: none !important; }}</style>"
            f"<script>{_compact(SCRIPT.read_text(encoding='utf-8'))}\n"
            f"orchvizKeys({script_keys()});</script>")


def _compact(script: str) -> str:
    """The script without its comment lines and indentation: it goes to the browser on every
    run of every page, so its explanations stay in the file and not on the wire (a third less;
    the file has no template literal, so no line's leading spaces are data)."""
    lines = (line.strip() for line in script.splitlines())
    return "\n".join(line for line in lines if line and not line.startswith("//"))


NOTE_PLACES = ("form", "start", "switch")
"""Where a page may draw a `typing_note`: the style sheet names each (a plain class selector
costs the browser nothing per change of the page, where a pattern or `:has` did)."""


def typing_note(key: str) -> None:
    """A note shown only while the focus is in a text box (the Reviewer name, a note): keys
    type there, not label; Esc or a click on the page hands them back. `key` is one of
    `NOTE_PLACES`."""
    with st.container(key=f"{TYPING_NOTE}-{key}"):
        st.caption(":orange[:material/keyboard: The focus is in a text box: keys type there. "
                   "Press Esc or click the page to label by keys.]")


def keyboard() -> None:
    """Install the page's keys (call once per run, on any page: the labels form and the review
    page are found by their keys)."""
    with st.container(key="orchviz-keyboard"):
        st.html(_script(), unsafe_allow_javascript=True)
