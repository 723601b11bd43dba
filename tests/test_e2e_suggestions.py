"""End to end in Chromium: suggestions are blind-first. On demo trace 10 the rules suggest
"premature" on the stop e13. A reviewer deep-linked on that stop sees only how many suggestions
there are until they save their own answer (by keyboard); then the explanation and its evidence
appear as links to its evidence, and the label says suggestions were not in view; a click on an
evidence link selects its event in the inspector and the URL.
In an assisted campaign the Review page shows the suggestion before the answer, and the label
says it was in view."""

from __future__ import annotations

import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import PREMATURE, PREMATURE_ID, make_workspace
from reviewing import press, wait_checked
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer
from viz_app.workspace import Workspace

pytestmark = pytest.mark.browser

WAIT = 90_000  # ms: two cores shared by many processes can be slow to run a page
WHY = "returned after the stop e13"  # in the rules' explanation of their suggestion on e13
HIDDEN = re.compile(r"suggested answers? · hidden until you save yours")


def suggestions_box(page):
    return page.locator('[class*="st-key-suggestions-"]')


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    """Demo 10 with the rules' suggestions stored (premature on e13, evidence e13, e15, e12)."""
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    report = ws.suggestions.run([ws.library.trace(PREMATURE_ID)], producer="rules")
    assert any(s.event_id == "e13" and s.value == "premature"
               for s in ws.suggestions.all(PREMATURE_ID)), report
    return ws


def test_the_trace_page_shows_a_suggestion_only_after_the_reviewers_save(
        browsers, app_server, workspace):
    base = app_server(workspace)
    (page,) = browsers(1, timeout=WAIT)
    goto_as(page, f"{base}/trace?trace={PREMATURE_ID}&event=e13", "ann")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text("Around the stop").wait_for()  # the panel is on the stop
    page.get_by_text(HIDDEN).wait_for()
    shot(page, "suggestions_01_hidden_before_save")
    assert page.get_by_text(WHY, exact=False).count() == 0
    assert suggestions_box(page).count() == 0
    assert page.get_by_text("1 suggested answer ·", exact=False).is_visible()

    press(page, "1")  # correct: the reviewer's own answer, not the suggested one
    wait_checked(page, "correct")
    assert page.get_by_text(WHY, exact=False).count() == 0  # answering is not saving
    press(page, "Control+Enter")
    page.get_by_text("Saved 1 answer on e13", exact=False).wait_for()
    box = suggestions_box(page)
    box.wait_for()
    explanation = box.get_by_text(WHY, exact=False)
    assert explanation.is_visible()
    assert "rules: premature" in box.inner_text()
    for event_id in ("e13", "e15", "e12"):  # its evidence, as links to the events
        assert box.get_by_role("button", name=event_id, exact=True).is_visible()
    assert page.get_by_text(HIDDEN).count() == 0
    box.scroll_into_view_if_needed()
    shot(page, "suggestions_02_shown_after_save")

    [label] = workspace.labelling.current(reviewer="ann")
    assert (label.event_id, label.question, label.value) == ("e13", "stopping_correctness",
                                                             "correct")
    assert label.suggestions_visible is False


def test_an_evidence_link_selects_its_event_in_the_inspector(browsers, app_server, workspace):
    base = app_server(workspace)
    (page,) = browsers(1, timeout=WAIT)
    goto_as(page, f"{base}/trace?trace={PREMATURE_ID}&event=e13", "ann")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text(HIDDEN).wait_for()
    press(page, "1")
    wait_checked(page, "correct")
    press(page, "Control+Enter")
    box = suggestions_box(page)
    box.wait_for()
    box.get_by_role("button", name="e15", exact=True).click()
    wait_for_streamlit(page, timeout=WAIT)
    inspector = page.locator(".st-key-inspector-panel")
    inspector.scroll_into_view_if_needed()
    shot(page, "suggestions_03_evidence_selected")
    page.wait_for_function(
        "() => /\\breturn\\s+e15\\b/.test(document.querySelector("
        "'.st-key-inspector-panel')?.innerText || '')", timeout=30_000)
    assert re.search(r"[?&]event=e15\b", page.url)


def test_an_assisted_campaign_shows_the_suggestion_first_and_the_label_says_so(
        browsers, app_server, workspace):
    workspace.library.update_index()
    workspace.campaigns.create(CampaignSpec(name="assisted", questions=["stopping_correctness"],
                                           assisted=True), Reviewer(name="lee", via="cli"))
    base = app_server(workspace)
    (page,) = browsers(1, timeout=WAIT)
    goto_as(page, f"{base}/?campaign=assisted", "bob")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_role("button", name=re.compile("Start")).wait_for()
    press(page, "Control+Enter")  # Start
    page.locator(".st-key-review-target").wait_for()
    box = suggestions_box(page)
    box.wait_for()
    assert box.get_by_text(WHY, exact=False).is_visible()  # before any answer
    assert page.get_by_text(HIDDEN).count() == 0
    box.scroll_into_view_if_needed()
    shot(page, "suggestions_04_assisted_before_answer")
    press(page, "1")
    wait_checked(page, "correct")
    press(page, "Control+Enter")
    page.get_by_text("nothing is left for you").wait_for()
    shot(page, "suggestions_05_assisted_saved")

    [label] = workspace.labelling.current(campaign="assisted")
    assert (label.reviewer, label.value) == ("bob", "correct")
    assert label.suggestions_visible is True
