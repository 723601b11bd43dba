"""The Agreement page's chart of each producer version's alpha against blind labels over time,
and its warning when a new version leaves the previous one's interval: in-process (AppTest) and
in Chromium (a screenshot at 1600x1000, test-artifacts/agreement-history.png)."""

from __future__ import annotations

import json
import random
import re

import pytest
from streamlit.testing.v1 import AppTest

from conftest import shot, wait_for_streamlit
from factories import APP, app_env, example_trace, make_workspace
from viz_app.labels.label import Reviewer
from viz_app.labels.suggestion import Producer, Suggestion
from viz_app.workspace import Workspace

OUTCOME = "task_outcome"
ANSWERS = ["success", "partial", "failure"]
VERSIONS = [  # (learned version, first stored, share of targets it gets right)
    ("3f0c9a1e77d2", "2026-09-01T10:00:00.000000Z", 0.9),
    ("8b41d07c2a90", "2026-10-01T10:00:00.000000Z", 0.93),
    ("c7e2f5aa1b34", "2026-11-01T10:00:00.000000Z", 0.45),
]


JUDGE_VERSIONS = [  # (a judge's prompt hash, first stored, share right): few-shot helped a bit
    ("5d1e" + "0" * 60, "2026-09-20T10:00:00.000000Z", 0.6),
    ("9a07" + "0" * 60, "2026-10-20T10:00:00.000000Z", 0.7),
]


def workspace_with_versions(tmp_path, n: int = 30) -> Workspace:
    """n traces whose outcome ann and bob labelled blind, three learned versions (the last one
    much worse) and the rules."""
    rng = random.Random(5)
    truth = [rng.choice(ANSWERS) for _ in range(n)]
    traces = [example_trace(f"run-{i:02d}") for i in range(n)]
    ws = make_workspace(tmp_path, traces)
    found = {t.trace_id: ws.library.trace(t.trace_id) for t in traces}
    for i, trace in enumerate(found.values()):
        for name in ("ann", "bob"):
            answer = truth[i] if name == "ann" or i % 7 else ANSWERS[(ANSWERS.index(truth[i])
                                                                      + 1) % 3]
            ws.labelling.save_answers(trace, None, {OUTCOME: answer}, Reviewer(name=name, via="cli"),
                            suggestions_visible=False)
    made = []
    for version, at, share in VERSIONS:
        for i, trace in enumerate(found.values()):
            right = (i * 37 % n) < share * n
            value = truth[i] if right else ANSWERS[(ANSWERS.index(truth[i]) + 2) % 3]
            made.append(Suggestion(trace_id=trace.trace_id, trace_sha256=trace.sha256,
                                   event_id="", question=OUTCOME, value=value,
                                   confidence=0.8, producer=Producer(name="learned",
                                                                     version=version),
                                   created_at=at))
    for prompt, at, share in JUDGE_VERSIONS:
        for i, trace in enumerate(found.values()):
            right = (i * 11 % n) < share * n
            value = truth[i] if right else ANSWERS[(ANSWERS.index(truth[i]) + 1) % 3]
            made.append(Suggestion(trace_id=trace.trace_id, trace_sha256=trace.sha256,
                                   event_id="", question=OUTCOME, value=value, confidence=0.7,
                                   producer=Producer(name="judge", version="1",
                                                     model="qwen3-32b", prompt_sha256=prompt),
                                   created_at=at))
    ws.suggestions.add(made)
    return ws


@pytest.fixture
def history_env(tmp_path, monkeypatch) -> Workspace:
    return app_env(monkeypatch, workspace_with_versions(tmp_path))


def agreement_page() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=180).run()
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception
    return at


def test_the_page_draws_each_version_with_its_interval_over_time(history_env):
    at = agreement_page()
    assert any(s.value == "Each producer version over time" for s in at.subheader)
    [chart] = at.get("plotly_chart")
    figure = json.loads(chart.proto.spec)
    line = next(t for t in figure["data"] if t.get("name") == "learned")
    judge = next(t for t in figure["data"] if t.get("name") == "judge (qwen3-32b)")
    assert [x[:10] for x in judge["x"]] == ["2026-09-20", "2026-10-20"]
    assert [x[:10] for x in line["x"]] == ["2026-09-01", "2026-10-01", "2026-11-01"]
    assert line["y"][2] < line["y"][0] and len(line["error_y"]["array"]) == 3
    ring = next(t for t in figure["data"]
                if t.get("name") == "outside the previous version's interval")
    assert [x[:10] for x in ring["x"]] == ["2026-11-01"]


def test_the_page_warns_when_a_new_version_falls_outside_the_previous_interval(history_env):
    at = agreement_page()
    [shown] = [w.value for w in at.warning]
    warning = re.sub(r"\\(.)", r"\1", shown.replace("\u2060", ""))  # as Markdown shows it
    assert re.fullmatch(r"learned c7e2f5aa1b34 on task_outcome: alpha 0\.\d\d is below the "
                        r"previous version's \(8b41d07c2a90\) 95 % interval "
                        r"\[0\.\d\d, 0\.\d\d\]", warning)


def test_without_suggestions_the_page_says_none_are_stored(tmp_path, monkeypatch):
    app_env(monkeypatch, make_workspace(tmp_path, [example_trace("run-00")]))
    at = agreement_page()
    assert not at.get("plotly_chart") and not at.warning
    assert any("No suggestions are stored yet" in c.value for c in at.caption)


def test_the_chart_in_chromium(tmp_path, page, app_server):
    ws = workspace_with_versions(tmp_path)
    base = app_server(ws)
    page.goto(f"{base}/agreement")
    wait_for_streamlit(page, timeout=90_000)
    chart = page.locator('[data-testid="stPlotlyChart"]').first
    chart.scroll_into_view_if_needed()
    chart.locator(".main-svg").first.wait_for(state="visible")
    page.wait_for_timeout(500)
    warning = page.get_by_text("c7e2f5aa1b34 on task")
    assert warning.count() == 1
    warning.scroll_into_view_if_needed()
    path = shot(page, "agreement-history")
    assert path.stat().st_size > 20_000
    assert chart.locator("g.trace.scatter").count() >= 2  # the line and the ring
