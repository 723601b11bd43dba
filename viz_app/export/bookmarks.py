"""The bookmarks export: every current bookmark with its note, exported beside the labels.

One JSON Lines record per bookmark, in presentation order (by trace, then time in the run), with
every field of its newest version and who first made it (the records `BookmarkStore.records`
gives).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any



def bookmark_records(records: Iterable[Mapping[str, Any]],
                     reviewer: str | None = None) -> list[dict[str, Any]]:
    """The current bookmark records to export; with `reviewer`, only those whose newest version
    is theirs."""
    return [dict(r) for r in records if reviewer is None or r["reviewer"] == reviewer]


