"""The library's storage kinds behind one interface (inspect_ai's `Recorder` and its registry
are the model: one interface, several kinds of storage, a location's kind found by asking each).

A pool keeps its traces in shards, one trace a row, and its index (`PoolIndex`, DuckDB and FTS5
files beside the label database) answers for them. The folder library is a pool of one shard a
file: the folder index (`TraceIndex`, a table of the label database) lists each file's traces
by their position in it, and `Folders` answers for them the same calls. The Library page, the
CLI and campaigns hold a `Storage` and ask it alike: a page, a count, the values of a field, a
sample (the one sampler, `viz_app.sampling`), rows by id, a trace, the failures; a search is
the one search (`viz_app.search`) and a filter the one language (`viz_app.query`) for both.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from viz_app.errors import NoSuchTrace
from viz_app.listing import Listing
from viz_app.store.index import IndexResult, TraceIndex
from viz_app.store.pool_index import PoolIndex

if TYPE_CHECKING:
    from viz_app.model import Trace
    from viz_app.query import Condition
    from viz_app.summary import Bin, LibraryFailure, LibraryRow


class Storage(Protocol):
    """What every storage of the library answers (a pool's index, the folders)."""

    kind: str
    location: str

    def page(self, filters: Sequence[Condition] = (), search: str = "", sort: str | None = None,
             descending: bool = False, offset: int = 0, limit: int = 50) -> list[LibraryRow]:
        """One page of the traces a filter and search select."""

    def count(self, filters: Sequence[Condition] = (), search: str = "") -> int:
        """How many traces a filter and search select."""

    def values(self, field: str, filters: Sequence[Condition] = (), search: str = "",
               limit: int = 100) -> list[tuple[str, int]]:
        """The commonest values of a text field among them, with counts."""

    def sample(self, n: int, seed: int = 0, filters: Sequence[Condition] = (), search: str = "",
               stratify: str | None = None, strata: int = 4) -> list[str]:
        """Trace ids of n of them, by the one sampler."""

    def rows(self, trace_ids: Sequence[str], filters: Sequence[Condition] = (),
             search: str = "") -> list[LibraryRow]:
        """The rows of these ids that the filter and search keep, in the ids' order."""

    def trace(self, trace_id: str) -> Trace:
        """A trace by id (TraceError when there is none, or it cannot be read)."""

    def failures(self, limit: int = 100) -> list[LibraryFailure]:
        """What could not be read, first ones first."""

    def failure_count(self) -> int:
        """How many failures there are."""

    def histogram(self, field: str, filters: Sequence[Condition] = (), search: str = "",
                  bins: int = 20) -> list[Bin]:
        """Bars of a numeric field over the traces selected."""

    def reward_names(self) -> list[str]:
        """The reward channels the traces carry."""


class Folders(Listing):
    """The library's folders as a pool of one shard a file: the folder index's rows (a file,
    and a trace's position in it) and failures, queried in memory (`viz_app.listing`) with the
    index's search, which holds the rows' words."""

    kind = "folders"

    def __init__(self, index: TraceIndex, result: IndexResult, location: str = ""):
        once = {}  # a trace two files hold is one trace of the library: its first file's
        for row in result.rows:
            once.setdefault(row.trace_id, row)
        super().__init__(list(once.values()), search=index.search, location=location)
        self.index = index
        self.result = result

    @staticmethod
    def handles(location: str) -> bool:
        """Any location is a folder library's: a folder, a file, a glob."""
        return True

    def trace(self, trace_id: str) -> Trace:
        """A trace of the folders by id, read from its file and position."""
        found = self.index.find(trace_id)
        if found is None:
            raise NoSuchTrace(trace_id, "", "no trace with this id in the library's folders")
        return self.index.read(*found)

    def failures(self, limit: int = 100) -> list[LibraryFailure]:
        """The files (and lines of files) that could not be read, in file order."""
        return self.result.failures[:max(0, int(limit))]

    def failure_count(self) -> int:
        return len(self.result.failures)

    def under(self, folders: Sequence[str]) -> Folders:
        """The traces of the files under these folders (or these files) alone."""
        bases = [Path(f).resolve() for f in folders]
        kept = [r for r in self.result.rows
                if any(Path(r.path) == b or b in Path(r.path).parents for b in bases)]
        return Folders(self.index, self.result.model_copy(update={"rows": kept}),
                       self.location)


STORAGES: dict[str, type] = {"pool": PoolIndex, "folders": Folders}
"""The library's storage kinds by name, asked in this order which handles a location (the
folders, last, take any)."""


def storage_kind(location: str) -> str:
    """The kind of storage a location of the library is: the first of STORAGES whose
    `handles(location)` says so."""
    return next(name for name, kind in STORAGES.items() if kind.handles(location))
