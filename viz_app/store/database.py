"""The one database orchviz keeps: the trace index, the labels and the bookmarks share it.

SQLite by default (a file, in WAL mode so that readers never block the writer), any SQLAlchemy URL
for a team (PostgreSQL). The tables are made and changed by one migration history
(`viz_app/store/migrations`, run by Alembic): `connect(url)` brings a database to its head, so a
fresh database is created by it, a database of the 0.1 release (which kept its versions in a
hand-written ledger) is adopted with nothing lost, and a database written by a newer orchviz is
refused with a SchemaError.

Several processes may open a fresh database at the same moment (a batch of CLI imports, a team's
app servers started together). Whoever migrates first holds the schema lock (SQLite's write lock,
taken with BEGIN IMMEDIATE; a PostgreSQL advisory lock) from looking at the revision to
committing the migration, and the others find the work done when they get it. A database already
at head costs one query and no lock.
"""

from __future__ import annotations

import functools
import random
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import DBAPIError

from viz_app.version import __version__
from viz_app.errors import SchemaError
from viz_app.store import failures
from viz_app.store.migrations import legacy

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

HEAD = "0018"
"""The newest revision of the history (a test holds it to Alembic's head). An up-to-date
database is recognised by it, so opening one loads no Alembic (a third of a second)."""

SCRIPT_LOCATION = "viz_app.store:migrations"
"""Where Alembic finds the history: the package folder, wherever orchviz is installed."""

ADVISORY_LOCK_KEY = int.from_bytes(b"orchviz", "big")
"""The PostgreSQL advisory lock that every orchviz takes to migrate a database."""

_engines: dict[str, Engine] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class SchemaState:
    """Where a database stands in the migration history."""

    revision: str | None
    """The database's revision; None when Alembic has not recorded one (fresh, or 0.1's)."""
    legacy: bool
    """The database was written by the 0.1 release (its ledger is there): it will be adopted."""
    head: str = HEAD
    """The newest revision this orchviz knows."""

    @property
    def at_head(self) -> bool:
        """Nothing to migrate."""
        return self.revision == self.head

    @property
    def known(self) -> bool:
        """This orchviz knows the revision (a database written by a newer one it does not)."""
        return self.revision is None or self.revision in _revisions()


def connect(url: str) -> Engine:
    """An engine for the URL whose database is at the head of the migration history, migrated
    first if needed (one engine per URL per process); SchemaError when the database was
    written by a newer orchviz."""
    with _lock:
        engine = _engines.get(url)
        if engine is None:
            engine = engine_for(url)
            try:
                upgrade(engine)
            except BaseException:
                engine.dispose()
                raise
            _engines[url] = engine
        return engine


def close(url: str) -> None:
    """Close the connections of a URL's engine and forget it: the next `connect` opens the
    database anew (a test that swaps a file, a database about to be dropped)."""
    with _lock:
        engine = _engines.pop(url, None)
    if engine is not None:
        engine.dispose()


BUSY_TIMEOUT = 30.0
"""Seconds a SQLite writer waits for another's lock before it gives up (a StoreError then says
so); `?timeout=SECONDS` in a SQLite URL sets another."""


def engine_for(url: str) -> Engine:
    """An engine for the URL with orchviz's connection settings, the schema left as it is. A
    failure a person can act on (a full disk, a read-only database, a lock held too long, a
    server out of reach) is raised as a StoreError (`viz_app.store.failures`)."""
    if url.startswith("sqlite"):
        seconds = float(make_url(url).query.get("timeout", BUSY_TIMEOUT))
        engine = create_engine(url, connect_args={"timeout": seconds,
                                                  "check_same_thread": False})
        event.listen(engine, "connect", functools.partial(_sqlite_pragmas, seconds=seconds))
        failures.watch(engine, busy_timeout=seconds)
        return engine
    engine = create_engine(url, pool_pre_ping=True)
    failures.watch(engine)
    return engine


def _sqlite_pragmas(connection, _record, *, seconds: float = BUSY_TIMEOUT) -> None:
    cursor = connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout={int(seconds * 1000)}")
    _write_ahead_log(cursor, seconds)
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _write_ahead_log(cursor, seconds: float) -> None:
    """Put the file in WAL mode. While another connection turns a fresh file to WAL, SQLite
    answers "database is locked" at once, without waiting on the busy timeout (32 processes
    opening one new file saw it), so the pragma is asked again, a few ms apart, until then."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() >= deadline:
                raise
            time.sleep(0.005 + random.random() * 0.045)


def sqlite_file(url: str) -> Path | None:
    """The file of a SQLite URL (None for another database, or SQLite in memory)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


# -- the history -------------------------------------------------------------------------------


def alembic_config(connection: Connection | None = None) -> Config:
    """Alembic's configuration for orchviz's history, with no alembic.ini: the revisions in the
    package, run on `connection` (which the caller holds locked and commits)."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", SCRIPT_LOCATION)
    config.attributes["connection"] = connection
    return config


@functools.cache
def history() -> ScriptDirectory:
    """The migration history: Alembic's view of the revisions in the package."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config())


@functools.cache
def _revisions() -> frozenset[str]:
    return frozenset(script.revision for script in history().walk_revisions())


def state(engine: Engine) -> SchemaState:
    """Where the database stands, without changing it."""
    with engine.connect() as conn:
        return _state(conn)


def check(found: SchemaState) -> None:
    """SchemaError unless this orchviz can open a database in this state."""
    if not found.known:
        raise SchemaError(f"the database is at revision {found.revision}, which orchviz "
                          f"{__version__} does not know: it was written by a newer orchviz, "
                          f"so open it with that one (or upgrade this one)")


def upgrade(engine: Engine) -> SchemaState:
    """Bring the database to head under the schema lock, and return where it stood before;
    SchemaError (and nothing changed) when it was written by a newer orchviz."""
    with engine.connect() as conn:
        if _recorded(conn) == HEAD:
            return SchemaState(revision=HEAD, legacy=False)
    _load_alembic()  # a third of a second: not while other processes wait on the lock
    with engine.connect() as conn:
        _lock_schema(conn)
        before = _state(conn)  # again: another process may have migrated while we waited
        check(before)
        if not before.at_head:
            try:
                _migrate(conn, before)
            except DBAPIError as err:  # e.g. a version row behind its tables
                conn.rollback()
                reason = " ".join(str(err.orig).split())[:200]
                raise SchemaError(
                    f"the database {failures.where(engine.url)} records schema revision "
                    f"{before.revision or '(none)'} but its tables are not at it, so upgrading "
                    f"them failed ({reason}) and nothing was changed (restore it from a "
                    "backup, or set its alembic_version row to the revision its tables are "
                    "at)") from None
        conn.commit()
    return before


def _load_alembic() -> None:
    import alembic.command  # noqa: F401
    import alembic.runtime.migration  # noqa: F401

    history()


def _recorded(conn: Connection) -> str | None:
    """The revision in `alembic_version`, in one query; None when there is none to read (the
    table is missing in a fresh or a 0.1 database), which the locked path then looks into."""
    try:
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except DBAPIError:
        return None


def _lock_schema(conn: Connection) -> None:
    """Begin the migrating transaction holding the schema lock; it is released at commit. (On
    another kind of database there is none: let one orchviz upgrade it before others start.)"""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        # the write lock now, not at the first write: two processes that both read "no tables"
        # would otherwise both create them
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    elif dialect == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_LOCK_KEY})


def _state(conn: Connection) -> SchemaState:
    from alembic.runtime.migration import MigrationContext

    heads = MigrationContext.configure(conn).get_current_heads()
    revision = heads[0] if heads else None
    tables = set(inspect(conn).get_table_names()) if revision is None else set()
    found = SchemaState(revision=revision, legacy=legacy.LEDGER in tables)
    foreign = tables & set(legacy.schema.tables)
    if revision is None and foreign and not found.legacy:
        raise SchemaError(f"the database already has tables named like orchviz's "
                          f"({', '.join(sorted(foreign))}) but no record of their version, "
                          f"so orchviz will not take them over")
    return found


def _migrate(conn: Connection, before: SchemaState) -> None:
    from alembic import command

    config = alembic_config(conn)
    if before.legacy:
        legacy.finish(conn)
        command.stamp(config, legacy.REVISION)
    command.upgrade(config, "head")
