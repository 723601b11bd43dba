"""A few traces kept read and analysed for every page of the app, and traces read ahead on one
background thread while a reviewer works on another (the library's next trace, the trace of a
campaign's next target), so that opening them draws at once.

An entry is keyed by where a trace is (a file and position, a pool's shard and row) and holds
one version of it, told by its stamp (the file's SHA-256, the shard's size and time): a trace
whose file changed is read again, never served from before. The cache is bounded (so many
traces, so many events in all; the most recently used are kept) and so is the queue of reads
ahead. A read ahead that fails is forgotten: the page that opens the trace reads it itself and
says why it cannot, as it would have without reading ahead.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Hashable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from viz_app.model import Trace

log = logging.getLogger("viz_app")

MAX_TRACES = 16
"""The most traces a cache keeps (a reviewer going back finds the last few ready)."""
MAX_EVENTS = 160_000
"""The most events its traces hold together (about 50 MB each 20,000 events, analysed: 400 MB
at most); the trace used last is kept whatever its size."""
MAX_QUEUED = 4
"""The most reads ahead waiting for the background thread; more are not queued."""


def file_stamp(path: str | Path) -> str:
    """SHA-256 of a file's bytes: the version of every trace it holds. Hashed again whenever
    the file's size, inode or times differ from its last hashing: any write changes its
    ctime, which no program can set back (an 8 MB trace's hash cost each page run 10-40 ms)."""
    before = _identity(path)
    with _STAMPS_LOCK:
        known = _STAMPS.get(before)
    if known is not None:
        return known
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    stamp = digest.hexdigest()
    if _identity(path) == before:  # not written while it was hashed
        with _STAMPS_LOCK:
            _STAMPS[before] = stamp
            while len(_STAMPS) > 256:
                _STAMPS.popitem(last=False)
    return stamp


def _identity(path: str | Path) -> tuple:
    found = os.stat(path)
    return (os.fspath(path), found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns,
            found.st_ctime_ns)


_STAMPS: OrderedDict[tuple, str] = OrderedDict()
_STAMPS_LOCK = threading.Lock()


@dataclass(frozen=True)
class TraceSource:
    """Where a trace is (`key`), how to tell its version now (`stamp`: '' when the storage
    cannot say, and then it is read every time) and how to read it (`read`)."""

    key: Hashable
    stamp: Callable[[], str]
    read: Callable[[], Trace]


class TraceCache:
    """Traces by where they are, one version each, bounded; `ahead` reads on a background
    thread. `prepare(trace)` runs on every trace read, before anyone gets it (the analysis
    the pages draw from)."""

    def __init__(self, *, prepare: Callable[[Trace], object] | None = None,
                 max_traces: int = MAX_TRACES, max_events: int = MAX_EVENTS,
                 max_queued: int = MAX_QUEUED):
        self._prepare = prepare
        self.max_traces, self.max_events, self.max_queued = max_traces, max_events, max_queued
        self._entries: OrderedDict[Hashable, tuple[str, Trace]] = OrderedDict()
        self._reading: dict[tuple[Hashable, str], Future] = {}
        self._lock = threading.Lock()
        self._queued = 0
        self._executor: ThreadPoolExecutor | None = None
        self.failures: deque[tuple[Hashable, str]] = deque(maxlen=16)
        """The last reads ahead that failed, with why (for the server's log and the tests)."""

    # -- reading ------------------------------------------------------------------------------

    def get(self, source: TraceSource) -> Trace:
        """The trace at `source` as it is now: the one kept when its version is unchanged (or
        the one being read, ahead or by another page, waited for), else read now. Raises what
        reading raises."""
        stamp = source.stamp()
        with self._lock:
            kept = self._kept(source.key, stamp)
            pending = self._reading.get((source.key, stamp)) if stamp else None
        if kept is not None:
            return kept
        if pending is not None:
            try:
                return pending.result()
            except Exception:  # noqa: BLE001  (read again here, so the error is raised here)
                pass
        return self._read_once(source, stamp)

    def cached(self, source: TraceSource) -> bool:
        """Whether the trace at `source`, as it is now, is kept."""
        stamp = source.stamp()
        with self._lock:
            return self._kept(source.key, stamp, touch=False) is not None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def events(self) -> int:
        """The events of every trace kept."""
        with self._lock:
            return sum(len(trace.events) for _, trace in self._entries.values())

    def _kept(self, key: Hashable, stamp: str, touch: bool = True) -> Trace | None:
        entry = self._entries.get(key)
        if entry is None or not stamp or entry[0] != stamp:
            return None
        if touch:
            self._entries.move_to_end(key)
        return entry[1]

    def _read(self, source: TraceSource, stamp: str) -> Trace:
        trace = source.read()
        if self._prepare is not None:
            self._prepare(trace)
        # kept only when the file is still the version stamped before reading: one that
        # changed meanwhile may have been read half old, half new
        if stamp and source.stamp() == stamp:
            self._keep(source.key, stamp, trace)
        return trace

    def _keep(self, key: Hashable, stamp: str, trace: Trace) -> None:
        with self._lock:
            self._entries[key] = (stamp, trace)
            self._entries.move_to_end(key)
            events = sum(len(t.events) for _, t in self._entries.values())
            while len(self._entries) > 1 and (len(self._entries) > self.max_traces
                                              or events > self.max_events):
                _, (_, dropped) = self._entries.popitem(last=False)
                events -= len(dropped.events)

    # -- reading ahead ----------------------------------------------------------------------

    def ahead(self, sources: Callable[[], Iterable[TraceSource | None]],
              then: Callable[[Trace], object] | None = None, *, after: float = 0.0) -> bool:
        """Read the traces `sources()` names on the background thread (the call that finds
        them runs there too) once `after` seconds have passed (so that it does not take the
        cores from the browser drawing the page just sent), and call `then(trace)` on each it
        read (the page's figures). Returns at
        once: False when MAX_QUEUED reads wait already and this one is not queued. Nothing it
        does raises: a failure is logged and noted in `failures`."""
        with self._lock:
            if self._queued >= self.max_queued:
                return False
            self._queued += 1
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1,
                                                    thread_name_prefix="orchviz-read-ahead")
            executor = self._executor
        executor.submit(self._ahead, sources, then, after)
        return True

    def _ahead(self, sources: Callable[[], Iterable[TraceSource | None]],
               then: Callable[[Trace], object] | None, after: float) -> None:
        try:
            if after > 0:
                time.sleep(after)
            try:
                found = [s for s in sources() if s is not None]
            except Exception as err:  # noqa: BLE001  (the page finds it again, and says why)
                self._failed("(finding what comes next)", err)
                return
            for source in found:
                self._read_ahead(source, then)
        finally:
            with self._lock:
                self._queued -= 1

    def _read_ahead(self, source: TraceSource, then: Callable[[Trace], object] | None) -> None:
        try:
            stamp = source.stamp()
            with self._lock:
                trace = self._kept(source.key, stamp, touch=False)
                busy = (source.key, stamp) in self._reading
            if trace is not None or busy or not stamp:
                return  # kept, being read by a page now, or a version storage cannot name
            trace = self._read_once(source, stamp)
            if then is not None:
                then(trace)
        except Exception as err:  # noqa: BLE001  (the page reads it again, and says why)
            self._failed(source.key, err)

    def _read_once(self, source: TraceSource, stamp: str) -> Trace:
        """Read the trace, with anyone who asks for the same version meanwhile waiting for
        this read rather than reading it too."""
        pending: Future = Future()
        with self._lock:
            if stamp:
                self._reading[(source.key, stamp)] = pending
        try:
            trace = self._read(source, stamp)
        except BaseException as err:
            pending.set_exception(err)
            raise
        else:
            pending.set_result(trace)
        finally:
            with self._lock:
                if self._reading.get((source.key, stamp)) is pending:
                    del self._reading[(source.key, stamp)]
        return trace

    def _failed(self, key: Hashable, err: Exception) -> None:
        self.failures.append((key, f"{type(err).__name__}: {err}"))
        log.info("orchviz: reading ahead %s failed (%s: %s); the page reads it when opened",
                 key, type(err).__name__, err)

    def wait(self, timeout: float = 30.0) -> bool:
        """Wait until no read ahead is queued or running (for tests and benchmarks); False when
        some still is after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if self._queued == 0:
                    return True
            time.sleep(0.01)
        return False
