"""End to end in Chromium: with the local stub configured as the app's endpoint, a reviewer on
demo 10's premature stop (e13) writes the decision it should have made (continue: wait for the
database analyst) and presses Continue from here; the branch is saved, and on the Compare page
it stands beside the original with the point of divergence marked and its requests shown as
not run, and the pair "original vs branch" is judged."""

from __future__ import annotations

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import PREMATURE, PREMATURE_ID, make_workspace
from openai_stub import OpenAIStub, Reply
from viz_app.branch import fork_of

pytestmark = pytest.mark.browser

WAIT = 90_000  # ms: two cores shared by many processes can be slow to run a page
DECISION = "Wait for db_analyst's EXPLAIN before concluding."


def test_continue_from_here_puts_the_branch_beside_the_original_on_compare(
        browsers, app_server, tmp_path):
    pytest.importorskip("openai")
    from playwright.sync_api import expect  # the chromium fixture has skipped without it
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    script = [Reply.turn("continue", "Waiting for db_analyst's EXPLAIN."),
              Reply.turn("spawn", "Spawn an index auditor.", to="index_auditor"),
              Reply.turn("stop", "Root cause: migration 0193 dropped the coupon index.")]
    with OpenAIStub(script=script) as stub:
        base = app_server(ws, extra_args=["--judge-url", stub.url, "--judge-model", "stub-model",
                                          "--judge-timeout", "20"])
        (page,) = browsers(1, timeout=WAIT)
        goto_as(page, f"{base}/trace?trace={PREMATURE_ID}&event=e13", "ann")
        wait_for_streamlit(page, timeout=WAIT)
        page.get_by_text("Continue from here · e13").click()
        wait_for_streamlit(page, timeout=WAIT)
        form = page.locator(".st-key-branch-e13")
        kind = form.locator(".st-key-branch-kind-e13")
        kind.scroll_into_view_if_needed()
        kind.get_by_role("button", name="Open").click()
        page.get_by_role("option", name="continue", exact=True).click()
        expect(kind.get_by_role("combobox")).to_have_value("continue")
        form.locator(".st-key-branch-text-e13 textarea").fill(DECISION)
        form.scroll_into_view_if_needed()
        shot(page, "branch_01_continue_from_here")
        form.get_by_role("button", name="Continue from here").click()
        page.get_by_text("Saved the branch", exact=False).wait_for()
        assert len(stub.received) == 3
        page.get_by_text("See it beside the original on Compare").click()
        wait_for_streamlit(page, timeout=WAIT)
        box = page.locator(".st-key-compare-divergence")
        box.wait_for()
        assert "B is a branch of A" in box.inner_text()
        assert "requested, not run" in box.inner_text()
        box.scroll_into_view_if_needed()
        shot(page, "branch_02_compare_divergence")
        page.get_by_text("the red line is where the branch parts", exact=False) \
            .scroll_into_view_if_needed()
        page.locator(".js-plotly-plot").last.wait_for()
        assert page.locator("text=divergence").count() >= 1
        shot(page, "branch_03_compare_timeline")
        page.get_by_text("B is better", exact=True).click()  # the pair judged
        page.get_by_placeholder("B waits for the profiler's result", exact=False) \
            .fill("The branch waits for the database analyst and finds the index.")
        page.get_by_role("button", name="Save judgement").click()
        page.get_by_text("Judgement saved.").wait_for()
    branches = [r for r in ws.library.update_index().rows if r.trace_id != PREMATURE_ID]
    assert len(branches) == 1
    fork = fork_of(ws.library.trace(branches[0].trace_id))
    assert (fork.forked_from, fork.fork_event) == (PREMATURE_ID, "e13")
    assert len(fork.replayed) == 3 and len(fork.requested) == 1
    judged = ws.labelling.judgement(PREMATURE_ID, branches[0].trace_id, "ann")
    assert judged is not None and judged.chosen == branches[0].trace_id
