"""Drafts survive a reload (issue 40, item 4): an answer or a note given and not saved comes
back in a new session of the same reviewer (a reload, a closed tab, another browser), per
reviewer and form; the save drops it; another reviewer never sees it."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, make_workspace
from viz_app.workspace import Workspace


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Workspace:
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    ws.library.update_index()
    return ws


def trace_page(reviewer: str) -> AppTest:
    """A new session (a reload) of the trace page, with the reviewer's name typed before."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"] = PREMATURE_ID
    at.session_state["_reviewer_box"] = reviewer
    return at.run()


def quality(at: AppTest):
    return next(r for r in at.radio if r.key.endswith(":aggregation_quality"))


def note(at: AppTest):
    return next(t for t in at.text_area if t.key.endswith(":note"))


def test_an_answer_and_a_note_come_back_after_a_reload(workspace):
    at = trace_page("ann")
    quality(at).set_value(2).run()
    note(at).input("the db_analyst's finding is gone").run()
    again = trace_page("ann")  # a reload: a new session, nothing of the old one
    assert quality(again).value == 2
    assert note(again).value == "the db_analyst's finding is gone"
    assert not workspace.labelling.current(PREMATURE_ID)  # a draft is no label


def test_a_draft_is_the_reviewers_own(workspace):
    at = trace_page("ann")
    quality(at).set_value(2).run()
    assert quality(trace_page("bob")).value is None


def test_the_save_drops_the_draft(workspace):
    at = trace_page("ann")
    quality(at).set_value(4).run()
    save = next(b for b in at.button if b.key and ":save:" in b.key and b.key.startswith("ann:"))
    at = save.click().run()
    assert not at.exception, at.exception
    assert [x.value for x in workspace.labelling.current(PREMATURE_ID)
            if x.question == "aggregation_quality"] == [4]
    form = save.key.split(":save:")[0]
    assert workspace.labelling.draft("ann", form) == {}


def test_a_long_correction_is_kept_as_a_draft(workspace):
    form = f"ann:{PREMATURE_ID}:{workspace.library.trace(PREMATURE_ID).sha256[:12]}"
    long = "Restore the coupon index. " * 2000
    key = f"{form}:e12:merge_correction"
    assert workspace.labelling.keep_draft("ann", form, {key: {"action": "merge", "text": long}})
    assert workspace.labelling.draft("ann", form)[key]["text"] == long
    assert not workspace.labelling.keep_draft("ann", form, {key: "x" * 500_000})  # refused
    assert workspace.labelling.draft("ann", form)[key]["text"] == long  # the kept one stays
