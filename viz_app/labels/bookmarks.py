"""Bookmarks: the moments of a trace a reviewer points at in a case study, each with a note.

A bookmark is anchored on one event or on a time range (seconds from the trace's first event)
and carries a Markdown note. Like labels, bookmarks are append-only: an edit or a removal adds a
version row with its reviewer and time, and the *current* bookmark is its newest version (a
removal is a version marked `removed`). The table lives in the one orchviz database
(`viz_app.db`), beside the labels.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import Boolean, Column, Float, Index, String, Table, Text, insert, select
from sqlalchemy.exc import IntegrityError

from viz_app import db
from viz_app.analysis import analyze
from viz_app.labels.store import now, trace_sha256
from viz_app.model import Trace

BOOKMARKS_SCHEMA_VERSION = 1
"""Version of the `bookmarks` table, kept in `orchviz_schema` under the name `bookmarks`."""

NOTE_LIMIT = 20_000
"""Longest note kept, in characters (a case study's note is a paragraph, not a file)."""

bookmarks_table = Table(
    "bookmarks", db.metadata,
    Column("version_id", String(64), primary_key=True),
    Column("bookmark_id", String(64), nullable=False),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=True),
    Column("start_s", Float, nullable=False),
    Column("end_s", Float, nullable=False),
    Column("note", Text, nullable=False),
    Column("reviewer", String(256), nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("removed", Boolean, nullable=False),
    Index("bookmarks_by_trace", "trace_id", "bookmark_id"),
)
"""One row per version of a bookmark; `start_s == end_s` for an event or an instant."""

BOOKMARK_FIELDS = tuple(str(c.name) for c in bookmarks_table.columns)
"""Every field of a bookmark version, in the order exports write them."""


class BookmarkError(ValueError):
    """A bookmark the trace refuses: an unknown event, a range outside the run, no reviewer."""


class Bookmark(BaseModel):
    """One version of a bookmark: where it points, its note, and who wrote it when."""

    model_config = ConfigDict(frozen=True)

    version_id: str = Field(description="Unique id of this version.")
    bookmark_id: str = Field(description="The bookmark this is a version of (stable over edits).")
    trace_id: str = Field(description="The trace bookmarked.")
    trace_sha256: str = Field(description="SHA-256 of the trace file the bookmark was made on.")
    event_id: str | None = Field(description="The event pointed at; None for a time range.")
    start_s: float = Field(description="Start of the moment, seconds from the first event.")
    end_s: float = Field(description="End of the moment (equal to start for an event).")
    note: str = Field(description="The reviewer's note, in Markdown (shown with raw HTML "
                      "escaped).")
    reviewer: str = Field(description="Who wrote this version.")
    created_at: str = Field(description="When, as ISO 8601 UTC with microseconds.")
    removed: bool = Field(False, description="This version removes the bookmark.")

    @property
    def is_range(self) -> bool:
        """Whether the bookmark points at a time range rather than an event."""
        return self.event_id is None

    @property
    def where(self) -> str:
        """Where it points, for people: 'event e12 at 31.0s' or '10.0s to 25.5s'."""
        if self.event_id is not None:
            return f"event {self.event_id} at {self.start_s:g}s"
        if self.end_s > self.start_s:
            return f"{self.start_s:g}s to {self.end_s:g}s"
        return f"at {self.start_s:g}s"

    @property
    def title(self) -> str:
        """The note's first non-empty line without Markdown heading marks (for lists)."""
        for line in self.note.splitlines():
            if line.strip():
                return line.strip().lstrip("#").strip()[:120]
        return "(no note)"

    def to_record(self) -> dict[str, Any]:
        """The version as an export record: every field."""
        return self.model_dump()


def anchor(trace: Trace, event_id: str | None = None, start_s: float | None = None,
           end_s: float | None = None) -> tuple[str | None, float, float]:
    """(event id, start, end) of a bookmark on an event or a time range of a trace, times in
    seconds from its first event; BookmarkError when the event is unknown or the range lies
    outside the run."""
    analysis = analyze(trace)
    first = float(analysis.order[0].t)
    if event_id:
        if event_id not in trace.events_by_id:
            raise BookmarkError(f"trace {trace.trace_id} has no event {event_id!r}")
        at = float(trace.event(event_id).t) - first
        return event_id, at, at
    if start_s is None:
        raise BookmarkError("a bookmark points at an event or at a time range")
    end = start_s if end_s is None else end_s
    # a little slack: a slider's last step may land a hair past the end of the run
    span = float(analysis.makespan) * (1 + 1e-9) + 1e-9
    if not 0 <= start_s <= end <= span:
        raise BookmarkError(f"the range {start_s:g}s to {end:g}s is not within the run "
                            f"(0s to {analysis.makespan:g}s), or ends before it starts")
    return None, float(start_s), float(end)


def current_bookmarks(versions: Iterable[Bookmark]) -> list[Bookmark]:
    """The newest version of each bookmark that is not removed, in the order to present them:
    by trace, then time in the run, then when first written."""
    newest: dict[str, Bookmark] = {}
    first: dict[str, str] = {}
    for v in versions:
        first[v.bookmark_id] = min(first.get(v.bookmark_id, v.created_at), v.created_at)
        held = newest.get(v.bookmark_id)
        if held is None or (v.created_at, v.version_id) > (held.created_at, held.version_id):
            newest[v.bookmark_id] = v
    alive = [b for b in newest.values() if not b.removed]
    return sorted(alive, key=lambda b: (b.trace_id, b.start_s, b.end_s, first[b.bookmark_id],
                                        b.bookmark_id))


def bookmarks_at(bookmarks: Iterable[Bookmark], event_id: str) -> list[Bookmark]:
    """The bookmarks that point at one event."""
    return [b for b in bookmarks if b.event_id == event_id]


class BookmarkStore:
    """The bookmarks in one database."""

    def __init__(self, url: str):
        self.url = url
        self.engine = db.connect(url)
        self._record_schema()

    def _record_schema(self) -> None:
        info = db.schema_info
        with self.engine.begin() as conn:
            found = conn.execute(select(info.c.version)
                                 .where(info.c.name == "bookmarks")).scalar()
            if found is None:
                try:
                    with conn.begin_nested():
                        conn.execute(info.insert().values(name="bookmarks",
                                                          version=BOOKMARKS_SCHEMA_VERSION))
                except IntegrityError:
                    pass  # another process recorded it first
            elif found > BOOKMARKS_SCHEMA_VERSION:
                raise RuntimeError(f"the bookmarks were written by a newer orchviz (schema "
                                   f"{found}); this one knows {BOOKMARKS_SCHEMA_VERSION}")

    def _write(self, version: Bookmark) -> Bookmark:
        with self.engine.begin() as conn:
            conn.execute(insert(bookmarks_table), [version.model_dump()])
        return version

    def add(self, trace: Trace, reviewer: str, note: str = "", *, event_id: str | None = None,
            start_s: float | None = None, end_s: float | None = None) -> Bookmark:
        """Bookmark an event (or a time range) of a trace with a note; BookmarkError when the
        trace refuses the anchor or no reviewer is given."""
        event, start, end = anchor(trace, event_id, start_s, end_s)
        return self._write(Bookmark(
            version_id=uuid.uuid4().hex, bookmark_id=uuid.uuid4().hex, trace_id=trace.trace_id,
            trace_sha256=trace_sha256(trace), event_id=event, start_s=start, end_s=end,
            note=_note(note), reviewer=_reviewer(reviewer), created_at=now()))

    def edit(self, trace: Trace, bookmark_id: str, reviewer: str, note: str, *,
             event_id: str | None = None, start_s: float | None = None,
             end_s: float | None = None) -> Bookmark:
        """A new version of a bookmark with a new note (and, if given, a new anchor); the older
        versions stay as its history."""
        held = self.get(bookmark_id)
        if held is None or held.trace_id != trace.trace_id:
            raise BookmarkError(f"trace {trace.trace_id} has no bookmark {bookmark_id!r}")
        if event_id is None and start_s is None:
            event, start, end = held.event_id, held.start_s, held.end_s
        else:
            event, start, end = anchor(trace, event_id, start_s, end_s)
        return self._write(held.model_copy(update=dict(
            version_id=uuid.uuid4().hex, trace_sha256=trace_sha256(trace), event_id=event,
            start_s=start, end_s=end, note=_note(note), reviewer=_reviewer(reviewer),
            created_at=now(), removed=False)))

    def remove(self, bookmark_id: str, reviewer: str) -> Bookmark:
        """Remove a bookmark: a last version marked removed (its history is kept)."""
        held = self.get(bookmark_id)
        if held is None:
            raise BookmarkError(f"no bookmark {bookmark_id!r}")
        return self._write(held.model_copy(update=dict(
            version_id=uuid.uuid4().hex, reviewer=_reviewer(reviewer), created_at=now(),
            removed=True)))

    def versions(self, trace_id: str | None = None) -> list[Bookmark]:
        """Every version of every bookmark (of one trace), oldest first."""
        query = select(*bookmarks_table.columns)
        if trace_id is not None:
            query = query.where(bookmarks_table.c.trace_id == trace_id)
        query = query.order_by(bookmarks_table.c.created_at, bookmarks_table.c.version_id)
        with self.engine.connect() as conn:
            return [Bookmark(**row._mapping) for row in conn.execute(query)]

    def current(self, trace_id: str | None = None) -> list[Bookmark]:
        """The current bookmarks (of one trace) in presentation order: by time in the run."""
        return current_bookmarks(self.versions(trace_id))

    def get(self, bookmark_id: str) -> Bookmark | None:
        """The newest version of a bookmark (removed or not), or None."""
        history = self.history(bookmark_id)
        return history[-1] if history else None

    def history(self, bookmark_id: str) -> list[Bookmark]:
        """Every version of one bookmark, oldest first."""
        query = (select(*bookmarks_table.columns)
                 .where(bookmarks_table.c.bookmark_id == bookmark_id)
                 .order_by(bookmarks_table.c.created_at, bookmarks_table.c.version_id))
        with self.engine.connect() as conn:
            return [Bookmark(**row._mapping) for row in conn.execute(query)]

    def records(self, trace_id: str | None = None) -> list[dict[str, Any]]:
        """The current bookmarks as export records, each with `versions` (how many versions it
        has) and `first_reviewer` and `first_created_at` (who made it, and when)."""
        versions = self.versions(trace_id)
        by_id: dict[str, list[Bookmark]] = {}
        for v in versions:
            by_id.setdefault(v.bookmark_id, []).append(v)
        return [{**b.to_record(), "versions": len(by_id[b.bookmark_id]),
                 "first_reviewer": by_id[b.bookmark_id][0].reviewer,
                 "first_created_at": by_id[b.bookmark_id][0].created_at}
                for b in current_bookmarks(versions)]


def _reviewer(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise BookmarkError("a bookmark needs a reviewer name")
    return name


def _note(text: str) -> str:
    text = (text or "").strip()
    if len(text) > NOTE_LIMIT:
        raise BookmarkError(f"a note holds at most {NOTE_LIMIT:,} characters "
                            f"(this one has {len(text):,})")
    return text


def open_bookmarks(url: str) -> BookmarkStore:
    """A bookmark store on a SQLAlchemy URL (see `viz_app.settings.database_url` for paths)."""
    return BookmarkStore(url)
