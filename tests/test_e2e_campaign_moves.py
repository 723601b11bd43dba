"""End to end in Chromium (issue 40): a lead ticks rows of the Library's table and makes a
campaign of them on the Campaigns page; a reviewer answers every spawn of a 34-worker fan-out at
once, then goes back to a target they saved and changes their answer, a new label beside the
old one."""

from __future__ import annotations

import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import DEMO_DIR, DROPPED, PREMATURE, make_workspace
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
