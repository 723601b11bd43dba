"""End to end in Chromium: the labels panel by keyboard (digits, letters, Ctrl+Enter wherever
the focus is, N / P / S, Shift+N, arrows and Enter at a stop, ? and H), the reviewer remembered
across a reload and a new tab and carried by a deep link, and the panel in view at 1600x1000
with an event selected."""

from __future__ import annotations

import re

import pytest

from conftest import (VIEWPORT, goto_as, hold_the_server_line, release, shot,
                      wait_for_streamlit)
from factories import DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, make_workspace
from reviewing import press
from viz_app.workspace import Workspace

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Workspace:
    """Demo 10 (aggregate e12, stop e13, the whole trace) and demo 9, on a fresh database: one
    for the module, where each test is a reviewer no other test names (so each starts with
    nothing labelled), and what a test reads back is its own reviewer's."""
    return make_workspace(tmp_path_factory.mktemp("e2e-keyboard"), traces=[PREMATURE, DROPPED])


@pytest.fixture(scope="module")
def base(module_app_server, workspace) -> str:
    """The app on `workspace`, started once for the module's tests."""
    return module_app_server(workspace)


def saved_by(workspace: Workspace, reviewer: str) -> list:
    """The reviewer's current labels on demo 10."""
    return [x for x in workspace.labelling.current(PREMATURE_ID) if x.reviewer == reviewer]


def panel(page):
    return page.locator(".st-key-ann-form")


def option(page, label: str):
    return panel(page).locator('[data-testid="stRadioOption"]').filter(has_text=label)


def checked(page, label: str) -> bool:
    return option(page, label).locator("input").is_checked()


def progress_text(page) -> str:
    return page.get_by_text(re.compile(r"\d+ of \d+ targets labelled by")).inner_text()


def target(page) -> str:
    box = page.locator('[data-testid="stSelectbox"]').filter(has_text="Target")
    return box.locator("input").input_value()


def open_trace(page, url: str, reviewer: str | None = None) -> None:
    """Open a trace page (as a reviewer who typed their name in this browser before)."""
    if reviewer:
        goto_as(page, url, reviewer)
    else:
        page.goto(url)
    wait_for_streamlit(page)
    page.get_by_text("targets labelled by").wait_for()


def test_the_whole_loop_by_keyboard(page, base):
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}", "ann")  # ann typed her name before
    assert progress_text(page) == "0 of 3 targets labelled by ann"
    assert target(page).startswith("○ e12 · aggregate")
    press(page, "2")
    assert checked(page, "2 major gaps")
    press(page, "d")  # D: the tag "dropped a result"
    pill = panel(page).get_by_role("button", name=re.compile("dropped a result"))
    assert pill.get_attribute("kind") == "pillsActive" or \
        pill.get_attribute("aria-pressed") == "true"
    shot(page, "keyboard_01_aggregate")
    press(page, "Control+Enter")
    page.get_by_text("1 of 3 targets labelled by ann").wait_for()

    press(page, "n")
    assert target(page).startswith("○ e13 · stop")
    press(page, "2")
    assert checked(page, "2 · premature")
    press(page, "ArrowDown")  # the cursor starts just after the stop (e14): down to e15
    page.get_by_text(re.compile(r"▶ e15 return")).wait_for()
    press(page, "Enter")
    pointer = panel(page).locator('[data-testid="stSelectbox"]').filter(
        has_text="At which event should it have stopped")
    assert pointer.locator("input").input_value().startswith("e15 · return")
    page.get_by_text("Around the stop").scroll_into_view_if_needed()
    shot(page, "keyboard_02_stop_with_neighbours")
    press(page, "Control+Enter")
    page.get_by_text("2 of 3 targets labelled by ann").wait_for()

    press(page, "p")
    assert target(page).startswith("✓ e12 · aggregate")
    press(page, "h")
    page.get_by_role("dialog").get_by_text("Ctrl+Enter").wait_for()
    page.keyboard.press("Escape")
    wait_for_streamlit(page)
    press(page, "Shift+N")
    page.wait_for_url(re.compile(f"trace={DROPPED_ID}"))
    open_trace(page, page.url)
    assert "reviewer=" not in page.url  # the link names nobody; the browser keeps ann
    assert progress_text(page) == "0 of 3 targets labelled by ann"


def test_a_digit_and_a_letter_show_at_once_before_the_server_hears_of_them(
        page, base, workspace):
    line = hold_the_server_line(page)
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}", "dan")
    line["held"] = True
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("2")
    page.keyboard.press("d")
    page.wait_for_timeout(400)  # several frames, and nothing has reached the server
    assert checked(page, "2 major gaps")
    pill = panel(page).get_by_role("button", name=re.compile("dropped a result"))
    assert pill.get_attribute("kind") == "pillsActive" or \
        pill.get_attribute("aria-pressed") == "true"
    assert line["queue"], "the key's change waits to be sent"
    release(line)
    wait_for_streamlit(page, quiet_ms=300)
    page.keyboard.press("Control+Enter")
    page.get_by_text("1 of 3 targets labelled by dan").wait_for(timeout=30_000)
    saved = {x.question: x.value for x in saved_by(workspace, "dan")}
    assert saved == {"aggregation_quality": 2, "aggregation_issues": ["dropped_result"]}


@pytest.mark.parametrize("how,key,reviewer", [("radio", "Control+s", "bob"),
                                         ("tag", "Control+s", "bea"),
                                         ("radio", "Control+Enter", "ben"),
                                         ("tag", "Control+Enter", "bud"),
                                         ("note", "Control+Enter", "bix"),
                                         ("page", "Control+Enter", "bly")])
def test_the_save_key_saves_wherever_the_focus_is(page, base, workspace, how, key, reviewer):
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}", reviewer)
    if how == "radio":
        option(page, "3 partial").click()  # the focus stays on the radio
    elif how == "tag":
        press(page, "3")
        panel(page).get_by_role("button", name=re.compile("unfaithful merge")).click()
    elif how == "note":
        press(page, "3")
        note = panel(page).get_by_role("textbox", name="Note (optional)")
        note.click()
        page.keyboard.type("typed, then saved from the box")
    else:
        press(page, "3")
    page.keyboard.press(key)
    page.get_by_text(f"1 of 3 targets labelled by {reviewer}").wait_for(timeout=30_000)
    wait_for_streamlit(page)
    saved = {x.question: x for x in saved_by(workspace, reviewer)}
    assert saved["aggregation_quality"].value == 3
    if how == "tag":
        assert saved["aggregation_issues"].value == ["unfaithful_merge"]
    if how == "note":
        assert saved["aggregation_quality"].comment == "typed, then saved from the box"


def test_next_moves_on_from_an_unsaved_target_and_the_answer_waits_for_the_reviewer(
        page, base):
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}", "cat")
    press(page, "4")
    press(page, "n")
    assert target(page).startswith("○ e13")
    press(page, "s")  # skip the stop: on to the whole trace
    assert target(page).startswith("○ the whole trace")
    press(page, "p")
    press(page, "p")
    assert target(page).startswith("○ e12")
    assert checked(page, "4 mostly faithful")  # kept, though never saved


def type_reviewer(page, base: str, name: str) -> None:
    """Open demo 10 with no reviewer and type `name` in the sidebar."""
    page.goto(f"{base}/trace?trace={PREMATURE_ID}")
    wait_for_streamlit(page)
    box = page.get_by_role("textbox", name="Reviewer")
    box.fill(name)
    box.press("Enter")
    wait_for_streamlit(page)
    page.get_by_text(f"0 of 3 targets labelled by {name}").wait_for()


def test_the_reviewer_survives_a_reload_and_a_deep_link(page, base):
    type_reviewer(page, base, "dee")
    assert "reviewer=" not in page.url  # a link never carries a name
    page.reload()
    wait_for_streamlit(page)
    page.get_by_text("0 of 3 targets labelled by dee").wait_for()
    other = page.context.new_page()  # a deep link opened in a new tab of the same browser
    other.goto(f"{base}/?trace={DROPPED_ID}&event=e5")
    wait_for_streamlit(other)
    other.get_by_text("0 of 3 targets labelled by dee").wait_for()
    assert other.get_by_role("textbox", name="Reviewer").input_value() == "dee"
    other.close()


def test_a_new_tab_without_the_parameter_opens_as_the_same_reviewer(page, base):
    type_reviewer(page, base, "fay")
    other = page.context.new_page()  # a new tab, a link without &reviewer=
    other.goto(f"{base}/trace?trace={DROPPED_ID}")
    wait_for_streamlit(other)
    other.get_by_text("0 of 3 targets labelled by fay").wait_for()
    assert other.get_by_role("textbox", name="Reviewer").input_value() == "fay"
    box = other.get_by_role("textbox", name="Reviewer")  # switching is explicit: edit the box
    box.fill("gus")
    box.press("Enter")
    wait_for_streamlit(other)
    other.close()
    third = page.context.new_page()
    third.goto(f"{base}/trace?trace={PREMATURE_ID}")
    wait_for_streamlit(third)
    third.get_by_text("0 of 3 targets labelled by gus").wait_for()
    third.close()


def test_question_mark_lists_every_key(page, base):
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}", "hal")
    option(page, "3 partial").click()  # even with the focus on an answer
    wait_for_streamlit(page)
    page.keyboard.press("Shift+?")
    dialog = page.get_by_role("dialog")
    dialog.wait_for(timeout=30_000)
    text = dialog.inner_text()
    for key in ("1 – 9", "Ctrl+Enter", "Ctrl+S", "N / P", "Shift+N", "Enter", "?"):
        assert key in text, key
    shot(page, "keyboard_06_question_mark_help")


def inspected(page) -> str:
    """The first line of the inspector: the selected event's type and id."""
    return page.locator(".st-key-inspector-panel [data-testid='stMarkdown']").nth(1).inner_text()


def test_the_inspector_follows_the_labels_panel_and_the_panel_follows_the_inspector(
        page, base):
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}", "flo")
    press(page, "n")  # to the stop: the inspector shows it too
    assert target(page).startswith("○ e13")
    assert "e13" in inspected(page)
    page.locator(".st-key-inspector-panel").get_by_role("button", name="◀ previous").click()
    wait_for_streamlit(page, quiet_ms=300)
    assert "e12" in inspected(page)
    assert target(page).startswith("○ e12")  # an event that is a target becomes the target


def test_the_labels_panel_is_in_view_with_an_event_selected(page, base):
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}&event=e5",
               "eve")
    page.get_by_text("Inspector").wait_for()
    for name in ("Save",):
        box = panel(page).get_by_role("button", name=re.compile(name)).bounding_box()
        assert box and 0 <= box["y"] and box["y"] + box["height"] <= VIEWPORT["height"], box
    radios = panel(page).locator('[data-testid="stRadio"]').first.bounding_box()
    assert radios["y"] + radios["height"] <= VIEWPORT["height"], radios
    assert radios["x"] > VIEWPORT["width"] / 2  # beside the tree and timeline
    shot(page, "keyboard_03_panel_in_view_with_event")


def test_the_events_around_a_stop_are_above_its_answers_and_in_view(page, base):
    open_trace(page, f"{base}/trace?trace={PREMATURE_ID}&event=e13",
               "ida")
    assert target(page).startswith("○ e13")
    around = page.get_by_text("Around the stop", exact=True).bounding_box()
    table = page.locator(".st-key-labels-panel [data-testid='stDataFrame']").first.bounding_box()
    radios = panel(page).locator('[data-testid="stRadio"]').first.bounding_box()
    assert around["y"] < table["y"] < radios["y"]  # the evidence first, then the answers
    assert table["y"] + table["height"] <= VIEWPORT["height"]
    assert radios["y"] + radios["height"] <= VIEWPORT["height"], radios  # every answer too
    assert page.evaluate("window.scrollY") == 0
    shot(page, "keyboard_07_stop_evidence_above_answers")
