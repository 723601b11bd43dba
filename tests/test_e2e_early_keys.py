"""End to end in Chromium: a key pressed while the page is still being drawn (the first visit,
the trace still on its way) is kept, said at once at the foot of the window, and played once the
labels panel is drawn, never dropped in silence (issue 40, item 8)."""

from __future__ import annotations

import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import PREMATURE, PREMATURE_ID, make_workspace

pytestmark = pytest.mark.browser


def hold_the_page_line(page) -> dict:
    """Route the app's WebSocket through the test: what the server sends reaches the page at
    once until the keyboard script has come (the first thing a run draws), then waits in
    `line["queue"]` while `line["held"]`: the page is caught half drawn."""
    line: dict = {"held": False, "armed": True, "queue": [], "page": None}

    def route(ws) -> None:
        server = ws.connect_to_server()
        line["page"] = ws

        def heard(message) -> None:
            if line["held"]:
                line["queue"].append(message)
                return
            ws.send(message)
            data = message if isinstance(message, bytes) else message.encode()
            if line["armed"] and b"orchvizKeys(" in data:
                line["armed"], line["held"] = False, True  # the rest of the run waits

        server.on_message(heard)
        ws.on_message(server.send)

    page.route_web_socket(re.compile(r".*/_stcore/stream"), route)
    return line


def let_go(line: dict) -> None:
    line["held"] = False
    while line["queue"]:
        line["page"].send(line["queue"].pop(0))


def test_a_digit_pressed_before_the_panel_is_drawn_is_kept_said_and_played(page, app_server,
                                                                          tmp_path):
    base = app_server(make_workspace(tmp_path, traces=[PREMATURE]))
    line = hold_the_page_line(page)
    goto_as(page, f"{base}/trace?trace={PREMATURE_ID}", "ann")
    page.wait_for_function("window.__orchvizKeys === true")
    assert line["held"] and page.locator(".st-key-ann-form").count() == 0
    page.keyboard.press("2")
    notice = page.locator(".orchviz-early-keys")
    notice.wait_for()
    assert notice.inner_text() == "The page is still loading: kept 2 for when it is drawn."
    shot(page, "early_keys_01_kept_while_loading")
    let_go(line)
    wait_for_streamlit(page, timeout=90_000)
    answer = page.locator(".st-key-ann-form [data-testid='stRadioOption']").filter(
        has_text="2 major gaps")
    answer.wait_for()
    assert answer.locator("input").is_checked()  # the kept key ticked the second answer
    shot(page, "early_keys_02_played")
