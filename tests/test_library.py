"""The trace library: indexing folders once, listing failures, searching, finding, uploading."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from factories import DEMO_DIR, demo_paths, example_dict
from viz_app import library
from viz_app.db import connect
from viz_app.errors import TraceError
from viz_app.io.detect import read_any


@pytest.fixture
def engine(tmp_path):
    """A fresh SQLite database for one test."""
    return connect(f"sqlite:///{tmp_path / 'index.db'}")


@pytest.fixture
def folder(tmp_path):
    """A folder holding copies of the demo traces."""
    target = tmp_path / "traces"
    target.mkdir()
    for path in demo_paths():
        shutil.copy(path, target / path.name)
    return target


def count_reads(monkeypatch) -> list[str]:
    """Record every file the library reads through read_any."""
    reads: list[str] = []
    real = library.read_any

    def spy(source, **kwargs):
        reads.append(str(source))
        return real(source, **kwargs)

    monkeypatch.setattr(library, "read_any", spy)
    return reads


def test_index_lists_every_demo_trace_with_its_figures(engine, folder):
    result = library.index_folders(engine, [folder])
    ids = {json.loads(p.read_text())["trace_id"] for p in demo_paths()}
    assert {r.trace_id for r in result.rows} == ids
    swarm = next(r for r in result.rows if r.topology == "swarm")
    assert swarm.agents == 35 and swarm.depth == 1 and swarm.source_format == "orchviz"
    assert result.failures == []


def test_broken_files_are_listed_with_their_error_and_do_not_stop_the_rest(engine, folder):
    (folder / "truncated.json").write_text('{"trace_id": "x", "events": [')
    (folder / "not_a_trace.json").write_text("[1, 2, 3]")
    result = library.index_folders(engine, [folder])
    assert len(result.rows) == len(demo_paths())
    errors = {os.path.basename(f.path): f.error for f in result.failures}
    assert set(errors) == {"truncated.json", "not_a_trace.json"}
    for name, message in errors.items():
        with pytest.raises(TraceError) as raised:
            read_any((folder / name).resolve())
        assert message == str(raised.value)  # exactly what the reader said, file and place


def test_reindexing_reads_no_unchanged_file(engine, folder, monkeypatch):
    library.index_folders(engine, [folder])
    reads = count_reads(monkeypatch)
    again = library.index_folders(engine, [folder])
    assert reads == []
    assert again.skipped == len(demo_paths()) and again.parsed == 0
    assert len(again.rows) == len(demo_paths())


def test_reindexing_reads_a_changed_file_again(engine, folder, monkeypatch):
    library.index_folders(engine, [folder])
    changed = folder / "08_unknown_no_explicit_stop.json"
    raw = json.loads(changed.read_text())
    raw["task_id"] = "a-new-task"
    changed.write_text(json.dumps(raw))
    reads = count_reads(monkeypatch)
    result = library.index_folders(engine, [folder])
    assert reads == [str(changed.resolve())]
    assert any(r.task_id == "a-new-task" for r in result.rows)


def test_a_deleted_file_leaves_the_library(engine, folder):
    library.index_folders(engine, [folder])
    gone = folder / "03_debate_with_judge.json"
    gone_id = json.loads(gone.read_text())["trace_id"]
    gone.unlink()
    result = library.index_folders(engine, [folder])
    assert gone_id not in {r.trace_id for r in result.rows}
    assert result.removed == 1
    assert library.find_trace(engine, gone_id) is None


def test_each_trace_of_a_pool_gets_its_position_and_bad_lines_are_failures(engine, tmp_path):
    pool = tmp_path / "pool"
    pool.mkdir()
    lines = []
    for i in range(3):
        raw = example_dict()
        raw["trace_id"] = f"pooled-{i}"
        lines.append(json.dumps(raw))
    lines.insert(1, '{"trace_id": 7}')
    (pool / "runs.jsonl").write_text("\n".join(lines) + "\n")
    result = library.index_folders(engine, [pool])
    assert [(r.trace_id, r.position) for r in result.rows] == [
        ("pooled-0", 0), ("pooled-1", 1), ("pooled-2", 2)]
    assert len(result.failures) == 1 and "line 2" in result.failures[0].error
    path, position = library.find_trace(engine, "pooled-2")
    assert library.read_indexed(path, position).trace_id == "pooled-2"


def test_find_trace_names_the_file_and_position(engine, folder):
    library.index_folders(engine, [folder])
    path, position = library.find_trace(engine, "demo-03-debate-judge")
    assert path.name == "03_debate_with_judge.json" and position == 0
    assert library.find_trace(engine, "no-such-trace") is None


def test_a_progress_callback_sees_every_file_read(engine, folder):
    seen = []
    library.index_folders(engine, [folder], progress=lambda done, total, path: seen.append(
        (done, total)))
    total = len(demo_paths())
    assert seen[0] == (0, total) and seen[-1] == (total, total)


@pytest.mark.parametrize("query, expected", [
    ("demo-03", {"demo-03-debate-judge"}),                     # trace id
    ("GREAT-WALL", {"demo-03-debate-judge"}),                  # task, any case
    ("researcher_pep", {"demo-09-review-dropped-finding"}),    # an agent name
    ("free-threaded experimental", {"demo-09-review-dropped-finding"}),  # content, every word
])
def test_search_finds_traces_by_id_task_agent_or_text(engine, folder, query, expected):
    rows = library.index_folders(engine, [folder]).rows
    assert {r.trace_id for r in library.search(rows, query, engine)} == expected


def test_search_without_the_index_matches_the_listed_fields_only(engine, folder):
    rows = library.index_folders(engine, [folder]).rows
    assert {r.trace_id for r in library.search(rows, "swarm")} == {"demo-04-swarm-audit"}
    assert library.search(rows, "approval_analyst") == []  # an agent name: in the index only
    assert library.search(rows, "   ") == rows


def test_search_treats_like_wildcards_as_plain_characters(engine, folder):
    rows = library.index_folders(engine, [folder]).rows
    assert library.search(rows, "demo%judge", engine) == []
    assert library.search(rows, "demo_0_", engine) == []


def test_an_upload_is_saved_under_a_safe_name_inside_the_folder(tmp_path):
    saved = library.save_upload(tmp_path / "uploads", "../../etc/evil name.json", b"{}")
    assert saved.parent == tmp_path / "uploads"
    assert saved.name == "evil_name.json"


def test_the_same_upload_twice_keeps_one_file(tmp_path):
    first = library.save_upload(tmp_path, "run.json", b'{"a": 1}')
    second = library.save_upload(tmp_path, "run.json", b'{"a": 1}')
    assert first == second and len(list(tmp_path.iterdir())) == 1


def test_a_different_upload_under_a_taken_name_never_overwrites_it(tmp_path):
    first = library.save_upload(tmp_path, "run.json", b'{"a": 1}')
    second = library.save_upload(tmp_path, "run.json", b'{"a": 2}')
    assert first != second
    assert first.read_bytes() == b'{"a": 1}' and second.read_bytes() == b'{"a": 2}'
    assert second.name.endswith(".json")


def test_an_upload_without_a_trace_ending_gets_one(tmp_path):
    assert library.save_upload(tmp_path, "trace", b"{}").name == "trace.json"


def test_uploads_are_part_of_the_library_once_saved(engine, folder, tmp_path):
    uploads = tmp_path / "uploads"
    raw = example_dict()
    raw["trace_id"] = "uploaded-one"
    library.save_upload(uploads, "mine.json", json.dumps(raw).encode())
    result = library.index_folders(engine, [folder, uploads])
    assert "uploaded-one" in {r.trace_id for r in result.rows}


def test_a_missing_folder_is_an_empty_part_of_the_library(engine, tmp_path):
    result = library.index_folders(engine, [tmp_path / "not-there"])
    assert result.rows == [] and result.failures == []


@pytest.mark.postgres
def test_the_index_works_on_postgresql(postgres_url, folder):
    engine = connect(postgres_url)
    rows = library.index_folders(engine, [folder]).rows
    assert len(rows) == len(demo_paths())
    assert {r.trace_id for r in library.search(rows, "Researcher_PEP", engine)} == {
        "demo-09-review-dropped-finding"}
    assert library.find_trace(engine, "demo-01-centralized-faithful")[0].parent == folder.resolve()


def test_demo_folder_is_what_the_library_reads_by_default():
    assert DEMO_DIR.is_dir() and demo_paths()


def test_a_claude_code_project_lists_one_trace_per_session_with_its_subagents(engine, tmp_path):
    project = tmp_path / "project"
    shutil.copytree(Path(__file__).parent / "fixtures" / "importers" / "claude_code_project", project)
    result = library.index_folders(engine, [project])
    assert [r.trace_id for r in result.rows] == ["s-2222"]
    assert result.rows[0].agents == 3 and result.failures == []


def test_a_who_and_when_run_in_the_library_brings_its_annotation_as_imported_labels(engine, tmp_path):
    from viz_app.labels.store import open_store

    folder = tmp_path / "whowhen"
    folder.mkdir()
    shutil.copy(Path(__file__).parent / "fixtures" / "importers" / "whowhen_magentic.json", folder)
    library.index_folders(engine, [folder])
    labels = open_store(engine.url.render_as_string(hide_password=False)).current_records()
    assert [(r["source"], r["origin"]) for r in labels] == [("import", "Who&When")]


# -- how far each trace is labelled -------------------------------------------------------------

DROPPED = "demo-09-review-dropped-finding"


def indexed_row(result: library.IndexResult, trace_id: str) -> library.IndexRow:
    return next(r for r in result.rows if r.trace_id == trace_id)


def test_each_row_records_what_the_rubric_asks_to_label_in_its_trace(engine, folder):
    from viz_app.labels.rubric import default_rubric

    row = indexed_row(library.index_folders(engine, [folder], rubric=default_rubric()), DROPPED)
    assert row.targets == {"e12": ["aggregation_quality"], "e13": ["stopping_correctness"],
                           "": ["task_outcome"]}


def test_a_row_indexed_without_a_rubric_has_no_targets(engine, folder):
    assert indexed_row(library.index_folders(engine, [folder]), DROPPED).targets is None


def test_a_row_counts_the_targets_whose_required_questions_are_answered(engine, folder):
    from viz_app.labels.rubric import default_rubric
    from viz_app.labels.store import open_store

    rubric = default_rubric()
    row = indexed_row(library.index_folders(engine, [folder], rubric=rubric), DROPPED)
    store = open_store(engine.url.render_as_string(hide_password=False), rubric)
    trace = library.read_indexed(row.path, row.position)
    store.save(trace, "aggregation_quality", 2, "ann", "e12")
    store.save(trace, "task_outcome", "failure", "bob")
    assert row.labelled(store.answered("ann")[DROPPED]) == 1
    assert row.labelled(store.answered()[DROPPED]) == 2
    assert DROPPED not in store.answered("carol")


def test_another_rubric_reads_the_files_again_for_their_targets(engine, folder, monkeypatch):
    from viz_app.labels.rubric import default_rubric, rubric_from_dict

    rubric = default_rubric()
    library.index_folders(engine, [folder], rubric=rubric)
    reads = count_reads(monkeypatch)
    library.index_folders(engine, [folder], rubric=rubric)
    assert reads == []
    trace_only = rubric.model_dump(mode="json", exclude={"sha256"})
    trace_only["questions"] = [q for q in trace_only["questions"] if q["id"] == "task_outcome"]
    result = library.index_folders(engine, [folder], rubric=rubric_from_dict(trace_only))
    assert len(reads) == len(library.library_files([folder]))
    assert indexed_row(result, DROPPED).targets == {"": ["task_outcome"]}


def test_an_older_database_gets_a_new_index_and_keeps_its_labels(tmp_path, folder):
    from sqlalchemy import text

    from viz_app import db
    from viz_app.labels.rubric import default_rubric
    from viz_app.labels.store import open_store

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = connect(url)
    row = indexed_row(library.index_folders(engine, [folder], rubric=default_rubric()), DROPPED)
    open_store(url).save(library.read_indexed(row.path, row.position), "task_outcome",
                         "failure", "ann")
    with engine.begin() as conn:  # the index as orchviz schema 1 made it
        conn.execute(text("ALTER TABLE orchviz_trace_index DROP COLUMN targets"))
        conn.execute(text("ALTER TABLE orchviz_trace_index DROP COLUMN rubric_sha"))
        conn.execute(text("UPDATE orchviz_schema SET version = 1 WHERE name = 'orchviz'"))
    engine.dispose()
    db._engines.pop(url)
    again = connect(url)
    result = library.index_folders(again, [folder], rubric=default_rubric())
    assert indexed_row(result, DROPPED).targets is not None
    assert [r["value"] for r in open_store(url).current_records(DROPPED)] == ["failure"]
