"""End to end in Chromium: a reviewer opens a demo trace, labels its aggregation (with the
keyboard) and its stop decision (with a pointer to where it should have stopped), reloads, finds
the labels again, and the export holds them with the rubric's rewards. Trace text in the panel
never runs as script."""

from __future__ import annotations

import json
import re

import pytest

from conftest import shot, wait_for_streamlit
from factories import DROPPED, PREMATURE, PREMATURE_ID, make_workspace
from viz_app.cli import main
from viz_app.workspace import Workspace

pytestmark = pytest.mark.browser

TRACE_ID = PREMATURE_ID  # aggregate e12 (inputs e10, e11), stop e13


def open_as(page, url: str, reviewer: str) -> None:
    page.goto(url)
    wait_for_streamlit(page)
    box = page.get_by_role("textbox", name="Reviewer")
    box.fill(reviewer)
    box.press("Enter")
    wait_for_streamlit(page)
    page.get_by_text("targets labelled by").wait_for()


def form(page):
    """The answers of the current target (a bordered container, not an st.form: each answer
    reaches the server when given)."""
    return page.locator(".st-key-ann-form")


def option(page, label: str):
    return form(page).locator('[data-testid="stRadioOption"]').filter(has_text=label)


def checked(page, label: str) -> bool:
    return option(page, label).locator("input").is_checked()


def progress_text(page) -> str:
    return page.get_by_text(re.compile(r"\d+ of \d+ targets labelled by")).inner_text()


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    """Demo 10 and demo 9, on a fresh database."""
    return make_workspace(tmp_path, traces=[PREMATURE, DROPPED])


def test_a_reviewer_labels_an_aggregation_and_a_stop_and_finds_them_after_reload(
        page, app_server, workspace, tmp_path):
    db = workspace.settings.db_url
    base = app_server(workspace)
    url = f"{base}/trace?trace={TRACE_ID}"
    open_as(page, url, "ann")
    assert progress_text(page) == "0 of 3 targets labelled by ann"
    shot(page, "labelling_01_aggregate_unlabelled")

    # the aggregate comes first: its inputs beside its output, then the scale
    assert page.get_by_text("Merged (2)").is_visible()
    assert page.get_by_text("Root cause: the v2.3.0 deploy", exact=False).first.is_visible()
    note = form(page).get_by_role("textbox", name="Note (optional)")
    note.fill("4 of 5 facts kept")  # digits typed into a text field pick nothing
    wait_for_streamlit(page)
    assert not checked(page, "4 mostly faithful")
    page.get_by_text("Labels", exact=True).click()  # focus out of the text field
    page.keyboard.press("2")  # key 2 picks the scale point 2
    wait_for_streamlit(page)
    assert checked(page, "2 major gaps")
    form(page).get_by_role("button", name="dropped a result").click()
    form(page).get_by_role("button", name=re.compile("Save")).click()
    wait_for_streamlit(page)
    page.get_by_text("Saved 2 answers on e12").wait_for()
    assert progress_text(page) == "1 of 3 targets labelled by ann"
    shot(page, "labelling_02_aggregate_saved")

    # the stop decision: premature, and where it should have stopped
    page.get_by_role("button", name=re.compile("Next target")).click()
    wait_for_streamlit(page)
    page.get_by_text("Around the stop").wait_for()
    option(page, "premature").click()
    pointer = form(page).locator('[data-testid="stSelectbox"]').filter(
        has_text="At which event should it have stopped")
    pointer.get_by_role("combobox").click()
    page.keyboard.type("e15")  # the list is long: filter it as a reviewer would
    page.get_by_role("option", name=re.compile(r"^e15 · return")).click()
    shot(page, "labelling_03_stop_answered")
    form(page).get_by_role("button", name=re.compile("Save")).click()
    wait_for_streamlit(page)
    page.get_by_text("Saved 2 answers on e13").wait_for()
    assert progress_text(page) == "2 of 3 targets labelled by ann"

    # a new session on the same store: the labels are there
    page.reload()
    open_as(page, url, "ann")
    assert progress_text(page) == "2 of 3 targets labelled by ann"
    target = page.locator('[data-testid="stSelectbox"]').filter(has_text="Target")
    target.get_by_role("combobox").click()
    page.get_by_role("option", name=re.compile(r"e12 · aggregate")).click()
    wait_for_streamlit(page)
    assert checked(page, "2 major gaps")
    saved = re.compile(r"saved \d{4}-\d\d-\d\d at \d\d:\d\d UTC")
    assert form(page).get_by_text(saved).is_visible()
    shot(page, "labelling_04_after_reload")

    # the export holds them with the rubric's rewards
    rewards = tmp_path / "rewards.jsonl"
    assert main(["labels", "export", "--db", db, "--format", "rewards", "-o",
                 str(rewards)]) == 0
    rows = {(r["event_id"], r["question"]): r
            for r in map(json.loads, rewards.read_text().splitlines())}
    assert rows[("e12", "aggregation_quality")]["reward"] == -0.5
    assert rows[("e13", "stopping_correctness")]["reward"] == -1.0
    assert all(r["reviewers"] == 1 and r["trace_id"] == TRACE_ID for r in rows.values())
    labels = tmp_path / "labels.jsonl"
    main(["labels", "export", "--db", db, "--format", "jsonl", "-o", str(labels)])
    values = {r["question"]: r["value"] for r in map(json.loads, labels.read_text().splitlines())}
    assert values == {"aggregation_quality": 2, "aggregation_issues": ["dropped_result"],
                      "stopping_correctness": "premature", "stop_should_have_been": "e15"}


def test_a_value_the_reviewer_did_not_give_is_not_saved(page, app_server, workspace):
    open_as(page, f"{app_server(workspace)}/trace?trace={TRACE_ID}", "bob")
    form(page).get_by_role("button", name=re.compile("Save")).click()
    wait_for_streamlit(page)
    assert page.get_by_text("Answer first", exact=False).is_visible()
    assert progress_text(page) == "0 of 3 targets labelled by bob"


def test_hostile_trace_text_in_the_panel_never_runs(page, app_server, tmp_path):
    from viz_app.synth import HOSTILE_MARKER, hostile_trace

    raw = hostile_trace()
    open_as(page, f"{app_server(make_workspace(tmp_path, traces=[raw]))}/trace?trace="
                  f"{raw['trace_id']}", "eve")
    page.get_by_text("Merged", exact=False).first.wait_for()
    target = page.locator('[data-testid="stSelectbox"]').filter(has_text="Target")
    target.get_by_role("combobox").click()
    page.get_by_role("option", name=re.compile(r"stop")).first.click()  # its context too
    wait_for_streamlit(page)
    page.get_by_text("Around the stop").wait_for()
    page.wait_for_timeout(1500)
    shot(page, "labelling_05_hostile_panel")
    ran = page.evaluate(f"() => Boolean(window.{HOSTILE_MARKER}) || "
                        f"Array.from(document.querySelectorAll('iframe')).some(f => {{ "
                        f"try {{ return Boolean(f.contentWindow.{HOSTILE_MARKER}); }} "
                        f"catch (e) {{ return false; }} }})")
    assert ran is False
