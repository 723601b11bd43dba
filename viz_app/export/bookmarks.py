"""The bookmarks export: every current bookmark with its note, exported beside the labels.

One JSON Lines record per bookmark, in presentation order (by trace, then time in the run), with
every field of its newest version and who first made it (`BookmarkStore.records`).
"""

from __future__ import annotations

from pathlib import Path

from viz_app.export.records import write_jsonl
from viz_app.store.bookmarks import BookmarkStore


def bookmark_records(store: BookmarkStore, reviewer: str | None = None) -> list[dict]:
    """The current bookmarks as records; with `reviewer`, only those whose newest version is
    theirs."""
    return [r for r in store.records() if reviewer is None or r["reviewer"] == reviewer]


def write_bookmarks(store: BookmarkStore, path: str | Path, reviewer: str | None = None) -> Path:
    """Write the current bookmarks as JSON Lines."""
    return write_jsonl(bookmark_records(store, reviewer), path)
