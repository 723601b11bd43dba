"""The trace library: indexing folders once, listing failures, searching, finding, uploading."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from factories import DEMO_DIR, DROPPED_ID, copy_demos, demo_paths, example_trace, make_workspace
from viz_app.errors import TraceError
from viz_app.io.detect import library_files, read_any, read_at
from viz_app.io.uploads import save_upload
from viz_app.store import index as index_module
from viz_app.store.index import IndexResult, TraceIndex
from viz_app.summary import LibraryRow

IMPORTERS = Path(__file__).parent / "fixtures" / "importers"
LEGACY_DB = Path(__file__).parent / "fixtures" / "legacy" / "orchviz-0.1.db"


@pytest.fixture
def index(tmp_path) -> TraceIndex:
    """The trace index of a fresh SQLite database, for one test."""
    return TraceIndex(make_workspace(tmp_path).engine)


@pytest.fixture
def folder(tmp_path):
    """A folder holding copies of the demo traces."""
    return copy_demos(tmp_path / "demos")


def count_reads(monkeypatch) -> list[str]:
    """Record every file the index reads whole (through io.follow.read_file)."""
    reads: list[str] = []
    real = index_module.read_file

    def spy(source, **kwargs):
        reads.append(str(source))
        return real(source, **kwargs)

    monkeypatch.setattr(index_module, "read_file", spy)
    return reads


def test_index_lists_every_demo_trace_with_its_figures(index, folder):
    result = index.update([folder])
    ids = {json.loads(p.read_text())["trace_id"] for p in demo_paths()}
    assert {r.trace_id for r in result.rows} == ids
    swarm = next(r for r in result.rows if r.topology == "swarm")
    assert swarm.agents == 35 and swarm.depth == 1 and swarm.source_format == "orchviz"
    assert result.failures == []


def test_broken_files_are_listed_with_their_error_and_do_not_stop_the_rest(index, folder):
    (folder / "truncated.json").write_text('{"trace_id": "x", "events": [')
    (folder / "not_a_trace.json").write_text("[1, 2, 3]")
    result = index.update([folder])
    assert len(result.rows) == len(demo_paths())
    errors = {os.path.basename(f.path): f.error for f in result.failures}
    assert set(errors) == {"truncated.json", "not_a_trace.json"}
    for name, message in errors.items():
        with pytest.raises(TraceError) as raised:
            read_any((folder / name).resolve())
        assert message == str(raised.value)  # exactly what the reader said, file and place


def test_reindexing_reads_no_unchanged_file(index, folder, monkeypatch):
    index.update([folder])
    reads = count_reads(monkeypatch)
    again = index.update([folder])
    assert reads == []
    assert again.skipped == len(demo_paths()) and again.parsed == 0
    assert len(again.rows) == len(demo_paths())


def test_reindexing_reads_a_changed_file_again(index, folder, monkeypatch):
    index.update([folder])
    changed = folder / "08_unknown_no_explicit_stop.json"
    raw = json.loads(changed.read_text())
    raw["task_id"] = "a-new-task"
    changed.write_text(json.dumps(raw))
    reads = count_reads(monkeypatch)
    result = index.update([folder])
    assert reads == [str(changed.resolve())]
    assert any(r.task_id == "a-new-task" for r in result.rows)


def test_a_deleted_file_leaves_the_library(index, folder):
    index.update([folder])
    gone = folder / "03_debate_with_judge.json"
    gone_id = json.loads(gone.read_text())["trace_id"]
    gone.unlink()
    result = index.update([folder])
    assert gone_id not in {r.trace_id for r in result.rows}
    assert result.removed == 1
    assert index.find(gone_id) is None


def test_each_trace_of_a_pool_gets_its_position_and_bad_lines_are_failures(index, tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    lines = [json.dumps(example_trace(f"pooled-{i}").to_dict()) for i in range(3)]
    lines.insert(1, '{"trace_id": 7}')
    (pool / "runs.jsonl").write_text("\n".join(lines) + "\n")
    result = index.update([pool])
    assert [(r.trace_id, r.position) for r in result.rows] == [
        ("pooled-0", 0), ("pooled-1", 1), ("pooled-2", 2)]
    assert len(result.failures) == 1 and "line 2" in result.failures[0].error
    path, position = index.find("pooled-2")
    assert read_at(path, position).trace_id == "pooled-2"


def test_find_trace_names_the_file_and_position(index, folder):
    index.update([folder])
    path, position = index.find("demo-03-debate-judge")
    assert path.name == "03_debate_with_judge.json" and position == 0
    assert index.find("no-such-trace") is None


def test_a_progress_callback_sees_every_file_read(index, folder):
    seen = []
    index.update([folder], progress=lambda done, total, path: seen.append((done, total)))
    total = len(demo_paths())
    assert seen[0] == (0, total) and seen[-1] == (total, total)


@pytest.mark.parametrize("query, expected", [
    ("demo-03", {"demo-03-debate-judge"}),                     # trace id
    ("GREAT-WALL", {"demo-03-debate-judge"}),                  # task, any case
    ("researcher_pep", {"demo-09-review-dropped-finding"}),    # an agent name
    ("free-threaded experimental", {"demo-09-review-dropped-finding"}),  # content, every word
])
def test_search_finds_traces_by_id_task_agent_or_text(index, folder, query, expected):
    rows = index.update([folder]).rows
    assert {r.trace_id for r in index.search(rows, query)} == expected


def test_a_blank_search_keeps_every_row(index, folder):
    rows = index.update([folder]).rows
    assert index.search(rows, "   ") == rows


def test_search_treats_like_wildcards_as_plain_characters(index, folder):
    rows = index.update([folder]).rows
    assert index.search(rows, "demo%judge") == []
    assert index.search(rows, "demo_0_") == []


def test_an_upload_is_saved_under_a_safe_name_inside_the_folder(tmp_path):
    saved = save_upload(tmp_path / "uploads", "../../etc/evil name.json", b"{}")
    assert saved.parent == tmp_path / "uploads"
    assert saved.name == "evil_name.json"


def test_the_same_upload_twice_keeps_one_file(tmp_path):
    first = save_upload(tmp_path, "run.json", b'{"a": 1}')
    second = save_upload(tmp_path, "run.json", b'{"a": 1}')
    assert first == second and len(list(tmp_path.iterdir())) == 1


def test_a_different_upload_under_a_taken_name_never_overwrites_it(tmp_path):
    first = save_upload(tmp_path, "run.json", b'{"a": 1}')
    second = save_upload(tmp_path, "run.json", b'{"a": 2}')
    assert first != second
    assert first.read_bytes() == b'{"a": 1}' and second.read_bytes() == b'{"a": 2}'
    assert second.name.endswith(".json")


def test_an_upload_without_a_trace_ending_gets_one(tmp_path):
    assert save_upload(tmp_path, "trace", b"{}").name == "trace.json"


def test_uploads_are_part_of_the_library_once_saved(index, folder, tmp_path):
    uploads = tmp_path / "uploads"
    save_upload(uploads, "mine.json", json.dumps(example_trace("uploaded-one").to_dict()).encode())
    result = index.update([folder, uploads])
    assert "uploaded-one" in {r.trace_id for r in result.rows}


def test_a_missing_folder_is_an_empty_part_of_the_library(index, tmp_path):
    result = index.update([tmp_path / "not-there"])
    assert result.rows == [] and result.failures == []


@pytest.mark.postgres
def test_the_index_works_on_postgresql(postgres_url, folder, tmp_path):
    index = TraceIndex(make_workspace(tmp_path, db=postgres_url).engine)
    rows = index.update([folder]).rows
    assert len(rows) == len(demo_paths())
    assert {r.trace_id for r in index.search(rows, "Researcher_PEP")} == {
        "demo-09-review-dropped-finding"}
    assert index.find("demo-01-centralized-faithful")[0].parent == folder.resolve()


def test_demo_folder_is_what_the_library_reads_by_default():
    assert DEMO_DIR.is_dir() and demo_paths()


def test_a_claude_code_project_lists_one_trace_per_session_with_its_subagents(index, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(IMPORTERS / "claude_code_project", project)
    result = index.update([project])
    assert [r.trace_id for r in result.rows] == ["s-2222"]
    assert result.rows[0].agents == 3 and result.failures == []


# -- how far each trace is labelled -------------------------------------------------------------

def indexed_row(result: IndexResult, trace_id: str) -> LibraryRow:
    return next(r for r in result.rows if r.trace_id == trace_id)


def test_each_row_records_what_the_rubric_asks_to_label_in_its_trace(index, folder):
    from viz_app.labels.rubric import default_rubric

    row = indexed_row(index.update([folder], rubric=default_rubric()), DROPPED_ID)
    assert row.targets == {"e12": ["aggregation_quality"], "e13": ["stopping_correctness"],
                           "": ["task_outcome"]}


def test_a_row_indexed_without_a_rubric_has_no_targets(index, folder):
    assert indexed_row(index.update([folder]), DROPPED_ID).targets is None


def test_a_row_counts_the_targets_whose_required_questions_are_answered(tmp_path, folder):
    workspace = make_workspace(tmp_path, traces=[folder])
    row = indexed_row(workspace.library.update_index(), DROPPED_ID)
    store = workspace.labelling
    trace = read_at(row.path, row.position)
    store.save(trace, "aggregation_quality", 2, "ann", "e12")
    store.save(trace, "task_outcome", "failure", "bob")
    assert row.labelled(store.answered("ann")[DROPPED_ID]) == 1
    assert row.labelled(store.answered()[DROPPED_ID]) == 2
    assert DROPPED_ID not in store.answered("carol")


def test_another_rubric_reads_the_files_again_for_their_targets(index, folder, monkeypatch):
    from viz_app.labels.rubric import default_rubric, rubric_from_dict

    rubric = default_rubric()
    index.update([folder], rubric=rubric)
    reads = count_reads(monkeypatch)
    index.update([folder], rubric=rubric)
    assert reads == []
    trace_only = rubric.model_dump(mode="json", exclude={"sha256"})
    trace_only["questions"] = [q for q in trace_only["questions"] if q["id"] == "task_outcome"]
    result = index.update([folder], rubric=rubric_from_dict(trace_only))
    assert len(reads) == len(library_files([folder]))
    assert indexed_row(result, DROPPED_ID).targets == {"": ["task_outcome"]}


def test_an_older_database_gets_a_new_index_and_keeps_its_labels(tmp_path, folder):
    import sqlite3

    old = tmp_path / "old.db"
    shutil.copy(LEGACY_DB, old)  # written by the 0.1 release
    with sqlite3.connect(old) as conn:  # its index as orchviz schema 1 made it
        conn.execute("ALTER TABLE orchviz_trace_index DROP COLUMN targets")
        conn.execute("ALTER TABLE orchviz_trace_index DROP COLUMN rubric_sha")
        conn.execute("UPDATE orchviz_schema SET version = 1 WHERE name = 'orchviz'")
        labels = conn.execute("SELECT label_id, value FROM labels ORDER BY label_id").fetchall()
    conn.close()
    workspace = make_workspace(tmp_path, traces=[folder], db=old)
    assert indexed_row(workspace.library.update_index(), DROPPED_ID).targets is not None
    assert [(x.label_id, json.dumps(x.value, separators=(",", ":")))
            for x in sorted(workspace.labelling.all(), key=lambda x: x.label_id)] == labels
    assert len(labels) == 5


def test_a_database_indexed_before_the_task_words_reads_its_files_again_for_them(
        tmp_path, folder, monkeypatch):
    """Alembic 0013 adds the index's `task` column and has the next update read every file."""
    from alembic import command

    from viz_app.store.database import alembic_config

    workspace = make_workspace(tmp_path, traces=[folder])
    workspace.library.update_index()
    with workspace.engine.begin() as conn:
        config = alembic_config(conn)
        command.downgrade(config, "0012")
        command.upgrade(config, "head")
    reads = count_reads(monkeypatch)
    result = workspace.library.update_index()
    assert len(reads) == len(library_files([folder])) and result.skipped == 0
    assert indexed_row(result, DROPPED_ID).task.startswith("Question: in which Python version")
