"""A dispute's thread in the app (AppTest): on Adjudicate the lead reads, beside both reviewers'
answers, each reviewer's note, the comments posted and (once settled) the reason, in time order,
and adds a comment; on the Disputes page a reviewer sees the disputes they are one side of and
says why; the Review page links there; hostile text stays text."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, app_env
from test_disputes import ANN, BOB, LEAD, NAME, disputed
from viz_app.store import CommentStore
from viz_app.workspace import Workspace


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Workspace:
    return app_env(monkeypatch, disputed(tmp_path))


def page(path: str, who: str, **params) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = who
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(path)
    return at.run()


def thread_text(at: AppTest) -> list[str]:
    """The thread as drawn: each entry's caption and its text, in order (escapes out)."""
    found = []
    for message in at.get("chat_message"):
        found += [c.value.replace("\\", "").replace("\u2060", "") for c in message.caption]
        found += [m.value.replace("\\", "") for m in message.markdown]
    return found


def the_target(ws: Workspace):
    (d,) = ws.campaigns.disagreements(NAME)
    return d.trace_id, d.event_id


def test_adjudicate_shows_the_thread_beside_both_answers_in_time_order(workspace):
    trace_id, event_id = the_target(workspace)
    workspace.disputes.comment(NAME, trace_id, event_id, "e15 came back before the stop", BOB)
    at = page("app_pages/adjudicate.py", "lee", campaign=NAME)
    assert not at.exception, at.exception
    shown = [m.value.replace("\\", "") for m in at.markdown]
    assert shown.index("**What the reviewers answered**") < shown.index(
        "**What was said** (notes, comments and reasons, oldest first)")
    said = thread_text(at)
    assert said[1::2] == ["ann thinks premature", "bob thinks correct",
                          "e15 came back before the stop"]
    assert said[0].startswith("**ann** · reviewer · note with their answer · ")
    assert said[4].startswith("**bob** · reviewer · comment")


def test_the_lead_comments_then_settles_and_the_reason_joins_the_thread(workspace):
    trace_id, event_id = the_target(workspace)
    at = page("app_pages/adjudicate.py", "lee", campaign=NAME)
    box = next(t for t in at.text_area if t.label == "Comment on this dispute")
    box.input("bob, is e15 the db_analyst's return?")
    at = next(b for b in at.button if b.label == "Post comment").click().run()
    assert not at.exception, at.exception
    assert [c.author for c in CommentStore(workspace.engine).thread(NAME, trace_id, event_id)] \
        == ["lee"]
    assert "bob, is e15 the db_analyst's return?" in thread_text(at)
    assert next(t for t in at.text_area if t.label == "Comment on this dispute").value == ""
    workspace.campaigns.adjudicate(NAME, trace_id, event_id, {"stopping_correctness": "correct"},
                                   LEAD, "e15 is the return: it stopped in time")
    at = page("app_pages/adjudicate.py", "lee", campaign=NAME)
    at.toggle(key="adj:settled").set_value(True).run()
    said = thread_text(at)
    assert said[-1] == "e15 is the return: it stopped in time"
    assert said[-2].startswith("**lee** · lead · reason for the final answer · ")


def test_hostile_text_in_a_thread_stays_text(workspace):
    trace_id, event_id = the_target(workspace)
    workspace.disputes.comment(NAME, trace_id, event_id,
                               "<img src=x onerror=alert(1)> [see](javascript:alert(1))", ANN)
    at = page("app_pages/adjudicate.py", "lee", campaign=NAME)
    text = next(m.value for msg in at.get("chat_message") for m in msg.markdown
                if "onerror" in m.value)
    assert "<img" not in text and "](javascript:" not in text


def test_a_reviewer_sees_their_dispute_and_says_why(workspace):
    trace_id, event_id = the_target(workspace)
    at = page("app_pages/disputes.py", "ann")
    assert not at.exception, at.exception
    assert "open of 1" in at.selectbox(key="disputes:chosen").label
    sides = [m.value.replace("\\", "") for m in at.markdown if m.value.startswith("**ann**")
             or m.value.startswith("**bob**")]
    assert "**Premature**" in sides[0] or "premature" in sides[0].lower()
    assert "correct" in sides[1].lower()
    box = next(t for t in at.text_area if t.label.startswith("Say why"))
    box.input("the db_analyst's finding never reached the aggregate")
    at = next(b for b in at.button if b.label == "Post comment").click().run()
    assert not at.exception, at.exception
    (posted,) = CommentStore(workspace.engine).thread(NAME, trace_id, event_id)
    assert (posted.author, posted.role, posted.identified_by) == ("ann", "reviewer",
                                                                  "self-declared")
    assert "the db_analyst's finding never reached the aggregate" in thread_text(at)


def test_a_reviewer_in_no_dispute_is_told_so(workspace):
    at = page("app_pages/disputes.py", "carl")
    assert not at.exception, at.exception
    assert any("no dispute" in i.value for i in at.info)
    assert not at.text_area


def test_the_review_page_links_a_reviewer_to_their_open_dispute(workspace):
    at = page("app_pages/review.py", "bob", campaign=NAME)
    assert not at.exception, at.exception
    link = next(p for p in at.get("page_link") if "open dispute" in p.proto.label)
    assert "You are one side of 1 open dispute" in link.proto.label


def test_the_lead_hides_a_comment_and_its_reviewers_read_who_and_why_in_its_place(workspace):
    trace_id, event_id = the_target(workspace)
    made = workspace.disputes.comment(NAME, trace_id, event_id, "bob never reads traces", ANN)
    at = page("app_pages/disputes.py", "bob")
    assert not [b for b in at.button if b.label == "Hide this comment"]  # no lead here

    at = page("app_pages/adjudicate.py", "lee", campaign=NAME)
    at.text_input(key=f"adj-thread:hide-reason:{made.comment_id}").input(
        "about a person, not the trace")
    at = next(b for b in at.button if b.label == "Hide this comment").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    (hiding,) = CommentStore(workspace.engine).hidings(NAME).values()
    assert (hiding.comment_id, hiding.hidden_by) == (made.comment_id, "lee")
    said = thread_text(at)
    assert "*hidden by lee: about a person, not the trace*" in " ".join(said)
    assert "bob never reads traces" in said  # the lead reads it, folded under the hiding
    assert not [b for b in at.button if b.label == "Hide this comment"]  # hidden once

    at = page("app_pages/disputes.py", "bob")
    said = thread_text(at)
    assert any(s.startswith(":material/visibility_off: *hidden by lee: about a person, not "
                            "the trace* · ") and s.endswith(" UTC") for s in said)  # who, when
    assert not any("never reads" in s for s in said)
    assert CommentStore(workspace.engine).get(made.comment_id).text == "bob never reads traces"


def test_the_lead_shows_a_hidden_comment_again_and_the_thread_says_who_did_what_when(workspace):
    """Show again appends a row beside the hiding: the reviewers read the text again, and the
    thread keeps both (who hid it and why, who showed it again, and when) under the comment."""
    trace_id, event_id = the_target(workspace)
    made = workspace.disputes.comment(NAME, trace_id, event_id, "e15 was never read", ANN)
    workspace.disputes.hide(NAME, trace_id, event_id, made.comment_id, "looked off topic", LEAD)
    at = page("app_pages/adjudicate.py", "lee", campaign=NAME)
    assert not [b for b in at.button if b.label == "Hide this comment"]  # hidden now
    at.text_input(key=f"adj-thread:show-reason:{made.comment_id}").input(
        "misread: it is about the trace")
    at = next(b for b in at.button if b.label == "Show this comment again").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]

    rows = CommentStore(workspace.engine).moderation(NAME)[made.comment_id]
    assert [(r.action, r.hidden_by, r.reason) for r in rows] == [
        ("hidden", "lee", "looked off topic"), ("shown", "lee", "misread: it is about the trace")]
    assert CommentStore(workspace.engine).hidings(NAME) == {}
    said = thread_text(at)
    assert "e15 was never read" in said  # shown, not folded
    lines = [s for s in said if s.startswith(":material/visibility")]
    assert [line.split(" · ")[0] for line in lines] == [
        ":material/visibility_off: hidden by lee: looked off topic",
        ":material/visibility: shown again by lee: misread: it is about the trace"]
    assert all(line.endswith(" UTC") for line in lines)
    assert [b for b in at.button if b.label == "Hide this comment"]  # it may be hidden again
    assert not [b for b in at.button if b.label == "Show this comment again"]

    at = page("app_pages/disputes.py", "bob")
    said = thread_text(at)
    assert "e15 was never read" in said
    assert any(s.startswith(":material/visibility: shown again by lee") for s in said)
    assert not [b for b in at.button if b.label == "Show this comment again"]  # no lead here
