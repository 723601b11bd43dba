"""The bookmarks facet (`ws.bookmarks`): case studies of a trace, its bookmarks with notes
(each edit a new version, the history kept) and what a report or a presentation shows of its
labels: every label for a lead, else only what the viewer may see (`ws.campaigns`' sealing).
"""

from __future__ import annotations

from viz_app.labels import Bookmark, LabelRecord
from viz_app.model import Trace
from viz_app.store import BookmarkStore
from viz_app.workspace.campaigns import Campaigns
from viz_app.workspace.ground import Ground


class Bookmarks:
    """A trace's bookmarks and its case study."""

    def __init__(self, ground: Ground, campaigns: Campaigns):
        self._ground = ground
        self._campaigns = campaigns
        self._store = BookmarkStore(ground.engine)

    def add(self, trace: Trace, reviewer: str, note: str = "", *, event_id: str | None = None,
            start_s: float | None = None, end_s: float | None = None) -> Bookmark:
        """Bookmark an event (or a time range) of a trace with a note; BookmarkError when the
        trace refuses the anchor or no reviewer is given."""
        return self._store.add(trace, reviewer, note, event_id=event_id, start_s=start_s,
                               end_s=end_s)

    def edit(self, trace: Trace, bookmark_id: str, reviewer: str, note: str, *,
             event_id: str | None = None, start_s: float | None = None,
             end_s: float | None = None) -> Bookmark:
        """A new version of a bookmark with a new note (and, if given, a new anchor); the older
        versions stay as its history."""
        return self._store.edit(trace, bookmark_id, reviewer, note, event_id=event_id,
                                start_s=start_s, end_s=end_s)

    def remove(self, bookmark_id: str, reviewer: str) -> Bookmark:
        """Remove a bookmark: a last version marked removed (its history is kept)."""
        return self._store.remove(bookmark_id, reviewer)

    def current(self, trace_id: str | None = None) -> list[Bookmark]:
        """The current bookmarks (of one trace) in presentation order: by time in the run."""
        return self._store.current(trace_id)

    def history(self, bookmark_id: str) -> list[Bookmark]:
        """Every version of one bookmark, oldest first."""
        return self._store.history(bookmark_id)

    def records(self) -> list[dict]:
        """The current bookmarks as export records (versions and first author included)."""
        return self._store.records()

    def case_study(self, trace: Trace, viewer: str | None = None, *, lead: bool = True
                   ) -> tuple[list[LabelRecord], list[Bookmark]]:
        """A trace's current labels (its own and the judgements it is part of) and bookmarks:
        what a report and a presentation show. A lead (and the CLI) gets every label; anyone
        else (`lead=False`) the labels `ws.campaigns.labels_in_view` lets `viewer` see on the
        trace itself, blind: no campaign's answers, adjudications or gold before their own
        save there."""
        records = [r for r in self._ground.labels.current_records()
                   if trace.trace_id in (r["trace_id"], r.get("pair_trace_id"))] \
            if self._ground.given_rubric is not None else []
        if not lead:
            seen = {x.label_id for x in self._campaigns.labels_in_view(trace.trace_id, viewer)}
            records = [r for r in records if r["label_id"] in seen
                       or r["trace_id"] != trace.trace_id]  # judgements of pairs stay
        return records, self.current(trace.trace_id)
