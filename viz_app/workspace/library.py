"""The library facet (`ws.library`): the traces a workspace lists, in its folders, its uploads
and its pools, and the one door to a trace by id.

A trace is read through one door, `trace(trace_id)`: the pools' indexes first, then the folder
index (the pool-first rule is written once, in `source`), kept read and analysed for every page
(`trace_cache`) and read ahead while a reviewer works (`read_ahead`). The rubric's targets of a
trace are found here too, once per version, because reading a trace ahead finds them with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from viz_app.analysis import analyze
from viz_app.errors import LabelError, NoSuchTrace, OrchvizError, TraceError
from viz_app.io.detect import read_any, read_at
from viz_app.io.files import trace_files
from viz_app.io.rollouts import join
from viz_app.io.trace_cache import MAX_TRACES, TraceCache, TraceSource, file_stamp
from viz_app.labels import LabelTarget, targets
from viz_app.model import Trace
from viz_app.query import Condition
from viz_app.store import (Folders, IndexProgress, IndexResult, PoolIndex, PoolUpdate, Storage,
                           TraceIndex, default_index_path, storage_kind)
from viz_app.summary import LibraryFailure, LibraryRow
from viz_app.workspace.ground import Ground

if TYPE_CHECKING:
    from viz_app.io.pool import Shard


class TraceSet(BaseModel):
    """The traces read from a workspace's folders (`Library.read_traces`), and the files
    that gave none."""

    traces: dict[str, Trace] = Field(default_factory=dict, description="Every trace read, by "
                                     "id (when two files hold one id, the first file's).")
    unread: list[LibraryFailure] = Field(default_factory=list, description="Every file (or line "
                                       "of a pool) that held no trace orchviz reads, with why.")


class Library:
    """The folders, uploads and pools of a workspace, their indexes, and its traces by id."""

    def __init__(self, ground: Ground):
        self._ground = ground
        self.index = TraceIndex(ground.engine)
        self._pool_indexes: dict[str, PoolIndex] = {}
        self.trace_cache = TraceCache(prepare=self._prepare)
        """Traces read once per version for every page, and read ahead (`trace`,
        `read_ahead`)."""
        self._targets: dict[tuple[str, str, str], list[LabelTarget]] = {}
        self._targets_lock = threading.Lock()

    @property
    def _settings(self):
        return self._ground.settings

    # -- what the library lists -----------------------------------------------------------------

    @property
    def folders(self) -> list[Path]:
        """The folders the library lists: the configured ones (pools left out: they have their
        own index), then the uploads folder."""
        uploads = [self._settings.uploads] if self._settings.uploads is not None else []
        pools = set(self.pools)
        return [*(t for t in self._settings.traces if str(t) not in pools), *uploads]

    @cached_property
    def pools(self) -> list[str]:
        """The configured locations that are pools (docs/pools.md): every URL of
        `settings.pools`, and each of `settings.traces` whose storage kind is a pool
        (`store.library.storage_kind`: orchviz's manifest or Parquet shards; a folder of JSON
        Lines files alone stays a library folder, a pool of one shard a file)."""
        return [*self._settings.pools, *(location for location in map(str, self._settings.traces)
                                         if storage_kind(location) == "pool")]

    def storage(self, location: str | None = None,
                result: IndexResult | None = None) -> Storage:
        """The library's one interface to its traces (`store.library.Storage`): a pool's index
        for one of `pools`, else the folders (and uploads) as a pool of one shard a file, its
        index brought up to date (or as `result` gives it). Pages, counts, values, samples,
        rows by id, a trace and the failures, asked alike of either."""
        if location is not None and location in self.pools:
            return self.pool_index(location)
        if location is not None and location not in {str(f) for f in self.folders}:
            raise OrchvizError(f"this workspace lists no pool or folder {location!r}")
        return Folders(self.index, result if result is not None else self.update_index(),
                       location or "")

    def sample(self, n: int, *, seed: int = 0, filters: Sequence[Condition] = (),
               search: str = "", stratify: str | None = None,
               location: str | None = None) -> list[str]:
        """Trace ids of `n` traces of a pool or of the folders (`location` None) drawn from
        those a filter and search select, at random or evenly over the strata of a field, by
        the library's one sampler (`viz_app.sampling`): the same for the same seed and
        traces, whichever storage holds them."""
        return self.storage(location).sample(n, seed=seed, filters=filters, search=search,
                                             stratify=stratify)

    def pool_index(self, location: str | None = None) -> PoolIndex:
        """The index of a pool (default: the first), beside the label database
        (`default_index_path`); OrchvizError when the workspace has no such pool. What the
        Library page and `orchviz pool` page, count and chart a pool with."""
        if location is None:
            if not self.pools:
                raise OrchvizError("this workspace lists no pool (give one with --traces)")
            location = self.pools[0]
        if location not in self._pool_indexes:
            self._pool_indexes[location] = PoolIndex(
                default_index_path(location, self._settings.db_url), location)
        return self._pool_indexes[location]

    def update_pool_index(self, location: str | None = None, *, workers: int | None = None,
                          ray: str | None = None, progress: IndexProgress | None = None,
                          rebuild: bool = False, wait: bool = True) -> PoolUpdate:
        """Bring a pool's index up to date (new and changed shards read on every core, or on
        Ray), with each trace's targets under the rubric. While another process (or the app)
        updates it, wait for that update to finish, or with `wait=False` raise IndexBusy."""
        from viz_app.io.pool import shards

        index = self.pool_index(location)
        return index.update(shards(index.location), rubric=self._ground.given_rubric,
                            workers=workers, ray=ray, progress=progress, rebuild=rebuild,
                            wait=wait)

    def sample_pool(self, n: int, *, seed: int = 0, filters: Sequence[Condition] = (),
                    search: str = "", stratify: str | None = None,
                    location: str | None = None) -> list[str]:
        """Trace ids of `n` traces of a pool (default: the first) drawn from those a filter and
        search select (`sample`, over the pool): what the Library page's Sample form draws, and
        a review campaign over the pool with the same seed."""
        return self.sample(n, seed=seed, filters=filters, search=search, stratify=stratify,
                           location=location if location is not None
                           else self.pool_index().location)

    def update_index(self, progress: IndexProgress | None = None) -> IndexResult:
        """Bring the trace index up to date and return the library. Each trace's targets are
        recorded under the rubric (left out when the rubric file is wrong). Indexing writes no
        label: a run's published annotation becomes labels only when asked
        (`ws.labelling.import_published`, which `orchviz import --db` calls)."""
        return self.index.update(self.folders, rubric=self._ground.given_rubric,
                                 progress=progress)

    def versions(self) -> dict[str, frozenset[str]]:
        """The versions (SHA-256) of each trace of the folders as its files hold them now, by
        id (two files may hold one id): what a label's `trace_sha256` is compared with to
        tell a label made on another version of its trace."""
        found: dict[str, set[str]] = {}
        for row in self.update_index().rows if self.folders else ():
            found.setdefault(row.trace_id, set()).add(row.sha256)
        return {trace_id: frozenset(shas) for trace_id, shas in found.items()}

    def check_version(self, trace_id: str, judged: str, shown: Trace | None = None) -> None:
        """Refuse a save (LabelError, one sentence: nothing is saved, the answers stay in the
        reviewer's form) when the trace's file changed since the page read the version judged
        (`judged`, its SHA-256; `shown`, the trace itself, when the caller has it) and the
        library holds no file of that version any more: a label must name the version it
        judged, and the reviewer must see the one the library now holds before judging it. A
        file written again with the same content (`shown` equal to it, other bytes) has not
        changed; a trace the library does not list is not checked."""
        try:
            current = self.trace(trace_id)
        except (OrchvizError, OSError):
            return
        if current.sha256 == judged or (shown is not None and shown == current) or \
                judged in self.versions().get(trace_id, frozenset()):
            return
        raise LabelError(f"the file of {trace_id} changed since this page read it (you judged "
                         f"version {judged[:12]}, the library now holds {current.sha256[:12]}):"
                         " nothing was saved and your answers stay in the form; reload the "
                         "trace to judge the version the library holds")

    def search(self, rows: Sequence[LibraryRow], query: str) -> list[LibraryRow]:
        """The rows of the folders the library's one search keeps (`viz_app.search`: every
        word begins a word of the ids, task, agents, tools or content), as a pool's index
        keeps its own."""
        return self.index.search(rows, query)

    # -- one trace by id ------------------------------------------------------------------------

    def find(self, trace_id: str) -> tuple[Path, int] | None:
        """Where a trace of the folders is (file, position in it), bringing the index up to
        date once when it does not know the id yet (a trace added since)."""
        found = self.index.find(trace_id)
        if found is None:
            self.update_index()
            found = self.index.find(trace_id)
        return found

    def locate(self, trace_id: str) -> tuple[Shard, int] | None:
        """Where a trace of one of the pools is (its shard and row), by the pools' indexes;
        None when no pool's index knows the id."""
        for location in self.pools:
            found = self.pool_index(location).locate(trace_id)
            if found is not None:
                return found
        return None

    def source(self, trace_id: str) -> TraceSource | None:
        """Where a trace of a pool or of the folders is (a pool first), with how to tell its
        version and read it; None when no index knows the id."""
        from viz_app.io.pool import read_trace
        from viz_app.store import shard_stamp

        pooled = self.locate(trace_id) if self.pools else None
        if pooled is not None:
            shard, row = pooled
            return TraceSource(("pool", shard.url, row), lambda: shard_stamp(shard),
                               lambda: read_trace(shard, row))
        found = self.find(trace_id)
        if found is None:
            return None
        path, position = found
        joined = self.index.joined_with(path, position)
        if joined is None:
            return TraceSource(("file", str(path), position), lambda: file_stamp(path),
                               lambda: read_at(path, position))
        # the spans' trace joined with its rollout (`io.rollouts.joined_read`): a version of both
        rollout = joined.path or ""
        return TraceSource(("file", str(path), position),
                           lambda: file_stamp(path) + (file_stamp(rollout) if rollout else ""),
                           lambda: self.index.read(path, position))

    def trace(self, trace_id: str) -> Trace:
        """A trace of a pool or of the folders by id, analysed, read once per version of its
        file and kept (a few, for everyone: `trace_cache`, which finds it ready when it was
        read ahead). NoSuchTrace (a TraceError) when no index knows the id, TraceError (or
        OSError) when it cannot be read. Treat it as read-only: it is shared."""
        source = self.source(trace_id)
        if source is None:
            raise NoSuchTrace(trace_id, "", "no trace with this id in the library")
        return self.trace_cache.get(source)

    def _prepare(self, trace: Trace) -> None:
        """What every page of a trace draws from, computed before a page gets the trace (a read
        ahead does it on its own thread): the analysis, its figures and the rubric's targets."""
        analysis = analyze(trace)
        analysis.communication  # noqa: B018
        analysis.figures  # noqa: B018
        if self._ground.given_rubric is not None:
            self.targets(trace)

    def read_ahead(self, trace_ids: Callable[[], Iterable[str | None]],
                   then: Callable[[Trace], object] | None = None, *,
                   after: float = 0.0) -> bool:
        """Read the traces `trace_ids()` names (it is called on the background thread: finding
        what comes next may ask the database) while the caller goes on, so that `trace` finds
        them ready; `then(trace)` runs there on each; it begins `after` seconds from now. Never
        raises and never waits: a trace that cannot be read is read again by `trace`, which
        says why."""
        return self.trace_cache.ahead(lambda: [self.source(t) for t in trace_ids() if t],
                                      then, after=after)

    def source_name(self, trace: Trace) -> str:
        """Where a trace was read from, as anyone who sees it may read it: its file relative to
        the library folder (or uploads folder) it is in, its shard relative to its pool, else
        the file's name alone. Never the server's full path: a page shows it to every viewer."""
        source = trace.source
        if not source:
            return ""
        if "://" in source:  # a shard in object storage: relative to its pool's URL
            for location in self.pools:
                if source.startswith(location.rstrip("/") + "/"):
                    return source[len(location.rstrip("/")) + 1:]
            return source.rstrip("/").rsplit("/", 1)[-1]
        path = Path(source).resolve()
        roots = [*self._settings.traces, *self._settings.pools,
                 *([self._settings.uploads] if self._settings.uploads else [])]
        for root in roots:
            root = Path(root).resolve()
            if root != path and root in path.parents:
                return path.relative_to(root).as_posix()
        return path.name

    def read_traces(self, progress: IndexProgress | None = None) -> TraceSet:
        """Every trace under the workspace's folders (files as named, folders searched, globs
        expanded; not the uploads), read now rather than indexed: what a command reads its
        `--traces` with. A file that holds no trace is listed in `unread`, not raised;
        TraceError when a folder or file named does not exist."""
        for path in self._settings.traces:
            if not path.exists() and not any(ch in str(path) for ch in "*?["):
                raise TraceError(str(path), "", "no such file or folder")
        files = trace_files(self._settings.traces)
        found = TraceSet()
        read: list[Trace] = []
        for done, path in enumerate(files):
            if progress is not None:
                progress(done, len(files), str(path))
            errors: list[TraceError] = []
            try:
                traces = read_any(path, on_error=errors.append)
            except TraceError as err:
                traces, errors = [], [err]
            except Exception as err:  # an importer's bug must not stop the other files
                traces, errors = [], [TraceError(str(path), "", f"could not be read ({err!r})")]
            read.extend(traces)
            found.unread += [LibraryFailure(path=str(path), error=str(e)) for e in errors]
        for trace in join(read):  # a rollout and its spans: one trace, as everywhere
            found.traces.setdefault(trace.trace_id, trace)
        if progress is not None and files:
            progress(len(files), len(files), "")
        return found

    # -- what the rubric asks of a trace --------------------------------------------------------

    def targets(self, trace: Trace) -> list[LabelTarget]:
        """What the rubric asks to label in a trace, in time order: found once per version of
        the trace and of the rubric, for everyone (a 20,000-event trace's take a tenth of a
        second), and found ahead with the trace when it is read ahead."""
        rubric = self._ground.rubric
        key = (trace.source, trace.sha256, rubric.sha256)
        with self._targets_lock:
            found = self._targets.get(key)
        if found is None:
            found = targets(rubric, analyze(trace))
            with self._targets_lock:
                self._targets[key] = found
                while len(self._targets) > 2 * MAX_TRACES:
                    self._targets.pop(next(iter(self._targets)))
        return list(found)
