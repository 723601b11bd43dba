"""Re-indexing a pool whose shards changed: the words of a removed or rewritten shard leave the
word index (the SQLite FTS5 file) with its rows, so no search finds them and the word index alone
still counts and pages a search."""

from __future__ import annotations

import sqlite3

import pyarrow.parquet as pq
import pytest

from factories import example_trace
from viz_app.io import pool
from viz_app.labels.rubric import default_rubric
from viz_app.store.pool_index import PoolIndex, search_query


@pytest.fixture
def location(tmp_path) -> str:
    """A pool of 24 traces in 4 Parquet shards of 6; each trace carries a word of its own."""
    traces = [example_trace(f"rollout-{i:03d}", task_id=f"task-{i // 4}", system=f"sys{i:03d}x")
              for i in range(24)]
    pool.write_pool(traces, str(tmp_path / "pool"), shard_rows=6, row_group_rows=2)
    return str(tmp_path / "pool")


def update(index: PoolIndex, shards) -> None:
    index.update(shards, rubric=default_rubric(), workers=1)


def word_docs(index: PoolIndex, typed: str) -> int:
    """How many documents of the word index file itself match a search."""
    with sqlite3.connect(index.text_path) as db:
        return db.execute("SELECT count(*) FROM words WHERE words MATCH ?",
                          [search_query(typed)]).fetchone()[0]


@pytest.fixture
def index(tmp_path, location) -> PoolIndex:
    found = PoolIndex(tmp_path / "index" / "pool.duckdb", location)
    update(found, pool.shards(location))
    yield found
    found.close()


def test_a_removed_shards_words_leave_the_word_index(index, location):
    assert word_docs(index, "sys020x") == 1
    update(index, pool.shards(location)[:3])  # part-00003 (rollouts 18-23) gone
    assert index.count(search="sys020x") == 0
    assert word_docs(index, "sys020x") == 0
    assert word_docs(index, "rollout") == 18 == index.count(search="rollout")


def test_a_rewritten_shards_old_words_leave_and_its_new_words_are_found(index, location):
    shard = pool.shards(location)[2]  # rollouts 12-17
    pq.write_table(pq.read_table(shard.url).slice(0, 3), shard.url)
    update(index, pool.shards(location))
    assert word_docs(index, "sys016x") == 0 and index.count(search="sys016x") == 0
    assert word_docs(index, "sys013x") == 1 and index.count(search="sys013x") == 1
    assert word_docs(index, "rollout") == 21 == index.count(search="rollout")
    assert {r.trace_id for r in index.page(search="rollout", limit=100)} == {
        f"rollout-{i:03d}" for i in (*range(0, 15), *range(18, 24))}


def test_a_search_of_a_word_only_a_removed_shard_had_pages_nothing(index, location):
    update(index, pool.shards(location)[1:])  # part-00000 (rollouts 0-5) gone
    assert index.page(search="sys003x") == []
    assert index.count(search="rollout") == 18
    assert {r.trace_id for r in index.page(search="rollout", limit=100)} == {
        f"rollout-{i:03d}" for i in range(6, 24)}
