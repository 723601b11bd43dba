"""End to end in Chromium, the journeys of a run reviewed while it trains (issue 38), walked as
their users walk them: a lead follows the run in two tabs (the Library and the training-run
page) while the trainer writes, a half-written line sitting for seconds, and a per-step
campaign samples each step as it comes; a lead ticks all that match and unticks one; the
training-run page read as an alarm, from a step clicked in the chart to the trace of the
rollout that parts most, opened by its link."""

from __future__ import annotations

import json
import re
import threading
import time
from urllib.parse import quote

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import make_workspace
from rollout_writer import append, lines
from viz_app.labels.campaign import CampaignSpec, Sample
from viz_app.labels.label import Reviewer

pytestmark = pytest.mark.browser

GROUP = 4
WAIT = 120_000
LEE = Reviewer(name="lee", via="cli")


def said(page, pattern: str) -> str:
    """The first text on the page that matches `pattern` ('' when none does yet)."""
    found = page.get_by_text(re.compile(pattern))
    return found.first.inner_text() if found.count() else ""


def until(check, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return check()


def verl_step(step: int, prompts: int) -> bytes:
    """verl's `{step}.jsonl`: GROUP samples of each prompt (a group: the same input)."""
    return b"".join(json.dumps({"input": f"user\nWhat is {p} + {step}?\nassistant\n",
                                "output": f"#### {p + step if s % 2 else 0}", "gts": str(p + step),
                                "score": float(s % 2), "step": step}).encode() + b"\n"
                    for p in range(prompts) for s in range(GROUP))


def test_a_lead_follows_the_run_in_two_tabs_while_a_per_step_campaign_samples_it(
        browsers, app_server, tmp_path):
    run = tmp_path / "run"
    (run / "verl").mkdir(parents=True)
    log = run / "rollout_data_rank_0.jsonl"
    append(log, b"".join(lines(1, range(2), GROUP)))
    (run / "verl" / "1.jsonl").write_bytes(verl_step(1, 2))
    ws = make_workspace(tmp_path, traces=[run])
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name="live", questions=["task_outcome"],
                                     sample=Sample(kind="per_step", n=1)), LEE)
    assert ws.campaigns.get("live").targets == GROUP
    base = app_server(ws, extra_args=["--follow", "1"])
    library, chart = browsers(2, timeout=WAIT)
    goto_as(library, f"{base}/", "lee")
    goto_as(chart, f"{base}/run", "lee")
    for page in (library, chart):
        wait_for_streamlit(page, timeout=WAIT)
    assert said(library, r"\d+ of \d+ traces").startswith("16 of 16 traces")
    assert "over 1 steps" in said(chart, r"rollouts over \d+ steps")

    looked = threading.Event()

    def trainer() -> None:  # steps 2 and 3: OpenRLHF's lines, then verl's step file whose
        for step in (2, 3):  # last line stays half-written until the lead has looked
            append(log, b"".join(lines(step, range(2), GROUP)), cut=True)
            data = verl_step(step, 2)
            half = len(data) - len(data.splitlines(keepends=True)[-1]) // 2
            with (run / "verl" / f"{step}.jsonl").open("ab") as stream:
                stream.write(data[:half])
            looked.wait(timeout=90)
            looked.clear()
            with (run / "verl" / f"{step}.jsonl").open("ab") as stream:
                stream.write(data[half:])

    writing = threading.Thread(target=trainer)
    writing.start()
    try:
        for step in (2, 3):  # every whole line listed, the half one waited for and unsaid
            listed = 16 * step - 1
            assert until(lambda: said(library, r"\d+ of \d+ traces").startswith(
                f"{listed} of {listed}"), 60), said(library, r"\d+ of \d+ traces")
            assert library.get_by_text("failed to load").count() == 0
            if step == 2:
                shot(library, "journey-library-half-line")
            looked.set()
    finally:
        looked.set()
        writing.join()
    assert until(lambda: said(library, r"\d+ of \d+ traces").startswith("48 of 48"), 30)
    assert re.search(r"\d+ new traces? at \d\d:\d\d:\d\d", said(library, r"following the run"))
    assert library.get_by_text("failed to load").count() == 0
    shot(library, "journey-library-followed")
    assert until(lambda: "over 3 steps" in said(chart, r"rollouts over \d+ steps"), 30)
    shot(chart, "journey-run-followed")
    assert ws.campaigns.get("live").targets == 3 * GROUP  # a whole group of each step, as
    rows = {r.trace_id: r for r in ws.library.update_index().rows}  # they came
    taken = [rows[t.trace_id] for t in ws.campaigns.targets(ws.campaigns.get("live"))]
    assert sorted({r.rollout_step for r in taken}) == [1, 2, 3]
    assert len({r.rollout_group for r in taken}) == 3

    assert "0 reviewed" in said(chart, r"rollouts over \d+ steps")  # a reviewer labels: the
    ws.labelling.save_answers(ws.library.trace(taken[-1].trace_id), "",  # chart follows
                              {"task_outcome": "failure"}, Reviewer(name="ann", via="self-declared"))
    assert until(lambda: "1 reviewed" in said(chart, r"rollouts over \d+ steps"), 30)
    chart.get_by_text("Rollouts where they part most").wait_for()


def test_tick_all_shows_the_rows_ticked_and_one_unticked_is_left_out(page, app_server, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(1, range(15), GROUP)))  # 60
    ws = make_workspace(tmp_path, traces=[run])
    base = app_server(ws)
    page.set_default_timeout(WAIT)
    goto_as(page, f"{base}/", "lee")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text("Pick traces for a campaign").click()
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_role("button", name=re.compile("Tick all 60 that match")).click()
    wait_for_streamlit(page, timeout=WAIT)
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    shot(page, "journey-tick-all")
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 14, box["y"] + 35 * 2 + 17)  # the second row's box
    wait_for_streamlit(page, timeout=WAIT)
    # had the rows shown unticked, that click would have ticked one row, not unticked one
    page.get_by_text(re.compile("59 of the 60 traces that match")).wait_for()
    page.get_by_text("Make a review campaign of the 59 traces ticked").wait_for()
    grid.scroll_into_view_if_needed()
    shot(page, "journey-tick-all-but-one")


def test_the_alarm_from_a_step_clicked_to_the_trace_that_parts_most(page, app_server, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    append(run / "rollout_data_rank_0.jsonl", b"".join(b"".join(lines(s, range(2), GROUP))
                                                       for s in (1, 2, 3)))
    ws = make_workspace(tmp_path, traces=[run])
    rows = ws.library.update_index().rows
    prompt = rows[0].rollout_group.rsplit(":", 1)[1]  # the first prompt's groups, reviewed:
    judged = [r for r in rows if r.rollout_step in (1, 2) and r.rollout_group.endswith(prompt)]
    ann = Reviewer(name="ann", via="self-declared")
    for row in judged:  # at step 1 the reviewers agree with the trainer, at step 2 they fail all
        value = "success" if row.rollout_step == 1 and row.trainer_reward else "failure"
        ws.labelling.save_answers(ws.library.trace(row.trace_id), "", {"task_outcome": value},
                                  ann)
    apart = min(r.trace_id for r in judged if r.rollout_step == 2 and r.trainer_reward == 1.0)
    base = app_server(ws)
    page.set_default_timeout(WAIT)
    goto_as(page, f"{base}/run", "lee")
    wait_for_streamlit(page, timeout=WAIT)
    page.get_by_text("Steps where they part most").wait_for()
    reviewers = page.locator(".js-plotly-plot .scatterlayer .trace").nth(2).locator(".point")
    assert reviewers.count() == 2  # steps 1 and 2 are reviewed
    reviewers.nth(1).hover(force=True)
    hover = page.evaluate("() => [...document.querySelectorAll('.hoverlayer text')]"
                          ".map(t => t.textContent).join(' ')")
    assert "step 2: the reviewers' mean -1.00" in hover and "most apart:" in hover
    shot(page, "journey-run-hover")
    reviewers.nth(1).click(force=True)  # step 2's point: its rollouts alone
    page.get_by_text("Rollouts where they part most at step 2").wait_for()
    wait_for_streamlit(page, timeout=WAIT)
    shot(page, "journey-run-step-2")
    grid = page.locator('.st-key-run_gaps [data-testid="stDataFrame"]').first
    grid.scroll_into_view_if_needed()
    box = grid.bounding_box()
    page.mouse.move(box["x"] + 120, box["y"] + 35 + 17)  # over the first rollout's id
    time.sleep(0.5)
    with page.context.expect_page() as opened:  # its link opens the trace in a new tab
        page.mouse.click(box["x"] + 120, box["y"] + 35 + 17)
    trace = opened.value
    trace.wait_for_load_state()
    wait_for_streamlit(trace, timeout=WAIT)
    assert trace.url.endswith("/trace?trace=" + quote(apart, safe=""))  # exactly that one
    trace.get_by_text(re.compile(r"rollout of openrlhf · step 2")).wait_for()
    shot(trace, "journey-run-trace-opened")

    page.bring_to_front()  # back on the chart: a double-click lists every step again
    page.get_by_text("Of step 2 alone: double-click the chart for every step").wait_for()
    plot = page.locator(".js-plotly-plot").first.bounding_box()
    page.mouse.dblclick(plot["x"] + plot["width"] * 0.7, plot["y"] + plot["height"] * 0.3)
    page.get_by_text("Rollouts where they part most", exact=True).wait_for()
    assert page.get_by_text(re.compile("at step 2")).count() == 0
