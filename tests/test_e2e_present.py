"""Presentation mode in Chromium: a deep link opens it, next/previous and the arrow keys step
through the bookmarks in the order of the run, each step rings its event and shows its note, and
a script in a note never runs."""

from __future__ import annotations

import re

import pytest

from conftest import shot, wait_for_streamlit
from factories import PREMATURE, make_workspace, premature
from viz_app.synth import HOSTILE_MARKER

NOTES = ["The fan-out: three analysts at once",
         "The merge drops the profiler <script>window.__pwned=1</script>",
         "Stops before db_analyst returns"]


@pytest.fixture(scope="module")
def app(module_app_server, tmp_path_factory):
    """The app on demo 10 with three bookmarks, written out of their order in the run: one for
    the module, as its tests only look (each in a browser context of its own)."""
    workspace = make_workspace(tmp_path_factory.mktemp("e2e-present"), traces=[PREMATURE])
    # aggregate e12, stop e13
    trace = premature()
    marks = workspace.bookmarks
    marks.add(trace, "bob", NOTES[2], event_id="e13")
    marks.add(trace, "ann", NOTES[0], start_s=0.0, end_s=2.0)
    marks.add(trace, "ann", NOTES[1], event_id="e12")
    workspace.labelling.save(trace, "aggregation_quality", 2, "ann", "e12")
    return module_app_server(workspace)


def position(page) -> str:
    return page.get_by_text(re.compile(r"^\d+ / \d+$")).first.inner_text()


def current_ring(page) -> list:
    """(x, y) of the timeline's current-bookmark ring, from the Plotly figure on the page."""
    return page.evaluate("""() => {
        for (const plot of document.querySelectorAll('.js-plotly-plot')) {
            const ring = (plot.data || []).find(t => t.name === 'current bookmark');
            if (ring) return [ring.x[0], ring.y[0]];
        }
        return null;
    }""")


def step_until(page, text: str) -> None:
    page.get_by_text(text, exact=False).first.wait_for(timeout=20_000)
    wait_for_streamlit(page)


@pytest.mark.browser
def test_presentation_steps_through_bookmarks_with_next_previous_and_arrow_keys(app, page):
    page.goto(f"{app}/?trace=demo-10-review-premature-stop&present=1")
    wait_for_streamlit(page, 60_000)
    assert "/present" in page.url
    step_until(page, NOTES[0])
    assert position(page) == "1 / 3"
    assert current_ring(page) is None  # a time range: a band, not a ring
    shot(page, "present_step1")

    page.get_by_role("button", name=re.compile("next")).click()
    step_until(page, "The merge drops the profiler")
    assert position(page) == "2 / 3" and "step=2" in page.url
    assert current_ring(page) == [24, 0.0]  # e12, the orchestrator's lane
    # the label on it (its table draws a moment after the script run ends)
    page.get_by_text("aggregation_quality").first.wait_for(state="attached", timeout=20_000)
    shot(page, "present_step2")

    page.keyboard.press("ArrowRight")
    step_until(page, NOTES[2])
    assert position(page) == "3 / 3"
    assert current_ring(page) == [31, 0.0]  # e13
    assert page.get_by_role("button", name=re.compile("next")).is_disabled()

    page.keyboard.press("ArrowLeft")
    step_until(page, "The merge drops the profiler")
    assert position(page) == "2 / 3"
    page.get_by_role("button", name=re.compile("previous")).click()
    step_until(page, NOTES[0])
    assert position(page) == "1 / 3"
    assert page.get_by_role("button", name=re.compile("previous")).is_disabled()
    assert page.evaluate(f"typeof window.{HOSTILE_MARKER}") == "undefined"


@pytest.mark.browser
def test_a_link_to_a_step_opens_that_step(app, page):
    page.goto(f"{app}/trace?trace=demo-10-review-premature-stop&present=1&step=3")
    wait_for_streamlit(page, 60_000)
    step_until(page, NOTES[2])
    assert position(page) == "3 / 3"


@pytest.mark.browser
def test_the_trace_page_leads_into_presentation_mode(app, page):
    page.goto(f"{app}/trace?trace=demo-10-review-premature-stop")
    wait_for_streamlit(page, 60_000)
    page.get_by_test_id("stMainBlockContainer").get_by_role("link", name="Present", exact=True).click()
    wait_for_streamlit(page, 60_000)
    step_until(page, NOTES[0])
    assert "/present" in page.url and position(page) == "1 / 3"
