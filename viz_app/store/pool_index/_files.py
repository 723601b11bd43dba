"""Where a pool's index lives and how its versions are kept: the writer lock (and its
release in forked workers), a new version of the DuckDB file written beside the live one and
swapped in whole, the connections readers use, and the word index's recovery after an update
that died."""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import os
import shutil
import signal
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pyarrow as pa

from viz_app.errors import StoreError
from viz_app.store.pool_index._rows import _SCHEMA, PoolUpdate
from viz_app.store.pool_index._words import unpack_words

INDEX_VERSION = "3"
"""The layout of the index files; files of another layout are rebuilt (they are a cache).
2: a trainer's rollout keeps its step, group and trainer reward (`rollout_step`, ...).
3: every trace keeps the task's words (`task`, `analysis.task_words`)."""




def pool_key(location: str | os.PathLike) -> str:
    """A short hash naming a pool's index files (by its location, resolved when local)."""
    text = str(location)
    if "://" not in text:
        text = str(Path(text).expanduser().resolve())
    return hashlib.sha256(text.rstrip("/").encode("utf-8")).hexdigest()[:12]


def default_index_path(location: str | os.PathLike, db_url: str) -> Path:
    """Where a pool's index lives by default: beside the label database when that is a SQLite
    file (`orchviz.pool-<hash>.duckdb` beside `orchviz.db`), else in the user's cache folder
    (`$XDG_CACHE_HOME/orchviz`, default ~/.cache/orchviz). The word index is the same path
    with `.fts.sqlite`."""
    key = pool_key(location)
    if db_url.startswith("sqlite:///") and ":memory:" not in db_url:
        db = Path(db_url.removeprefix("sqlite:///").split("?")[0])
        return db.parent / f"{db.stem}.pool-{key}.duckdb"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "orchviz"
    return cache / f"pool-{key}.duckdb"



class IndexBusy(StoreError):
    """Another process or thread is updating the pool index (`PoolIndex.update(wait=False)`)."""


_FORGET_BATCH = 5_000
"""Docs whose words are forgotten in one SQLite transaction."""

_HELD_LOCKS: set[int] = set()
"""File descriptors of the writer locks this process holds. A process forked meanwhile (the
workers that read shards) closes its copies, so that the lock goes with the process that took
it, and asks to be ended when that one ends: killed mid-update, it leaves no worker behind
(ProcessPoolExecutor's workers would otherwise wait for work forever) and no lock held."""
_FORKED_BY = [0]


def _before_fork() -> None:
    _FORKED_BY[0] = os.getpid()


def _after_fork_in_child() -> None:
    if not _HELD_LOCKS:
        return
    for fd in list(_HELD_LOCKS):  # a close, never LOCK_UN: that would free the parent's lock
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_LOCKS.clear()
    try:  # Linux: SIGTERM when the parent ends (PR_SET_PDEATHSIG)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != _FORKED_BY[0]:  # the parent ended before the request was made
        os._exit(1)


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def _disk_full(folder: Path) -> bool:
    """Whether the file system holding `folder` has (next to) no room left: SQLite and
    DuckDB report a full disk as an I/O error as often as not."""
    try:
        return shutil.disk_usage(folder).free < 256 * 1024
    except OSError:
        return False


def set_dirty(db: sqlite3.Connection) -> None:
    """Say that the word index may hold docs the live DuckDB file does not (an update is
    writing, or died writing): searches are then counted through DuckDB."""
    db.execute("INSERT OR REPLACE INTO state VALUES ('dirty', '1')")


class IndexFiles:
    """The two files of a pool's index and their versions: connections (a read-only DuckDB
    cursor of the live file, a transaction of the word index), the writer lock, a new
    version written beside the live file and swapped in whole, and the recovery of the word
    index after an update that died. `PoolIndex` builds its updates and queries on these."""

    def __init__(self, path: str | os.PathLike, location: str = ""):
        self.path = Path(path)
        self.text_path = self.path.with_suffix(".fts.sqlite")
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.location = location
        self._database: duckdb.DuckDBPyConnection | None = None
        self._opened: tuple | None = None  # (inode, mtime, size) of the file _database reads
        self._hit_cache: dict[str, pa.Table | int] = {}
        self.last_update: PoolUpdate | None = None
        """What the last update by this object did (None before one)."""
        self.updated_at = 0.0
        """When this object last finished an update (time.time())."""
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._usable():
            with self._writing(wait=True):
                if not self._usable():  # not made meanwhile by another
                    self._create()
        with self._text() as db:
            self._text_tables(db)

    def _usable(self) -> bool:
        """Whether both files can serve: the DuckDB file in the current layout, and beside it
        a word index SQLite can read (missing only while the DuckDB file holds no rows). Both
        are caches: an index that is not usable is made afresh, and the next update reads
        every shard again."""
        if self._live_version() != INDEX_VERSION:
            return False
        if not self.text_path.exists():
            with self._duck() as con:
                return con.execute("SELECT count(*) FROM traces").fetchall()[0][0] == 0
        try:
            with self._text() as db:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                if db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'words'"
                              ).fetchone()[0] == 0:
                    return False
        except StoreError:
            return False
        return True

    def _live_version(self) -> str | None:
        """The layout version of the live DuckDB file; None when it is missing or unreadable
        (the index is a cache: it is made again)."""
        if not self.path.exists():
            return None
        try:
            with self._duck() as con:
                return self._meta(con, "version", missing_ok=True)
        except (StoreError, duckdb.Error):
            return None

    def _create(self) -> None:
        """Make both files afresh in the current layout (the caller holds the writer lock):
        the word index is emptied, then an empty DuckDB file takes the live one's place."""
        self._sweep()
        try:
            with self._text() as db:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except StoreError:  # not a database SQLite reads: start a new file
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{self.text_path}{suffix}").unlink(missing_ok=True)
        with self._text() as db:
            for table in ("words", "texts", "state"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
            self._text_tables(db)
        with self._new_version(fresh=True):
            pass

    @staticmethod
    def _text_tables(db: sqlite3.Connection) -> None:
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            db.commit()
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(body, content='', "
                   "tokenize='unicode61 remove_diacritics 2')")
        db.execute("CREATE TABLE IF NOT EXISTS texts (doc INTEGER PRIMARY KEY, "
                   "body BLOB NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT)")

    # -- connections ------------------------------------------------------------------------------

    def _stat(self) -> tuple | None:
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_ino, found.st_mtime_ns, found.st_size

    def _open(self) -> duckdb.DuckDBPyConnection:
        """The live file attached read-only to a database of its own (`duckdb.connect(path)`
        would hand back this process's open instance of the file it replaced)."""
        con = duckdb.connect(":memory:")
        try:
            con.execute("ATTACH '{}' AS idx (READ_ONLY)".format(str(self.path).replace("'", "''")))
        except duckdb.Error as err:
            con.close()
            first = (str(err).strip() or type(err).__name__).splitlines()[0][:200]
            raise StoreError(f"the pool index {self.path} cannot be read ({first}); delete it "
                             "and run `orchviz pool index` again") from None
        return con

    @contextmanager
    def _duck(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only cursor of the live index (a cursor per operation: threads of the app each
        get their own). When an update replaced the file since the last operation, the new one
        is opened; cursors of the old one read it to their end."""
        with self._lock:
            stamp = self._stat()
            if self._database is None or (stamp is not None and stamp != self._opened):
                if stamp is None:
                    raise StoreError(f"the pool index {self.path} is missing; run `orchviz pool "
                                     "index` to make it")
                self._database, self._opened = self._open(), stamp
                self._hit_cache.clear()
            cursor = self._database.cursor()
        try:
            cursor.execute("USE idx")
            yield cursor
        finally:
            cursor.close()

    def close(self) -> None:
        """Close the index's files (the next query opens them again)."""
        with self._lock:
            if self._database is not None:
                self._database.close()
                self._database, self._opened = None, None

    @contextmanager
    def _text(self, shared: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection to the word index, in a transaction; its failures are StoreErrors
        saying what failed in one sentence. `shared`: another thread may use it (one at a
        time: the update's words thread)."""
        try:
            db = sqlite3.connect(self.text_path, timeout=30, check_same_thread=not shared)
            try:
                with db:
                    yield db
            finally:
                db.close()
        except sqlite3.Error as err:
            reason = " ".join(str(err).split())[:200] or type(err).__name__
            if "full" in reason or _disk_full(self.text_path.parent):
                raise StoreError(f"the disk that holds the pool's word index {self.text_path} "
                                 "is full, so the index was left as it was") from None
            if "I/O" in reason:
                raise StoreError(f"the disk that holds the pool's word index {self.text_path} "
                                 f"failed to read or write ({reason}), so the index was left "
                                 "as it was") from None
            raise StoreError(f"the pool's word index {self.text_path} cannot be used "
                             f"({reason}); `orchviz pool index --rebuild` makes it again"
                             ) from None

    @contextmanager
    def _writing(self, wait: bool = True) -> Iterator[None]:
        """Hold the index's writer lock (an exclusive flock of `<index>.lock`: one update at a
        time, across processes and within one); IndexBusy when it is held and not `wait`."""
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise StoreError(f"the pool index {self.path} cannot be updated: its lock file "
                             f"{self.lock_path} cannot be opened ({err.strerror})") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait:
                        raise IndexBusy(f"the pool index {self.path} is being updated by "
                                        "another process or the app; its new rows show when "
                                        "that update finishes") from None
                    time.sleep(0.2)
            _HELD_LOCKS.add(fd)
            try:
                yield
            finally:
                _HELD_LOCKS.discard(fd)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _temp_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")

    def _sweep(self) -> None:
        """Delete the copies an update that died left (the caller holds the writer lock, so no
        update is writing one)."""
        for left in self.path.parent.glob(f"{self.path.name}.*.tmp*"):
            left.unlink(missing_ok=True)

    @staticmethod
    def _discard(temp: Path) -> None:
        temp.unlink(missing_ok=True)
        temp.with_name(temp.name + ".wal").unlink(missing_ok=True)

    @contextmanager
    def _new_version(self, fresh: bool, ready: Sequence[Callable[[], None]] = ()
                     ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the next version of the DuckDB file (the caller holds the writer
        lock): a copy of the live file, or with `fresh` an empty one in the current layout.
        When the body ends, the copy is checkpointed and closed, each of `ready` (which the
        body may add to) is called, and it is made the live file; when any of that fails, the
        copy is deleted and the live file stays as it was."""
        temp = self._temp_path()
        try:
            if not fresh:
                shutil.copyfile(self.path, temp)
            con = duckdb.connect(str(temp))
            try:
                if fresh:
                    for statement in _SCHEMA:
                        con.execute(statement)
                    self._set_meta(con, "version", INDEX_VERSION)
                if self.location:
                    self._set_meta(con, "location", self.location)
                # one transaction for the whole version: DuckDB would otherwise commit (and
                # sync its WAL) at every statement, several for each piece written; the file
                # is this update's own copy until it is published
                con.execute("BEGIN TRANSACTION")
                yield con
                con.execute("COMMIT")
                con.execute("CHECKPOINT")
            finally:
                con.close()
            for wait in ready:  # the words the file points at are durable before it is live
                wait()
            self._publish(temp)
        except (OSError, duckdb.Error) as err:  # a full disk, a read-only folder
            raise self._write_failure(err) from None
        finally:
            self._discard(temp)

    def _write_failure(self, err: BaseException) -> StoreError:
        """The sentence for a write of the index that failed (a full disk, a read-only
        folder): the index was left as it was."""
        if _disk_full(self.path.parent):
            return StoreError(f"the disk that holds the pool index {self.path} is full, so the "
                              "index was left as it was")
        reason = getattr(err, "strerror", None) or \
            (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        if getattr(err, "filename", None):
            reason = f"{err.filename}: {reason}"
        return StoreError(f"the pool index {self.path} could not be updated ({reason}); it was "
                          "left as it was")

    def _publish(self, temp: Path) -> None:
        """Make a written, closed copy the live file: synced, then renamed over it at once."""
        if temp.with_name(temp.name + ".wal").exists():
            raise StoreError(f"the pool index {temp} was not checkpointed; the live index "
                             "was kept")
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _meta(con: duckdb.DuckDBPyConnection, key: str, missing_ok: bool = False) -> str | None:
        try:
            found = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
        except duckdb.CatalogException:
            if missing_ok:  # a new file: no tables yet
                return None
            raise
        return found[0][0] if found else None

    @staticmethod
    def _set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])

    _set_dirty = staticmethod(set_dirty)

    def _words_dirty(self) -> bool:
        with self._text() as db:
            try:
                found = db.execute("SELECT value FROM state WHERE key = 'dirty'").fetchone()
            except sqlite3.OperationalError:  # a word index made before the flag
                return False
        return found is not None and found[0] == "1"

    def _recover(self) -> None:
        """After an update that died (the word index left dirty; the caller holds the writer
        lock): forget the words of docs the live DuckDB file does not hold."""
        import numpy as np

        if not self._words_dirty():
            return
        with self._text() as db:
            kept = np.fromiter((r[0] for r in db.execute("SELECT doc FROM texts")), np.int64)
        with self._duck() as con:
            con.register("kept", pa.table({"doc": kept}))
            orphans = [r[0] for r in con.execute(
                "SELECT k.doc FROM kept k ANTI JOIN traces t ON t.doc = k.doc").fetchall()]
            con.unregister("kept")
        self._forget_words(orphans, clean=True)

    def _kept_texts(self, docs: Sequence[int]) -> int:
        """How many of these docs have their text kept (so their words can be forgotten)."""
        found = 0
        with self._text() as db:
            for start in range(0, len(docs), 500):
                chunk = list(docs[start:start + 500])
                found += db.execute(
                    f"SELECT count(*) FROM texts WHERE doc IN ({', '.join('?' * len(chunk))})",
                    chunk).fetchone()[0]
        return found

    def _forget_words(self, docs: Sequence[int], clean: bool = False) -> int:
        """Delete the words of these docs from the word index: a contentless FTS5 table (SQLite
        before 3.43 has no `contentless_delete`) forgets a doc only when given the text it was
        added with, kept compressed in `texts` (`pack_words`). With `clean`, the word index is
        then said to hold no doc the live file does not. Returns how many docs had no text kept."""
        missing = 0
        for start in range(0, len(docs), _FORGET_BATCH):
            with self._text() as db:
                for doc in docs[start:start + _FORGET_BATCH]:
                    kept = db.execute("SELECT body FROM texts WHERE doc = ?", [doc]).fetchone()
                    if kept is None:
                        missing += 1
                        continue
                    db.execute("INSERT INTO words(words, rowid, body) VALUES ('delete', ?, ?)",
                               [doc, unpack_words(kept[0])])
                db.executemany("DELETE FROM texts WHERE doc = ?",
                               [[d] for d in docs[start:start + _FORGET_BATCH]])
        if clean:
            with self._text() as db:
                db.execute("DELETE FROM state WHERE key = 'dirty'")
        return missing
