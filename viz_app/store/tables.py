"""Every table orchviz keeps, in one place: the label store, the bookmarks and the trace index
share one database. The migration history (`viz_app/store/migrations`) creates and changes them;
these declarations are what its newest revision leaves, and what the stores query."""

from __future__ import annotations

from sqlalchemy import (BigInteger, Boolean, Column, Float, Index, Integer, MetaData, String,
                        Table, Text, UniqueConstraint)

metadata = MetaData()

labels_table = Table(
    "labels", metadata,
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
    Column("identified_by", String(16), nullable=False, server_default=""),
    Column("created_at_given", Text, nullable=True),
    Column("mapping", String(16), nullable=False, server_default=""),
    Index("labels_by_target", "trace_id", "event_id", "question", "reviewer"),
)
"""One row per save. `value` is the answer as JSON; `event_id` is '' for the trace itself;
`pair_trace_id` names the second trace of a pairwise judgement (None for any other label);
`identified_by` says how the reviewer was known (see `Label.identified_by`);
`created_at_given` is an imported record's own time when another was stored (see
`Label.created_at_given`); `mapping` says how sure an imported annotation's mapping onto the
question is (see `Label.mapping`). The columns are in `Label`'s field order."""



bookmarks_table = Table(
    "bookmarks", metadata,
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
"""One row per version of a bookmark; `start_s == end_s` for an event or an instant."""


trace_index = Table(
    "orchviz_trace_index", metadata,
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
"""One row per trace of a file (position = its place in the file), or per failure (negative
position, `error` set, no trace id)."""


