"""How a filter (`viz_app.query.Condition`) and a search become the pool index's SQL: a
field's column, a WHERE clause whose values are all bound as parameters, and the FTS5 query of
the words a person typed (`viz_app.search.fts_query`, the library's one search)."""

from __future__ import annotations

from collections.abc import Sequence

from viz_app.query import FIELDS, REWARD_PREFIX, Condition, FilterError, field_kind, field_value
from viz_app.search import fts_query as search_query  # noqa: F401 - the words' FTS5 query


def field_sql(name: str, params: list) -> str:
    """The SQL of a field; a reward channel's name goes in as a parameter."""
    field_kind(name)
    if name.startswith(REWARD_PREFIX):
        params.append(name[len(REWARD_PREFIX):])
        return "t.rewards[?]"
    return FIELDS[name].sql or f"t.{FIELDS[name].column}"


def where_sql(filters: Sequence[Condition], params: list) -> str:
    parts = ["TRUE"]
    for c in filters:
        sql = field_sql(c.field, params)
        if c.op == "in":
            values = c.value if isinstance(c.value, list) else [c.value]
            if not values:
                parts.append("FALSE")
                continue
            parts.append(f"{sql} IN ({', '.join('?' for _ in values)})")
            params.extend(field_value(c.field, v) for v in values)
        elif c.op == "~":
            if field_kind(c.field) != "text":
                raise FilterError(f"~ (contains) needs a text field, not {c.field}")
            parts.append(f"contains(lower({sql}), lower(?))")
            params.append(str(c.value))
        else:
            parts.append(f"{sql} {c.op} ?")
            params.append(field_value(c.field, c.value))
    return " AND ".join(parts)


def order_sql(sort: str | None, descending: bool, params: list) -> str:
    """The ORDER BY of the library's one order (`viz_app.query.ordered`): the index's order
    (`t.doc`: shards, then rows) with no sort, else the field, missing values last, ties in the
    index's order."""
    if sort is None:
        return "t.doc"
    return f"{field_sql(sort, params)} {'DESC' if descending else 'ASC'} NULLS LAST, t.doc"
