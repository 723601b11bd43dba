"""End to end in Chromium: a note (or a correction's text) typed and not yet left is kept as the
reviewer's draft while they type, so a reload before the box loses the focus brings it back
(issue 40, item 4). Streamlit hands a text box's value to the server only when it loses the
focus; the page's key script keeps it a moment after the last key (`NOTE_KEEP_MS`)."""

from __future__ import annotations

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import DROPPED, PREMATURE, PREMATURE_ID, make_workspace

pytestmark = pytest.mark.browser

NOTE = "the merge drops the db_analyst's row count"


def note_box(page):
    return page.locator(".st-key-ann-form").get_by_role("textbox", name="Note (optional)")


def test_a_note_typed_and_reloaded_before_the_box_loses_the_focus_is_kept(
        page, app_server, tmp_path):
    workspace = make_workspace(tmp_path, traces=[PREMATURE, DROPPED])
    base = app_server(workspace)
    goto_as(page, f"{base}/trace?trace={PREMATURE_ID}", "ann")
    wait_for_streamlit(page)
    page.get_by_text("targets labelled by").wait_for()

    box = note_box(page)
    box.click()
    page.keyboard.type(NOTE[:20], delay=20)
    page.wait_for_timeout(1500)  # a pause: the draft is kept, the focus stays in the box
    assert box.evaluate("el => document.activeElement === el")
    page.keyboard.type(NOTE[20:], delay=20)  # typing on after the draft was kept loses nothing
    assert box.input_value() == NOTE
    page.wait_for_timeout(1500)
    assert box.evaluate("el => document.activeElement === el")  # never blurred for the reviewer
    shot(page, "note_draft_01_typed")

    page.reload()  # before the box ever lost the focus
    wait_for_streamlit(page)
    page.get_by_text("targets labelled by").wait_for()
    assert note_box(page).input_value() == NOTE
    page.get_by_text("not saved yet").first.wait_for()
    note_box(page).scroll_into_view_if_needed()
    shot(page, "note_draft_02_after_reload")
    assert workspace.labelling.current(PREMATURE_ID) == []  # a draft is never a label
