"""Updating a pool's index: the shards that changed read into a new version of the DuckDB
file, their words into the word index, and the file made live."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager

import duckdb
import pyarrow as pa

from viz_app.io.pool import Shard
from viz_app.labels import Rubric
from viz_app.store.pool_index._executors import (_parallelism, _process_summaries, _ray_init,
                                                 _ray_summaries)
from viz_app.store.pool_index._files import IndexFiles
from viz_app.store.pool_index._plan import Batch, Progress, plan, shard_stamp, summarise_piece
from viz_app.store.pool_index._rows import _TRACE_TYPES, PoolUpdate
from viz_app.store.pool_index._writer import _WordWriter


def _waited(batches: Iterator[Batch], costs: dict[str, float]) -> Iterator[Batch]:
    """The batches, with the time this process waited for each counted."""
    while True:
        started, received = time.perf_counter(), costs["receive"]
        batch = next(batches, None)
        costs["wait"] += time.perf_counter() - started - (costs["receive"] - received)
        if batch is None:
            return
        yield batch



class Indexing(IndexFiles):
    """Bringing the index up to date with a pool's shards (`update`)."""

    def update(self, shards: Sequence[Shard], *, rubric: Rubric | None = None,
               workers: int | None = None, ray: str | None = None,
               progress: Progress | None = None, rebuild: bool = False,
               wait: bool = True) -> PoolUpdate:
        """Bring the index up to date with a pool's shards: new and changed shards (by
        `shard_stamp`, and any indexed under another rubric) are summarised by
        `summarise_shard`, on `workers` processes (default: every core; 1 reads here) or on Ray
        (`ray`: "auto" joins the cluster this machine knows of or starts one, else a cluster
        address); rows of shards gone from the pool are dropped. `rebuild` reads every shard.

        One update runs at a time: another waits for it (`wait`), or raises IndexBusy at once.
        Readers of the index (this object, other objects and processes) go on reading it as it
        was until the update replaces it whole; an update that fails or is killed leaves it as
        it was."""
        started = time.perf_counter()
        with self._writing(wait):
            self._sweep()
            self._hit_cache.clear()
            try:
                result = self._update(shards, rubric, workers, ray, progress, rebuild)
            except (OSError, duckdb.Error) as err:  # a full disk, a read-only folder
                raise self._write_failure(err) from None
        self._hit_cache.clear()
        result.seconds = time.perf_counter() - started
        self.last_update, self.updated_at = result, time.time()
        return result

    def _update(self, shards: Sequence[Shard], rubric: Rubric | None, workers: int | None,
                ray: str | None, progress: Progress | None, rebuild: bool) -> PoolUpdate:
        """`update`'s work, under the writer lock: the new version of the DuckDB file is
        written beside the live one (a copy of it, or an empty file for a whole update), the
        new words go into the word index under new doc numbers, the file replaces the live
        one, and then the words of the rows it no longer holds are forgotten."""
        rubric_sha = rubric.sha256 if rubric is not None else ""
        stamps = {s.url: shard_stamp(s) for s in shards}
        self._recover()
        with self._duck() as con:
            known = {url: (stamp, sha) for url, stamp, sha in
                     con.execute("SELECT url, stamp, rubric_sha FROM shards").fetchall()}
            stale = int(self._meta(con, "stale_words") or 0)
            next_doc = int(self._meta(con, "next_doc") or 0)
        present = set(stamps)
        gone = [url for url in known if url not in present]
        todo = [s for s in shards if rebuild or not stamps[s.url]
                or known.get(s.url) != (stamps[s.url], rubric_sha)]
        result = PoolUpdate(shards=len(shards), read=len(todo), removed=len(gone),
                            skipped=len(shards) - len(todo))
        if not todo and not gone:  # nothing changed: the live file stays
            with self._duck() as con:
                result.traces = con.execute("SELECT count(*) FROM traces").fetchall()[0][0]
                result.failures = con.execute("SELECT count(*) FROM failures").fetchall()[0][0]
            return result
        whole = rebuild or (set(known) <= {s.url for s in todo})
        # (words kept without their text, by an index written before texts were, stay: only
        # emptying the word index would drop them, and readers still search it; they are
        # counted as stale and the word index is then not taken as exact)
        with self._text() as db:  # doc numbers are never reused: a reader may hold old rows
            self._set_dirty(db)  # from here to the end, the words and a reader's rows may differ
            top = db.execute("SELECT max(doc) FROM texts").fetchone()[0]
        next_doc = max(next_doc, -1 if top is None else top + 1)
        ready: list[Callable[[], None]] = []  # the words committed, before the swap
        with ExitStack() as held, self._new_version(fresh=whole, ready=ready) as con:
            if whole:
                with self._duck() as live:
                    forget = [r[0] for r in live.execute("SELECT doc FROM traces").fetchall()]
            else:
                forget = self._drop(con, gone)
            result.engine = "inline"
            costs = dict.fromkeys(("summarise_cpu", "pack_cpu", "receive", "wait",
                                   "write_rows", "write_words", "wait_words", "words_cpu",
                                   "writer_cpu"), 0.0)
            if todo:
                if ray is not None:
                    _ray_init(ray)
                parallel = _parallelism(workers, ray)
                pieces = plan(todo, parallel)
                result.pieces = len(pieces)
                if ray is not None:
                    result.engine, batches = "ray", _ray_summaries(pieces, rubric, ray, costs)
                elif parallel > 1 and len(pieces) > 1:
                    result.engine = "processes"
                    batches = _process_summaries(pieces, rubric, parallel, costs)
                else:
                    batches = (summarise_piece(p, rubric) for p in pieces)
                total = sum(p.rows for p in pieces)
                if progress is not None:
                    progress(0, total, "")
                done, counts = 0, [0, 0]
                # the word index stays open until the file is live: its last commit (on the
                # words' thread) runs beside the DuckDB checkpoint, and is waited for before
                # the swap (`ready`)
                words = held.enter_context(self._words(result.engine != "inline", total))
                for batch in _waited(batches, costs):
                    piece = batch.piece
                    costs["summarise_cpu"] += batch.summarise_cpu
                    costs["pack_cpu"] += batch.pack_cpu
                    if piece.first:
                        counts = [0, 0]
                    counts[0] += batch.table.num_rows
                    counts[1] += len(batch.failures)
                    forget += self._write(con, batch, stamps[piece.shard.url], rubric_sha,
                                          next_doc, words, counts, costs)
                    next_doc += batch.table.num_rows
                    read = piece.rows or batch.table.num_rows + len(batch.failures)
                    done, total = done + read, total + (0 if piece.rows else read)
                    if progress is not None:
                        progress(done, total, piece.shard.url)
                words.finish()
                ready.append(words.wait)
            result.costs = costs
            self._set_meta(con, "next_doc", str(next_doc))
            self._set_meta(con, "stale_words",
                           str(stale + len(forget) - self._kept_texts(forget)))
            result.traces = con.execute("SELECT count(*) FROM traces").fetchall()[0][0]
            result.failures = con.execute("SELECT count(*) FROM failures").fetchall()[0][0]
            published = time.perf_counter()
        result.costs["publish"] = time.perf_counter() - published
        if todo:
            costs["write_words"], costs["words_cpu"] = words.wall, words.cpu
            costs["writer_cpu"] += words.cpu
        started = time.perf_counter()
        self._forget_words(forget, clean=True)
        result.costs["forget"] = time.perf_counter() - started
        return result

    def _drop(self, con: duckdb.DuckDBPyConnection, urls: Sequence[str]) -> list[int]:
        """Forget shards in the file being written: their rows go. Returns their docs, whose
        words `_forget_words` deletes once the file is live (until then readers of the live
        file still find them)."""
        docs: list[int] = []
        for url in urls:
            docs += [r[0] for r in con.execute("SELECT doc FROM traces WHERE shard = ?",
                                               [url]).fetchall()]
            for table, column in (("traces", "shard"), ("failures", "shard"), ("shards", "url")):
                con.execute(f"DELETE FROM {table} WHERE {column} = ?", [url])
        return docs


    def _write(self, con: duckdb.DuckDBPyConnection, batch: Batch, stamp: str,
               rubric_sha: str, first: int, words: _WordWriter, counts: list[int],
               costs: dict[str, float]) -> list[int]:
        """Write a piece's rows into the file being written (`con`), numbered from `first`,
        and their words into the word index (marked dirty: the live file lacks them). Its
        shard's old rows go with its first piece, and its row in `shards` (with `counts`,
        its traces and failures) comes with its last. Returns the docs of the rows it
        replaced."""
        started, cpu = time.perf_counter(), time.thread_time()
        piece = batch.piece
        shard = piece.shard
        dropped = self._drop(con, [shard.url]) if piece.first else []
        count = batch.table.num_rows
        if count:
            table = batch.table.add_column(0, "doc", pa.array(range(first, first + count),
                                                                pa.int64()))
            con.register("batch", table)
            con.execute(f"INSERT INTO traces SELECT {', '.join(_TRACE_TYPES.names)} FROM batch")
            con.unregister("batch")
        if batch.failures:
            con.executemany("INSERT INTO failures VALUES (?, ?, ?)",
                            [[f["shard"], f["row"], f["error"]] for f in batch.failures])
        if piece.last:
            con.execute("INSERT INTO shards VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [shard.url, shard.format, bool(shard.compressed), stamp, rubric_sha,
                         counts[0], counts[1], time.time()])
        names = set(json.loads(self._meta(con, "reward_names") or "[]"))
        if set(batch.rewards) - names:
            self._set_meta(con, "reward_names", json.dumps(sorted(names | set(batch.rewards))))
        costs["write_rows"] += time.perf_counter() - started
        costs["writer_cpu"] += time.thread_time() - cpu
        handed = time.perf_counter()
        words.add(range(first, first + count), batch.texts, batch.packed)  # its own costs
        if words.queue is not None:  # waiting for the words' thread to take them
            costs["wait_words"] += time.perf_counter() - handed
        return dropped

    @contextmanager
    def _words(self, threaded: bool = False, expected: int = 0) -> Iterator[_WordWriter]:
        """The word index, taking an update's words (see `_WordWriter`); its thread, if any,
        is done before the word index is closed, whether the update ends or fails."""
        with self._text(shared=threaded) as db:
            words = _WordWriter(db, threaded, expected)
            try:
                yield words
            finally:
                words.close()
