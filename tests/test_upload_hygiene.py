"""Upload hygiene (issue 39, item 5; issue 40, item 5): an upload is checked by the rule
`orchviz validate` applies (a pool with one bad line is refused whole) and kept only when
accepted; a file can be read in a format the user chooses (as `orchviz import --from`); the
library shows paths relative to its folders, says when one trace id is in two files, and lets
a failed upload an earlier version kept be removed."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, app_env, example_dict, make_workspace
from test_hostile_numbers import HUGE, minimal
from viz_app.cli import main
from viz_app.io.uploads import add_upload, checked_traces, remove_upload

GOOD = json.dumps(minimal("good-1")).encode()
POOL_ONE_BAD_LINE = b"\n".join([json.dumps(minimal("p1")).encode(),
                                json.dumps(minimal("p2", tokens=HUGE)).encode(),
                                json.dumps(minimal("p3")).encode()]) + b"\n"


def test_an_accepted_upload_is_saved_and_a_refused_one_is_not_kept(tmp_path):
    checked, path = add_upload(tmp_path / "uploads", "good.json", GOOD)
    assert checked.accepted and path is not None and path.read_bytes() == GOOD
    checked, path = add_upload(tmp_path / "uploads", "My Run (huge).json",
                               json.dumps(minimal("huge", tokens=HUGE)).encode())
    assert path is None and not checked.accepted
    (error,) = checked.errors
    assert str(error).startswith("My Run (huge).json: events[1].tokens: ")  # as the user named it
    assert sorted(p.name for p in (tmp_path / "uploads").iterdir()) == ["good.json"]


def test_the_upload_and_validate_apply_one_rule_to_a_pool_with_one_bad_line(tmp_path, capsys):
    checked, path = add_upload(tmp_path / "uploads", "pool.jsonl", POOL_ONE_BAD_LINE)
    assert path is None and len(checked.traces) == 2  # the good lines read, the file refused
    (error,) = checked.errors
    assert error.place == "line 2: events[1].tokens"
    pool = tmp_path / "pool.jsonl"
    pool.write_bytes(POOL_ONE_BAD_LINE)
    assert main(["validate", str(pool)]) == 1  # refused by the CLI too, naming the same line
    assert "line 2: events[1].tokens" in capsys.readouterr().out
    again = checked_traces(pool, fmt="orchviz")
    assert [str(e).split(": ", 1)[1] for e in again.errors] == \
        [str(e).split(": ", 1)[1] for e in checked.errors]


def test_an_upload_read_in_a_chosen_format_is_saved_converted(tmp_path):
    from importing import FIXTURES

    data = (FIXTURES / "langfuse_trace.json").read_bytes()
    checked, path = add_upload(tmp_path / "uploads", "export from langfuse.json", data,
                               fmt="langfuse")
    assert checked.accepted and checked.format == "langfuse" and path is not None
    (trace,) = checked_traces(path).traces  # the saved file reads as orchviz's own
    assert trace.trace_id == checked.traces[0].trace_id
    _, refused = add_upload(tmp_path / "uploads", "not mast.json", GOOD, fmt="mast")
    assert refused is None


def test_remove_upload_removes_only_inside_the_uploads_folder(tmp_path):
    outside = tmp_path / "outside.json"
    outside.write_bytes(GOOD)
    inside = tmp_path / "uploads" / "bad.json"
    inside.parent.mkdir()
    inside.write_bytes(b"{")
    assert not remove_upload(tmp_path / "uploads", outside) and outside.exists()
    assert not remove_upload(tmp_path / "uploads", tmp_path / "uploads" / ".." / "outside.json")
    assert remove_upload(tmp_path / "uploads", inside) and not inside.exists()


def run_library() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    assert not at.exception, at.exception
    return at


def test_the_library_shows_paths_relative_to_its_folders_and_removes_a_failed_upload(
        tmp_path, monkeypatch):
    ws = make_workspace(tmp_path, traces=[PREMATURE.parent])
    app_env(monkeypatch, ws)
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    (uploads / "kept-by-0.1.json").write_bytes(json.dumps(minimal("x", tokens=HUGE)).encode())
    at = run_library()
    frames = [d.value for d in at.dataframe]
    listed = frames[0]
    assert not any(str(tmp_path) in str(v) for v in listed["file"])
    assert PREMATURE.name in set(listed["file"])
    failed = next(f for f in frames if "error" in f.columns)
    assert list(failed["file"]) == ["kept-by-0.1.json"]
    assert str(tmp_path) not in failed.to_csv()
    at.multiselect(key="drop_failed_uploads").select("kept-by-0.1.json").run()
    at.button(key="remove_failed_uploads").click().run()
    assert not (uploads / "kept-by-0.1.json").exists()
    assert not any("error" in d.value.columns for d in at.dataframe)


def test_one_trace_id_in_two_files_is_said_above_the_library(tmp_path, monkeypatch):
    folder = tmp_path / "library"
    folder.mkdir()
    raw = example_dict()
    (folder / "a.json").write_text(json.dumps(raw))
    raw["metrics"] = {"makespan_s": 1.7e308}  # as the second file
    (folder / "b.json").write_text(json.dumps(raw))
    app_env(monkeypatch, make_workspace(tmp_path, traces=[folder]))
    at = run_library()
    (warning,) = [w.value for w in at.warning if "is in 2 files" in w.value]
    assert "a\\.json" in warning and "b\\.json" in warning and "(its hash)" in warning
