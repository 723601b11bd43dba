"""Case-study widgets of the trace page: bookmarks with Markdown notes (add, edit, remove, go
to), the bookmarks on the selected event for the inspector, the way into presentation mode, and
the report download.

The panel is handed the trace's bookmarks (and each one's versions) and gives back what the
reviewer chose (`BookmarkChoice`: go to, add, edit or remove); the page carries a change out
through the Workspace's bookmarks facet (`ws.bookmarks`). The report goes through
`viz_app.export.report` (no SQL, no HTML built here). Notes are the reviewer's Markdown, shown
with `st.markdown` after `viz_app.text.note_markdown` (raw HTML as text, only http(s) links);
trace text goes through `markdown_literal`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Literal

import streamlit as st

from viz_app.analysis import Analysis
from viz_app.labels import Bookmark, bookmarks_at
from viz_app.model import Trace
from viz_app.text import markdown_literal, note_markdown

PRESENT_PAGE = "app_pages/present.py"
"""The presentation page (also reached by `?trace=<id>&present=1`)."""


@dataclass(frozen=True)
class BookmarkChoice:
    """What the reviewer chose in the bookmarks panel, for the page to carry out."""

    action: Literal["go", "add", "edit", "remove"]
    """go to a bookmarked event; add a bookmark; save a new note on one; remove one."""
    event_id: str | None = None
    """The event gone to, or bookmarked (None for a time range)."""
    start_s: float | None = None
    end_s: float | None = None
    """A time range's bounds, in seconds from the start of the run."""
    note: str = ""
    """The note added or saved (Markdown)."""
    bookmark_id: str = ""
    """The bookmark edited or removed."""


def note(bookmark: Bookmark) -> None:
    """A bookmark's note as Markdown, made safe by `viz_app.text.note_markdown` (raw HTML shows
    as text, no image, only http(s) links stay links: a `data:` or `javascript:` link is its
    text; its headings made small, so a note never shouts over the page), or a placeholder."""
    if bookmark.note:
        st.markdown(note_markdown(bookmark.note, headings_below=3))
    else:
        st.caption("no note")


def _caption(bookmark: Bookmark, number: int | None = None) -> str:
    head = f"**{number}.** " if number is not None else ""
    return (f"{head}{markdown_literal(bookmark.where, 80)} · "
            f"{markdown_literal(bookmark.reviewer, 40)} · "
            f"{bookmark.created_at[:16].replace('T', ' ')}")


def bookmark_panel(trace: Trace, analysis: Analysis, marks: list[Bookmark],
                   histories: Mapping[str, list[Bookmark]], reviewer: str | None,
                   selected_event: str | None, *, until: float | None = None,
                   key: str = "bookmarks",
                   on_choose: Callable[[str], None] | None = None) -> BookmarkChoice | None:
    """The trace's bookmarks (`marks`, in the order of the run) with their notes, a form to
    bookmark the selected event or a time range (starting at `until`, the replay time, if
    given), and edit (with the versions `histories` holds by bookmark id) / remove / go-to
    buttons. Returns what the reviewer chose here, else None: the page saves it."""
    stash = f"_chosen:{key}"
    chosen: list[BookmarkChoice] = []

    def choose(event_id: str) -> None:
        st.session_state[stash] = event_id
        if on_choose is not None:
            on_choose(event_id)

    with st.expander(f"Bookmarks and notes ({len(marks)})", expanded=bool(marks)):
        chosen.append(_new_bookmark(analysis, selected_event, until, reviewer, key))
        for number, mark in enumerate(marks, 1):
            with st.container(border=True):
                st.markdown(_caption(mark, number))
                note(mark)
                go, edit, remove = st.columns([1, 1, 1])
                if mark.event_id is not None:
                    go.button("go to", key=f"{key}:go:{mark.version_id}", on_click=choose,
                              args=(mark.event_id,), width="stretch",
                              help="select the bookmarked event")
                with edit.popover("edit", width="stretch"):
                    chosen.append(_edit_form(mark, histories.get(mark.bookmark_id, []),
                                             reviewer, key))
                if remove.button("remove", key=f"{key}:rm:{mark.version_id}", width="stretch",
                                 disabled=not reviewer,
                                 help="remove it (its versions stay in the history)"):
                    chosen.append(BookmarkChoice("remove", bookmark_id=mark.bookmark_id))
        if marks:
            st.page_link(PRESENT_PAGE, label="Present these bookmarks", icon=":material/slideshow:",
                         query_params={"trace": trace.trace_id, "present": "1"})
    went = st.session_state.pop(stash, None)
    if went is not None:
        chosen.append(BookmarkChoice("go", event_id=went))
    return next((c for c in chosen if c is not None), None)


def _new_bookmark(analysis: Analysis, selected_event: str | None, until: float | None,
                  reviewer: str | None, key: str) -> BookmarkChoice | None:
    span = max(float(analysis.makespan), 0.001)
    choices = (["the selected event"] if selected_event else []) + ["a time range"]
    with st.form(f"{key}:new", clear_on_submit=True, border=False):
        what = st.radio("Bookmark", choices, horizontal=True, key=f"{key}:what",
                        help="the event selected in the tree, timeline or inspector; or a "
                        "stretch of the run")
        start = until if until is not None else 0.0
        window = st.slider("Time range (seconds from start)", 0.0, span,
                           (min(start, span), min(span, start + span / 10)), step=span / 500,
                           format="%.1f s", key=f"{key}:range",
                           help="used for a time-range bookmark")
        text = st.text_area("Note (Markdown)", key=f"{key}:note", height=100,
                            placeholder="Here the orchestrator drops the one result that had "
                            "the answer…")
        if selected_event:
            st.caption(f"selected event: **{markdown_literal(selected_event, 40)}**")
        saved = st.form_submit_button("Add bookmark", type="primary", disabled=not reviewer,
                                      help=None if reviewer else "say who you are in the sidebar")
    if not saved:
        return None
    if what == "the selected event" and selected_event:
        return BookmarkChoice("add", event_id=selected_event, note=text)
    return BookmarkChoice("add", start_s=window[0], end_s=window[1], note=text)


def _edit_form(mark: Bookmark, history: list[Bookmark], reviewer: str | None,
               key: str) -> BookmarkChoice | None:
    with st.form(f"{key}:edit:{mark.version_id}", border=False):
        text = st.text_area("Note (Markdown)", value=mark.note, height=140)
        saved = st.form_submit_button("Save note", type="primary", disabled=not reviewer)
    if len(history) > 1:
        st.caption(f"{len(history)} versions: "
                   + ", ".join(f"{markdown_literal(v.reviewer, 30)} "
                               f"{v.created_at[:16].replace('T', ' ')}"
                               for v in history))
    return BookmarkChoice("edit", bookmark_id=mark.bookmark_id, note=text) if saved else None


def event_bookmarks(bookmarks: list[Bookmark], event_id: str | None) -> None:
    """For the inspector: the bookmarks (of the trace) on the selected event, with their notes."""
    if event_id is None:
        return
    found = bookmarks_at(bookmarks, event_id)
    if not found:
        return
    st.markdown(f"**Bookmarked** ({len(found)})")
    for mark in found:
        with st.container(border=True):
            st.caption(_caption(mark))
            note(mark)


def report_button(trace: Trace, build: Callable[[], str], *, key: str = "report") -> None:
    """A download button for the trace's case-study report, whose HTML `build` makes when the
    button is clicked, not on every run (the page hands `ws.exports.report_html`)."""
    from viz_app.export import file_name

    st.download_button("Report", data=build, file_name=f"{file_name(trace.trace_id)}.html",
                       mime="text/html", key=key, icon=":material/download:",
                       help="one self-contained HTML file: figures, tree, timeline, labels, "
                       "bookmarks with notes, warnings (opens offline, prints cleanly)")


def present_link(trace: Trace) -> None:
    """The way into presentation mode for the trace."""
    st.page_link(PRESENT_PAGE, label="Present", icon=":material/slideshow:",
                 query_params={"trace": trace.trace_id, "present": "1"},
                 help="full-width view that steps through the bookmarks")
