"""The trace index: every trace under the library's folders, indexed once in the database.

Each file is remembered by path, size and modification time, so a folder of thousands of traces is
parsed once and later starts list it at once. A file holds one trace (JSON) or a pool of them
(JSONL), so a row is keyed by its file and its position in that file. A file that fails to load gets
a row too, with its `TraceError` message: the library lists failures, it never hides them.

Files are read only through `viz_app.io.follow.read_file` (`read_any`, remembering where a
trainer's rollout file was left), so every format an importer adds shows up here with its
`source_format`; a followed file that grew is read from there on (`read_more`), its new rollouts
added after the rows it had. Where each was left is kept in the database with its rows
(`orchviz_follow_tails`), so an index started again goes on from there too. The index writes no labels: a caller that wants to act on each
freshly read trace (the Workspace imports published annotations) passes `on_read`.

Each trace's words are kept in a word index beside its row (`orchviz_trace_words`: a row for
each run of letters and digits of its search text, `viz_app.search.index_words`), dropped in
the transaction that drops or changes the row and written for an update's new rows at its end,
so a search reads the range of words each typed word begins (`search`), on SQLite and
PostgreSQL alike.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import msgspec
from pydantic import BaseModel, Field
from sqlalchemy import Connection, Engine, bindparam, delete, intersect, select

from viz_app.errors import OrchvizError, TraceError
from viz_app.io.detect import library_files, read_any, read_at
from viz_app.io.follow import Tail, read_file, read_more
from viz_app.io.rollouts import (JoinKeys, JoinPlan, elsewhere_noted, join_keys, joined_trace,
                                 plan_join)
from viz_app.labels import Rubric
from viz_app.model import Trace, TraceWarning
from viz_app.search import exact, index_words, matches, prefix_range, word_parts, words
from viz_app.store.tables import (bookmarks_table, campaign_targets_table, labels_table,
                                   trace_index, trace_words)
from viz_app.store.tables import follow_tails_table as follow_tails
from viz_app.summary import (  # noqa: F401 (search_text: the index's words)
    SEARCH_TEXT_LIMIT,
    LibraryFailure,
    LibraryRow,
    search_text,
    summarise,
)


class IndexResult(BaseModel):
    """The library after indexing: its traces, its failures, and what indexing had to do."""

    rows: list[LibraryRow] = Field(default_factory=list, description="Every loaded trace.")
    failures: list[LibraryFailure] = Field(default_factory=list, description="Every failure.")
    parsed: int = Field(0, description="Files read this time (new or changed).")
    skipped: int = Field(0, description="Files unchanged since they were indexed: not read.")
    removed: int = Field(0, description="Files indexed before that are gone now.")


IndexProgress = Callable[[int, int, str], None]
"""Called as `progress(done, total, path)` while files are indexed."""

WORDS_CACHE_KB = 65_536
"""The SQLite page cache (KiB) of the connection that writes an update's words."""

OnRead = Callable[[Trace], None]
"""Called with each trace read from a new or changed file; an OrchvizError it raises is listed
as a failure of that file (the trace still lists)."""


class TraceIndex:
    """The index of the library's traces, in one database."""

    def __init__(self, engine: Engine):
        self.engine = engine
        self._tails: dict[str, Tail] | None = None
        self._outdated: set[str] = set()
        """Files whose rows were indexed under another rubric (the last update's look)."""
        self._wordless: set[str] = set()
        """Files whose rows have no words in the word index (indexed before it was kept)."""

    def _tail_of(self, path: str) -> Tail | None:
        """Where a file was left as the database says now (another process, the app or a
        command, may have read it since this one did), kept in `tails` too."""
        with self.engine.connect() as conn:
            text = conn.execute(select(follow_tails.c.tail).where(
                follow_tails.c.path == path)).scalar()
        found = _decoded_tail(text)
        if found is None:
            self.tails.pop(path, None)
        else:
            self.tails[path] = found
        return found

    @property
    def tails(self) -> dict[str, Tail]:
        """Where the reading of each growing rollout file was left, as the database keeps it
        (`orchviz_follow_tails`, written with the rows read): an index started again reads
        only what a trainer appended since."""
        if self._tails is None:
            with self.engine.connect() as conn:
                found = conn.execute(select(follow_tails.c.path, follow_tails.c.tail)).all()
            self._tails = {path: tail for path, text in found
                           if (tail := _decoded_tail(text)) is not None}
        return self._tails

    def update(self, folders: Iterable[str | os.PathLike], *, rubric: Rubric | None = None,
               progress: IndexProgress | None = None,
               on_read: OnRead | None = None) -> IndexResult:
        """Bring the index up to date with the folders and return their traces and failures.

        Files whose size and modification time are unchanged are not read again; new and changed
        files are read with `read_any` (a followed rollout file from where it was left); rows of
        files that disappeared from these folders are dropped. With a rubric, each row records
        the trace's targets under it, so the library can say "2 of 5 labelled" without loading
        the trace; files indexed under another rubric are read again.
        """
        folders = [Path(f).resolve() for f in folders]
        files = library_files(folders)
        known = self._known_files(rubric.sha256 if rubric is not None else None)
        present = {str(p) for p in files}
        stale = [path for path in known if _under(path, folders) and path not in present]
        result = IndexResult()
        if stale:
            with self.engine.begin() as conn:
                for path in stale:
                    _forget_words(conn, trace_index.c.path == path)
                    conn.execute(delete(trace_index).where(trace_index.c.path == path))
                    conn.execute(delete(follow_tails).where(follow_tails.c.path == path))
                    self.tails.pop(path, None)
            result.removed = len(stale)
        todo = []
        for path in files:
            stat = _stat(path)
            if stat is not None and known.get(str(path)) == stat:
                result.skipped += 1
            else:
                todo.append((path, stat))
        for done, (path, stat) in enumerate(todo, start=1):
            if progress is not None:
                progress(done - 1, len(todo), str(path))
            try:
                if str(path) in self._outdated or not self._index_more(path, stat, rubric,
                                                                       on_read):
                    self._index_file(path, stat, rubric, on_read)
            except Exception as err:  # noqa: BLE001 - one file must not stop the library
                self.tails.pop(str(path), None)  # its row goes with the failure's
                self._index_failure(path, stat, TraceError(str(path), "", f"could not be "
                                                           f"indexed ({err!r})"))
            result.parsed += 1
        if progress is not None and todo:
            progress(len(todo), len(todo), "")
        self._keep_words({*self._wordless, *(str(path) for path, _ in todo)})
        if todo or stale:
            self._join(files, rubric)
        result.rows, result.failures = self.listing(files)
        return result

    def reindex(self, path: str | os.PathLike, *, rubric: Rubric | None = None,
                on_read: OnRead | None = None) -> None:
        """(Re-)index one file now, whatever the index remembers of it."""
        path = Path(path).resolve()
        self._index_file(path, _stat(path), rubric, on_read)
        self._keep_words([str(path)])

    def _keep_words(self, paths: Iterable[str]) -> None:
        """The words of the rows of these files that have none in the word index yet (read
        now, or indexed before it was kept), in one transaction: a word index takes its words
        in random order, so a transaction a file would write most of its pages again for every
        file (at 2,000 traces of 1,000 words, 15 s against 3.6 s; SQLite given a page cache of
        64 MB for it, so that a transaction's pages are written once). A file's rows are listed
        before their words are in (the update's end): a search of another process meanwhile
        misses them."""
        paths = sorted(paths)
        if not paths:
            return
        with self.engine.begin() as conn:
            if conn.dialect.name == "sqlite":
                conn.exec_driver_sql(f"PRAGMA cache_size={-WORDS_CACHE_KB}")
            for start in range(0, len(paths), 500):
                _keep_words(conn, trace_index.c.path.in_(paths[start:start + 500]))

    def listing(self, files: Sequence[Path]) -> tuple[list[LibraryRow], list[LibraryFailure]]:
        """The indexed traces and failures of these files, in file order then position."""
        wanted = {str(p): i for i, p in enumerate(files)}
        kept = [name for name in LibraryRow.model_fields if name in trace_index.c]
        columns = [trace_index.c[name] for name in kept] + [trace_index.c.error,
                                                            trace_index.c.joined]
        with self.engine.connect() as conn:
            records = conn.execute(select(*columns)).mappings().all()
        records = sorted((r for r in records if r["path"] in wanted),
                         key=lambda r: (wanted[r["path"]], r["position"]))
        rows = [LibraryRow.model_validate({**{k: r[k] for k in kept},
                                         "targets": _targets(r["targets"]),
                                         "task": r["task"] or "",
                                         "rewards": json.loads(r["rewards"] or "{}")})
                for r in records if r["error"] is None and not _absorbed(r["joined"])]
        failures = [LibraryFailure(path=r["path"], error=r["error"]) for r in records
                    if r["error"] is not None]
        return rows, failures

    def search(self, rows: Sequence[LibraryRow], query: str) -> list[LibraryRow]:
        """The rows the library's one search accepts (`viz_app.search.matches`: every word
        begins a word of the row's id, task, system, topology or format, agent names, roles,
        tools or the event content kept in the index, case and accents aside), as a pool's
        index answers the same words."""
        terms = words(query)
        if not terms:
            return list(rows)
        hits = self._matching_keys(query, terms)
        return [r for r in rows if (r.path, r.position) in hits]

    def find(self, trace_id: str) -> tuple[Path, int] | None:
        """Where the index found a trace: (file, position in it), or None when it has no such
        id (a rollout joined with its spans is no trace of its own: its spans' trace is)."""
        with self.engine.connect() as conn:
            found = conn.execute(
                select(trace_index.c.path, trace_index.c.position, trace_index.c.joined)
                .where(trace_index.c.trace_id == trace_id, trace_index.c.error.is_(None))
                .order_by(trace_index.c.indexed_at.desc(), trace_index.c.path)).all()
        found = next((r for r in found if not _absorbed(r.joined)), None)
        return (Path(found.path), int(found.position)) if found is not None else None

    def read(self, path: str | os.PathLike, position: int) -> Trace:
        """The trace the index lists at (file, position), read again: the span trace joined
        with its rollout where the join made them one (`joined_with`), else the file's trace
        as it is. Raises TraceError (or OSError) when it cannot be read."""
        return joined_read(read_at(path, position), self.joined_with(path, position), read_at)

    def joined_with(self, path: str | os.PathLike, position: int) -> Joined | None:
        """What the join made of the trace at (file, position): the rollout its spans took in,
        or the earlier span trace that took in the rollout it names; None for neither."""
        with self.engine.connect() as conn:
            text = conn.execute(select(trace_index.c.joined).where(
                trace_index.c.path == str(Path(path)),
                trace_index.c.position == position)).scalar()
        found = _decoded_joined(text)
        return found if found is not None and found.into is None else None

    def _join(self, files: Sequence[Path], rubric: Rubric | None) -> None:
        """Join each trainer's rollout with the spans of the same rollout id across the files
        (the one rule, `plan_join`, over the rows' keys in the library's order, as `orchviz
        import` joins the same files): a span row takes the joined trace's summary (the
        rollout's step, group and reward, its version), its rollout row is taken in (listed no
        more). Only the rows whose part in the join changed are summarised again."""
        wanted = {str(p): i for i, p in enumerate(files)}
        with self.engine.connect() as conn:
            if conn.execute(select(trace_index.c.id).where(
                    trace_index.c.join_keys.like('{"span_ids"%')).limit(1)).first() is None \
                    and conn.execute(select(trace_index.c.id).where(
                        trace_index.c.joined.is_not(None)).limit(1)).first() is None:
                return  # no spans, nothing joined before: nothing to plan
            records = conn.execute(select(
                trace_index.c.path, trace_index.c.position, trace_index.c.trace_id,
                trace_index.c.sha256, trace_index.c.join_keys, trace_index.c.joined).where(
                trace_index.c.error.is_(None),
                (trace_index.c.join_keys != "{}") | trace_index.c.joined.is_not(None))).all()
        records = sorted((r for r in records if r.path in wanted),
                         key=lambda r: (wanted[r.path], r.position))
        keys = [_decoded_keys(r.join_keys) for r in records]
        plan = plan_join(keys)
        kept = self._kept_apart(records, plan)  # rollouts reviewers' work rests on
        if kept:
            named = {span: records[rollout].trace_id for span, rollout in plan.joined.items()
                     if rollout in kept}
            ids = {span: keys[rollout].rollout_id for span, rollout in plan.joined.items()
                   if rollout in kept}
            keys = [JoinKeys() if place in kept else key for place, key in enumerate(keys)]
            plan = plan_join(keys)
        reads: dict[str, list[Trace]] = {}

        def read(path: str, position: int) -> Trace:
            if path not in reads:
                reads[path] = read_any(Path(path), on_error=lambda _err: None)
            return reads[path][position]

        for place, record in enumerate(records):
            if place in plan.joined:
                rollout = records[plan.joined[place]]
                want = Joined(path=rollout.path, position=rollout.position,
                              sha256=rollout.sha256)
            elif place in plan.elsewhere:
                first = plan.elsewhere[place]
                want = Joined(elsewhere=records[first].trace_id,
                              rollout=keys[plan.joined[first]].rollout_id)
            elif kept and place in named:
                want = Joined(apart=named[place], rollout=ids[place])
            elif place in plan.absorbed:
                want = Joined(into=records[next(s for s, r in plan.joined.items()
                                                if r == place)].trace_id)
            else:
                want = None
            if _decoded_joined(record.joined) == want:
                continue
            changes: dict = {"joined": _encoded_joined(want)}
            if keys[place].span_ids is not None:  # the trace it lists changed: summarised again
                try:
                    trace = joined_read(read(record.path, record.position), want,
                                        lambda p, n: read(p, n))
                    changes.update(trace_record(trace, rubric))
                except Exception as err:  # noqa: BLE001 - listed as it was, and why
                    self._join_failure(record, err)
                    continue
            where = (trace_index.c.path == record.path,
                     trace_index.c.position == record.position)
            with self.engine.begin() as conn:
                if "search_text" in changes:  # its words too
                    _forget_words(conn, *where)
                    changes["words"] = None
                conn.execute(trace_index.update().where(*where).values(**changes))
                _keep_words(conn, *where)

    def _kept_apart(self, records: Sequence, plan: JoinPlan) -> set[int]:
        """The rollouts the plan would take in anew that reviewers' work rests on (a label, a
        bookmark or a campaign's target saved on the rollout's own trace while it was listed
        alone, its spans not read yet): each stays listed as it was, its spans apart, so that
        nothing saved points at a trace the library no longer lists (a campaign's reviewer
        would be refused the target), nor at events the joined trace does not have."""
        fresh = {records[place].trace_id: place for place in plan.absorbed
                 if (_decoded_joined(records[place].joined) or Joined()).into is None}
        if not fresh:
            return set()
        held: set[str] = set()
        names = list(fresh)
        with self.engine.connect() as conn:
            for table in (labels_table, campaign_targets_table, bookmarks_table):
                for first in range(0, len(names), 500):
                    held.update(conn.execute(select(table.c.trace_id).where(
                        table.c.trace_id.in_(names[first:first + 500])).distinct()).scalars())
        return {fresh[name] for name in held}

    def _join_failure(self, record, err: Exception) -> None:
        """A join that could not be made: the span trace stays listed as it was; the failure
        is one row of its file."""
        with self.engine.begin() as conn:
            taken = conn.execute(select(trace_index.c.position).where(
                trace_index.c.path == record.path, trace_index.c.position < 0)).scalars()
            error = str(TraceError(record.path, f"trace {record.trace_id}",
                                   f"could not be joined with its rollout ({err!r})"))
            if conn.execute(select(trace_index.c.id).where(
                    trace_index.c.path == record.path,
                    trace_index.c.error == error)).first() is not None:
                return  # said already
            first = min([0, *taken]) - 1
            size, mtime = conn.execute(select(trace_index.c.size, trace_index.c.mtime_ns).where(
                trace_index.c.path == record.path,
                trace_index.c.position == record.position)).one()
            conn.execute(trace_index.insert(), [{
                **_EMPTY, "position": first, "path": record.path, "size": size,
                "mtime_ns": mtime, "indexed_at": time.time(), "error": error}])

    def _known_files(self, rubric_sha: str | None) -> dict[str, tuple[int, int]]:
        """Path -> (size, mtime) of the files indexed, leaving out those whose traces were indexed
        under another rubric (their targets are out of date) or before the index kept the task's
        words, the reward channels and the join keys (Alembic 0013, 0014, 0015). A failed file
        is kept: it has none."""
        with self.engine.connect() as conn:
            found = conn.execute(select(trace_index.c.path, trace_index.c.size,
                                        trace_index.c.mtime_ns, trace_index.c.rubric_sha,
                                        trace_index.c.error, trace_index.c.task,
                                        trace_index.c.rewards,
                                        trace_index.c.join_keys, trace_index.c.words)).all()
        known: dict[str, tuple[int, int]] = {}
        outdated = {r.path for r in found if r.error is None
                    and (r.rubric_sha != rubric_sha or r.task is None or r.rewards is None
                         or r.join_keys is None)}
        self._outdated = outdated  # read whole: rows under the other rubric must not stay
        self._wordless = {r.path for r in found if r.error is None and r.words is None
                          and r.path not in outdated}
        for r in found:
            if r.path not in outdated:
                known[r.path] = (int(r.size), int(r.mtime_ns))
        return known

    def _index_file(self, path: Path, stat: tuple[int, int] | None, rubric: Rubric | None,
                    on_read: OnRead | None) -> None:
        errors: list[TraceError] = []
        self.tails.pop(str(path), None)
        tail = None
        try:
            traces, tail = read_file(path, on_error=errors.append)
        except TraceError as err:
            traces, errors = [], [err]
        except Exception as err:  # an importer's bug must not stop the rest of the library
            traces, errors = [], [TraceError(str(path), "", f"could not be read ({err!r})")]
        errors += self._heard(path, traces, on_read)
        size, mtime = stat if stat is not None else (-1, -1)
        now = time.time()
        records = []
        for position, trace in enumerate(traces):  # a trace's position in its file: read_at's
            try:
                records.append({**trace_record(trace, rubric), "position": position})
            except Exception as err:  # noqa: BLE001 - one trace's figures must not stop the rest
                errors.append(TraceError(str(path), f"trace {trace.trace_id}",
                                         f"could not be summarised ({err!r})"))
        records += [{"position": -1 - i, "error": str(err)} for i, err in enumerate(errors)]
        with self.engine.begin() as conn:
            _forget_words(conn, trace_index.c.path == str(path))
            conn.execute(delete(trace_index).where(trace_index.c.path == str(path)))
            if records:
                conn.execute(trace_index.insert(), [
                    {**_EMPTY, **r, "path": str(path), "size": size, "mtime_ns": mtime,
                     "indexed_at": now} for r in records])
            _keep_tail(conn, str(path), tail, now)
        if tail is not None:
            self.tails[str(path)] = tail

    def _index_failure(self, path: Path, stat: tuple[int, int] | None, err: TraceError) -> None:
        """Record one failure row for a file whose indexing failed past its reader (its traces'
        rows written so far are replaced): the library lists it, and indexes the others."""
        size, mtime = stat if stat is not None else (-1, -1)
        with self.engine.begin() as conn:
            _forget_words(conn, trace_index.c.path == str(path))
            conn.execute(delete(trace_index).where(trace_index.c.path == str(path)))
            _keep_tail(conn, str(path), None, 0.0)
            conn.execute(trace_index.insert(), [{
                **_EMPTY, "position": -1, "error": str(err), "path": str(path), "size": size,
                "mtime_ns": mtime, "indexed_at": time.time()}])

    def _index_more(self, path: Path, stat: tuple[int, int] | None, rubric: Rubric | None,
                    on_read: OnRead | None) -> bool:
        """Index what a trainer appended to a file followed since it was read (its earlier rows
        stay as they are: a label saved on one never moves); False when the file must be read
        whole (not followed, shrunk, rewritten, or failed before)."""
        tail = self._tail_of(str(path))
        if tail is None or stat is None:
            return False
        errors: list[TraceError] = []
        try:
            found = read_more(path, tail, on_error=errors.append)
        except TraceError:
            found = None
        if found is None:
            return False
        traces, after = found
        errors += self._heard(path, traces, on_read)
        now = time.time()
        size, mtime = stat
        records = []
        for i, trace in enumerate(traces):
            try:
                records.append({**trace_record(trace, rubric), "position": tail.traces + i})
            except Exception as err:  # noqa: BLE001 - one trace's figures must not stop the rest
                errors.append(TraceError(str(path), f"trace {trace.trace_id}",
                                         f"could not be summarised ({err!r})"))
        with self.engine.begin() as conn:
            conn.execute(trace_index.update().where(trace_index.c.path == str(path))
                         .values(size=size, mtime_ns=mtime))
            if records:
                conn.execute(trace_index.insert(), [
                    {**_EMPTY, **r, "path": str(path), "size": size, "mtime_ns": mtime,
                     "indexed_at": now} for r in records])
            if errors:
                taken = conn.execute(select(trace_index.c.position).where(
                    trace_index.c.path == str(path), trace_index.c.position < 0)).scalars()
                first = min([0, *taken]) - 1
                conn.execute(trace_index.insert(), [
                    {**_EMPTY, "position": first - i, "error": str(err), "path": str(path),
                     "size": size, "mtime_ns": mtime, "indexed_at": now}
                    for i, err in enumerate(errors)])
            _keep_tail(conn, str(path), after, now)
        self.tails[str(path)] = after  # once its rows are committed
        return True

    @staticmethod
    def _heard(path: Path, traces: Sequence[Trace], on_read: OnRead | None) -> list[TraceError]:
        """Hand each trace read to `on_read`; the failures it raises, as the file's errors."""
        errors: list[TraceError] = []
        for trace in traces:
            if on_read is not None:
                try:
                    on_read(trace)
                except OrchvizError as err:  # the trace still lists, its failure beside it
                    errors.append(TraceError(str(path), f"trace {trace.trace_id}", str(err)))
        return errors

    def _matching_keys(self, query: str, terms: Sequence[str]) -> set[tuple[str, int]]:
        """The rows whose words the search accepts: those holding, for each run of letters
        and digits of each typed word, a word it begins (one range of the word index each),
        which answers an `exact` search alone; else those of them the rule accepts, read
        from their kept text."""
        ranges = [prefix_range(part) for part in dict.fromkeys(
            part for term in terms for part in word_parts(term))]
        docs = [select(trace_words.c.doc).where(trace_words.c.word >= low,
                                                trace_words.c.word < high)
                for low, high in ranges]
        held = docs[0] if len(docs) == 1 else intersect(*docs)
        checked = not exact(query)
        columns = [trace_index.c.path, trace_index.c.position] + (
            [trace_index.c.search_text] if checked else [])
        with self.engine.connect() as conn:
            found = conn.execute(select(*columns).where(trace_index.c.id.in_(held))).all()
        if not checked:
            return {(path, int(position)) for path, position in found}
        return {(path, int(position)) for path, position, text in found
                if matches(text, query)}


def _forget_words(conn: Connection, *where) -> None:
    """Drop the word index's words of the rows these conditions select (before the rows go,
    or their text changes)."""
    conn.execute(delete(trace_words).where(trace_words.c.doc.in_(
        select(trace_index.c.id).where(*where))))


def _keep_words(conn: Connection, *where) -> None:
    """Add to the word index the words of the rows these conditions select that have none yet
    (`words` NULL), from their search text (`viz_app.search.index_words`), and say how many."""
    found = conn.execute(select(trace_index.c.id, trace_index.c.search_text).where(
        *where, trace_index.c.error.is_(None), trace_index.c.words.is_(None))).all()
    kept = {r.id: index_words(r.search_text or "") for r in found}
    pairs = [(w, doc) for doc, held in kept.items() for w in held]
    if pairs:  # hundreds a trace: handed to the driver as they are (SQLAlchemy's parameter
        # building for each was half of the folder index's time for traces of 1,000 words)
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        conn.exec_driver_sql(f"INSERT INTO {trace_words.name} (word, doc) "
                             f"VALUES ({mark}, {mark})", pairs)
    if kept:
        conn.execute(trace_index.update().where(trace_index.c.id == bindparam("doc"))
                     .values(words=bindparam("count")),
                     [{"doc": doc, "count": len(held)} for doc, held in kept.items()])


def _absorbed(text: str | None) -> bool:
    found = _decoded_joined(text)
    return found is not None and found.into is not None


class Joined(msgspec.Struct, frozen=True, omit_defaults=True):
    """What the join made of an indexed trace (an index keeps it as JSON beside its row): a span
    trace's rollout (its file, position and version: `path`, `position`, `sha256`), the earlier
    span trace that took in the rollout it names (`elsewhere`), the rollout's own trace it is
    listed apart from, as reviewers' work rests on it (`apart`), or, for a rollout, the span
    trace it was taken into (`into`)."""

    path: str | None = None
    position: int | None = None
    sha256: str | None = None
    elsewhere: str | None = None
    rollout: str | None = None
    """With `elsewhere` or `apart`: the id of the rollout it names."""
    into: str | None = None
    apart: str | None = None


def joined_read(spans: Trace, joined: Joined | None,
                read: Callable[[str, int], Trace]) -> Trace:
    """The trace the library lists for a span trace, as the join made it: joined with the
    rollout it took in (`read(path, position)` reads that rollout), noted when another span
    trace took it in or it is listed apart from it, else the span trace as it is."""
    if joined is None:
        return spans
    if joined.path is not None and joined.position is not None:
        return joined_trace(spans, read(joined.path, joined.position))
    if joined.elsewhere is not None:
        return elsewhere_noted(spans, joined.rollout or "", joined.elsewhere)
    if joined.apart is not None:
        spans._warnings = [*spans.reader_warnings, TraceWarning(
            code="rollout_labelled_apart", message=f"names rollout {joined.rollout}, listed "
            f"apart as its own trace {joined.apart}: reviewers' work was saved on that trace "
            "before these spans came (labels, a campaign, bookmarks), and stays on it")]
    return spans


def _decoded_joined(text: str | None) -> Joined | None:
    try:
        return msgspec.json.decode(text, type=Joined) if text else None
    except msgspec.DecodeError:
        return None


def _encoded_joined(joined: Joined | None) -> str | None:
    return msgspec.json.encode(joined).decode() if joined is not None else None


def _decoded_keys(text: str | None) -> JoinKeys:
    try:
        return msgspec.json.decode(text, type=JoinKeys) if text else JoinKeys()
    except msgspec.DecodeError:
        return JoinKeys()


def _decoded_tail(text: str | None) -> Tail | None:
    try:
        return msgspec.json.decode(text, type=Tail) if text else None
    except msgspec.DecodeError:  # a tail of another layout: the file is read whole
        return None


def _keep_tail(conn: Connection, path: str, tail: Tail | None, now: float) -> None:
    """Keep where a file was left (in the transaction of its rows), or forget it (None)."""
    conn.execute(delete(follow_tails).where(follow_tails.c.path == path))
    if tail is not None:
        conn.execute(follow_tails.insert().values(
            path=path, tail=msgspec.json.encode(tail).decode(), updated_at=now))


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _targets(text: str | None) -> dict[str, list[str]] | None:
    return json.loads(text) if text else None


def _under(path: str, folders: Sequence[Path]) -> bool:
    return any(path == str(f) or path.startswith(str(f) + os.sep) for f in folders)


_EMPTY = {c.name: None for c in trace_index.columns if c.name != "id"}


def trace_record(trace: Trace, rubric: Rubric | None,
                 text_limit: int = SEARCH_TEXT_LIMIT) -> dict:
    """What the folder index keeps of one trace: its summary (`summary.summarise`, which the
    pool index keeps too), its targets as JSON and the rubric they are under."""
    found = summarise(trace, rubric, text_limit)
    return {
        "rollout_step": found.rollout_step, "rollout_group": found.rollout_group,
        "trainer_reward": found.trainer_reward, "task": found.task,
        "rewards": json.dumps(found.rewards),
        "trace_id": found.trace_id, "task_id": found.task_id, "system": found.system,
        "topology": found.topology, "source_format": found.source_format,
        "events": found.events, "agents": found.agents, "depth": found.depth,
        "makespan_s": found.makespan_s, "parallelism": found.parallelism,
        "tokens": found.tokens, "cost_usd": found.cost_usd, "sha256": found.sha256,
        "warnings": found.warnings, "search_text": found.text, "error": None,
        "targets": None if found.targets is None else json.dumps(found.targets),
        "rubric_sha": None if rubric is None else rubric.sha256,
        "join_keys": msgspec.json.encode(join_keys(trace)).decode(),
    }
