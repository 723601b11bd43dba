"""The trace page's header and its way to the next trace (AppTest): where the trace was read
from is named relative to its library folder or pool, never by the server's path; the next trace
is read ahead while the reviewer works on this one, and Shift+N opens it."""

from __future__ import annotations

import os

import pytest
from streamlit.testing.v1 import AppTest

from factories import (APP, PREMATURE, PREMATURE_ID, app_env, copy_demos, example_trace,
                       live_charts, make_workspace)
from test_library_pool import pool_workspace
from viz_app import charts
from viz_app.analysis import analyze
from viz_app.io.native import write_trace
from viz_app.ui import session
from viz_app.workspace import Workspace


def run(trace: str, reviewer: str | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"] = trace
    if reviewer:
        at.session_state["_reviewer_box"] = reviewer
    return at.run()


def header(at: AppTest) -> str:
    """The header's line under the title, its Markdown escapes taken out."""
    return next(c.value for c in at.caption if c.value.startswith("task ")).replace("\\", "")


def test_the_header_names_the_file_relative_to_the_library_folder(tmp_path, monkeypatch):
    folder = copy_demos(tmp_path / "library" / "runs", [PREMATURE.name]).parent
    app_env(monkeypatch, make_workspace(tmp_path, traces=[folder]))
    shown = header(run(PREMATURE_ID))
    assert f"file runs/{PREMATURE.name}" in shown
    assert str(tmp_path) not in shown


def test_the_header_names_a_pool_trace_by_its_shard_in_the_pool(tmp_path, monkeypatch):
    app_env(monkeypatch, pool_workspace(tmp_path))
    shown = header(run("rollout-0077"))
    assert "file part-00001.parquet" in shown
    assert str(tmp_path) not in shown


def test_a_trace_file_listed_by_itself_is_named_by_its_file_name(tmp_path):
    workspace = make_workspace(tmp_path, traces=[PREMATURE])
    trace = workspace.library.trace(PREMATURE_ID)
    assert workspace.library.source_name(trace) == PREMATURE.name


@pytest.fixture
def three_traces(tmp_path, monkeypatch) -> Workspace:
    """The app on a library of three traces, a, b and c, in that order."""
    workspace = make_workspace(tmp_path, traces=[example_trace(t, task_id=f"task of {t}")
                                                 for t in ("trace-a", "trace-b", "trace-c")])
    workspace.library.update_index()
    return app_env(monkeypatch, workspace)


def app_workspace() -> Workspace:
    """The Workspace the app's pages ran with (one per process and settings, as on a server)."""
    return session.workspace()


def next_trace(at: AppTest) -> AppTest:
    key = next(b.key for b in at.button if b.key and b.key.endswith(":next_trace"))
    return at.button(key=key).click().run()


def title(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("### ")).removeprefix("### ")


def test_the_trace_page_reads_the_next_trace_ahead_and_shift_n_opens_it(three_traces):
    at = run("trace-a", reviewer="ann")
    cache = app_workspace().library.trace_cache
    assert cache.wait()
    assert cache.cached(app_workspace().library.source("trace-b")) and not cache.failures
    at = next_trace(at)
    assert not at.exception and title(at).replace("\\", "") == "trace-b"
    assert at.query_params["trace"] == "trace-b"


def test_nobody_named_reads_nothing_ahead(three_traces):
    run("trace-a")
    assert app_workspace().library.trace_cache.wait()
    assert not app_workspace().library.trace_cache.cached(app_workspace().library.source("trace-b"))


def test_a_next_trace_changed_on_disk_after_it_was_read_ahead_shows_as_it_is_now(three_traces):
    at = run("trace-a", reviewer="ann")
    assert app_workspace().library.trace_cache.wait()
    path, _ = three_traces.library.find("trace-b")
    write_trace(example_trace("trace-b", task_id="rewritten since"), path)
    at = next_trace(at)
    assert "(id rewritten since)" in header(at)  # the task's words in bold, its id beside


def test_a_next_trace_that_cannot_be_read_says_so_when_it_is_opened(three_traces):
    path, _ = three_traces.library.find("trace-b")
    stat = path.stat()
    size = stat.st_size  # spoilt in place, its size and time kept: the index cannot tell
    path.write_bytes(b"{" + b" " * (size - 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    at = run("trace-a", reviewer="ann")
    assert not at.exception and not at.error  # the failed read ahead costs the page nothing
    assert app_workspace().library.trace_cache.wait() and app_workspace().library.trace_cache.failures
    at = next_trace(at)
    assert not at.exception
    said = at.error[0].value.replace("\\", "")
    assert said.startswith("The trace could not be loaded:") and path.name in said


def test_the_review_page_reads_ahead_the_trace_of_the_target_likely_next(tmp_path, monkeypatch):
    from test_app_review import LEAD, STOPS, review, start
    from factories import DROPPED, DROPPED_ID, PREMATURE
    from viz_app.labels.campaign import CampaignSpec

    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    workspace.library.update_index()
    workspace.campaigns.create(CampaignSpec(name=STOPS, questions=["stopping_correctness"]), LEAD)
    at = start(review("ann"))
    held = at.session_state["_review"]["claim"]
    upcoming = workspace.campaigns.upcoming(STOPS, "ann")
    assert upcoming is not None and upcoming != held.trace_id  # one stop in each trace
    assert app_workspace().library.trace_cache.wait()
    assert app_workspace().library.trace_cache.cached(app_workspace().library.source(upcoming))
    assert not at.exception and {held.trace_id, upcoming} == {PREMATURE_ID, DROPPED_ID}


def test_the_target_likely_next_is_only_looked_at_not_reserved(tmp_path):
    from test_app_review import ANN, LEAD, STOPS
    from factories import DROPPED
    from viz_app.labels.campaign import CampaignSpec

    workspace = make_workspace(tmp_path, traces=[PREMATURE, DROPPED])
    workspace.library.update_index()
    workspace.campaigns.create(CampaignSpec(name=STOPS, questions=["stopping_correctness"]), LEAD)
    first = workspace.campaigns.claim_next(STOPS, ANN)
    upcoming = workspace.campaigns.upcoming(STOPS, "ann")
    assert upcoming is not None and upcoming != first.trace_id
    bob = ANN.model_copy(update={"name": "bob"})  # ann's look ahead left it free for bob
    assert workspace.campaigns.claim_next(STOPS, bob).trace_id == upcoming


def test_a_selected_event_is_ringed_by_the_live_timeline_never_on_the_shared_figure(
        tmp_path, monkeypatch):
    app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params.update(trace=PREMATURE_ID, event="e13")
    at.run()
    [(head, figure)] = [c for c in live_charts(at) if c[0]["chart"] == "timeline"]
    trace = app_workspace().library.trace(PREMATURE_ID)
    assert head["ring"]["at"] == list(charts.timeline_point(analyze(trace), "e13"))
    assert head["tag"] == PREMATURE_ID
    assert not [t for t in figure["data"] if t.get("name") == "selected"]
    cached = session._timeline(session.trace_key(trace), None, False, trace)
    assert not [t for t in cached.data if t.name == "selected"]


def test_a_reports_footer_names_the_trace_file_but_not_where_it_lies(tmp_path):
    from viz_app.export.report import report_html

    workspace = make_workspace(tmp_path, traces=[copy_demos(tmp_path / "lib" / "runs",
                                                            [PREMATURE.name]).parent])
    workspace.library.update_index()
    trace = workspace.library.trace(PREMATURE_ID)
    footer = report_html(trace).rsplit("<footer>", 1)[1]
    assert PREMATURE.name in footer and str(tmp_path) not in footer
    given = report_html(trace, source=workspace.library.source_name(trace)).rsplit("<footer>", 1)[1]
    assert f"runs/{PREMATURE.name}" in given and str(tmp_path) not in given


def test_the_adjudication_page_reads_ahead_the_next_disagreements_trace(tmp_path, monkeypatch):
    from test_app_adjudicate import ANN, BOB, LEAD, NAME, adjudicate
    from viz_app.analysis import analyze
    from factories import DROPPED, DROPPED_ID
    from viz_app.labels.campaign import CampaignSpec

    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    workspace.library.update_index()
    workspace.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness"],
                                           per_target=2), LEAD)
    for reviewer in (ANN, BOB):  # they disagree on both stops
        while (claim := workspace.campaigns.claim_next(NAME, reviewer)) is not None:
            last = analyze(workspace.library.trace(claim.trace_id)).order[-1].id
            later = {"stop_should_have_been": last} if last != claim.event_id else {}
            workspace.campaigns.submit(claim, {"stopping_correctness": "correct"} if reviewer is BOB else
                             {"stopping_correctness": "premature", **later})
    at = adjudicate()
    assert not at.exception and any("Disagreement 1 of 2" in c.value for c in at.caption)
    shown = next(d.trace_id for d in workspace.campaigns.disagreements(NAME))
    following = ({PREMATURE_ID, DROPPED_ID} - {shown}).pop()
    assert app_workspace().library.trace_cache.wait()
    assert app_workspace().library.trace_cache.cached(app_workspace().library.source(following))


def test_a_who_and_when_trace_header_shows_the_question_not_its_uuid(tmp_path, monkeypatch):
    from pathlib import Path

    source = Path(__file__).parent / "fixtures" / "importers" / "whowhen_magentic.json"
    folder = tmp_path / "library"
    folder.mkdir()
    (folder / source.name).write_bytes(source.read_bytes())
    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[folder]))
    trace_id = workspace.library.update_index().rows[0].trace_id
    shown = header(run(trace_id))
    assert shown.startswith("task **How many studio albums did the band release before 2000?** "
                            "(id ww-demo-1)")


def test_the_trace_page_fetches_ahead_the_live_charts_code_alone(three_traces):
    """The trace page draws its tree and timeline as live charts: it has the browser fetch
    plotly.js for them ahead, and not Streamlit's Plotly bundle, which only other pages draw
    with (the library, the first of them opened, fetches it then)."""
    at = run("trace-a", reviewer="ann")
    assert not at.exception
    assert not at.get("plotly_chart")
    assert at.session_state["_charts_ready"] == (session.LIVE_BUNDLE,)
    at.query_params.clear()  # the library opens the trace the URL names
    at.switch_page("app_pages/library.py").run()
    assert not at.exception
    assert at.session_state["_charts_ready"] == (session.LIVE_BUNDLE, session.PLOTLY_BUNDLE)
