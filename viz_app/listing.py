"""A listing: rows of the library held in memory, queried as a pool's index is queried.

A folder library is a pool of one shard a file: its index lists its rows (`summary.LibraryRow`:
the file, and the trace's position in it), and a `Listing` of them answers the calls a pool's
index answers (`page`, `count`, `values`, `sample`, `rows`) with the same filter language
(`viz_app.query`), the same sampler (`viz_app.sampling`) and the one search (`viz_app.search`,
through the folder index, which holds the rows' words). A campaign's sample of any list of rows
(`labels.campaign_plan.sample_rows`) is drawn from a listing of them too.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from viz_app.query import Condition, FilterError, field_kind, holds, ordered, row_value
from viz_app.sampling import draw, ntile, per_step_rows
from viz_app.summary import Bin

if TYPE_CHECKING:
    from viz_app.summary import LibraryRow

Search = Callable[[Sequence["LibraryRow"], str], list["LibraryRow"]]
"""The rows of a list that a search keeps (the folder index's `search`, the one rule)."""

PAGE_SIZE = 50


class Listing:
    """Rows of the library in their order (files, then positions), queried in memory."""

    def __init__(self, rows: Sequence[LibraryRow], search: Search | None = None,
                 location: str = ""):
        self._rows = list(rows)
        self._search = search
        self._found: dict[str, set[int]] = {}
        """The rows each search kept (by their place), asked once: a page, its count, its
        histogram and its sample search alike, and the rows are fixed."""
        self.location = location
        """What the rows are of ('' for a list of rows, else the folders' or a file's name)."""

    def selected(self, filters: Sequence[Condition] = (), search: str = "") -> list[LibraryRow]:
        """The rows every filter holds for and the search keeps, in the listing's order."""
        if not search.strip():
            return [r for r in self._rows if all(holds(r, c) for c in filters)]
        if self._search is None:
            raise FilterError("this list of traces holds no words to search")
        if search not in self._found:
            while len(self._found) >= 8:
                self._found.pop(next(iter(self._found)))
            self._found[search] = {id(r) for r in self._search(self._rows, search)}
        found = self._found[search]
        return [r for r in self._rows if id(r) in found
                and (not filters or all(holds(r, c) for c in filters))]

    def page(self, filters: Sequence[Condition] = (), search: str = "", sort: str | None = None,
             descending: bool = False, offset: int = 0, limit: int = PAGE_SIZE
             ) -> list[LibraryRow]:
        """One page of the rows selected, in the library's one order (`viz_app.query.ordered`:
        the listing's order, or by a field chosen, missing values last, ties in the listing's
        order)."""
        rows = ordered(self.selected(filters, search), sort, descending)
        return rows[max(0, int(offset)):max(0, int(offset)) + max(0, int(limit))]

    def count(self, filters: Sequence[Condition] = (), search: str = "") -> int:
        """How many rows a filter and search select."""
        return len(self.selected(filters, search))

    def histogram(self, field: str, filters: Sequence[Condition] = (), search: str = "",
                  bins: int = 20) -> list[Bin]:
        """Bars of a numeric field over the rows selected, cut as a pool's index cuts them:
        equal widths, `bins` at most; one per whole number when the values are whole and
        fewer."""
        if field_kind(field) != "number":
            raise FilterError(f"a histogram needs a numeric field, not {field}")
        values = [float(v) for r in self.selected(filters, search)
                  if (v := row_value(r, field)) is not None and math.isfinite(float(v))]
        if not values:
            return []
        low, high, bins = min(values), max(values), max(1, int(bins))
        if all(v == math.floor(v) for v in values) and high - low + 1 <= bins:
            width, bins = 1.0, int(high - low + 1)
        else:
            width = (high - low) / bins or 1.0
        counts = Counter(min(math.floor((v - low) / width), bins - 1) for v in values)
        return [Bin(low=low + i * width, high=low + (i + 1) * width, count=counts.get(i, 0))
                for i in range(bins)]

    def reward_names(self) -> list[str]:
        """The reward channels the rows carry."""
        return sorted({name for r in self._rows for name in (r.rewards or {})})

    def values(self, field: str, filters: Sequence[Condition] = (), search: str = "",
               limit: int = 100) -> list[tuple[str, int]]:
        """The commonest values of a text field among the rows selected, with counts."""
        if field_kind(field) != "text":
            raise FilterError(f"values() needs a text field, not {field}")
        counts = Counter(str(row_value(r, field)) for r in self.selected(filters, search))
        return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:int(limit)]

    def sample(self, n: int, seed: int = 0, filters: Sequence[Condition] = (), search: str = "",
               stratify: str | None = None, strata: int = 4) -> list[str]:
        """Trace ids of `n` rows drawn from those selected by the library's one sampler
        (`viz_app.sampling.draw`), evenly over a field's strata when given (a numeric
        field's `strata` quantiles): what a pool's index draws from the same traces."""
        rows = self.selected(filters, search)
        if stratify is None:
            keys: list[Any] = [0] * len(rows)
        elif field_kind(stratify) == "number":
            keys = ntile([row_value(r, stratify) for r in rows], strata)
        else:
            keys = [row_value(r, stratify) for r in rows]
        return [rows[i].trace_id for i in draw(keys, n, seed)]

    def per_step(self, n: int, seed: int = 0, filters: Sequence[Condition] = (),
                 search: str = "", taken: Mapping[int, set[str]] | None = None
                 ) -> list[LibraryRow]:
        """The rows of N whole groups of each training step among the rows selected, as a
        pool's index draws them (`viz_app.sampling.per_step_groups`); `taken`, the groups of
        each step a campaign already has, tops a step up to N."""
        return per_step_rows(self.selected(filters, search), n, seed, taken)

    def rows(self, trace_ids: Sequence[str], filters: Sequence[Condition] = (),
             search: str = "") -> list[LibraryRow]:
        """The rows of these trace ids that the filters and search keep, in the ids' order
        (each once: a trace listed twice, its first row)."""
        found: dict[str, LibraryRow] = {}
        wanted = set(trace_ids)
        for row in self.selected(filters, search):
            if row.trace_id in wanted:
                found.setdefault(row.trace_id, row)
        return [found[t] for t in dict.fromkeys(trace_ids) if t in found]
