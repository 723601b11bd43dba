"""The bookmark store: every version of every bookmark, append-only (see
`viz_app.labels.bookmark`)."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import Engine, insert, select

from viz_app.errors import BookmarkError
from viz_app.labels import (Bookmark, anchor, checked_note, checked_reviewer, current_bookmarks,
                            now, trace_sha256)
from viz_app.model import Trace
from viz_app.store.tables import bookmarks_table


class BookmarkStore:
    """The bookmarks in one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

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
            note=checked_note(note), reviewer=checked_reviewer(reviewer), created_at=now()))

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
            start_s=start, end_s=end, note=checked_note(note), reviewer=checked_reviewer(reviewer),
            created_at=now(), removed=False)))

    def remove(self, bookmark_id: str, reviewer: str) -> Bookmark:
        """Remove a bookmark: a last version marked removed (its history is kept)."""
        held = self.get(bookmark_id)
        if held is None:
            raise BookmarkError(f"no bookmark {bookmark_id!r}")
        return self._write(held.model_copy(update=dict(
            version_id=uuid.uuid4().hex, reviewer=checked_reviewer(reviewer), created_at=now(),
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
