"""The update's words going into the FTS5 word index, on a thread of their own when workers
read the pieces."""

from __future__ import annotations

import queue
import sqlite3
import threading
import time

from viz_app.store.pool_index._files import set_dirty

WORDS_COMMIT = 16_384
"""Traces whose words the word index takes in one transaction: FTS5 writes a segment at each
commit and merges segments as they add up, so fewer, larger ones cost less."""
WORDS_HASH = 64 * 1024 * 1024
"""Bytes of new words FTS5 gathers in memory before it writes them out as a segment (its
`hashsize`, 1 MB by default): with 64 MB a commit of WORDS_COMMIT traces is one or two segments,
not dozens, and FTS5 merges far less (on 40,000 traces of the benchmark 0.149 -> 0.113 ms of
CPU a trace for the words, for about 85 MB more memory in the writer). Searches read the same
words and counts either way."""
WORDS_TAIL = 2_048
"""When fewer traces than this are still to come, the words so far are committed: the last
commit, which the update waits for after the workers are done, then writes a small segment
(on two workers, 0.28 s of a 14 s update for the 7,000 traces after the last full commit)."""
WORDS_MERGE = 8
"""Segments of a size FTS5 lets gather before it merges them into one (its `automerge`, 4 by
default): each word is rewritten fewer times as the index grows (on 200,000 traces 0.138-0.145
-> 0.120-0.134 ms of CPU a trace), and a search, which reads every segment, took as long."""


class _WordWriter:
    """An update's words going into the word index: in transactions of WORDS_COMMIT traces,
    not synced to disk one by one (SQLite's WAL with `synchronous=NORMAL`: a process killed
    midway loses nothing committed); `finish` commits the rest with a sync that makes every
    word written durable, before the DuckDB file that points at them is made live.

    With `threaded` (when workers summarise the pieces), the words go in on a thread of their
    own, a couple of batches behind, while this process receives and writes the next pieces'
    rows: SQLite tokenises and merges without holding the GIL, so the writer's serial part is
    the larger of the two, not their sum. Its CPU and wall seconds are `cpu` and `wall`."""

    def __init__(self, db: sqlite3.Connection, threaded: bool = False, expected: int = 0):
        self.db = db
        self.pending = 0
        self.left = expected
        """Traces whose words are still to come, as far as known (0: not known)."""
        self.cpu = self.wall = 0.0
        self.error: BaseException | None = None
        set_dirty(db)
        for option, value in (("hashsize", WORDS_HASH), ("automerge", WORDS_MERGE)):
            db.execute("INSERT INTO words(words, rank) VALUES (?, ?)", [option, value])
        db.commit()
        db.execute("PRAGMA synchronous=NORMAL")
        self.queue: queue.Queue | None = queue.Queue(maxsize=2) if threaded else None
        self.thread: threading.Thread | None = None

    def add(self, docs: range, texts: list[str] | list[bytes], packed: list[bytes]) -> None:
        if not docs:
            return
        if self.queue is None:
            self._insert(docs, texts, packed)
            return
        if self.error is not None:
            raise self.error
        if self.thread is None:  # with the first words: the workers are forked by then, from
            # a process of one thread (`_process_summaries`)
            self.thread = threading.Thread(target=self._run, name="orchviz-words", daemon=True)
            self.thread.start()
        self.queue.put((docs, texts, packed))

    def _insert(self, docs: range, texts: list[str] | list[bytes], packed: list[bytes]
                ) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        self.db.executemany("INSERT INTO words(rowid, body) VALUES (?, ?)", zip(docs, texts))
        self.db.executemany("INSERT INTO texts(doc, body) VALUES (?, ?)", zip(docs, packed))
        self.pending += len(docs)
        tail = self.left > WORDS_TAIL >= self.left - len(docs) > 0  # the last words come next
        self.left -= len(docs)
        if self.pending >= WORDS_COMMIT or tail:
            self.db.commit()
            self.pending = 0
        self.wall += time.perf_counter() - started
        self.cpu += time.thread_time() - cpu

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            if self.error is None:  # after a failure, the rest is only drained
                try:
                    self._insert(*item) if item != "finish" else self._commit()
                except BaseException as err:  # raised where the words are handed over
                    self.error = err

    def close(self) -> None:
        """Let the thread write what it holds and end (the update's end, or its failure)."""
        if self.thread is not None and self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def finish(self) -> None:
        """Commit every word, durably: on the words' thread, if there is one, which this call
        does not wait for (`wait` does), so that the writer meanwhile checkpoints its DuckDB
        file; the last words and the checkpoint are the update's tail, when the workers are
        done and a core would otherwise idle."""
        if self.thread is None or self.error is not None:
            self.close()
            self.wait()
            self._commit()
        else:
            self.queue.put("finish")

    def wait(self) -> None:
        """Until every word handed over is committed; a failure on the thread is raised here."""
        self.close()
        if self.error is not None:
            raise self.error

    def _commit(self) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        self.db.commit()
        self.db.execute("PRAGMA synchronous=FULL")
        set_dirty(self.db)  # a commit with FULL syncs the WAL: every word before it
        self.db.commit()
        self.wall += time.perf_counter() - started
        self.cpu += time.thread_time() - cpu
