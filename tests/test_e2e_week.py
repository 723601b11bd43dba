"""End to end in Chromium, a lead's and two reviewers' week without the command line (issue 40):
the lead makes a campaign in the app from the Library's search, with instructions; two reviewers
see the instructions beside their first target, one reloads mid-draft and finds the answer
still there; they disagree on a merge; the lead settles it on Adjudicate seeing both sides and
is told what was saved; the campaign's adjudicated export holds the final answer. Screenshots at
1600x1000 under test-artifacts/week_*.png."""

from __future__ import annotations

import json
import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import DROPPED, PREMATURE, make_workspace
from reviewing import WAIT, press, save, start, target_text, wait_checked
from viz_app.cli import main

pytestmark = pytest.mark.browser

NAME = "week"
INSTRUCTIONS = "Judge the **merge** against every result it received; *skip* nothing."


def answer(page, merge_digit: str) -> None:
    """The target on screen: a merge gets `merge_digit`, anything else its first answer."""
    if "aggregate" in target_text(page):
        press(page, merge_digit)
        wait_checked(page, {"2": "2 major gaps", "4": "4 mostly faithful"}[merge_digit])
    else:
        press(page, "1")
    save(page)


def test_a_week_made_in_the_app_from_campaign_to_adjudicated_export(browsers, app_server,
                                                                     tmp_path):
    workspace = make_workspace(tmp_path, traces=[PREMATURE, DROPPED])
    base = app_server(workspace)
    lee, ann, bob = browsers(3, timeout=WAIT)
    # the lead searches the Library and makes a campaign of what it lists
    goto_as(lee, base, "lee")
    wait_for_streamlit(lee, timeout=WAIT)
    search = lee.get_by_role("textbox", name="Search")
    search.fill("premature")
    search.press("Enter")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("Make a review campaign of these 1 traces").click()
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("Library's current filter").wait_for()
    lee.get_by_role("textbox", name="Name").fill(NAME)
    lee.get_by_role("textbox", name="Instructions for the reviewers").fill(INSTRUCTIONS)
    shot(lee, "week_01_new_campaign")
    lee.get_by_role("button", name="Make the campaign").click()
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text(re.compile(r"Made the campaign week: \d+ targets, K = 2")).wait_for()
    shot(lee, "week_02_campaign_made")
    found = workspace.campaigns.get(NAME)
    assert found.spec.filter.text == "premature" and found.spec.instructions == INSTRUCTIONS
    assert found.targets >= 2  # the merge, the stop, the run: of the one trace listed

    # two reviewers, the instructions beside their first target
    for page, name in ((ann, "ann"), (bob, "bob")):
        goto_as(page, f"{base}/review?campaign={NAME}", name)
        wait_for_streamlit(page, timeout=WAIT)
        start(page)
        shown = page.locator(".st-key-review-instructions")
        shown.wait_for()
        assert "Judge the merge against every result" in shown.inner_text()
    shot(ann, "week_03_first_target_with_instructions")

    # ann answers her merge, reloads before saving: the answer is still there
    while "aggregate" not in target_text(ann):
        answer(ann, "2")
    press(ann, "2")
    wait_checked(ann, "2 major gaps")
    ann.reload()
    wait_for_streamlit(ann, timeout=WAIT)
    start(ann)  # the target she holds, with her draft
    wait_checked(ann, "2 major gaps")
    shot(ann, "week_04_draft_after_reload")
    save(ann)
    while not ann.get_by_text("nothing is left for you").count():
        answer(ann, "2")

    while not bob.get_by_text("nothing is left for you").count():
        answer(bob, "4")
    assert workspace.campaigns.status(NAME).complete == found.targets

    # the lead settles the dispute seeing both sides
    goto_as(lee, f"{base}/adjudicate?campaign={NAME}", "lee")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("Disagreement 1 of 1").wait_for()
    answers = lee.locator(".st-key-adj-answers")
    for seen in ("ann", "bob", "2 major gaps", "4 mostly faithful"):
        assert answers.get_by_text(seen, exact=False).first.is_visible()
    shot(lee, "week_05_both_sides")
    press(lee, "3")
    wait_checked(lee, "3 partial")
    reason = lee.get_by_role("textbox", name=re.compile("Reason for the final answer"))
    reason.fill("one finding dropped, the rest merged faithfully")
    reason.press("Control+Enter")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("Saved the final answer", exact=False).wait_for()
    shot(lee, "week_06_settled")

    out = tmp_path / "adjudicated.jsonl"
    assert main(["campaign", "export", NAME, "--db", workspace.settings.db_url,
                 "--format", "jsonl", "--adjudicated-only", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    final = [(r["value"], r["source"], r["reviewer"]) for r in rows
             if r["question"] == "aggregation_quality"]
    assert final == [(3, "adjudication", "lee")]
    assert all(r["source"] == "adjudication" for r in rows)
