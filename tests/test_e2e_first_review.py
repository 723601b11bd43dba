"""End to end in Chromium: a first-time reviewer's keyboard path on a campaign a lead created
with the CLI (no `--questions`), exactly as a new reviewer takes it: open
`/review?campaign=NAME`, click the sidebar Reviewer box, type a name, press Enter, Ctrl+Enter to
start, then a digit and Ctrl+Enter for each target, until nothing is left. Two reviewers do it
at once, in two browsers; their answers end as label rows in the store.

No step moves the focus for the reviewer: Enter in the name box must hand it to the page."""

from __future__ import annotations

import re

import pytest

from conftest import VIEWPORT, shot, wait_for_streamlit
from factories import copy_demos
from reviewing import target_text, wait_for_next
from viz_app.cli import main
from viz_app.workspace import Workspace

pytestmark = pytest.mark.browser

DEMOS = ["10_review_premature_stop", "11_review_late_stop"]
NAME = "first-week"
WAIT = 90_000  # ms: two cores shared by many processes can be slow to run a page
KEY_WAIT = 20_000  # ms: how long a key's effect may take to show before the step fails


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    """A campaign a lead made with the CLI on demos 10 and 11, two reviewers per target, and
    no `--questions`."""
    folder = copy_demos(tmp_path / "demos", DEMOS)
    db = str(tmp_path / "orchviz.db")
    assert main(["campaign", "create", NAME, "--traces", str(folder), "--db", db,
                 "--per-target", "2", "--lead", "lee"]) == 0
    return Workspace.open(db, traces=[folder])


def kinds(page) -> str:
    """The heading's first line: the target and its kinds ("e12 · aggregate")."""
    return target_text(page).strip().split("\n")[0]


def sign_in_by_typing(page, base: str, name: str) -> None:
    """Open the campaign's link, click the sidebar's Reviewer box, type the name, Enter."""
    page.goto(f"{base}/review?campaign={NAME}")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text("Enter your name under").wait_for()
    page.locator('[data-testid="stSidebar"]').get_by_role("textbox", name="Reviewer").click()
    page.keyboard.type(name)
    page.keyboard.press("Enter")
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    page.get_by_role("button", name=re.compile("Start")).wait_for()


def in_first_screen(page, selector: str) -> bool:
    """Whether the element is on the first screen of the page (not scrolled to)."""
    box = page.locator(selector).first.bounding_box()
    return box is not None and box["height"] > 0 and box["y"] >= 0 and \
        box["y"] + min(box["height"], 120) <= VIEWPORT["height"]


def evidence_in_view(page) -> None:
    """The evidence of the target on screen is in the first screen, beside or above the
    question: an aggregate's merged returns and output, a stop's events."""
    heading = kinds(page)
    question = page.locator(".st-key-ann-form [data-testid='stRadio']").first.bounding_box()
    beside = {"aggregate": ("Merged", "Produced"),
              "stop": ("The last events, up to the stop", "After the stop")}
    for words in beside.get(heading.split(" · ")[-1], ()):
        where = page.locator(".st-key-review-evidence").get_by_text(words, exact=False)
        assert in_first_screen(page, f".st-key-review-evidence :text('{words}')"), words
        assert where.first.bounding_box()["x"] + 200 < question["x"]  # beside it
    if "stop" in heading:
        events = page.locator(".st-key-labels-panel [data-testid='stDataFrame']").first
        assert events.bounding_box()["y"] < question["y"]  # above it
        assert in_first_screen(page, ".st-key-labels-panel [data-testid='stDataFrame']")


def answer_and_save(page, digit: str) -> str:
    """A digit, then Ctrl+Enter, as typed (no click, no focus moved by the test); returns the
    heading of the target it was on, once another target (or the done message) shows."""
    before = target_text(page)
    page.keyboard.press(digit)
    page.wait_for_function(
        "() => !!document.querySelector('.st-key-ann-form input[type=radio]:checked')",
        timeout=KEY_WAIT)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    page.keyboard.press("Control+Enter")
    wait_for_next(page, before, timeout=KEY_WAIT)
    return before


def test_two_first_time_reviewers_label_a_cli_campaign_by_keyboard_alone(
        browsers, app_server, workspace):
    base = app_server(workspace)
    targets = workspace.campaigns.status(NAME).targets
    pages = browsers(2, timeout=WAIT)
    names = ["alice", "bruno"]
    for page, name in zip(pages, names):
        sign_in_by_typing(page, base, name)
    shot(pages[0], "first_review_01_named")
    for page in pages:
        page.keyboard.press("Control+Enter")  # Start
        page.locator(".st-key-review-target").wait_for(timeout=KEY_WAIT)
        wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    shot(pages[0], "first_review_02_first_target")
    seen: dict[str, list[str]] = {name: [] for name in names}
    for _ in range(targets):  # side by side, one target each in turn
        for page, name in zip(pages, names):
            evidence_in_view(page)
            if name == "alice" and "stop" in kinds(page) and not any(
                    "· stop" in h for h in seen[name]):
                shot(page, "first_review_03_stop")
            seen[name].append(answer_and_save(page, "1"))
    for page, name in zip(pages, names):
        page.get_by_text("nothing is left for you").wait_for(timeout=KEY_WAIT)
        box = page.locator('[data-testid="stSidebar"]').get_by_role("textbox", name="Reviewer")
        assert box.input_value() == name  # no digit went into the name
    shot(pages[1], "first_review_04_done")

    rows = workspace.labelling.current_records(campaign=NAME)
    by_reviewer = {name: {(r["trace_id"], r["event_id"]) for r in rows
                          if r["reviewer"] == name} for name in names}
    assert len(by_reviewer["alice"]) == len(by_reviewer["bruno"]) == targets
    assert by_reviewer["alice"] == by_reviewer["bruno"]
    assert {"aggregate", "stop"} <= {h.split("\n")[0].split(" · ")[-1] for h in seen["alice"]}
    status = workspace.campaigns.status(NAME)
    assert status.complete == status.targets == targets


def test_in_a_text_box_the_panel_says_keys_type_there_and_esc_gives_them_back(
        page, app_server, workspace):
    page.set_default_timeout(WAIT)
    sign_in_by_typing(page, app_server(workspace), "carla")
    page.keyboard.press("Control+Enter")  # Start
    page.locator(".st-key-ann-form").wait_for(timeout=KEY_WAIT)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    note = page.locator(".st-key-ann-form").get_by_text("keys type there")
    assert not note.is_visible()
    page.locator(".st-key-ann-form").get_by_role("textbox", name="Note (optional)").click()
    note.wait_for(state="visible", timeout=KEY_WAIT)
    shot(page, "first_review_05_typing_note")
    page.keyboard.press("Escape")
    note.wait_for(state="hidden", timeout=KEY_WAIT)
    page.keyboard.press("2")
    page.wait_for_function(
        "() => !!document.querySelector('.st-key-ann-form input[type=radio]:checked')",
        timeout=KEY_WAIT)


def test_ctrl_enter_without_an_answer_says_to_pick_one_and_saves_nothing(
        page, app_server, workspace):
    page.set_default_timeout(WAIT)
    sign_in_by_typing(page, app_server(workspace), "dora")
    page.keyboard.press("Control+Enter")  # Start
    page.locator(".st-key-ann-form").wait_for(timeout=KEY_WAIT)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    page.keyboard.press("Control+Enter")
    page.locator(".st-key-ann-form").get_by_text("pick an answer first").wait_for(
        timeout=KEY_WAIT)
    assert workspace.labelling.current_records(campaign=NAME) == []


def test_a_name_changed_while_a_target_is_held_asks_and_esc_keeps_both(
        page, app_server, workspace):
    page.set_default_timeout(WAIT)
    sign_in_by_typing(page, app_server(workspace), "erin")
    page.keyboard.press("Control+Enter")  # Start
    page.locator(".st-key-review-target").wait_for(timeout=KEY_WAIT)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    held = kinds(page)
    box = page.locator('[data-testid="stSidebar"]').get_by_role("textbox", name="Reviewer")
    box.click()
    page.keyboard.press("End")
    page.keyboard.type("4")
    page.keyboard.press("Enter")
    page.get_by_text("gives that target back to the queue").wait_for(timeout=KEY_WAIT)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    shot(page, "first_review_06_name_changed")
    page.keyboard.press("Escape")  # keep reviewing as erin
    page.locator(".st-key-review-target").wait_for(timeout=KEY_WAIT)
    wait_for_streamlit(page, timeout=WAIT, quiet_ms=300)
    assert box.input_value() == "erin" and kinds(page) == held
    answer_and_save(page, "1")
    assert {r["reviewer"] for r in workspace.labelling.current_records(campaign=NAME)} == {"erin"}
