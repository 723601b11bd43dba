"""The trace page's header and its way to the next trace (AppTest): where the trace was read
from is named relative to its library folder or pool, never by the server's path; the next trace
is read ahead while the reviewer works on this one, and Shift+N opens it."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, copy_demos, make_workspace
from test_library_pool import pool_workspace


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
    trace = workspace.trace(PREMATURE_ID)
    assert workspace.source_name(trace) == PREMATURE.name
