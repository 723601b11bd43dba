"""End to end in Chromium: the learned producer's suggestion on a spawn of demo 12, on the trace
page of a reviewer who has already saved their own answer there (blind-first): its answer, the
features that pushed it there with their weights, its confidence, and its evidence as links."""

from __future__ import annotations

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from test_learned import SPAWN, learnable

pytestmark = pytest.mark.browser
pytest.importorskip("sklearn", reason="the learned producer is the `agreement` extra")

WAIT = 90_000  # ms: two cores shared by many processes can be slow to run a page
TRACE = "demo-12-review-over-spawning"


def test_a_learned_suggestion_shows_its_answer_features_and_evidence(browsers, app_server,
                                                                     tmp_path):
    ws, _ = learnable(tmp_path)  # ann answered every spawn blind
    model, _ = ws.suggestions.train(SPAWN, resamples=20)
    ws.suggestions.run([ws.library.trace(TRACE)], producer="learned")
    [made] = ws.suggestions.all(TRACE, event_id="e4", producer="learned")
    base = app_server(ws)
    (page,) = browsers(1, timeout=WAIT)
    goto_as(page, f"{base}/trace?trace={TRACE}&event=e4", "ann")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text("optional targets").click()  # spawns' questions are optional
    wait_for_streamlit(page, timeout=WAIT)
    target = page.locator('[data-testid="stSelectbox"]').filter(has_text="Target")
    target.locator("input").click()  # the labels panel's target: the spawn e4
    page.keyboard.type("e4 · spawn")
    page.keyboard.press("Enter")
    wait_for_streamlit(page, timeout=WAIT)
    box = page.locator('[class*="st-key-suggestions-"]')
    box.wait_for()
    box.get_by_text("learned:", exact=False).first.wait_for()
    box.scroll_into_view_if_needed()
    shot(page, "learned_01_suggestion_on_a_spawn")
    text = box.inner_text()
    assert f"confidence {made.confidence:.2f}" in text
    assert "(weight " in text and made.explanation.split(": ", 1)[1][:30] in text
    assert box.get_by_role("button", name="e4").count() >= 1
