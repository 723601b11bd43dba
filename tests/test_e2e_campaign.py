"""End to end in Chromium: a campaign on the stops of demo traces 09-12, two reviewers per
target. Two reviewers in two browser contexts work it to completion by keyboard (Ctrl+Enter to
start, a digit to answer, Enter at a stop's cursor, Ctrl+Enter to save and get the next, S and Esc
to look at the skip reasons and come back); a lead settles their one disagreement on the
Adjudicate page; `orchviz campaign export --adjudicated-only` holds the lead's final answer.

The time from Ctrl+Enter to the next target on screen is printed (the `-s` flag shows it)."""

from __future__ import annotations

import json
import re
import statistics

import pytest

from conftest import goto_as, hold_the_server_line, release, shot, wait_for_streamlit
from factories import copy_demos, make_workspace
from reviewing import WAIT, press, save, start, target_text, wait_checked
from viz_app.cli import main
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer

pytestmark = pytest.mark.browser

DEMOS = ["09_review_dropped_finding", "10_review_premature_stop", "11_review_late_stop",
         "12_review_over_spawning"]
NAME = "stops"
DISPUTED = "demo-10-review-premature-stop"


def review_one(page, answer: str, latencies: list[float]) -> str:
    """Answer the target on screen by keyboard and save it; returns the trace id it was on."""
    shown = target_text(page)
    trace_id = re.search(r"demo-\d\d-[a-z-]+", shown.replace("\\", "")).group(0)
    digit = {"correct": "1", "premature": "2"}[answer]
    press(page, digit)
    wait_checked(page, answer)
    if answer == "premature":  # where it should have stopped: the event after it, by Enter
        press(page, "Enter")
    latencies.append(save(page, shown))
    return trace_id


@pytest.fixture
def workspace(tmp_path):
    folder = copy_demos(tmp_path / "demos", DEMOS)
    ws = make_workspace(tmp_path, traces=[folder])
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness"],
                                    per_target=2), Reviewer(name="lee", via="cli"))
    return ws


def test_two_reviewers_and_a_lead_take_a_campaign_to_an_adjudicated_export(
        browsers, app_server, workspace, tmp_path):
    base = app_server(workspace)
    ann, bob, lee = browsers(3, timeout=WAIT)
    latencies: list[float] = []
    for page, name in ((ann, "ann"), (bob, "bob")):
        goto_as(page, f"{base}/?campaign={NAME}", name)  # the deep link
        wait_for_streamlit(page, timeout=WAIT)
        page.get_by_role("button", name=re.compile("Start")).wait_for()
        assert "/review" in page.url
    shot(ann, "campaign_01_before_start")
    for page in (ann, bob):
        start(page)
    shot(ann, "campaign_02_first_target")

    # bob looks at the skip reasons and comes back, by keyboard
    press(bob, "s")
    bob.get_by_text("Why skip this target?").wait_for()
    shot(bob, "campaign_03_skip_reasons")
    press(bob, "Escape")
    bob.locator(".st-key-ann-form").wait_for()

    done: dict[str, list[str]] = {"ann": [], "bob": []}
    for _ in range(len(DEMOS)):  # the two work side by side, one target each in turn
        done["ann"].append(review_one(ann, "correct", latencies))
        bob_trace = re.search(r"demo-\d\d-[a-z-]+",
                              target_text(bob).replace("\\", "")).group(0)
        done["bob"].append(review_one(
            bob, "premature" if bob_trace == DISPUTED else "correct", latencies))
    for page in (ann, bob):
        page.get_by_text("nothing is left for you").wait_for()
    shot(ann, "campaign_04_done")
    assert sorted(done["ann"]) == sorted(done["bob"]) and len(set(done["ann"])) == 4
    status = workspace.campaigns.status(NAME)
    assert (status.targets, status.complete) == (4, 4)

    # the lead settles the one disagreement
    goto_as(lee, f"{base}/adjudicate?campaign={NAME}", "lee")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("Disagreement 1 of 1").wait_for()
    assert lee.get_by_text("names are not verified", exact=False).first.is_visible()
    shot(lee, "campaign_05_disagreement")
    press(lee, "2")  # premature
    wait_checked(lee, "premature")
    press(lee, "Enter")  # it should have stopped at the event after the stop
    reason = lee.get_by_role("textbox", name=re.compile("Reason for the final answer"))
    reason.fill("e14 and e15 came back after the stop")
    reason.press("Control+Enter")
    wait_for_streamlit(lee, timeout=WAIT)
    lee.get_by_text("No open disagreement in this campaign").wait_for()
    shot(lee, "campaign_06_settled")
    lee.get_by_role("tab", name="Status").click()
    lee.get_by_text("Reviewers", exact=True).wait_for()
    shot(lee, "campaign_07_status")

    out = tmp_path / "adjudicated.jsonl"
    assert main(["campaign", "export", NAME, "--db", workspace.settings.db_url,
                 "--format", "jsonl", "--adjudicated-only", "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {(r["trace_id"], r["question"], r["value"], r["source"], r["reviewer"])
            for r in rows} == {
        (DISPUTED, "stopping_correctness", "premature", "adjudication", "lee"),
        (DISPUTED, "stop_should_have_been", "e14", "adjudication", "lee")}
    median = statistics.median(latencies)
    print(f"\nCtrl+Enter to the next target on screen, {len(latencies)} saves: median "
          f"{median * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms")


def skip_reasons(workspace) -> list[tuple[str, str]]:
    """(reviewer, reason) of every skip in the workspace's campaigns."""
    from sqlalchemy import select

    from viz_app.store.tables import campaign_skips_table as skips

    with workspace.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(select(skips.c.reviewer, skips.c.reason))]


def test_a_digit_typed_right_after_s_picks_a_skip_reason_never_an_answer(
        page, app_server, workspace):
    """S, then 2 before the reasons are drawn (the server's reply held back): the target is
    skipped for reason 2, and the form being left gets no answer."""
    line = hold_the_server_line(page)
    page.set_default_timeout(WAIT)
    goto_as(page, f"{app_server(workspace)}/?campaign={NAME}", "bob")
    wait_for_streamlit(page, timeout=WAIT)
    press(page, "Control+Enter")  # Start
    page.locator(".st-key-review-target").wait_for()
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    line["held"] = True
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("s")
    page.keyboard.press("2")
    page.wait_for_timeout(400)
    assert page.locator(".st-key-ann-form input[type='radio']:checked").count() == 0
    release(line)
    page.wait_for_function("() => /1 skipped/.test(document.body.innerText)", timeout=WAIT)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    assert skip_reasons(workspace) == [("bob", "The trace looks broken or cut short")]
    assert workspace.labelling.current_records(campaign=NAME) == []
