"""The one database orchviz keeps: the trace index and the label store share it.

SQLite by default (a file, in WAL mode so that readers never block the writer), any SQLAlchemy URL
for a team (PostgreSQL). Tables are declared by the modules that own them on `metadata`;
`connect(url)` creates what is missing and records the schema version, so that a later release
can migrate an older database.
"""

from __future__ import annotations

import threading

from sqlalchemy import Column, Engine, Integer, MetaData, String, Table, create_engine, event, select

from viz_app.errors import SchemaError
from viz_app.store.tables import metadata

SCHEMA_VERSION = 2
"""Version of the trace index table; bump it with a step in MIGRATIONS. (Labels and bookmarks
keep their own versions, in the same `orchviz_schema` table.)"""

schema_info = Table(
    "orchviz_schema", MetaData(),
    Column("name", String(64), primary_key=True),
    Column("version", Integer, nullable=False),
)

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


def connect(url: str) -> Engine:
    """An engine for the URL with every table created and migrated (one engine per URL)."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = _create(url)
            _engines[url] = engine
        return engine


def _create(url: str) -> Engine:
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})
        event.listen(engine, "connect", _sqlite_pragmas)
    else:
        engine = create_engine(url, pool_pre_ping=True)
    metadata.create_all(engine)
    schema_info.create(engine, checkfirst=True)
    _migrate(engine)
    return engine


def _sqlite_pragmas(connection, _record) -> None:
    cursor = connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _rebuild_trace_index(conn) -> None:
    """Version 2 records each trace's label targets in the index. The index is a cache of the
    trace files, so it is dropped and built again on the next listing; no label is touched."""
    index = metadata.tables["orchviz_trace_index"]
    index.drop(conn)
    index.create(conn)


MIGRATIONS = {2: _rebuild_trace_index}
"""For each schema version, the step that brings a database of the version before it up."""


def _migrate(engine: Engine) -> None:
    """Bring an older database up to SCHEMA_VERSION (version 1 is the first)."""
    with engine.begin() as conn:
        found = conn.execute(select(schema_info.c.version)
                             .where(schema_info.c.name == "orchviz")).scalar()
        if found is None:
            conn.execute(schema_info.insert().values(name="orchviz", version=SCHEMA_VERSION))
        elif found > SCHEMA_VERSION:
            raise SchemaError(f"the database was written by a newer orchviz (schema {found}); "
                               f"this one knows schema {SCHEMA_VERSION}")
        elif found < SCHEMA_VERSION:
            for version in range(found + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[version](conn)
            conn.execute(schema_info.update().where(schema_info.c.name == "orchviz")
                         .values(version=SCHEMA_VERSION))
