"""Bookmarks: the moments of a trace a reviewer points at in a case study, each with a note.

A bookmark is anchored on one event or on a time range (seconds from the trace's first event)
and carries a Markdown note. Like labels, bookmarks are append-only: an edit or a removal adds a
version (`viz_app.store.bookmarks` keeps them) with its reviewer and time, and the *current*
bookmark is its newest version (a removal is a version marked `removed`). Pure: no SQL here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from viz_app.analysis import analyze
from viz_app.errors import BookmarkError
from viz_app.model import Trace

NOTE_LIMIT = 20_000
"""Longest note kept, in characters (a case study's note is a paragraph, not a file)."""


class Bookmark(BaseModel):
    """One version of a bookmark: where it points, its note, and who wrote it when."""

    model_config = ConfigDict(frozen=True)

    version_id: str = Field(description="Unique id of this version.")
    bookmark_id: str = Field(description="The bookmark this is a version of (stable over edits).")
    trace_id: str = Field(description="The trace bookmarked.")
    trace_sha256: str = Field(description="`Trace.sha256` of the trace the bookmark was made on.")
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


def checked_reviewer(name: str) -> str:
    """The reviewer's name, stripped; BookmarkError when there is none."""
    name = (name or "").strip()
    if not name:
        raise BookmarkError("a bookmark needs a reviewer name")
    return name


def checked_note(text: str) -> str:
    """The note, stripped; BookmarkError when it is longer than NOTE_LIMIT."""
    text = (text or "").strip()
    if len(text) > NOTE_LIMIT:
        raise BookmarkError(f"a note holds at most {NOTE_LIMIT:,} characters "
                            f"(this one has {len(text):,})")
    return text
