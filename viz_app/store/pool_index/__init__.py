"""The index of a pool: one summary row per trace in DuckDB, its words in a SQLite FTS5 index.

A pool (`viz_app.io.pool`) keeps 10^5-10^6 rollouts in Parquet or JSON Lines shards, locally or
on object storage. Its index lives in two embedded files, no server: a DuckDB file with a row per
trace (figures, task and GRPO group, system, topology, carried rewards, label targets under the
rubric, hash, warnings, and where it is: shard and row), a row per shard (how it was stamped when
it was read) and a row per failure (a shard or row that could not be read, with the sentence
saying why); and a SQLite file whose FTS5 table holds the words of each trace (its ids, agents,
tools and event content up to POOL_TEXT_LIMIT characters), keyed by the trace's `doc` number.
DuckDB's own full-text extension is downloaded at run time, which an offline machine cannot do;
FTS5 is part of Python's sqlite3.

Indexing maps one pure function, `summarise_shard(shard, rubric)`, over the shards that are new
or changed (by size and modification time or etag): in this process, on a process pool over
every core, or on a Ray cluster with Ray Data (`ray="auto"` or an address). Only this process
writes the index files.

Queries take structured filters (`viz_app.query.Condition(field, op, value)`, the library's
filter language, fields from its FIELDS or `reward.NAME`), always bound as parameters: no user
text becomes SQL. A search is a list of
words, each matched as a word prefix in the FTS5 index (all words must match).

This face is what callers import; the rooms behind it, one concern each:
  `_sql`        a filter and a search as SQL (the language itself is `viz_app.query`)
  `_rows`       what the index keeps of a trace: summary rows, failures, tables, result models
  `_words`      the packed copy of a trace's words the word index keeps
  `_plan`       the work of an update: pieces, batches, the stamp that says a shard changed
  `_files`      where the index lives, its versions, the writer lock, recovery, connections
  `_writer`     the FTS5 writer thread
  `_executors`  summarise_piece over a process pool or Ray tasks (`_ray_local`: Ray's agents end
                with the process that started them)
  `_update`     an update, from the shards to the new live version
  `_queries`    pages, counts, histograms, values, samples, lookups
  `_index`      PoolIndex, the one object over them
"""

from __future__ import annotations

from viz_app.query import FIELDS, NUMBER_FIELDS, Condition, FilterError, parse_condition
from viz_app.store.pool_index._executors import _ray_init as join_ray
from viz_app.store.pool_index._files import INDEX_VERSION, IndexBusy, default_index_path, pool_key
from viz_app.store.pool_index._index import PoolIndex
from viz_app.store.pool_index._plan import (PIECE_ROWS, PIECES_PER_WORKER, TAPER, Batch, Piece,
                                            Progress, plan, shard_stamp, summarise_piece)
from viz_app.store.pool_index._queries import PAGE_SIZE
from viz_app.store.pool_index._rows import (POOL_TEXT_LIMIT, Bin, PoolUpdate, summarise_shard,
                                            summarise_trace)
from viz_app.store.pool_index._sql import search_query
from viz_app.store.pool_index._words import pack_words, unpack_words

__all__ = [
    "INDEX_VERSION", "PAGE_SIZE", "PIECE_ROWS", "PIECES_PER_WORKER", "POOL_TEXT_LIMIT",
    "TAPER", "Batch", "Bin", "IndexBusy", "Piece", "PoolIndex",
    "PoolUpdate", "Progress", "default_index_path", "pack_words", "plan", "pool_key",
    "search_query", "shard_stamp", "summarise_piece", "summarise_shard", "summarise_trace",
    "unpack_words",
    # joining Ray (a local one ends with this process), for the reward server's --ray too
    "join_ray",
    # the filter language its queries take (viz_app.query), for the stores that call it
    "FIELDS", "NUMBER_FIELDS", "Condition", "FilterError", "parse_condition",
]
