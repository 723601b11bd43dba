"""End to end in Chromium (issue 40): a lead ticks rows of the Library's table and makes a
campaign of them on the Campaigns page; a reviewer answers every spawn of a 34-worker fan-out at
once, then goes back to a target they saved and changes their answer, a new label beside the
old one."""

from __future__ import annotations

import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import DEMO_DIR, DROPPED, PREMATURE, make_workspace
from reviewing import press, wait_checked
from viz_app.labels import Reviewer

pytestmark = pytest.mark.browser

SWARM = DEMO_DIR / "04_swarm_parallel_audit.json"
SWARM_ID = "demo-04-swarm-audit"
WAIT = 60_000


def tick_row(page, n: int) -> None:
    """Tick the n-th data row (0-based) of the Library's table by its row marker: the header
    and each row are 35 px high, the markers sit in the first column."""
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.wait_for(state="attached")
    box = grid.bounding_box()
    assert box and box["height"] > 35 * (n + 2), box
    page.mouse.click(box["x"] + 14, box["y"] + 35 * (n + 1) + 17)
    wait_for_streamlit(page, timeout=WAIT)


def test_a_lead_makes_a_campaign_of_the_rows_ticked_in_the_library(page, app_server, tmp_path):
    workspace = make_workspace(tmp_path, traces=[PREMATURE, DROPPED, SWARM])
    rows = [r.trace_id for r in workspace.library.update_index().rows]
    base = app_server(workspace)
    page.set_default_timeout(WAIT)
    goto_as(page, base, "lee")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text("Pick traces for a campaign").click()
    wait_for_streamlit(page, timeout=WAIT)
    assert "/trace" not in page.url
    shot(page, "moves_00_picking")
    tick_row(page, 0)
    tick_row(page, 2)
    assert "/trace" not in page.url  # ticking a row opens no trace
    link = page.get_by_text("Make a review campaign of the 2 traces ticked")
    link.wait_for()
    shot(page, "moves_01_library_ticked")
    link.click()
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text("the 2 traces ticked in the Library's table").wait_for()
    page.get_by_role("textbox", name="Name").fill("ticked")
    shot(page, "moves_02_campaign_from_ticked")
    page.get_by_role("button", name="Make the campaign").click()
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text(re.compile(r"Made the campaign ticked: \d+ targets")).wait_for()
    found = workspace.campaigns.get("ticked")
    assert found.spec.filter.trace_ids == [rows[0], rows[2]]
    assert {t.trace_id for t in workspace.campaigns.targets(found)} == {rows[0], rows[2]}
    assert found.created_by == Reviewer(name="lee", via="self-declared").name


def test_a_reviewer_answers_a_fan_out_at_once_then_goes_back_and_changes_one_by_keys(
        page, app_server, tmp_path):
    workspace = make_workspace(tmp_path, traces=[SWARM])
    workspace.library.update_index()
    from viz_app.labels import CampaignSpec, Filter

    workspace.campaigns.create(CampaignSpec(name="spawns", questions=["spawn_necessity"],
                                            filter=Filter(trace_ids=[SWARM_ID])),
                               Reviewer(name="lee", via="cli"))
    base = app_server(workspace)
    page.set_default_timeout(WAIT)
    goto_as(page, f"{base}/review?campaign=spawns", "ann")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_role("button", name=re.compile("Start")).wait_for()
    press(page, "Control+Enter")  # Start
    page.locator(".st-key-review-many").wait_for()
    assert "33 more of this trace are open to you" in page.locator(
        ".st-key-review-many").inner_text()
    press(page, "2")  # redundant
    wait_checked(page, "redundant")
    press(page, "Shift+A")  # every other spawn of the fan-out
    page.get_by_text("Saving gives this answer to 34 targets").wait_for()
    shot(page, "moves_03_fan_out_chosen")
    press(page, "Control+Enter")
    page.get_by_text("nothing is left for you").wait_for()
    labels = workspace.labelling.current(SWARM_ID, "ann", campaign="spawns")
    assert len(labels) == 34 and {x.value for x in labels} == {"redundant"}
    assert len({x.label_id for x in labels}) == 34
    shot(page, "moves_04_fan_out_saved")

    press(page, "p")  # back to the last target saved
    page.get_by_text("Back at a target you saved").wait_for()
    wait_checked(page, "redundant")  # her answer, in the form
    press(page, "1")  # necessary after all
    wait_checked(page, "necessary")
    shot(page, "moves_05_back_changing")
    press(page, "Control+Enter")
    page.get_by_text("nothing is left for you").wait_for()
    changed = [x for x in workspace.labelling.current(SWARM_ID, "ann", campaign="spawns")
               if x.value == "necessary"]
    assert len(changed) == 1
    history = workspace.labelling.history(SWARM_ID, changed[0].event_id, "spawn_necessity",
                                          reviewer="ann")
    assert [x.value for x in history] == ["redundant", "necessary"]
    shot(page, "moves_06_changed")
