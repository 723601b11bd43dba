"""The pool index's queries over the traces a filter and a search select."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

import duckdb
import pyarrow as pa

from viz_app.errors import TraceError
from viz_app.io.pool import Shard, read_trace
from viz_app.model import Trace
from viz_app.query import Condition, FilterError, field_kind
from viz_app.sampling import draw, per_step_groups
from viz_app.search import matches, plain
from viz_app.store.pool_index._files import IndexFiles
from viz_app.store.pool_index._rows import _ROW_COLUMNS, Bin, pool_row
from viz_app.store.pool_index._sql import field_sql, order_sql, search_query, where_sql
from viz_app.store.pool_index._words import unpack_words
from viz_app.summary import LibraryFailure, LibraryRow

PAGE_SIZE = 50
ID_CHUNK = 5000
"""Trace ids one query of `rows` names at most."""


class Queries(IndexFiles):
    """What the index answers: pages, counts, histograms, values, samples of the traces a filter
    and search select, where a trace is, and what failed."""

    def _words_exact(self) -> bool:
        """Whether every doc of the word index has its row (no shard was dropped since the
        last whole update), so the word index alone can count and page a search."""
        with self._duck() as con:
            if int(self._meta(con, "stale_words") or 0) != 0:
                return False
        return not self._words_dirty()  # an update's words not yet (or no longer) in DuckDB

    def _word_count(self, search: str) -> int:
        """How many docs of the word index a search matches (counted inside SQLite)."""
        key = "#" + (search_query(search) or "")
        if key not in self._hit_cache:
            with self._text() as db:
                self._hit_cache[key] = db.execute(
                    "SELECT count(*) FROM words WHERE words MATCH ?",
                    [search_query(search)]).fetchall()[0][0]
        return self._hit_cache[key]

    def _hits(self, search: str) -> pa.Table | None:
        """The docs of the traces matching a search; None when there is nothing to search.
        The last few searches are kept until the index changes: a page and its count search
        once."""
        import numpy as np

        query = search_query(search)
        if query is None:
            return None
        found = self._hit_cache.get(query)
        if found is None:
            with self._text() as db:
                try:
                    docs = np.fromiter((r[0] for r in db.execute(
                        "SELECT rowid FROM words WHERE words MATCH ?", [query])), np.int64)
                except sqlite3.OperationalError as err:
                    raise FilterError(f"cannot search for {search!r} ({err})") from None
            if not plain(search):  # FTS5 found each word's tokens: keep where the words begin
                docs = self._words_begun(docs, search)
            found = pa.table({"doc": docs})
            while len(self._hit_cache) >= 8:
                self._hit_cache.pop(next(iter(self._hit_cache)))
            self._hit_cache[query] = found
        return found

    def _words_begun(self, docs, search: str):
        """Of the docs FTS5 found for a search that is not `plain`, those whose words the one
        search rule accepts (`viz_app.search.matches`, read from each doc's kept copy of its
        words); a doc whose copy an index written before copies were kept lacks stays."""
        import numpy as np

        kept: list[int] = []
        found = docs.tolist()
        with self._text() as db:
            for start in range(0, len(found), ID_CHUNK):
                chunk = found[start:start + ID_CHUNK]
                bodies = dict(db.execute(
                    f"SELECT doc, body FROM texts WHERE doc IN ({', '.join('?' * len(chunk))})",
                    chunk).fetchall())
                kept += [d for d in chunk if d not in bodies
                         or matches(unpack_words(bodies[d]), search)]
        return np.array(kept, np.int64)

    @contextmanager
    def _selection(self, filters: Sequence[Condition], search: str
                   ) -> Iterator[tuple[duckdb.DuckDBPyConnection, str, list]]:
        """A connection, the FROM ... WHERE ... of the traces a filter and search select, and
        its parameters (callers put theirs before or after, in the order of the SQL text)."""
        hits = self._hits(search)
        params: list = []
        where = where_sql(filters, params)
        with self._duck() as con:
            if hits is None:
                yield con, f"FROM traces t WHERE {where}", params
            else:
                con.register("hits", hits)
                yield con, f"FROM traces t JOIN hits h ON h.doc = t.doc WHERE {where}", params

    def page(self, filters: Sequence[Condition] = (), search: str = "", sort: str | None = None,
             descending: bool = False, offset: int = 0, limit: int = PAGE_SIZE) -> list[LibraryRow]:
        """One page of the traces a filter and search select, in the library's one order
        (`viz_app.query.ordered`: the index's order, or by a field chosen, missing values
        last, ties in the index's order)."""
        if sort is None and not filters and search_query(search) is not None and \
                plain(search) and self._words_exact():
            return self._word_page(search, offset, limit)  # the word index alone: no join
        order_params: list = []
        order = order_sql(sort, descending, order_params)
        with self._selection(filters, search) as (con, selection, params):
            columns = ", ".join(f"t.{c}" for c in _ROW_COLUMNS)
            found = con.execute(f"SELECT {columns} {selection} ORDER BY {order} "
                                "LIMIT ? OFFSET ?", [*params, *order_params, max(0, int(limit)),
                                                     max(0, int(offset))]).fetchall()
        return [pool_row(dict(zip(_ROW_COLUMNS, r)), self.location) for r in found]

    def _word_page(self, search: str, offset: int, limit: int) -> list[LibraryRow]:
        """A page of a search in index order, read from the word index in doc order (FTS5
        gives matches by rowid, so it stops after the page)."""
        with self._text() as db:
            docs = [r[0] for r in db.execute(
                "SELECT rowid FROM words WHERE words MATCH ? ORDER BY rowid LIMIT ? OFFSET ?",
                [search_query(search), max(0, int(limit)), max(0, int(offset))])]
        with self._duck() as con:
            con.register("picked", pa.table({"doc": pa.array(docs, pa.int64())}))
            columns = ", ".join(f"t.{c}" for c in _ROW_COLUMNS)
            found = con.execute(f"SELECT {columns} FROM traces t JOIN picked p ON p.doc = t.doc "
                                "ORDER BY t.doc").fetchall()
        return [pool_row(dict(zip(_ROW_COLUMNS, r)), self.location) for r in found]

    def count(self, filters: Sequence[Condition] = (), search: str = "") -> int:
        """How many traces a filter and search select."""
        if search_query(search) is not None and plain(search) and not filters and \
                self._words_exact():
            return self._word_count(search)
        with self._selection(filters, search) as (con, selection, params):
            return con.execute(f"SELECT count(*) {selection}", params).fetchall()[0][0]

    def histogram(self, field: str, filters: Sequence[Condition] = (), search: str = "",
                  bins: int = 20) -> list[Bin]:
        """Bars of a numeric field over the traces selected (equal widths, `bins` at most;
        one per whole number when the field's values are whole and fewer)."""
        if field_kind(field) != "number":
            raise FilterError(f"a histogram needs a numeric field, not {field}")
        field_params: list = []
        expr = field_sql(field, field_params)
        bins = max(1, int(bins))
        with self._selection(filters, search) as (con, selection, params):
            values = (f"(SELECT {expr} AS x {selection}) WHERE x IS NOT NULL "
                      "AND isfinite(x)")
            low, high, whole = con.execute(
                f"SELECT min(x), max(x), bool_and(x = floor(x)) FROM {values}",
                [*field_params, *params]).fetchall()[0]
            if low is None:
                return []
            if whole and high - low + 1 <= bins:
                width, bins = 1.0, int(high - low + 1)
            else:
                width = (high - low) / bins or 1.0
            counts = dict(con.execute(
                f"SELECT least(CAST(floor((x - ?) / ?) AS BIGINT), ?) AS b, count(*) "
                f"FROM {values} GROUP BY b",
                [low, width, bins - 1, *field_params, *params]).fetchall())
        return [Bin(low=low + i * width, high=low + (i + 1) * width, count=counts.get(i, 0))
                for i in range(bins)]

    def values(self, field: str, filters: Sequence[Condition] = (), search: str = "",
               limit: int = 100) -> list[tuple[str, int]]:
        """The commonest values of a text field among the traces selected, with counts."""
        if field_kind(field) != "text":
            raise FilterError(f"values() needs a text field, not {field}")
        field_params: list = []
        expr = field_sql(field, field_params)
        with self._selection(filters, search) as (con, selection, params):
            return [(str(v), int(n)) for v, n in con.execute(
                f"SELECT v, count(*) AS n FROM (SELECT {expr} AS v {selection}) GROUP BY v "
                "ORDER BY n DESC, v LIMIT ?", [*field_params, *params, int(limit)]).fetchall()]

    def rollout_groups(self, filters: Sequence[Condition] = (), search: str = ""
                       ) -> list[tuple[int, str]]:
        """(step, group) of every group of a trainer's rollouts among the traces selected
        (rollouts without a step or group are in none), by step then group."""
        with self._selection(filters, search) as (con, selection, params):
            return [(int(step), str(group)) for step, group in con.execute(
                f"SELECT DISTINCT t.rollout_step, t.rollout_group {selection} AND "
                "t.rollout_step IS NOT NULL AND t.rollout_group IS NOT NULL ORDER BY 1, 2",
                params).fetchall()]

    def per_step(self, n: int, seed: int = 0, filters: Sequence[Condition] = (),
                 search: str = "", taken: Mapping[int, set[str]] | None = None
                 ) -> list[LibraryRow]:
        """The rows of N whole groups of each training step among the traces selected, drawn
        as a folder library's are (`viz_app.sampling.per_step_groups`: the same seed and groups, the same
        draw), group by group; `taken`, the groups of each step a campaign already has, tops a
        step up to N."""
        chosen = per_step_groups(self.rollout_groups(filters, search), n, seed, taken)
        place = {key: i for i, key in enumerate(chosen)}
        names = sorted({group for _, group in chosen})
        found: list[LibraryRow] = []
        for start in range(0, len(names), ID_CHUNK):
            found += self.page([*filters, Condition(field="group", op="in",
                                                    value=names[start:start + ID_CHUNK])],
                               search, limit=self.count())
        kept = [r for r in found if (r.rollout_step, r.rollout_group) in place]
        return sorted(kept, key=lambda r: place[r.rollout_step, r.rollout_group])

    def sample(self, n: int, seed: int = 0, filters: Sequence[Condition] = (), search: str = "",
               stratify: str | None = None, strata: int = 4) -> list[str]:
        """Trace ids of `n` traces drawn without replacement from those selected, by the
        library's one sampler (`viz_app.sampling.draw`, over the traces in index order): the
        same for the same seed and index, and the same as a folder library of the same files
        draws. With `stratify`, drawn evenly over its strata (a text field's values, or
        `strata` quantile bins of a numeric field): each stratum gives n / k, a small stratum
        all it has, and what it could not give goes to the others."""
        key_params: list = []
        if stratify is None:
            key = "0"
        elif field_kind(stratify) == "number":
            key = (f"ntile({max(1, int(strata))}) OVER (ORDER BY "
                   f"{field_sql(stratify, key_params)}, t.doc)")
        else:
            key = field_sql(stratify, key_params)
        with self._selection(filters, search) as (con, selection, params):
            table = con.sql(f"SELECT t.doc AS doc, {key} AS s {selection} ORDER BY t.doc",
                            params=[*key_params, *params]).to_arrow_table()
            docs = table.column("doc").to_numpy()
            chosen = draw(table.column("s").to_pandas(), n, seed)
            picked = pa.table({"doc": pa.array(docs[chosen] if chosen else [], pa.int64()),
                               "i": pa.array(range(len(chosen)), pa.int64())})
            con.register("picked", picked)
            return [r[0] for r in con.execute(
                "SELECT t.trace_id FROM traces t JOIN picked p ON p.doc = t.doc ORDER BY p.i"
            ).fetchall()]

    def rows(self, trace_ids: Sequence[str], filters: Sequence[Condition] = (),
             search: str = "") -> list[LibraryRow]:
        """The rows of these trace ids that the filters and search keep, in the ids' order
        (each once), looked up ID_CHUNK ids at a time."""
        ids = list(dict.fromkeys(trace_ids))
        found: dict[str, LibraryRow] = {}
        for start in range(0, len(ids), ID_CHUNK):
            chunk = ids[start:start + ID_CHUNK]
            for row in self.page([*filters, Condition(field="trace_id", op="in", value=chunk)],
                                 search, sort="trace_id", limit=len(chunk)):
                found.setdefault(row.trace_id, row)
        return [found[t] for t in ids if t in found]

    def locate(self, trace_id: str) -> tuple[Shard, int] | None:
        """The shard and row of a trace, or None when the index has no such id."""
        with self._duck() as con:
            found = con.execute(
                "SELECT s.url, s.format, s.compressed, t.position FROM traces t "
                "JOIN shards s ON s.url = t.shard WHERE t.trace_id = ? ORDER BY t.doc LIMIT 1",
                [trace_id]).fetchall()
        if not found:
            return None
        url, fmt, compressed, row = found[0]
        return Shard(url=url, format=fmt, compressed=bool(compressed)), int(row)

    def trace(self, trace_id: str) -> Trace:
        """A trace of the pool by id, reading only its row group; TraceError when the index
        has no such id or its shard cannot be read."""
        found = self.locate(trace_id)
        if found is None:
            raise TraceError(self.location or str(self.path), "",
                             f"no trace with id {trace_id!r} in the pool's index")
        return read_trace(*found)

    def failures(self, limit: int = 100) -> list[LibraryFailure]:
        """The shards and rows that failed, first ones first."""
        with self._duck() as con:
            return [LibraryFailure(path=s, row=r, error=e) for s, r, e in con.execute(
                "SELECT shard, position, error FROM failures ORDER BY shard, position LIMIT ?",
                [int(limit)]).fetchall()]

    def failure_count(self) -> int:
        """How many failures the index holds."""
        with self._duck() as con:
            return con.execute("SELECT count(*) FROM failures").fetchall()[0][0]

    def reward_names(self) -> list[str]:
        """The reward channels the traces carry (kept as shards are indexed: a channel of a
        shard gone since may stay listed until the next whole update)."""
        with self._duck() as con:
            return json.loads(self._meta(con, "reward_names") or "[]")
