"""Bookmarks on the trace page (AppTest): a reviewer bookmarks the selected event or a time
range with a note, the list shows them in the order of the run, the inspector lists those on the
selected event, and the presentation page steps through them."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, make_workspace, premature
from viz_app.labels.bookmark import NOTE_LIMIT
from viz_app.store.bookmarks import BookmarkStore

TRACE = PREMATURE_ID


@pytest.fixture
def env(tmp_path, monkeypatch) -> BookmarkStore:
    """The app on demo 10; the bookmark store it writes to."""
    return app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE])).bookmarks


def trace_page(event: str | None = None, reviewer: str | None = "ann",
               page: str = "app_pages/trace.py", **params) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    at.query_params["trace"] = TRACE
    if event:
        at.query_params["event"] = event
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page(page)
    at.run()
    if reviewer:
        at.text_input(key="_reviewer_box").input(reviewer)
        at.run()
    return at


def test_a_reviewer_bookmarks_the_selected_event_with_a_note(env):
    at = trace_page("e13")
    at.text_area(key="bookmarks:note").input("**Premature**: db_analyst still running")
    next(b for b in at.button if b.label == "Add bookmark").click()
    at.run()
    assert not at.exception, at.exception
    (made,) = env.current(TRACE)
    assert (made.event_id, made.reviewer) == ("e13", "ann")
    assert made.note == "**Premature**: db_analyst still running"
    assert any(m.value == made.note for m in at.markdown)  # listed with its note


def test_a_reviewer_bookmarks_a_time_range(env):
    at = trace_page()
    at.slider(key="bookmarks:range").set_value((2.0, 10.0))
    at.text_area(key="bookmarks:note").input("the fan-out")
    next(b for b in at.button if b.label == "Add bookmark").click()
    at.run()
    (made,) = env.current(TRACE)
    assert made.event_id is None and (made.start_s, made.end_s) == (2.0, 10.0)


def test_without_a_reviewer_no_bookmark_can_be_added(env):
    at = trace_page(reviewer=None)
    assert next(b for b in at.button if b.label == "Add bookmark").disabled


def test_the_inspector_lists_the_bookmarks_on_the_selected_event(env):
    trace = premature()
    env.add(trace, "bob", "the stop", event_id="e13")
    env.add(trace, "bob", "the merge", event_id="e12")
    at = trace_page("e13")
    bodies = [m.value for m in at.markdown]
    assert "**Bookmarked** (1)" in bodies
    assert bodies.index("**Bookmarked** (1)") < bodies.index("the stop")


def test_editing_a_note_keeps_the_old_version(env):
    trace = premature()
    made = env.add(trace, "bob", "first", event_id="e13")
    at = trace_page()
    forms = [t for t in at.text_area if t.value == "first"]
    forms[0].input("second")
    next(b for b in at.button if b.label == "Save note").click()
    at.run()
    assert [v.note for v in env.history(made.bookmark_id)] == ["first", "second"]
    assert env.history(made.bookmark_id)[-1].reviewer == "ann"


def test_a_note_too_long_is_one_sentence_under_the_panel_and_nothing_is_saved(env):
    # the panel gives the reviewer's choice back; the page saves it through ws.bookmarks and
    # shows the facet's refusal where the reviewer looks
    made = env.add(premature(), "bob", "kept", event_id="e13")
    at = trace_page()
    next(t for t in at.text_area if t.value == "kept").input("x" * (NOTE_LIMIT + 1))
    next(b for b in at.button if b.label == "Save note").click()
    at.run()
    assert not at.exception, at.exception
    assert [e.value.replace("\\", "") for e in at.error] == [
        f"a note holds at most {NOTE_LIMIT:,} characters (this one has {NOTE_LIMIT + 1:,})"]
    assert [v.note for v in env.history(made.bookmark_id)] == ["kept"]


def test_removing_a_bookmark_hides_it(env):
    made = env.add(premature(), "bob", "gone soon", event_id="e13")
    at = trace_page()
    next(b for b in at.button if b.label == "remove").click()
    at.run()
    assert env.current(TRACE) == [] and len(env.history(made.bookmark_id)) == 2


def test_the_presentation_page_steps_with_its_buttons(env):
    trace = premature()
    env.add(trace, "bob", "second: the stop", event_id="e13")
    env.add(trace, "bob", "first: the merge", event_id="e12")
    at = trace_page(reviewer=None, page="app_pages/present.py", present="1")
    assert not at.exception, at.exception
    assert "first: the merge" in [m.value for m in at.markdown]
    at.button(key="present:next").click()
    at.run()
    assert "second: the stop" in [m.value for m in at.markdown]
    assert at.query_params["step"] in (["2"], "2")
    assert at.button(key="present:next").disabled
    at.button(key="present:back").click()
    at.run()
    assert "first: the merge" in [m.value for m in at.markdown]


def test_a_trace_without_bookmarks_presents_its_figures_and_says_so(env):
    at = trace_page(reviewer=None, page="app_pages/present.py", present="1")
    assert not at.exception
    assert any("no bookmarks yet" in i.value for i in at.info)
    assert len(at.get("plotly_chart")) == 2


def test_the_trace_page_offers_the_report_and_presentation_mode(env):
    at = trace_page()
    downloads = at.get("download_button")
    assert len(downloads) == 1 and downloads[0].proto.label == "Report"
    links = [p.proto for p in at.get("page_link")]
    assert any(p.label == "Present" and "present" in p.page for p in links)
