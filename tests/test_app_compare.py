"""The compare page (AppTest): two runs' figures with the differences marked, their aligned
trees and shared timeline, and the pairwise question saved as a label."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, app_env, copy_demos, demo_trace, make_workspace, premature
from viz_app.analysis import analyze
from viz_app.comparison import align, figure_differences, joint_slots, shared_timeline
from viz_app.io.native import trace_from_dict
from viz_app.labels.pairs import PAIRWISE_QUESTION
from viz_app.workspace.labelling import Labelling
from viz_app.synth import hostile_trace


@pytest.fixture
def env(tmp_path, monkeypatch) -> Labelling:
    """The app on the demo traces, a second rollout of demo 10's task with one analyst fewer,
    and the hostile trace; the labels it writes (`ws.labelling`)."""
    demos = copy_demos(tmp_path / "demos")
    workspace = make_workspace(tmp_path, traces=[demos, fewer_analysts(), hostile_trace()])
    return app_env(monkeypatch, workspace).labelling


def fewer_analysts():
    """Demo 10's task run again, without the deploy analyst (nor its shell.run result, e8)."""
    raw = premature().to_dict()
    raw["trace_id"] = "demo-10-rollout-b"
    gone = {e["id"] for e in raw["events"]
            if "deploy_analyst" in (e.get("agent"), e.get("to"), e.get("from"))} | {"e8"}
    raw["events"] = [e for e in raw["events"] if e["id"] not in gone]
    raw["edges"] = [x for x in raw["edges"] if x["src"] not in gone and x["dst"] not in gone]
    return trace_from_dict(raw, "10b.json")


def compare(a: str | None = None, b: str | None = None, reviewer: str | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    if reviewer:
        at.session_state["reviewer"] = reviewer
    at.run()
    if a:
        at.query_params["a"] = a
    if b:
        at.query_params["b"] = b
    at.switch_page("app_pages/compare.py")
    if reviewer:  # the reviewer types their name on the page they are on
        at.run()
        at.text_input(key="_reviewer_box").input(reviewer)
    return at.run()


# -- domain ---------------------------------------------------------------------------------------


def test_two_rollouts_align_agent_by_agent_and_the_missing_one_shows():
    a, b = analyze(premature()), analyze(fewer_analysts())
    alignment = align(a, b)
    assert len(alignment.positions) == 4
    assert [alignment.a[s] for s in alignment.only_a] == ["db_analyst"]
    assert alignment.only_b == [] and alignment.role_differs == []
    slots_a, slots_b = joint_slots(a, b)
    assert slots_a["log_analyst"] == slots_b["log_analyst"]
    assert slots_a["db_analyst"] != slots_b["db_analyst"]  # the second analyst of b


def test_children_of_other_roles_pair_by_position():
    a = analyze(premature())
    b = analyze(demo_trace("01_centralized_research_faithful"))
    alignment = align(a, b)
    assert len(alignment.role_differs) == 3 and not alignment.only_a and not alignment.only_b


def test_figure_differences_mark_what_differs_and_which_is_better():
    a, b = analyze(premature()), analyze(fewer_analysts())
    diffs = {d.name: d for d in figure_differences(a, b)}
    assert diffs["agents"].differs and diffs["agents"].delta == -1
    assert not diffs["depth"].differs and diffs["depth"].better is None
    assert diffs["tokens"].better == "b"  # fewer tokens


def test_the_shared_timeline_puts_both_runs_on_one_time_axis():
    a, b = analyze(premature()), analyze(fewer_analysts())
    fig = shared_timeline(a, b)
    assert fig.layout.xaxis.matches == "x2" or fig.layout.xaxis2.matches == "x"
    assert list(fig.layout.yaxis.ticktext) == a.agents
    assert list(fig.layout.yaxis2.ticktext) == b.agents


# -- the page -------------------------------------------------------------------------------------


def test_the_page_shows_figures_trees_and_timeline_of_both_runs(env):
    at = compare("demo-10-review-premature-stop", "demo-10-rollout-b")
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    table = getattr(table, "data", table)  # a Styler holds its frame in .data
    assert list(table.columns) == ["figure", "A", "B", "B − A", "better"]
    agents = table[table["figure"] == "agents"].iloc[0]
    assert (agents["A"], agents["B"], agents["B − A"]) == ("4", "3", "-1")
    assert table[table["figure"] == "depth"].iloc[0]["B − A"] == "="
    assert len(at.get("plotly_chart")) == 3
    assert any("1 only in A, 0 only in B" in m.value for m in at.markdown)


def test_run_b_defaults_to_another_rollout_of_the_same_task(env):
    at = compare("demo-10-review-premature-stop")
    assert at.selectbox(key="compare:b").value == "demo-10-rollout-b"
    assert any("Both runs attempt task" in c.value for c in at.caption)


def test_the_pairwise_judgement_is_saved_in_the_label_store(env):
    at = compare("demo-10-review-premature-stop", "demo-10-rollout-b", reviewer="ann")
    at.radio(key="compare:choice").set_value("B is better")
    at.select_slider(key="compare:strength").set_value("clearly better")
    at.text_area(key="compare:reason").input("b does not wait for a result it ignores")
    at.button[-1].click()  # the form's submit button
    at.run()
    assert not at.exception and any("saved" in s.value for s in at.success)
    records = env.current_records()
    pairs = [r for r in records if r["question"] == PAIRWISE_QUESTION]
    assert len(pairs) == 1
    (r,) = pairs
    assert (r["trace_id"], r["pair_trace_id"]) == ("demo-10-review-premature-stop",
                                                   "demo-10-rollout-b")
    assert r["value"]["chosen"] == "demo-10-rollout-b" and r["value"]["strength"] == 2
    assert r["reviewer"] == "ann" and r["comment"] == "b does not wait for a result it ignores"


def test_a_judgement_without_a_choice_is_refused(env):
    at = compare("demo-10-review-premature-stop", "demo-10-rollout-b", reviewer="ann")
    at.text_area(key="compare:reason").input("no choice made")
    at.button[-1].click()
    at.run()
    assert any("pick which run" in e.value for e in at.error)
    assert env.count() == 0


def test_without_a_reviewer_nothing_can_be_saved(env):
    at = compare("demo-10-review-premature-stop", "demo-10-rollout-b")
    assert at.button[-1].disabled


def test_the_hostile_trace_compares_with_its_text_escaped(env):
    at = compare("hostile-xss", "demo-10-review-premature-stop")
    assert not at.exception, at.exception
    shown = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "hostile" in shown and "pwned" in shown  # the run's text is there
    assert not re.search(r"(?<!\\)<(script|img|svg)", shown)  # and every tag is escaped
