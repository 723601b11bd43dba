"""End to end in Chromium, a reviewer's walk through a group of siblings: from the library to a
rollout's trace and on to its group; the members read and sorted by a click and by the keyboard
(the order kept in the link); three members labelled one after another by keyboard, down the
sorted table; another member picked by its number; two judged against each other; and the
preference export holding that pair."""

from __future__ import annotations

import json
import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import make_workspace
from rollout_writer import append, lines

pytestmark = pytest.mark.browser

SIBLINGS = 8

LIVE = ".orchviz-members.om-live"
"""The members' table once its script runs (the same table drawn first as plain HTML hides)."""

ROWS = f"() => [...document.querySelectorAll('{LIVE} tbody tr')].map(r => Number(r.dataset.member))"
"""The members' table's rows, top to bottom, as each member's index (as sampled)."""

CUT_HEADINGS = f"""() => [...document.querySelectorAll('{LIVE} th button')]
    .filter(b => b.scrollWidth > b.clientWidth).map(b => b.innerText)"""
"""The table's headings whose name does not fit their column."""


def heading(page) -> str:
    return page.locator("h4").filter(has_text="Label member").first.inner_text()


def wait_heading(page, text: str) -> None:
    page.wait_for_function("(t) => [...document.querySelectorAll('h4')].some(h => "
                           "h.innerText.includes(t))", arg=text, timeout=60_000)


def test_a_reviewer_sorts_a_group_labels_down_it_by_keyboard_and_judges_a_pair(
        page, app_server, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(1, range(2), SIBLINGS, seed=2)))
    ws = make_workspace(tmp_path, traces=[run])
    rows = ws.library.update_index().rows
    group = [r for r in rows if r.rollout_group == rows[0].rollout_group]
    assert len(group) == SIBLINGS and len({r.trainer_reward for r in group}) == 2
    by_trainer = sorted(range(SIBLINGS), key=lambda i: -group[i].trainer_reward)  # ties as sampled
    assert by_trainer != list(range(SIBLINGS))  # the sort moves members
    base = app_server(ws)

    # the library, a rollout's row, its trace, and its group one click on
    goto_as(page, f"{base}/", "ann")
    wait_for_streamlit(page, timeout=60_000)
    box = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
    page.mouse.click(box["x"] + 14, box["y"] + 35 + 17)
    page.wait_for_url("**/trace?trace=*", timeout=60_000)
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_role("link", name="Its group").click()
    page.wait_for_url("**/group?group=*", timeout=60_000)
    wait_heading(page, f"Label member 1 of {SIBLINGS}")
    wait_for_streamlit(page, timeout=60_000)
    page.locator(f"{LIVE} tbody tr").first.wait_for(timeout=60_000)
    assert page.locator(".og-static").first.is_hidden()  # the table drawn first gave way
    assert page.locator('[data-testid="stSidebar"] input').first.input_value() == "ann"
    assert page.evaluate(ROWS) == list(range(SIBLINGS))  # as sampled
    assert page.get_by_text("They part at step").count() == 1
    assert page.locator(".og-card").count() == SIBLINGS
    assert page.evaluate(CUT_HEADINGS) == []
    shot(page, "group-journey-open")

    # a click on a heading sorts at once, the page follows, and the link keeps the order
    page.get_by_role("button", name="trainer", exact=True).click()
    assert page.evaluate(ROWS) == by_trainer  # re-ordered in the browser, before any run
    page.wait_for_url(re.compile(r"sort=trainer%3Adesc"), timeout=60_000)
    wait_heading(page, f"Label member #{by_trainer[0] + 1} · 1 of {SIBLINGS}")
    wait_for_streamlit(page, timeout=60_000)
    assert [c.get_attribute("id") for c in page.locator(".og-card").all()] == [
        f"sibling-{i + 1}" for i in by_trainer]  # the cards follow the table
    assert page.evaluate(CUT_HEADINGS) == []  # the sort's arrow fits too
    # by keyboard: the focus stays on the heading; Enter turns the order over, and back
    assert page.evaluate("() => document.activeElement.innerText") == "trainer ▾"
    page.keyboard.press("Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"sort=trainer%3Aasc"), timeout=60_000)
    wait_for_streamlit(page, timeout=60_000)
    assert page.evaluate(ROWS) == sorted(range(SIBLINGS), key=lambda i: group[i].trainer_reward)
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"sort=trainer%3Adesc"), timeout=60_000)
    wait_heading(page, f"Label member #{by_trainer[0] + 1} · 1 of {SIBLINGS}")
    wait_for_streamlit(page, timeout=60_000)
    assert page.evaluate(ROWS) == by_trainer

    # three members labelled one after another by keyboard, down the sorted table
    for n in range(3):
        page.evaluate("document.activeElement && document.activeElement.blur()")
        page.keyboard.press("1")
        page.keyboard.press("Control+Enter")
        wait_heading(page, f"· {n + 2} of {SIBLINGS}")
        # a reviewer reads the next member before answering: the page's run over (a key
        # pressed while that run still draws was once lost here under a loaded CI worker;
        # the lead's closing note of 2026-12-06 tracks it)
        wait_for_streamlit(page, timeout=60_000)
    wait_for_streamlit(page, timeout=60_000)
    saved = {r["trace_id"]: r["value"] for r in ws.labelling.current_records()}
    assert saved == {group[i].trace_id: "success" for i in by_trainer[:3]}
    cells = page.evaluate(f"() => [...document.querySelectorAll('{LIVE} tbody tr')]"
                          ".map(r => [r.children[3].innerText, r.children[5].innerText])")
    assert cells[:4] == [["1.00", "success"]] * 3 + [["—", ""]]
    shot(page, "group-journey-labelled")

    # a member picked by its number; the pair to judge is it and the next in the table
    sixth = by_trainer[5]
    page.locator(f"{LIVE} tbody tr[data-member='{sixth}'] td.og-pick button").click()
    wait_heading(page, f"Label member #{sixth + 1} · 6 of {SIBLINGS}")
    wait_for_streamlit(page, timeout=60_000)
    pair = page.locator('[data-testid="stSelectbox"]')
    assert [pair.nth(i).locator("input").input_value() for i in range(2)] == [
        f"#{sixth + 1}", f"#{by_trainer[6] + 1}"]
    page.get_by_label("Why").fill("the second checks its product")
    page.keyboard.press("Escape")  # out of the box (the reason kept): the next keys judge
    page.wait_for_function("() => document.activeElement.tagName !== 'INPUT'")
    wait_for_streamlit(page, timeout=60_000)
    page.keyboard.press("Shift+B")
    page.get_by_text(f"Saved: #{by_trainer[6] + 1} is better.").first.wait_for(timeout=60_000)
    toast = page.locator('[data-testid="stToast"]')
    assert f"#{by_trainer[6] + 1} is better" in toast.first.inner_text()  # seen at once
    wait_for_streamlit(page, timeout=60_000)
    assert page.get_by_label("Why").input_value() == ""  # the next pair's reason is its own
    assert heading(page) == f"Label member #{sixth + 1} · 6 of {SIBLINGS}"
    shot(page, "group-journey-pair")

    out = tmp_path / "pairs.jsonl"
    ws.exports.write("preference", out)
    (row,) = [json.loads(x) for x in out.read_text("utf-8").splitlines()]
    assert (row["chosen_trace_id"], row["rejected_trace_id"]) == (
        group[by_trainer[6]].trace_id, group[sixth].trace_id)
    assert (row["step"], row["group"]) == (1, group[0].rollout_group)

    # the link the reviewer keeps opens the group sorted as they left it
    page.goto(page.url)
    wait_heading(page, f"· 1 of {SIBLINGS}")
    wait_for_streamlit(page, timeout=60_000)
    assert page.evaluate(ROWS) == by_trainer
    page.locator(f"{LIVE} tbody tr").first.wait_for(timeout=60_000)
    assert page.locator(f"{LIVE} th[data-key=trainer]").get_attribute("aria-sort") == "descending"
