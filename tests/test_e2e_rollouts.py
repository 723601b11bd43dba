"""End to end in Chromium: a trainer appends rollouts to its log while a reviewer labels a group
by keyboard in `orchviz app --follow`; the new rollouts come into the library within seconds
(a half-written line never shows as a failure), and nothing the reviewer saved moves."""

from __future__ import annotations

import re
import threading
import time

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import make_workspace
from rollout_writer import append, lines

pytestmark = pytest.mark.browser

GROUP = 4


def listed(page) -> int:
    """The number of traces the library's caption says it lists."""
    text = page.get_by_text(re.compile(r"\d+ of \d+ traces")).first.inner_text()
    return int(re.search(r"of (\d+) traces", text).group(1))


def test_rollouts_appended_while_a_reviewer_labels_come_in_and_nothing_saved_moves(
        page, app_server, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / "rollout_data_rank_0.jsonl"
    append(log, b"".join(lines(1, range(2), GROUP)))
    ws = make_workspace(tmp_path, traces=[run])
    first = ws.library.update_index().rows
    group = first[0].rollout_group
    base = app_server(ws, extra_args=["--follow", "1"])

    goto_as(page, f"{base}/group?group={group}", "ann")
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_text("Label member 1 of 4").wait_for(timeout=60_000)
    shot(page, "rollouts-group-page")

    stop = threading.Event()

    def trainer() -> None:  # step 2 then 3, a group at a time, some lines cut in two
        for step in (2, 3):
            for prompt in range(2):
                if stop.is_set():
                    return
                append(log, b"".join(lines(step, range(prompt, prompt + 1), GROUP)),
                       cut=prompt == 1)
                time.sleep(0.4)

    writing = threading.Thread(target=trainer)
    writing.start()
    try:
        for n in (1, 2):  # the reviewer labels two members by keyboard while rollouts come in
            page.evaluate("document.activeElement && document.activeElement.blur()")
            page.keyboard.press("1")
            page.keyboard.press("Control+Enter")
            page.get_by_text(f"Label member {n + 1} of 4").wait_for(timeout=60_000)
    finally:
        writing.join()
    saved = {(r["trace_id"], r["value"], r["label_id"]) for r in ws.labelling.current_records()}
    assert {(t, v) for t, v, _ in saved} == {(first[0].trace_id, "success"),
                                            (first[1].trace_id, "success")}

    page.goto(f"{base}/")
    wait_for_streamlit(page, timeout=60_000)
    deadline = time.monotonic() + 30
    while listed(page) < 3 * 2 * GROUP and time.monotonic() < deadline:
        time.sleep(0.5)  # the library looks again every second (--follow 1)
    assert listed(page) == 3 * 2 * GROUP
    assert page.get_by_text("Files that failed to load").count() == 0
    assert page.get_by_text(re.compile(r"following the run")).count() == 1
    shot(page, "rollouts-library-following")

    rows = ws.library.update_index().rows
    assert [(r.trace_id, r.position, r.sha256) for r in rows[:len(first)]] == [
        (r.trace_id, r.position, r.sha256) for r in first]  # nothing listed before moved
    assert sorted({r.rollout_step for r in rows}) == [1, 2, 3]
    assert {(r["trace_id"], r["value"], r["label_id"])
            for r in ws.labelling.current_records()} == saved

    page.goto(f"{base}/run")
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_text("Rollouts where they part most").wait_for(timeout=60_000)
    shot(page, "rollouts-training-run")
