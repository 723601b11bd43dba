"""The index of a pool: one summary row per trace in DuckDB and its words in SQLite FTS5, built
by one shard function inline, on a process pool or on Ray; queried by structured filters,
searches, pages, counts, histograms and samples."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import need
from factories import demo_trace, example_trace, make_workspace
from viz_app.cli import main
from viz_app.errors import OrchvizError, StoreError
from viz_app.io import pool
from viz_app.labels.rubric import default_rubric
from viz_app.store.index import trace_record
from viz_app.store.pool_index import (Condition, FilterError, PoolIndex, default_index_path,
                                      parse_condition, search_query, summarise_shard)
from test_failures import tiny_disk  # noqa: F401  (a 512 KB tmpfs)
from test_pool_s3 import bucket, s3_endpoint  # noqa: F401  (the moto S3 server's fixtures)

TOPOLOGIES = ["centralized", "debate", "swarm"]


def pool_traces(count: int = 24):
    """Small traces with ids, tasks (groups of 4), topologies, agents and rewards that vary."""
    traces = []
    for i in range(count):
        trace = example_trace(f"rollout-{i:03d}", task_id=f"task-{i // 4}",
                              topology=TOPOLOGIES[i % 3],
                              rewards={"team": float(i % 2), "tool": i / count})
        traces.append(trace)
    return traces


@pytest.fixture
def written(tmp_path):
    """A pool of 24 traces in 4 Parquet shards, and its traces."""
    traces = pool_traces()
    pool.write_pool(traces, str(tmp_path / "pool"), shard_rows=6, row_group_rows=2)
    return str(tmp_path / "pool"), traces


def indexed(tmp_path, location, **options):
    index = PoolIndex(tmp_path / "index" / "pool.duckdb", location)
    options.setdefault("workers", 1)
    return index, index.update(pool.shards(location), rubric=default_rubric(), **options)


def snapshot(index: PoolIndex) -> list[dict]:
    """Every row of an index, in trace id order, without its doc numbers."""
    rows = index.page(sort="trace_id", limit=10_000)
    return [r.model_dump() for r in rows]


# -- what is indexed ------------------------------------------------------------------------------


def test_each_trace_gets_a_row_with_the_same_summary_as_the_library_index(tmp_path, written):
    location, traces = written
    index, done = indexed(tmp_path, location)
    assert (done.traces, done.shards, done.read, done.failures) == (24, 4, 4, 0)
    row = index.page([Condition(field="trace_id", op="=", value="rollout-007")])[0]
    expected = trace_record(traces[7], default_rubric())
    assert (row.events, row.agents, row.depth, row.makespan_s, row.tokens, row.sha256,
            row.task_id, row.topology) == (
        expected["events"], expected["agents"], expected["depth"], expected["makespan_s"],
        expected["tokens"], expected["sha256"], "task-1", "debate")
    assert row.rewards == {"team": 1.0, "tool": 7 / 24}
    assert row.targets == json.loads(expected["targets"])
    assert row.path.endswith("part-00001.parquet") and row.position == 1


@pytest.mark.parametrize("seed", range(6))
def test_a_summary_row_holds_the_figures_targets_and_words_the_library_index_keeps(seed):
    from viz_app.io.native import trace_from_dict
    from viz_app.model import TOPOLOGIES as ALL_TOPOLOGIES
    from viz_app.store.pool_index import POOL_TEXT_LIMIT, summarise_trace
    from viz_app.synth import synth_trace

    raw = synth_trace(3 + seed, 40 + 13 * seed, topology=ALL_TOPOLOGIES[seed], seed=seed)
    for rubric in (default_rubric(), None):
        row = summarise_trace(trace_from_dict(raw, "t"), "shard", 3, rubric)
        expected = trace_record(trace_from_dict(raw, "t"), rubric, POOL_TEXT_LIMIT)
        for name in ("events", "agents", "depth", "makespan_s", "parallelism", "tokens",
                     "cost_usd", "warnings", "sha256", "targets", "task_id", "topology"):
            assert row[name] == expected[name], name
        assert row["text"] == expected["search_text"]


def test_a_second_update_reads_only_the_shards_that_changed_or_came(tmp_path, written):
    location, _ = written
    index, _ = indexed(tmp_path, location)
    again = index.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert (again.read, again.skipped, again.traces) == (0, 4, 24)
    shard = pool.shards(location)[2]
    table = pq.read_table(shard.url)
    pq.write_table(table.slice(0, 3), shard.url)  # the shard rewritten with fewer rows
    again = index.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert (again.read, again.skipped, again.traces) == (1, 3, 21)
    assert index.count(search="rollout-016") == 0 and index.count(search="rollout-014") == 1


def test_a_shard_gone_from_the_pool_leaves_the_index(tmp_path, written):
    location, _ = written
    index, _ = indexed(tmp_path, location)
    shards = pool.shards(location)
    again = index.update(shards[:3], rubric=default_rubric(), workers=1)
    assert (again.removed, again.traces) == (1, 18)
    assert index.locate("rollout-020") is None


def test_bad_shards_and_rows_are_counted_and_named_and_the_rest_is_indexed(tmp_path):
    folder = tmp_path / "pool"
    folder.mkdir()
    good = [example_trace(f"good-{i}") for i in range(3)]
    lines = [json.dumps(t.to_dict()) for t in good]
    lines.insert(1, '{"trace_id": "no-events"}')
    (folder / "a.jsonl").write_text("\n".join(lines) + "\n")
    whole = pa.table({"trace_id": ["x"], "task_id": ["y"]})  # a Parquet file of other columns
    pq.write_table(whole, folder / "b.parquet")
    (folder / "c.parquet").write_bytes(b"PAR1 truncated")
    index, done = indexed(tmp_path, str(folder))
    assert done.traces == 3 and done.failures == 3
    failures = {(os.path.basename(f.shard), f.row): f.error for f in index.failures()}
    assert {shard for shard, _ in failures} == {"a.jsonl", "b.parquet", "c.parquet"}
    assert ("a.jsonl", 1) in failures and ("c.parquet", -1) in failures
    failures[("b.parquet", -1)] = failures.get(("b.parquet", 0)) or failures[("b.parquet", -1)]
    assert "a.jsonl" in failures[("a.jsonl", 1)] and "row 1" in failures[("a.jsonl", 1)]
    assert "c.parquet" in failures[("c.parquet", -1)] and "task_id" not in failures[("c.parquet", -1)]
    assert "b.parquet" in failures[("b.parquet", -1)] and "events" in failures[("b.parquet", -1)]


def test_summarise_shard_is_pure_and_gives_rows_and_failures(written):
    location, _ = written
    shard = pool.shards(location)[0]
    rows, failures = summarise_shard(shard, None)
    assert [r["trace_id"] for r in rows] == [f"rollout-{i:03d}" for i in range(6)]
    assert failures == [] and rows[0]["targets"] is None
    assert "rollout-000" in rows[0]["text"] and "orchestrator" in rows[0]["text"]


def test_a_process_pool_gives_the_same_index_as_reading_inline(tmp_path, written):
    location, _ = written
    inline, _ = indexed(tmp_path / "a", location, workers=1)
    pooled, done = indexed(tmp_path / "b", location, workers=2)
    assert done.engine == "processes"
    assert snapshot(pooled) == snapshot(inline)


def in_index_order(index: PoolIndex) -> list[tuple[str, str, int]]:
    """Every row's trace id and place, in the index's own order (its doc numbers)."""
    return [(r.trace_id, os.path.basename(r.path), r.position) for r in index.page(limit=10_000)]


def test_workers_number_the_rows_as_reading_inline_does(tmp_path, written):
    """Pieces are written in the pool's order whichever worker finishes first, so the index's
    order (a page with no sort) is the same on one core and on many."""
    location, _ = written
    inline, _ = indexed(tmp_path / "a", location, workers=1)
    pooled, done = indexed(tmp_path / "b", location, workers=2)
    assert done.engine == "processes" and done.pieces > len(pool.shards(location))
    assert in_index_order(pooled) == in_index_order(inline) == [
        (f"rollout-{i:03d}", f"part-{i // 6:05d}.parquet", i % 6) for i in range(24)]


def ranked_hits(index: PoolIndex, search: str) -> list[tuple[int, float]]:
    """The docs a search's words match in the word index with their bm25 ranks, best first:
    the library lists them in its own order, but equal ranks say two indexes hold the same
    FTS5 statistics, not only the same hits."""
    from viz_app.search import fts_query

    with index._text() as db:
        hits = db.execute("SELECT rowid, rank FROM words WHERE words MATCH ?",
                          [fts_query(search)]).fetchall()
    return sorted(hits, key=lambda hit: (hit[1], hit[0]))


def test_words_written_in_large_segments_search_as_in_many_small_ones(tmp_path, written,
                                                                      monkeypatch):
    """The word index takes an update's words in large transactions and segments, merged
    seldom (WORDS_COMMIT, WORDS_HASH, WORDS_MERGE): what a search finds and how it ranks them is
    the same as with a commit and a segment for every couple of traces, merged often."""
    from viz_app.store.pool_index import _writer as pool_index

    location, _ = written
    large, _ = indexed(tmp_path / "a", location)
    with large._text() as db:
        assert dict(db.execute("SELECT k, v FROM words_config WHERE k != 'version'")) == {
            "hashsize": pool_index.WORDS_HASH, "automerge": pool_index.WORDS_MERGE}
    monkeypatch.setattr(pool_index, "WORDS_COMMIT", 2)
    monkeypatch.setattr(pool_index, "WORDS_HASH", 512)
    monkeypatch.setattr(pool_index, "WORDS_MERGE", 2)
    small, _ = indexed(tmp_path / "b", location)
    with small._text() as db, large._text() as other:
        segments = "SELECT count(*) FROM words_data"
        assert db.execute(segments).fetchone()[0] > other.execute(segments).fetchone()[0]
    for search in ("rollout", "rollout-007", "orchestrator", "task-3", "worker tool", "zzz"):
        assert ranked_hits(small, search) == ranked_hits(large, search)
        assert small.page(search=search) == large.page(search=search)
        assert small.count(search=search) == large.count(search=search)


@pytest.mark.parametrize("workers", [1, 2])
def test_progress_counts_traces_as_pieces_are_written(tmp_path, workers):
    """Progress is in traces: the Parquet footers give the total at once, and a JSON Lines
    shard (whose rows are not known before it is read) adds its own once read."""
    location = tmp_path / "pool"
    pool.write_pool(pool_traces(40), str(location), shard_rows=40, row_group_rows=2)
    lines = tmp_path / "lines"
    pool.write_pool(pool_traces(50)[40:], str(lines), format="jsonl")
    shards = pool.shards(str(location)) + pool.shards(str(lines))
    assert [s.format for s in shards] == ["parquet", "jsonl"]
    heard: list[tuple[int, int]] = []
    index = PoolIndex(tmp_path / "index" / "pool.duckdb", str(location))
    done = index.update(shards, workers=workers,
                        progress=lambda done, total, shard: heard.append((done, total)))
    assert done.traces == 50 and heard[0] == (0, 40) and heard[-1] == (50, 50)
    assert len(heard) == done.pieces + 1 and (done.pieces > 2) == (workers == 2)
    assert all(a[0] < b[0] and a[0] <= a[1] for a, b in zip(heard, heard[1:]))


def test_words_written_on_their_own_thread_search_as_when_written_inline(tmp_path, written):
    location, _ = written
    inline, _ = indexed(tmp_path / "a", location, workers=1)
    pooled, done = indexed(tmp_path / "b", location, workers=2)
    assert done.engine == "processes" and done.costs["words_cpu"] > 0
    for search in ("rollout", "rollout-007", "orchestrator", "task-3", "worker tool"):
        assert ranked_hits(pooled, search) == ranked_hits(inline, search)


FORKS = """
import sys
from multiprocessing import get_context
from viz_app.io import pool
from viz_app.store import pool_index
from viz_app.store.pool_index import _executors

def spied(method):
    print(method, flush=True)
    return get_context(method)

_executors.get_context = spied
index = pool_index.PoolIndex(sys.argv[2], sys.argv[1])
done = index.update(pool.shards(sys.argv[1]), workers=2)
print(done.engine, done.traces)
"""


def test_a_command_forks_its_workers_though_its_words_have_a_thread(tmp_path, written):
    """A command (one thread) forks its workers, which start at once and share its warmed-up
    heap; the words' thread starts after them, with the first words."""
    import subprocess
    import sys

    from factories import REPO

    ran = subprocess.run([sys.executable, "-c", FORKS, written[0], str(tmp_path / "i.duckdb")],
                         cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                         capture_output=True, text=True, timeout=120)
    assert ran.stdout.split() == ["fork", "processes", "24"], ran.stderr[-2000:]


def test_words_that_fail_on_their_thread_are_one_sentence_and_the_index_stays(
        tmp_path, written, monkeypatch):
    """The word index fails midway (a disk that fails): the update says so in one sentence,
    the words' thread is ended, and the index and its searches are as they were."""
    import sqlite3
    import threading

    from viz_app.store.pool_index import _writer as pool_index

    location, _ = written
    index, _ = indexed(tmp_path, location, workers=2)
    before = snapshot(index), ranked_hits(index, "rollout")
    calls = [0]
    insert = pool_index._WordWriter._insert

    def failing(self, *args):
        calls[0] += 1
        if calls[0] == 2:
            raise sqlite3.OperationalError("disk I/O error")
        insert(self, *args)

    monkeypatch.setattr(pool_index._WordWriter, "_insert", failing)
    with pytest.raises(StoreError) as failed:
        index.update(pool.shards(location), rubric=default_rubric(), workers=2, rebuild=True)
    assert "failed to read or write (disk I/O error)" in str(failed.value)
    assert "\n" not in str(failed.value)
    assert not [t for t in threading.enumerate() if t.name == "orchviz-words"]
    monkeypatch.setattr(pool_index._WordWriter, "_insert", insert)
    assert (snapshot(index), ranked_hits(index, "rollout")) == before
    again = index.update(pool.shards(location), rubric=default_rubric(), workers=2)
    assert again.traces == 24 and index._words_exact()


def test_a_shard_of_many_row_groups_is_shared_out_in_pieces(tmp_path):
    """One large shard, two workers: both get pieces of it, and the index holds each row
    once, its words, and the shard's row with all its traces."""
    traces = pool_traces(40)
    location = str(tmp_path / "pool")
    pool.write_pool(traces, location, shard_rows=40, row_group_rows=2)
    inline, _ = indexed(tmp_path / "a", location, workers=1)
    pooled, done = indexed(tmp_path / "b", location, workers=2)
    assert (done.engine, done.shards, done.traces, done.failures) == ("processes", 1, 40, 0)
    assert done.pieces >= 6  # about PIECES_PER_WORKER a worker
    assert snapshot(pooled) == snapshot(inline)
    assert in_index_order(pooled) == in_index_order(inline)
    assert pooled.count(search="rollout-039") == 1 and pooled.count(search="rollout") == 40
    with pooled._duck() as con:
        assert con.execute("SELECT traces, failures FROM shards").fetchall() == [(40, 0)]
    again = pooled.update(pool.shards(location), rubric=default_rubric(), workers=2,
                          rebuild=True)
    assert again.traces == 40 and pooled.count(search="rollout") == 40


def test_a_rewritten_shard_read_in_pieces_replaces_its_rows_once(tmp_path):
    location = str(tmp_path / "pool")
    pool.write_pool(pool_traces(40), location, shard_rows=20, row_group_rows=2)
    index, _ = indexed(tmp_path, location, workers=2)
    shard = pool.shards(location)[1]
    pq.write_table(pq.read_table(shard.url).slice(0, 15), shard.url, row_group_size=2)
    again = index.update(pool.shards(location), rubric=default_rubric(), workers=2)
    assert (again.read, again.traces) == (1, 35) and again.pieces > 1
    assert index.count(search="rollout") == 35 and index.locate("rollout-036") is None
    assert index.locate("rollout-034") is not None and index._words_exact()


def test_the_words_copy_kept_by_an_older_index_still_lets_a_rewritten_shard_forget_them(
        tmp_path):
    """An index written before the words' copies were LZ4 kept them zlib-compressed: a shard
    rewritten since forgets its old traces' words from them just the same."""
    import sqlite3
    import zlib

    from viz_app.store.pool_index import unpack_words

    location = str(tmp_path / "pool")
    pool.write_pool(pool_traces(40), location, shard_rows=20, row_group_rows=2)
    index, _ = indexed(tmp_path, location)
    with sqlite3.connect(index.text_path) as db:
        kept = db.execute("SELECT doc, body FROM texts").fetchall()
        assert kept and all(body[:1] == b"L" for _, body in kept)
        db.executemany("UPDATE texts SET body = ? WHERE doc = ?",
                       [(zlib.compress(unpack_words(body).encode()), doc) for doc, body in kept])
    shard = pool.shards(location)[1]
    pq.write_table(pq.read_table(shard.url).slice(0, 15), shard.url, row_group_size=2)
    again = index.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert (again.read, again.traces) == (1, 35) and index._words_exact()
    assert index.count(search="rollout") == 35 and index.count(search="036") == 0
    assert index.count(search="034") == 1


def test_a_bad_row_in_a_later_piece_is_named_by_its_row_in_the_shard(tmp_path):
    location = tmp_path / "pool"
    pool.write_pool(pool_traces(24), str(location), shard_rows=24, row_group_rows=2)
    shard = pool.shards(str(location))[0]
    table = pq.read_table(shard.url)
    events = table.column("events").to_pylist()
    events[21] = "[{\"id\": \"e1\"}]"  # an event with no time, type or agent
    table = table.set_column(table.schema.get_field_index("events"), "events",
                             pa.array(events, pa.string()))
    pq.write_table(table, shard.url, row_group_size=2)
    index, done = indexed(tmp_path, str(location), workers=2)
    assert done.pieces > 1 and (done.traces, done.failures) == (23, 1)
    failure = index.failures()[0]
    assert failure.row == 21 and "row 21" in failure.error and "events[0]" in failure.error
    assert index.locate("rollout-021") is None and index.locate("rollout-022") is not None


def test_a_large_shard_of_other_columns_is_one_failure_on_many_workers(tmp_path, written):
    location, _ = written
    other = pa.table({"prompt": [f"p{i}" for i in range(40)], "reward": [0.5] * 40})
    pq.write_table(other, Path(location) / "other.parquet", row_group_size=2)
    shards = pool.shards(location) + [pool.Shard(url=str(Path(location) / "other.parquet"),
                                                 format="parquet", compressed=False)]
    index = PoolIndex(tmp_path / "index" / "pool.duckdb", location)
    done = index.update(shards, rubric=default_rubric(), workers=2)
    assert (done.traces, done.failures) == (24, 1)
    assert "no column 'trace_id'" in index.failures()[0].error


def test_batches_are_written_in_the_pools_order_when_later_pieces_finish_first(written):
    """The first piece is the slowest: the others wait in the window, never more than it
    allows out at once, and the writer still gets the pieces in order."""
    import pickle
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from viz_app.store.pool_index import Batch, Piece
    from viz_app.store.pool_index._executors import _in_order

    shards = pool.shards(written[0])
    pieces = [Piece(shards[i % 4], (i, i + 1), first=True, last=True) for i in range(9)]
    out, most = [0], [0]
    lock = threading.Lock()

    def summarise(piece: Piece) -> tuple[bytes, float]:
        time.sleep(0.3 if piece is pieces[0] else 0.01)
        with lock:
            out[0] -= 1
        return pickle.dumps(Batch(piece, pa.table({}), [], [], [], [])), 0.0

    def submit(piece: Piece):
        with lock:
            out[0] += 1
            most[0] = max(most[0], out[0])
        return threads.submit(summarise, piece)

    with ThreadPoolExecutor(max_workers=4) as threads:
        got = [b.piece for b in _in_order(pieces, 3, submit, lambda f: f.result(),
                                          {"receive": 0.0, "writer_cpu": 0.0})]
    assert got == pieces and most[0] <= 3


def test_a_batch_sends_its_words_once_and_arrives_whole(written):
    """A worker's batch carries each trace's words only as their packed copy; the writer gets
    them back, the same as summarising the piece here gives."""
    import pickle

    from viz_app.store.pool_index import plan, summarise_piece
    from viz_app.store.pool_index._executors import _summarise_pickled, _unpickled

    piece = plan(pool.shards(written[0]), 2)[0]
    here = summarise_piece(piece, default_rubric())
    payload, _ = _summarise_pickled(pickle.dumps((piece, default_rubric())))
    words = sum(len(text.encode()) for text in here.texts)
    assert words and len(pickle.dumps(here, pickle.HIGHEST_PROTOCOL)) - len(payload) >= words
    sent = _unpickled((payload, 0.0))
    assert [text.decode() for text in sent.texts] == here.texts and sent.packed == here.packed
    assert sent.table.equals(here.table) and sent.failures == here.failures


def test_pieces_cover_every_row_group_once_in_order(tmp_path, written):
    from viz_app.store.pool_index import plan

    location, _ = written  # 4 shards of 6 rows, row groups of 2
    shards = pool.shards(location)
    assert [(p.shard, p.groups) for p in plan(shards, 1)] == [(s, None) for s in shards]
    pieces = plan(shards, 2)
    for shard in shards:
        mine = [p for p in pieces if p.shard == shard]
        assert [p.groups for p in mine][0][0] == 0 and mine[-1].groups[1] == 3
        assert all(a.groups[1] == b.groups[0] for a, b in zip(mine, mine[1:]))
        assert [(p.first, p.last) for p in mine] == [(i == 0, i == len(mine) - 1)
                                                    for i in range(len(mine))]
        assert sum(p.rows for p in mine) == 6
    assert [p.shard for p in pieces] == sorted((p.shard for p in pieces),
                                              key=shards.index)  # the pool's order
    jsonl = pool.Shard(url=str(tmp_path / "x.jsonl.gz"), format="jsonl", compressed=True)
    assert [(p.groups, p.first, p.last) for p in plan([jsonl], 8)] == [(None, True, True)]


def test_pieces_shrink_towards_the_pools_end(tmp_path):
    """The workers finish within a small piece of each other: towards the pool's end each
    piece is at most 1/(TAPER x workers) of the rows left, down to one row group."""
    from viz_app.store.pool_index import TAPER, plan

    location = str(tmp_path / "pool")
    pool.write_pool(pool_traces(64), location, shard_rows=32, row_group_rows=1)
    pieces = plan(pool.shards(location), 2)
    sizes = [p.rows for p in pieces]
    assert sum(sizes) == 64 and sizes[0] == 8  # 64 rows / (PIECES_PER_WORKER x 2)
    left = 64
    for size in sizes:
        assert size <= max(1, -(-left // (TAPER * 2)))
        left -= size
    assert sizes[-3:] == [1, 1, 1] and sizes == sorted(sizes, reverse=True)


def test_the_words_before_the_last_pieces_are_committed_while_workers_read(
        tmp_path, written, monkeypatch):
    """The last commit of the words, which the update waits for once the workers are done,
    holds only the words of the last WORDS_TAIL traces or fewer; the index is the same."""
    from viz_app.store.pool_index import _writer as pool_index

    location, _ = written
    inline, _ = indexed(tmp_path / "a", location, workers=1)
    monkeypatch.setattr(pool_index, "WORDS_TAIL", 5)
    commits: list[int] = []
    commit = pool_index._WordWriter._commit

    def counted(self):
        commits.append(self.pending)
        commit(self)

    monkeypatch.setattr(pool_index._WordWriter, "_commit", counted)
    insert = pool_index._WordWriter._insert
    pending: list[int] = []

    def inserted(self, *args):
        insert(self, *args)
        pending.append(self.pending)

    monkeypatch.setattr(pool_index._WordWriter, "_insert", inserted)
    pooled, done = indexed(tmp_path / "b", location, workers=2)
    assert done.traces == 24 and 0 in pending[:-1]  # committed before the last piece came
    assert commits and commits[-1] <= 5
    assert snapshot(pooled) == snapshot(inline)
    assert ranked_hits(pooled, "rollout") == ranked_hits(inline, "rollout")


def test_ray_in_local_mode_gives_the_same_index_as_the_process_pool(tmp_path, written):
    try:
        import ray
    except ImportError:
        need("Ray is not installed: pip install 'orchviz[ray]'")
    location, _ = written
    pooled, _ = indexed(tmp_path / "a", location, workers=2)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    try:
        on_ray, done = indexed(tmp_path / "b", location, ray="auto")
    finally:
        ray.shutdown()
    assert done.engine == "ray" and done.traces == 24 and done.pieces > 4
    assert snapshot(on_ray) == snapshot(pooled)
    assert in_index_order(on_ray) == in_index_order(pooled)
    assert on_ray.count(search="rollout-023") == 1 and on_ray._words_exact()
    assert done.costs["summarise_cpu"] > 0 and done.costs["write_words"] > 0


# -- queries ------------------------------------------------------------------------------------


@pytest.fixture
def index(tmp_path, written):
    return indexed(tmp_path, written[0])[0]


def test_a_search_finds_traces_by_id_agent_and_content_words(index):
    assert [r.trace_id for r in index.page(search="rollout-005")] == ["rollout-005"]
    assert index.count(search="planner_1") == 24
    assert index.count(search="orchestrator rollout-01") == 10  # every word, as a prefix
    assert index.count(search="no-such-word-anywhere") == 0


@pytest.mark.parametrize("typed", ['"', "NEAR(a b)", "a OR", "*", "body:x", "' OR 1=1 --",
                                   "rollout-00*"])
def test_what_a_person_types_is_never_search_syntax(index, typed):
    index.count(search=typed)  # no error; words are matched as words
    query = search_query(typed)
    assert query is None or all(part.startswith('"') for part in query.split(" AND "))


def test_filters_sort_and_pages_are_done_in_the_index(index):
    swarm = [Condition(field="topology", op="=", value="swarm")]
    assert index.count(swarm) == 8
    first = index.page(swarm, sort="reward.tool", descending=True, limit=3)
    second = index.page(swarm, sort="reward.tool", descending=True, offset=3, limit=3)
    tools = [r.rewards["tool"] for r in first + second]
    assert tools == sorted(tools, reverse=True) and len(set(r.trace_id for r in first + second)) == 6
    assert index.count([parse_condition("reward.team>=1"), parse_condition("group=task-2")]) == 2
    assert index.count([Condition(field="topology", op="in", value=["swarm", "debate"])]) == 16


def test_a_filter_value_is_a_parameter_never_sql(index):
    assert index.count([Condition(field="topology", op="=", value="x' OR '1'='1")]) == 0
    assert index.count([Condition(field="reward.x') OR TRUE --", op=">", value=0)]) == 0


@pytest.mark.parametrize("expr", ["agents>", "agents>>3", "nope=1", "agents~3", "", "=3"])
def test_a_bad_filter_expression_is_one_sentence(expr):
    with pytest.raises(FilterError) as err:
        parse_condition(expr)
    assert "\n" not in str(err.value)


def test_filter_expressions_become_structured_filters():
    assert parse_condition("agents>10") == Condition(field="agents", op=">", value=10.0)
    assert parse_condition("topology=tree") == Condition(field="topology", op="=", value="tree")
    assert parse_condition("reward.team <= 0.5") == Condition(field="reward.team", op="<=",
                                                              value=0.5)
    assert parse_condition("task_id~math").op == "~"


def test_a_histogram_counts_every_selected_trace_once(index):
    bars = index.histogram("reward.tool", bins=5)
    assert len(bars) == 5 and sum(b.count for b in bars) == 24
    whole = index.histogram("agents")
    assert [(b.low, b.count) for b in whole] == [(whole[0].low, 24)]


def test_a_sample_is_the_same_for_a_seed_and_stays_in_the_filter(index):
    debate = [Condition(field="topology", op="=", value="debate")]
    first = index.sample(5, seed=7, filters=debate)
    assert first == index.sample(5, seed=7, filters=debate) and len(set(first)) == 5
    assert first != index.sample(5, seed=8, filters=debate)
    topologies = {index.page([Condition(field="trace_id", op="=", value=t)])[0].topology
                  for t in first}
    assert topologies == {"debate"}
    assert len(index.sample(100, seed=1)) == 24


def test_a_stratified_sample_draws_evenly_from_every_stratum(index):
    picked = index.sample(6, seed=3, stratify="group")
    groups = [index.page([Condition(field="trace_id", op="=", value=t)])[0].task_id
              for t in picked]
    assert sorted(groups) == [f"task-{i}" for i in range(6)]
    by_number = index.sample(8, seed=3, stratify="reward.tool", strata=4)
    assert len(set(by_number)) == 8


def test_the_reward_channels_the_traces_carry_are_listed(index):
    assert index.reward_names() == ["team", "tool"]


def test_a_trace_opens_from_its_shard_and_row(index, written):
    trace = index.trace("rollout-013")
    assert trace.to_dict() == written[1][13].to_dict()
    assert index.locate("no-such-trace") is None


# -- the workspace and the command --------------------------------------------------------------


def test_a_workspace_lists_a_pool_through_its_index_beside_the_label_db(tmp_path, written):
    location, traces = written
    workspace = make_workspace(tmp_path, traces=[location, demo_trace().source])
    assert workspace.library.pools == [location]
    assert location not in map(str, workspace.library.folders)
    done = workspace.library.update_pool_index(workers=1)
    assert done.traces == 24
    assert workspace.library.pool_index().path == default_index_path(location,
                                                             workspace.settings.db_url)
    assert workspace.library.pool_index().path.parent == tmp_path
    assert workspace.library.trace("rollout-002").to_dict() == traces[2].to_dict()
    assert workspace.library.trace(demo_trace().trace_id).trace_id == demo_trace().trace_id


def test_a_folder_of_json_lines_alone_stays_a_library_folder(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "runs.jsonl").write_text(json.dumps(example_trace("line-1").to_dict()) + "\n")
    workspace = make_workspace(tmp_path, traces=[folder])
    assert workspace.library.pools == []
    assert [r.trace_id for r in workspace.library.update_index().rows] == ["line-1"]


def word_index_of(tmp_path, location, db: str) -> Path:
    assert main(["pool", "index", location, "--db", db, "--workers", "1"]) == 0
    [words] = Path(db).parent.glob("*.fts.sqlite")
    return words


@pytest.mark.parametrize("harm", ["garbage", "deleted"])
def test_a_broken_or_missing_word_index_is_made_again_and_listing_goes_on(harm, tmp_path,
                                                                          written, capsys):
    location, _ = written
    db = str(tmp_path / "labels.db")
    words = word_index_of(tmp_path, location, db)
    if harm == "garbage":
        words.write_bytes(os.urandom(5000))
    else:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{words}{suffix}").unlink(missing_ok=True)
    capsys.readouterr()
    assert main(["pool", "ls", location, "--db", db, "--workers", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 24
    assert main(["pool", "ls", location, "--db", db, "--search", "rollout-007", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["trace_id"] for r in listed["rows"]] == ["rollout-007"]


def test_a_full_disk_under_the_pool_index_is_one_sentence(tiny_disk, written, capsys):
    location, _ = written
    code = main(["pool", "ls", location, "--db", str(tiny_disk / "labels.db"), "--workers", "1"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert re.fullmatch(r"orchviz: the disk that holds the pool('s word)? index \S+ is full, so "
                        r"the index was left as it was\n", err)


def test_a_word_index_damaged_while_open_is_one_sentence(tmp_path, written):
    location, _ = written
    index, _ = indexed(tmp_path, location)
    assert index.count(search="rollout") == 24
    index.text_path.write_bytes(os.urandom(5000))
    with pytest.raises(StoreError, match=r"^the pool's word index .+ cannot be used \(file is "
                       r"not a database\); `orchviz pool index --rebuild` makes it again$"):
        index.count(search="rollout-001")


def test_a_search_text_starting_with_a_dash_is_a_search_not_an_option(tmp_path, written,
                                                                       capsys):
    location, _ = written
    db = str(tmp_path / "labels.db")
    assert main(["pool", "ls", location, "--db", db, "--workers", "1", "--search", "-rollout",
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 24


def test_pool_index_and_ls_on_the_command_line(tmp_path, written, capsys):
    location, _ = written
    db = str(tmp_path / "labels.db")
    assert main(["pool", "index", location, "--db", db, "--workers", "1"]) == 0
    assert "24 traces indexed from 4 shards" in capsys.readouterr().out
    assert main(["pool", "ls", location, "--db", db, "--filter", "topology=debate",
                 "--sort", "reward.tool", "--desc", "--limit", "2", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["count"] == 8 and [r["trace_id"] for r in listed["rows"]] == [
        "rollout-022", "rollout-019"]
    assert main(["pool", "ls", location, "--db", db, "--filter", "agents>>"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("orchviz: ") and err.count("\n") == 1


def test_pool_index_says_where_the_time_went_when_asked(tmp_path, written, capsys):
    location, _ = written
    assert main(["pool", "index", location, "--db", str(tmp_path / "labels.db"), "--workers",
                 "2", "--timings"]) == 0
    said = capsys.readouterr().out.splitlines()
    assert "(processes)" in said[0] and said[1].startswith("timings: ")
    workers = re.search(r"workers' CPU (\d+\.\d+) ms reading", said[1])
    writer = re.search(r"this process (\d+\.\d+) ms of CPU writing", said[1])
    assert float(workers.group(1)) > 0 and float(writer.group(1)) > 0


def test_terminal_output_of_ls_is_escaped(tmp_path, capsys):
    hostile = example_trace("evil-\x1b[31m-id", task_id="task-\x1b]0;x\x07")
    pool.write_pool([hostile], str(tmp_path / "pool"))
    assert main(["pool", "ls", str(tmp_path / "pool"), "--db", str(tmp_path / "l.db"),
                 "--workers", "1"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b" in out


def test_the_ray_option_without_ray_is_one_sentence(tmp_path, written, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(OrchvizError, match=r"orchviz\[ray\]"):
        indexed(tmp_path, written[0], ray="auto")


def test_a_pool_url_survives_the_apps_environment(monkeypatch):
    from viz_app.settings import Settings

    settings = Settings(traces=[], pools=["s3://bucket/run-42"], db_url="sqlite:///x.db")
    for name, value in settings.to_env().items():
        monkeypatch.setenv(name, value)
    assert Settings.from_env().pools == ["s3://bucket/run-42"]
    assert Settings.from_env().traces == []


def test_a_pool_on_s3_is_indexed_once_and_listed(tmp_path, bucket, s3_endpoint, capsys):
    target = f"s3://{bucket}/pool"
    option = ["--storage-option", f"endpoint_url={s3_endpoint}"]
    pool.set_storage_options(target, {"endpoint_url": s3_endpoint})
    pool.write_pool(pool_traces(12), target, shard_rows=4, row_group_rows=2)
    db = ["--db", str(tmp_path / "labels.db")]
    assert main(["pool", "index", target, *db, *option, "--workers", "1"]) == 0
    assert "12 traces indexed from 3 shards (3 read, 0 unchanged" in capsys.readouterr().out
    assert main(["pool", "index", target, *db, *option, "--workers", "1"]) == 0
    assert "(0 read, 3 unchanged" in capsys.readouterr().out  # by etag and size
    assert main(["pool", "ls", target, *db, *option, "--search", "rollout-007", "--json"]) == 0
    assert [r["trace_id"] for r in json.loads(capsys.readouterr().out)["rows"]] == [
        "rollout-007"]


# -- one library: the same filter language in memory and in the index ---------------------------


@pytest.mark.parametrize("written_filters", [
    ["topology=debate"], ["agents>=2", "events<100"], ["task_id!=task-1"],
    ["group~TASK-2"], ["reward.team>=0.5"], ["reward.none>0"], ["targets>0", "topology=swarm"],
    ["row=1"], ["shard~part-00002"]])
def test_a_filter_keeps_the_same_rows_in_memory_as_in_the_pool_index(index, written_filters):
    """viz_app.query.holds (a folder library's rows) and the pool index's SQL agree."""
    from viz_app.query import holds

    filters = [parse_condition(f) for f in written_filters]
    every = index.page(sort="trace_id", limit=10_000)
    kept = [r.trace_id for r in every if all(holds(r, c) for c in filters)]
    assert kept == [r.trace_id for r in index.page(filters, sort="trace_id", limit=10_000)]
    assert index.count(filters) == len(kept)


def test_rows_of_ids_come_in_the_ids_order_each_once(index):
    assert [r.trace_id for r in index.rows(["rollout-009", "rollout-002", "nope",
                                            "rollout-009"])] == ["rollout-009", "rollout-002"]
    assert index.rows(["rollout-009"], [parse_condition("topology=swarm")]) == []
