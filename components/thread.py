"""A dispute's thread, as the Adjudicate and Disputes pages show it: each entry (a reviewer's
note given with their answers, a comment posted on the dispute, a lead's reason for the final
answer) in time order, with who wrote it, in what part and when; and the box that posts a
comment. Domain objects in (`ThreadEntry`), the text the person posts out: this module writes
nothing. Every entry's text is Markdown its author means, shown through
`viz_app.text.note_markdown` (raw HTML as text, no image, only http(s) links); names through
`markdown_literal`. A comment a lead hid shows as "hidden by LEAD: reason"; a lead (the only one
handed its text) finds the text under it, folded, and may show it again: the thread then says
who hid it and who showed it again, and when.
"""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st

from viz_app.labels import (COMMENT_LIMIT, Disagreement, Moderation, Rubric, ThreadEntry,
                            answer_text)
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
                hiding: bool = False) -> tuple[Moderation, str, str] | None:
    """The thread, oldest first (one chat message an entry), or a line saying nothing was said;
    a long one scrolls in its own box. A comment hidden and shown again says so under it (who,
    when, why). `hiding` (a lead's page) gives each comment a Hide button that asks why, and
    each hidden one a Show again button: the (`hidden` or `shown`, comment id, reason) chosen
    is returned, for the page to do (None when nothing was chosen)."""
    chosen = None
    with st.container(key=key, height=HEIGHT if len(entries) > TALL else "content"):
        if not entries:
            st.caption("Nothing said yet: no reviewer left a note, and no one has commented.")
        for entry in entries:
            with st.chat_message(entry.kind, avatar=ICONS[entry.kind]):
                st.caption(entry_caption(entry), help=entry.heading if entry.questions else None)
                moderation_lines(entry)
                if entry.hidden is not None:
                    hidden_entry(entry)
                    if hiding:
                        chosen = moderation_box(entry, key, "shown") or chosen
                    continue
                st.markdown(note_markdown(entry.text, headings_below=4))
                if hiding and entry.kind == "comment":
                    chosen = moderation_box(entry, key, "hidden") or chosen
    return chosen


def moderation_lines(entry: ThreadEntry) -> None:
    """What leads did to a comment before its present state, one line each with who and when
    ('hidden by kim: off topic · 12-06 10:00 UTC', 'shown again by lee · 12-06 10:05 UTC'); a
    comment hidden now says its hiding in its place (`hidden_entry`)."""
    earlier = entry.moderation[:-1] if entry.hidden is not None else entry.moderation
    for row in earlier:
        icon = ":material/visibility:" if row.action == "shown" else ":material/visibility_off:"
        st.caption(f"{icon} {markdown_literal(row.line, 600)} · "
                   f"{markdown_literal(row.when[5:], 20)}")


def hidden_entry(entry: ThreadEntry) -> None:
    """A hidden comment: who hid it, when and why, in its place; its text folded below for a
    lead (a reviewer's thread carries none)."""
    assert entry.hidden is not None
    st.markdown(f":material/visibility_off: *{markdown_literal(entry.hidden.line, 600)}* · "
                f"{markdown_literal(entry.hidden.when[5:], 20)}")
    if entry.text:
        with st.expander("The hidden text (only leads read it)"):
            st.markdown(note_markdown(entry.text, headings_below=4))


# What a lead's Hide and Show again ask: (widget keys' word, button, icon, help, the
# reason's question, submit).
MODERATION_BOX: dict[str, tuple[str, str, str, str, str, str]] = {
    "hidden": ("hide", "Hide", ":material/visibility_off:",
               "Hide this comment from the reviewers, saying why: they read "
               "\"hidden by you: your reason\" in its place; its text is kept",
               "Why hide it? (the reviewers read this)", "Hide this comment"),
    "shown": ("show", "Show again", ":material/visibility:",
              "Show this comment to the reviewers again: its hiding is kept, and the thread "
              "says who showed it again and when",
              "Why show it again? (optional)", "Show this comment again"),
}


def moderation_box(entry: ThreadEntry, key: str,
                   action: Moderation) -> tuple[Moderation, str, str] | None:
    """A lead's Hide (or Show again, on a hidden comment): a reason asked, then (action,
    comment id, reason). Either is a new row: the thread keeps both."""
    word, label, icon, help_, question, submit = MODERATION_BOX[action]
    with st.popover(label, icon=icon, help=help_):
        with st.form(f"{key}:{word}:{entry.source_id}", border=False):
            reason = st.text_input(question, max_chars=500,
                                   key=f"{key}:{word}-reason:{entry.source_id}")
            if st.form_submit_button(submit, icon=icon):
                return action, entry.source_id, reason
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
