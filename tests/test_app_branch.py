"""A branch in the app (AppTest) and on the Compare page's domain: Continue from here on an
orchestrator's decision saves a branch through the configured endpoint (the local stub), and
the Compare page says where a branch parts from its original, marks it on the timeline and
sets their events from there side by side."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, demo_trace, make_workspace, premature
from openai_stub import OpenAIStub, Reply
from viz_app.analysis import analyze
from viz_app.branch import Replacement, continue_from, fork_of
from viz_app.comparison import DIVERGENCE, divergence, shared_timeline
from viz_app.labels.label import Reviewer
from viz_app.settings import ModelEndpoint

pytest.importorskip("openai")

WAIT = Replacement(kind="continue", text="Wait for db_analyst's EXPLAIN before concluding.")
TURNS = [Reply.turn("spawn", "Spawn an index auditor.", to="index_auditor"),
         Reply.turn("stop", "Restore the index on coupon_redemptions.")]


def branch_of_demo_10():
    with OpenAIStub(script=list(TURNS)) as stub:
        return continue_from(premature(), "e13", WAIT,
                             ModelEndpoint(url=stub.url, model="stub-model", timeout=5))


def open_page(page: str, reviewer: str | None = None, **params: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    if reviewer:
        at.session_state["reviewer"] = reviewer
    at.run()
    for name, value in params.items():
        at.query_params[name] = value
    at.switch_page(page)
    if reviewer:  # the reviewer types their name on the page they are on
        at.run()
        at.text_input(key="_reviewer_box").input(reviewer)
    return at.run()


# -- domain ---------------------------------------------------------------------------------------


def test_a_branch_and_its_original_part_at_the_edited_event():
    branch = branch_of_demo_10()
    found = divergence(premature(), branch.trace)
    assert found is not None and found.branch == "b"
    assert found.fork.fork_event == "e13"
    assert found.original[0].id == found.continued[0].id == "e13"
    assert "e15" in {e.id for e in found.original}
    assert set(branch.fork.replayed) <= {e.id for e in found.continued}
    assert divergence(branch.trace, premature()).branch == "a"


def test_two_unrelated_runs_do_not_diverge():
    assert divergence(premature(), demo_trace("09_review_dropped_finding")) is None
    assert fork_of(premature()) is None


def test_the_shared_timeline_marks_the_divergence_in_both_runs():
    branch = branch_of_demo_10()
    figure = shared_timeline(analyze(premature()), analyze(branch.trace), diverge_at=31.0)
    lines = [s for s in figure.layout.shapes if s.line.color == DIVERGENCE]
    assert len(lines) == 2 and all(s.x0 == 31.0 for s in lines)
    assert any(a.text == "divergence" for a in figure.layout.annotations)


# -- the pages ------------------------------------------------------------------------------------


def test_compare_says_where_a_branch_parts_and_that_its_requests_were_not_run(tmp_path,
                                                                            monkeypatch):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    branch = branch_of_demo_10()
    ws = make_workspace(tmp_path, traces=[PREMATURE, branch.trace])
    app_env(monkeypatch, ws)
    at = open_page("app_pages/compare.py", a=PREMATURE_ID, b=branch.trace.trace_id)
    assert not at.exception
    said = " ".join(m.value for m in at.markdown)
    assert "B is a branch of A" in said and "**e13**" in said
    assert any("requested, not run" in c.value for c in at.caption)
    a_side, b_side = [df.value for df in at.dataframe if "how" in df.value.columns]
    assert "requested, not run" in set(b_side["how"]) and "e15" not in set(b_side["event"])
    assert "e15" in set(a_side["event"]) and set(a_side["how"]) == {"recorded"}


def test_compare_calls_no_figure_of_a_branch_better(tmp_path, monkeypatch):
    branch = branch_of_demo_10()
    ws = make_workspace(tmp_path, traces=[PREMATURE, branch.trace])
    app_env(monkeypatch, ws)
    at = open_page("app_pages/compare.py", a=PREMATURE_ID, b=branch.trace.trace_id)
    figures = next(df.value for df in at.dataframe if "better" in df.value.columns)
    assert (figures["B − A"] != "=").any() and set(figures["better"]) == {""}
    assert any("none is called better" in m.value for m in at.markdown)


def test_continue_from_here_saves_a_branch_with_the_configured_endpoint(tmp_path, monkeypatch):
    with OpenAIStub(script=list(TURNS)) as stub:
        ws = make_workspace(tmp_path, traces=[PREMATURE])
        ws.settings.endpoint = ModelEndpoint(url=stub.url, model="stub-model", timeout=5)
        app_env(monkeypatch, ws)
        at = open_page("app_pages/trace.py", reviewer="ann", trace=PREMATURE_ID, event="e13")
        assert not at.exception
        at.selectbox(key="branch-kind-e13").select("continue")
        at.text_area(key="branch-text-e13").input(WAIT.text)
        next(b for b in at.button if b.label == "Continue from here").click()
        at.run()
        assert not at.exception
    assert len(stub.received) == 2
    saved = [r for r in ws.library.update_index().rows if r.trace_id != PREMATURE_ID]
    assert len(saved) == 1
    edited = ws.library.trace(saved[0].trace_id).event("e13")
    assert (edited.content, edited.extras["corrected_by"]) == (WAIT.text, "ann")
    assert any("Saved the branch" in s.value for s in at.success)


def test_without_an_endpoint_continue_from_here_says_how_to_configure_one(tmp_path,
                                                                         monkeypatch):
    app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    at = open_page("app_pages/trace.py", reviewer="ann", trace=PREMATURE_ID, event="e13")
    button = next(b for b in at.button if b.label == "Continue from here")
    assert button.disabled
    assert any("--judge-url" in c.value for c in at.caption)


# -- starting from a saved correction -------------------------------------------------------------


def test_a_premature_stop_with_its_pointer_starts_the_form_as_wait_for_that_event(
        tmp_path, monkeypatch):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    ann = Reviewer(name="ann", via="cli")
    ws.labelling.save_answers(ws.library.trace(PREMATURE_ID), "e13", {"stopping_correctness": "premature",
                                                    "stop_should_have_been": "e15"}, ann)
    found = ws.branches.correction_at(ws.library.trace(PREMATURE_ID), "e13", "ann")
    # e15 is db_analyst's return: the decision says whom to wait for, in the canonical form
    assert found is not None and found.kind == "continue"
    assert found.text == "continue: wait for db_analyst"
    app_env(monkeypatch, ws)
    at = open_page("app_pages/trace.py", reviewer="ann", trace=PREMATURE_ID, event="e13")
    assert at.selectbox(key="branch-kind-e13").value == "continue"
    assert at.text_area(key="branch-text-e13").value == found.text
    assert any("saved correction" in c.value for c in at.caption)


def test_a_written_merge_becomes_the_aggregate_to_continue_from(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    merge = "Two causes: v2.3.0 and migration 0193's dropped index."
    ws.labelling.save_answers(ws.library.trace(PREMATURE_ID), "e12",
                    {"aggregation_quality": 1, "merge_correction": {"action": "merge",
                                                                    "text": merge}},
                    Reviewer(name="ann", via="cli"))
    assert ws.branches.correction_at(ws.library.trace(PREMATURE_ID), "e12", "ann") == Replacement(
        kind="aggregate", text=merge)
    assert ws.branches.correction_at(ws.library.trace(PREMATURE_ID), "e12", "bob") is None
