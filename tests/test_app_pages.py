"""The app's pages, run in-process with Streamlit's AppTest."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from factories import (APP, DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, app_env, demo_paths,
                       live_charts, make_workspace, review_library)
from viz_app.analysis import ONLY_TASK_ID, task_text
from viz_app.summary import TASK_LIMIT
from viz_app.text import brief
from viz_app.workspace import Workspace

DEMO_IDS = [json.loads(p.read_text())["trace_id"] for p in demo_paths()]


@pytest.fixture
def library_env(tmp_path, monkeypatch) -> Workspace:
    """The app on a library of the demo traces, the hostile trace and a broken file, with its
    own database."""
    traces = review_library(tmp_path / "library")
    return app_env(monkeypatch, make_workspace(tmp_path, traces=[traces]))


def run(trace: str | None = None, event: str | None = None) -> AppTest:
    """The app opened at its root URL, with the deep-link parameters given."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    if trace:
        at.query_params["trace"] = trace
    if event:
        at.query_params["event"] = event
    return at.run()


def markdown_bodies(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption]


def test_the_library_lists_every_demo_trace(library_env):
    at = run()
    assert not at.exception
    listed = at.dataframe[0].value["trace id"].tolist()
    assert set(DEMO_IDS) | {"hostile-xss"} == set(listed)


def test_the_library_lists_the_broken_file_with_its_error(library_env):
    at = run()
    failures = at.dataframe[1].value
    folder = library_env.settings.traces[0]
    assert failures["file"].tolist() == ["broken.json"]  # relative to the library: issue 39
    assert failures["error"][0].startswith("broken.json: ") and "truncated" in failures["error"][0]
    assert str(folder) not in failures.to_csv()
    assert any("failed to load (1)" in h.value for h in at.subheader)


def test_the_library_search_narrows_the_table(library_env):
    at = run()
    at.text_input(key="library_query").input("researcher_pep").run()
    assert at.dataframe[0].value["trace id"].tolist() == ["demo-09-review-dropped-finding"]


def test_the_library_shows_each_task_in_its_own_words(library_env):
    # the words come from the one place that reads them (analysis.task_text), kept by the index
    table = run().dataframe[0].value
    shown = dict(zip(table["trace id"], table["task"]))
    for trace_id, task in shown.items():
        trace = library_env.library.trace(trace_id)
        words = task_text(trace)
        assert task == (trace.task_id if words.endswith(ONLY_TASK_ID) else brief(words, TASK_LIMIT))
    assert shown[PREMATURE_ID].startswith("Checkout p99 rose from 180 ms to 1.4 s on Tuesday.")


@pytest.mark.parametrize("trace_id", DEMO_IDS)
def test_the_trace_page_renders_every_demo_trace(library_env, trace_id):
    at = run(trace_id)
    assert not at.exception, at.exception
    assert at.query_params["trace"] == [trace_id] or at.query_params["trace"] == trace_id
    assert len(at.metric) >= 9  # the header's figures
    assert len(live_charts(at)) == 2  # tree and timeline, on screen together


def test_a_deep_link_selects_the_event_in_the_inspector(library_env):
    at = run("demo-05-hierarchical-ebikes", "e10")
    assert not at.exception
    assert any("spawn" in body and "e10" in body for body in markdown_bodies(at))
    assert [c.value for c in at.code] == ["Spawn approval analyst."]


def test_next_in_the_inspector_moves_the_selection_and_the_url(library_env):
    at = run("demo-05-hierarchical-ebikes", "e10")
    at.button(key="inspector:next ▶").click().run()
    assert not at.exception
    moved = at.query_params["event"]
    moved = moved[0] if isinstance(moved, list) else moved
    assert moved == "e11"
    assert any("e11" in body for body in markdown_bodies(at))


def test_an_unknown_trace_id_says_so(library_env):
    at = run("no-such-trace")
    assert not at.exception
    assert any("No trace with id" in e.value for e in at.error)


def test_the_replay_steps_to_the_next_event(library_env):
    at = run("demo-01-centralized-faithful")
    slider = next(s for s in at.slider if s.key.endswith(":t"))
    assert slider.value == slider.max
    at.button(key=slider.key.replace(":t", ":first")).click().run()
    at.button(key=slider.key.replace(":t", ":forward")).click().run()
    slider = next(s for s in at.slider if s.key.endswith(":t"))
    assert 0 < slider.value < slider.max


def test_the_hostile_trace_renders_as_text(library_env):
    at = run("hostile-xss", "e5")
    assert not at.exception
    shown = "\n".join(c.value for c in at.code)
    assert "<script>window.__pwned=1</script>" in shown  # the payload, shown as text
    for element in list(at.markdown) + list(at.caption):
        assert not element.proto.allow_html
    for body in markdown_bodies(at):
        # in Markdown, every < of trace text arrives backslash-escaped
        assert "<script" not in body.replace("\\<script", "")
        assert "<img" not in body.replace("\\<img", "")


def test_every_page_element_with_markdown_refuses_html(library_env):
    for at in (run(), run("hostile-xss")):
        assert all(not m.proto.allow_html for m in at.markdown)


def test_the_library_says_how_many_of_each_traces_targets_are_labelled(library_env):
    library_env.labelling.save(library_env.library.trace(DROPPED_ID), "aggregation_quality", 2, "ann", "e12")
    table = run().dataframe[0].value.set_index("trace id")["labelled"]
    assert table[DROPPED_ID] == "1 of 3"
    assert table["demo-05-hierarchical-ebikes"].startswith("0 of ")


def test_a_signed_in_reviewer_signs_labels_bookmarks_and_judgements_with_one_name(
        tmp_path, monkeypatch):
    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    trace = workspace.library.trace(PREMATURE_ID)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.secrets = {"auth": {"redirect_uri": "http://localhost:8501/oauth2callback",
                           "cookie_secret": "c" * 32, "client_id": "orchviz",
                           "client_secret": "s", "server_metadata_url": "http://localhost:1/"}}
    at.user = {"is_logged_in": True, "email": "ann@example.org", "name": "Ann",
               "email_verified": True}
    at.query_params["trace"] = PREMATURE_ID
    at.run()
    assert any("Signed in as" in c.value for c in at.sidebar.caption)
    assert not [t for t in at.text_input if t.key == "_reviewer_box"]  # no name to type
    at.radio(key=f"ann:{PREMATURE_ID}:{trace.sha256[:12]}:e12:aggregation_quality").set_value(2)
    next(b for b in at.button if b.label == "Save").click().run()
    at.text_area(key="bookmarks:note").input("the merge")
    next(b for b in at.button if b.label == "Add bookmark").click().run()
    at.query_params["a"], at.query_params["b"] = PREMATURE_ID, DROPPED_ID
    at.switch_page("app_pages/compare.py").run()
    at.radio(key="compare:choice").set_value("A is better")
    at.text_area(key="compare:reason").input("it waits for its analysts")
    next(b for b in at.button if b.label == "Save judgement").click().run()
    assert not at.exception, at.exception
    labels = workspace.labelling.current()
    assert {(x.question, x.reviewer, x.identified_by) for x in labels} == {
        ("aggregation_quality", "ann@example.org", "oidc"),
        ("aggregation_issues", "ann@example.org", "oidc"),  # tags: saved even when none
        ("pairwise_preference", "ann@example.org", "oidc")}
    assert [b.reviewer for b in workspace.bookmarks.current()] == ["ann@example.org"]


def test_the_library_shows_the_teams_progress_beside_the_named_reviewers_own(library_env):
    trace = library_env.library.trace(DROPPED_ID)
    library_env.labelling.save(trace, "aggregation_quality", 2, "ann", "e12")
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["_reviewer_box"] = "bob"
    table = at.run().dataframe[0].value.set_index("trace id")
    assert table.loc[DROPPED_ID, "labelled"] == "1 of 3"  # ann's answer counts for the team
    assert table.loc[DROPPED_ID, "by you"] == "0 of 3"  # and bob has not answered yet
