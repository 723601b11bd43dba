"""The 0.1 release's schema, frozen, and its hand-kept ledger.

0.1 created its tables with `create_all` and kept a version per table in `orchviz_schema`
(orchviz: the trace index, labels, bookmarks). Revision 0001 creates exactly these tables; a
database written by 0.1 is *adopted* instead: `finish` applies the steps its ledger may still owe,
then it is stamped 0001 and upgraded like any other. Nothing here may change: it is history.
"""

from __future__ import annotations

from sqlalchemy import (BigInteger, Boolean, Column, Connection, Float, Index, Integer, MetaData,
                        String, Table, Text, UniqueConstraint, inspect, select, text)

REVISION = "0001"
"""The revision whose schema a finished 0.1 database has."""

schema = MetaData()
"""The tables of the 0.1 release, as its own code declared them."""

Table(
    "labels", schema,
    Column("label_id", String(64), primary_key=True),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=False),
    Column("question", String(64), nullable=False),
    Column("value", Text, nullable=False),
    Column("reward", Float, nullable=True),
    Column("reviewer", String(256), nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("rubric_version", String(64), nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    Column("comment", Text, nullable=False),
    Column("seconds_spent", Float, nullable=True),
    Column("source", String(16), nullable=False),
    Column("origin", Text, nullable=False),
    Column("pair_trace_id", String(512), nullable=True),
    Index("labels_by_target", "trace_id", "event_id", "question", "reviewer"),
)

Table(
    "bookmarks", schema,
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

trace_index = Table(
    "orchviz_trace_index", schema,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("path", String(2048), nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("mtime_ns", BigInteger, nullable=False),
    Column("trace_id", String(512), index=True),
    Column("task_id", Text),
    Column("system", Text),
    Column("topology", String(64)),
    Column("source_format", String(64)),
    Column("events", Integer),
    Column("agents", Integer),
    Column("depth", Integer),
    Column("makespan_s", Float),
    Column("parallelism", Float),
    Column("tokens", Float),
    Column("cost_usd", Float),
    Column("sha256", String(64)),
    Column("warnings", Integer),
    Column("search_text", Text),
    Column("targets", Text),
    Column("rubric_sha", String(64)),
    Column("error", Text),
    Column("indexed_at", Float, nullable=False),
    UniqueConstraint("path", "position", name="uq_orchviz_trace_index_path_position"),
)

LEDGER = "orchviz_schema"
"""The table where 0.1 kept its versions (name, version); revision 0002 drops it."""

ledger = Table(
    LEDGER, MetaData(),
    Column("name", String(64), primary_key=True),
    Column("version", Integer, nullable=False),
)


def finish(conn: Connection) -> None:
    """Bring a database that 0.1's ledger describes to the 0.1 schema exactly, by 0.1's own steps:
    tables it created on open, labels 1 -> 2 (the `pair_trace_id` column) and orchviz 1 -> 2 (the
    trace index rebuilt: it is a cache of the trace files, refilled on the next listing)."""
    versions = dict(conn.execute(select(ledger.c.name, ledger.c.version)).all())
    schema.create_all(conn, checkfirst=True)
    if "pair_trace_id" not in {c["name"] for c in inspect(conn).get_columns("labels")}:
        conn.execute(text("ALTER TABLE labels ADD COLUMN pair_trace_id VARCHAR(512)"))
    if versions.get("orchviz", 2) < 2:
        trace_index.drop(conn)
        trace_index.create(conn)
