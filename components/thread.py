"""A dispute's thread, as the Adjudicate and Disputes pages show it: each entry (a reviewer's
note given with their answers, a comment posted on the dispute, a lead's reason for the final
answer) in time order, with who wrote it, in what part and when; and the box that posts a
comment. Domain objects in (`ThreadEntry`), the text the person posts out: this module writes
nothing. Every entry's text is Markdown its author means, shown through
`viz_app.text.note_markdown` (raw HTML as text, no image, only http(s) links); names through
`markdown_literal`. A comment a lead hid shows as "hidden by LEAD: reason"; a lead (the only one
handed its text) finds the text under it, folded.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from viz_app.labels import COMMENT_LIMIT, Disagreement, Rubric, ThreadEntry, answer_text
from viz_app.text import markdown_literal, note_markdown

ICONS = {"note": ":material/rate_review:", "comment": ":material/forum:",
         "reason": ":material/gavel:"}
"""The avatar of each kind of entry."""


KINDS = {"note": "note with their answer", "comment": "comment",
         "reason": "reason for the final answer"}

TALL = 4
"""Entries beyond which the thread scrolls in a box of its own (`HEIGHT` pixels), so the final
answer's form below it stays in reach."""

HEIGHT = 380


def entry_caption(entry: ThreadEntry) -> str:
    """'**ann** · reviewer · note with their answer · 12-06 15:40 UTC' (Markdown, made safe);
    the questions a note or reason came with are its tooltip (`entry.heading`)."""
    return (f"**{markdown_literal(entry.author, 60)}** · {entry.role} · {KINDS[entry.kind]} · "
            f"{markdown_literal(entry.created_at[5:16].replace('T', ' '), 12)} UTC")


def thread_view(entries: Sequence[ThreadEntry], *, key: str,
                hiding: bool = False) -> tuple[str, str] | None:
    """The thread, oldest first (one chat message an entry), or a line saying nothing was said;
    a long one scrolls in its own box. `hiding` (a lead's page) gives each comment not hidden a
    Hide button that asks why: the (comment id, reason) chosen is returned, for the page to
    hide it (None when none was)."""
    chosen = None
    with st.container(key=key, height=HEIGHT if len(entries) > TALL else "content"):
        if not entries:
            st.caption("Nothing said yet: no reviewer left a note, and no one has commented.")
        for entry in entries:
            with st.chat_message(entry.kind, avatar=ICONS[entry.kind]):
                st.caption(entry_caption(entry), help=entry.heading if entry.questions else None)
                if entry.hidden is not None:
                    hidden_entry(entry)
                    continue
                st.markdown(note_markdown(entry.text, headings_below=4))
                if hiding and entry.kind == "comment":
                    chosen = hide_box(entry, key) or chosen
    return chosen


def hidden_entry(entry: ThreadEntry) -> None:
    """A hidden comment: who hid it and why, in its place; its text folded below for a lead
    (a reviewer's thread carries none)."""
    assert entry.hidden is not None
    st.markdown(f":material/visibility_off: *{markdown_literal(entry.hidden.line, 600)}*")
    if entry.text:
        with st.expander("The hidden text (only leads read it)"):
            st.markdown(note_markdown(entry.text, headings_below=4))


def hide_box(entry: ThreadEntry, key: str) -> tuple[str, str] | None:
    """A lead's Hide on one comment: a reason asked, then (comment id, reason) on Hide."""
    with st.popover("Hide", icon=":material/visibility_off:",
                    help="Hide this comment from the reviewers, saying why: they read "
                         "\"hidden by you: your reason\" in its place; its text is kept"):
        with st.form(f"{key}:hide:{entry.source_id}", border=False):
            reason = st.text_input("Why hide it? (the reviewers read this)", max_chars=500,
                                   key=f"{key}:hide-reason:{entry.source_id}")
            if st.form_submit_button("Hide this comment", icon=":material/visibility_off:"):
                return entry.source_id, reason
    return None


def comment_box(key: str, *, label: str = "Add to the thread") -> str | None:
    """A box and a Post button; the text posted (None before Post). The page posts it and, when
    the post went through, calls `comment_posted(key)` for an empty box: a refused post keeps
    what was typed."""
    version = st.session_state.get(f"_{key}:version", 0)
    with st.form(f"{key}:form", border=False):
        text = st.text_area(label, key=f"{key}:text:{version}", max_chars=COMMENT_LIMIT,
                            height=90, placeholder="What you see in the trace, for everyone "
                            "in this dispute (Markdown)")
        posted = st.form_submit_button("Post comment", icon=":material/send:")
    return text if posted else None


def comment_posted(key: str) -> None:
    """Empty the comment box of `key` on the next run (its text was posted)."""
    st.session_state[f"_{key}:version"] = st.session_state.get(f"_{key}:version", 0) + 1


def sides_view(dispute: Disagreement, rubric: Rubric, *, key: str) -> None:
    """Both (every) sides of a dispute: a column per reviewer with their answers as words, the
    adjudicated answer, when there is one, in a last column marked final; a disputed question is
    flagged."""
    reviewers = sorted(dispute.answers)
    columns = reviewers + (["final (adjudicated)"] if dispute.adjudicated else [])
    answers = [dispute.answers[r] for r in reviewers] + (
        [dispute.adjudicated] if dispute.adjudicated else [])
    asked = [q for q in rubric.questions if any(q.id in a for a in answers)]
    with st.container(key=key):
        for who, given in zip(columns, answers):
            lines = [f"- {'⚠ ' if q.id in dispute.disputed else ''}"
                     f"{markdown_literal(q.id, 40)}: "
                     f"**{markdown_literal(answer_text(q, given[q.id]), 300)}**"
                     for q in asked if q.id in given]
            st.markdown(f"**{markdown_literal(who, 60)}**\n\n" + "\n".join(lines))
