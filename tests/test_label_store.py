"""The label store: append-only, newest answer current, bad labels refused, nothing lost under
concurrent writers or a killed one, the same on PostgreSQL."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import uuid

import pytest
from sqlalchemy import text

from factories import PREMATURE_ID, REPO, make_workspace, premature
from viz_app.errors import LabelError
from viz_app.labels.label import Reviewer, derived_label_id
from viz_app.store.labels import LabelStore


def store_of(workspace) -> LabelStore:
    """The label store itself, on a workspace's database and rubric: what these tests specify."""
    return LabelStore(workspace.engine, workspace.rubric)


@pytest.fixture
def trace():
    return premature()


@pytest.fixture
def store(tmp_path) -> LabelStore:
    return store_of(make_workspace(tmp_path))


def test_saving_twice_keeps_both_rows_and_the_newest_is_current(store, trace):
    store.save(trace, "aggregation_quality", 2, "ann", "e12")
    store.save(trace, "aggregation_quality", 4, "ann", "e12")
    assert [x.value for x in store.history(trace.trace_id, "e12")] == [2, 4]
    assert [(x.value, x.reward) for x in store.current(trace.trace_id)] == [(4, 0.5)]


def test_each_reviewer_has_their_own_current_label(store, trace):
    store.save(trace, "aggregation_quality", 2, "ann", "e12")
    store.save(trace, "aggregation_quality", 5, "bob", "e12")
    assert {x.reviewer: x.value for x in store.current(trace.trace_id)} == {"ann": 2, "bob": 5}


def test_a_label_records_rubric_and_trace_hashes(store, trace):
    label = store.save(trace, "task_outcome", "partial", "ann", comment="half done",
                       seconds_spent=12.5)
    assert (label.trace_sha256, label.rubric_sha256, label.rubric_version) == \
        (trace.sha256, store.rubric.sha256, store.rubric.version)
    assert (label.event_id, label.source, label.comment, label.seconds_spent) == \
        ("", "human", "half done", 12.5)


def test_a_label_on_an_event_the_trace_lacks_is_refused_and_not_stored(store, trace):
    with pytest.raises(LabelError, match="no event 'e404'"):
        store.save(trace, "aggregation_quality", 3, "ann", "e404")
    assert store.count() == 0


def test_a_value_outside_the_rubric_is_refused_and_not_stored(store, trace):
    with pytest.raises(LabelError, match="'maybe' is not an answer to stopping_correctness"):
        store.save(trace, "stopping_correctness", "maybe", "ann", "e13")
    assert store.count() == 0


def test_a_follow_up_without_its_premise_is_refused(store, trace):
    with pytest.raises(LabelError, match="asked only when stopping_correctness"):
        store.save_target(trace, "e13", {"stopping_correctness": "correct",
                                         "stop_should_have_been": "e15"}, "ann")


def test_a_label_needs_a_reviewer(store, trace):
    with pytest.raises(LabelError, match="reviewer"):
        store.save(trace, "task_outcome", "success", "  ")


def test_progress_counts_targets_whose_required_questions_are_answered(store, trace):
    assert store.progress(trace, "ann").text == "0 of 3 targets labelled"
    store.save(trace, "aggregation_quality", 3, "ann", "e12")
    store.save(trace, "aggregation_issues", ["dropped_result"], "ann", "e12")
    progress = store.progress(trace, "ann")
    assert (progress.text, progress.next_target) == ("1 of 3 targets labelled", "e13")
    assert store.progress(trace, "bob").labelled == 0


def test_the_sqlite_store_runs_in_wal_mode(store):
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"


def test_a_label_records_how_its_reviewer_was_identified(tmp_path, trace):
    workspace = make_workspace(tmp_path)
    workspace.labelling.save_answers(trace, "e12", {"aggregation_quality": 3},
                           Reviewer(name="ann@example.org", via="oidc"))
    workspace.labelling.save(trace, "task_outcome", "failure", "bob")
    workspace.labelling.import_labels([record("judge", 2)], {trace.trace_id: trace}, "judge.jsonl")
    assert {x.reviewer: x.identified_by for x in workspace.labelling.current()} == {
        "ann@example.org": "oidc", "bob": "cli", "judge": "import"}


def record(reviewer: str, value: int, trace_id: str = PREMATURE_ID) -> dict:
    return {"trace_id": trace_id, "event_id": "e12", "question": "aggregation_quality",
            "value": value, "reviewer": reviewer, "created_at": f"2026-01-01T00:00:0{value}Z"}


def test_importing_the_same_records_twice_adds_nothing(store, trace):
    records = [record("judge", v) for v in (1, 2, 3)]
    first = store.import_records(records, {trace.trace_id: trace}, "judge.jsonl")
    again = store.import_records(records, {trace.trace_id: trace}, "judge.jsonl")
    assert (first.added, again.added, store.count()) == (3, 0, 3)


def test_an_imported_record_without_label_id_gets_one_from_its_content():
    assert derived_label_id(record("a", 1)) == derived_label_id(dict(record("a", 1)))
    assert derived_label_id(record("a", 1)) != derived_label_id(record("a", 2))


def test_an_import_fills_in_the_reward_and_marks_its_origin(store, trace):
    store.import_records([record("judge", 5)], {trace.trace_id: trace}, "judge.jsonl")
    [label] = store.current()
    assert (label.reward, label.source, label.origin, label.trace_sha256) == \
        (1.0, "import", "judge.jsonl", trace.sha256)


def test_an_import_with_one_bad_record_adds_none(store, trace):
    records = [record("judge", 2), {**record("judge", 3), "event_id": "e404"}]
    with pytest.raises(LabelError, match="record 2: .*no event 'e404'"):
        store.import_records(records, {trace.trace_id: trace}, "judge.jsonl")
    assert store.count() == 0


def test_an_import_for_a_trace_not_given_is_refused(store, trace):
    with pytest.raises(LabelError, match="no trace 'elsewhere'"):
        store.import_records([record("judge", 2, "elsewhere")], {trace.trace_id: trace}, "x")


# -- nothing lost -----------------------------------------------------------------------------

WRITERS = 8
PER_WRITER = 300
SHARED = 50  # records every writer imports: they must land once


def _import_worker(url: str, worker: int, start) -> int:
    from viz_app.workspace import Workspace

    trace = premature()
    workspace = Workspace.open(url)
    own = [{**record(f"w{worker}-{i}", 1 + i % 5),
            "created_at": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z"} for i in range(PER_WRITER)]
    shared = [{**record(f"shared-{i}", 1 + i % 5), "label_id": f"shared-{i}"}
              for i in range(SHARED)]
    start.wait(60)
    added = 0
    for chunk in range(0, PER_WRITER, 50):  # many small transactions, to interleave the writers
        added += workspace.labelling.import_labels(own[chunk:chunk + 50] + shared,
                                         {trace.trace_id: trace}, f"writer-{worker}").added
    return added


def test_eight_processes_importing_into_one_sqlite_file_lose_nothing(tmp_path):
    workspace = make_workspace(tmp_path)  # the tables made once, as `orchviz app` would
    url = workspace.settings.db_url
    context = multiprocessing.get_context("spawn")
    with context.Manager() as manager:
        start = manager.Event()
        with context.Pool(WRITERS) as pool:
            pending = [pool.apply_async(_import_worker, (url, w, start)) for w in range(WRITERS)]
            start.set()
            added = [p.get(timeout=180) for p in pending]
    store = store_of(workspace)
    assert store.count() == WRITERS * PER_WRITER + SHARED
    assert sum(added) == WRITERS * PER_WRITER + SHARED
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA integrity_check")).scalar() == "ok"


KILLED_WRITER = """
import sys, time
from sqlalchemy import insert
from viz_app.store.database import connect
from viz_app.store.tables import labels_table
engine = connect(sys.argv[1])
rows = [dict(label_id=f"doomed-{i}", trace_id="t", trace_sha256="x", event_id="", question="q",
             value="1", reward=None, reviewer="r", created_at="2026", rubric_version="1",
             rubric_sha256="x", comment="", seconds_spent=None, source="human", origin="")
        for i in range(20000)]
with engine.begin() as conn:
    conn.execute(insert(labels_table), rows)
    print("inside the transaction", flush=True)
    time.sleep(60)
"""


def test_a_writer_killed_mid_transaction_leaves_the_database_whole(tmp_path, trace):
    workspace = make_workspace(tmp_path)
    url = workspace.settings.db_url
    workspace.labelling.save(trace, "aggregation_quality", 4, "ann", "e12")
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, url], stdout=subprocess.PIPE,
                              env=env, text=True)
    try:
        assert writer.stdout.readline().strip() == "inside the transaction"
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(10)
    after = store_of(make_workspace(tmp_path))
    with after.engine.connect() as conn:
        assert conn.execute(text("PRAGMA integrity_check")).scalar() == "ok"
    assert [x.value for x in after.current()] == [4]
    after.save(trace, "aggregation_quality", 5, "ann", "e12")
    assert after.count() == 2


# -- PostgreSQL ---------------------------------------------------------------------------------


@pytest.mark.postgres
def test_the_store_works_on_postgresql(postgres_url, trace, tmp_path):
    store = store_of(make_workspace(tmp_path, db=postgres_url))
    reviewer = f"pg-{uuid.uuid4().hex[:8]}"
    store.save(trace, "aggregation_quality", 2, reviewer, "e12")
    store.save(trace, "aggregation_quality", 5, reviewer, "e12")
    mine = [x for x in store.current(trace.trace_id, reviewer)]
    assert [(x.value, x.reward) for x in mine] == [(5, 1.0)]
    assert len(store.history(trace.trace_id, "e12", reviewer=reviewer)) == 2


@pytest.mark.postgres
def test_importing_twice_into_postgresql_adds_nothing(postgres_url, trace, tmp_path):
    store = store_of(make_workspace(tmp_path, db=postgres_url))
    records = [record(f"pg-judge-{uuid.uuid4().hex[:8]}", v) for v in (1, 2)]
    first = store.import_records(records, {trace.trace_id: trace}, "judge")
    again = store.import_records(records, {trace.trace_id: trace}, "judge")
    assert (first.added, again.added) == (2, 0)
