"""End to end in Chromium: a reviewer in a campaign writes the merge the orchestrator should have
made, by keyboard only, on the Review page (Ctrl+Enter starts, 1 scores the merge, W puts the
focus in the correction box prefilled with the aggregator's output, typing edits it, the word
diff shows the edit, Ctrl+Enter saves); the correction is a label of the campaign and the
decision-pairs export has its row. The seconds from W to the next target are printed (-s)."""

from __future__ import annotations

import re
import time

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import copy_demos, make_workspace
from reviewing import press, target_text
from viz_app.export.consensus import ExportOptions
from viz_app.export.decision_pairs import decision_pair_rows
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer

pytestmark = pytest.mark.browser

DEMOS = ["09_review_dropped_finding", "10_review_premature_stop"]
NAME = "merges"
WAIT = 90_000
FIX = "Python 3.13 made the GIL optional (PEP 703, experimental free-threaded build)."


@pytest.fixture
def workspace(tmp_path):
    ws = make_workspace(tmp_path, traces=[copy_demos(tmp_path / "demos", DEMOS)])
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["aggregation_quality",
                                                          "merge_correction"]),
                       Reviewer(name="lee", via="cli"))
    return ws


def test_a_reviewer_writes_the_merge_it_should_have_made_by_keyboard(page, app_server,
                                                                       workspace):
    base = app_server(workspace)
    page.set_default_timeout(WAIT)
    goto_as(page, f"{base}/?campaign={NAME}", "ann")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_role("button", name=re.compile("Start")).wait_for()
    press(page, "Control+Enter")  # Start
    page.locator(".st-key-review-target").wait_for()
    seconds = []
    for _ in DEMOS:
        shown = target_text(page)
        trace_id = re.search(r"demo-\d\d-[a-z-]+", shown.replace("\\", "")).group(0)
        start = time.perf_counter()
        press(page, "1")  # drops or contradicts
        box = page.locator('.st-key-ann-correction-merge_correction textarea')
        assert box.input_value().startswith(
            "Final answer: Python 3.12" if trace_id.startswith("demo-09") else "Root cause")
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.keyboard.press("w")  # the focus goes to the merge box, no mouse
        assert page.evaluate("document.activeElement.tagName") == "TEXTAREA"
        page.keyboard.press("Control+a")
        page.keyboard.type(FIX if trace_id.startswith("demo-09") else "Migration 0193.")
        if trace_id.startswith("demo-09"):
            page.keyboard.press("Tab")  # the text is kept; the word diff is drawn
            wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
            page.locator(".st-key-ann-correction-diff").wait_for()
            page.locator('.st-key-ann-correction-merge_correction textarea').focus()
            shot(page, "corrections_01_merge_by_keyboard")
        page.keyboard.press("Control+Enter")  # keeps the text and saves, from the text box
        page.wait_for_function(
            """(before) => {
                const box = document.querySelector('.st-key-review-target');
                if (box) return box.innerText !== before;
                return /nothing is left for you/.test(document.body.innerText);
            }""", arg=shown, timeout=WAIT, polling="raf")
        seconds.append(time.perf_counter() - start)
        wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    page.get_by_text("nothing is left for you").wait_for()
    print(f"\ncorrection by keyboard, 1 to the next target: "
          f"{', '.join(f'{s:.2f}' for s in seconds)} s")

    records = workspace.labelling.current_records(campaign=NAME)
    fixes = {r["trace_id"]: r["value"] for r in records if r["question"] == "merge_correction"}
    assert fixes == {"demo-09-review-dropped-finding": {"action": "merge", "text": FIX},
                     "demo-10-review-premature-stop": {"action": "merge",
                                                       "text": "Migration 0193."}}
    traces = {t: workspace.library.trace(t) for t in fixes}
    rows = decision_pair_rows(records, traces, workspace.rubric,
                              ExportOptions(confirmations="none"))
    assert sorted((r["trace_id"], r["chosen"]) for r in rows) == sorted(
        (t, f"aggregate: {v['text']}") for t, v in fixes.items())
