"""What a failing database means to the person using orchviz, in one sentence.

Every engine orchviz opens (`database.engine_for`) is watched here: when the database refuses
or cannot be reached for a reason a person can act on (a full disk, a read-only file or
transaction, a lock held past the busy timeout, a server that cannot be reached or went away),
SQLAlchemy's error is replaced by a `StoreError` that says what happened and that nothing was
saved (the transaction was rolled back). The database's own error stays its cause and is logged
with its traceback (logger `viz_app.store.failures`, silent unless a program shows it: the app's
server log does, the CLI prints the sentence alone). Other errors (a missing table while migrating, a bug in a query) are left
as they are: they are orchviz's to fix, not the user's.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine, event
from sqlalchemy.engine import URL, ExceptionContext

from viz_app.errors import StoreError

_LOG = logging.getLogger(__name__)
_LOG.addHandler(logging.NullHandler())  # silent unless the program shows orchviz's log (the app)

_SQLITE = {  # primary result codes (https://sqlite.org/rescode.html)
    5: "busy", 6: "busy", 8: "read-only", 10: "io", 13: "full", 14: "cannot open",
}
_POSTGRES_CLASSES = {"08": "unreachable", "53": "full", "57": "unreachable"}
_POSTGRES = {"25006": "read-only", "55P03": "busy", "57014": "busy", "40P01": "busy",
             "53200": "memory"}


def where(url: URL) -> str:
    """How a sentence names a database: a SQLite file's path, else its URL without password."""
    if url.get_backend_name() == "sqlite":  # a path, or `file:path` in SQLite's URI form
        return (url.database or "(in memory)").removeprefix("file:")
    return url.render_as_string(hide_password=True)


def kind(error: BaseException, connecting: bool) -> str | None:
    """What went wrong, as one of: busy, read-only, io, full, cannot open, unreachable, memory;
    None when it is nothing a person can act on (then the error stays as it is)."""
    code = getattr(error, "sqlite_errorcode", None)
    if isinstance(code, int):
        return _SQLITE.get(code & 0xFF)
    state = getattr(error, "sqlstate", None)
    if isinstance(state, str):
        return _POSTGRES.get(state) or _POSTGRES_CLASSES.get(state[:2])
    if connecting and type(error).__name__ == "OperationalError":
        return "unreachable"  # psycopg: no server answered, so no SQLSTATE
    return None


def sentence(found: str, url: URL, error: BaseException, busy_timeout: float | None) -> str:
    """The one sentence for a failure of a kind (see `kind`)."""
    name = where(url)
    reason = " ".join(str(error).split())[:200]
    said = {
        # a reviewer in the app meets this one most: it names no path of the server's
        "busy": "the database stayed locked by another writer for longer than "
                + (f"{busy_timeout:g} s" if busy_timeout is not None else "its lock timeout"),
        "read-only": f"the database {name} is read-only",
        "full": f"the disk that holds the database {name} is full (or the database reached its "
                "size limit)",
        "io": f"the disk that holds the database {name} failed to read or write ({reason})",
        "cannot open": f"the database file {name} cannot be opened (does its folder exist, and "
                       "may orchviz write there?)",
        "unreachable": f"the database server {name} cannot be reached ({reason})",
        "memory": f"the database server {name} ran out of memory",
    }[found]
    return f"{said}, so nothing was saved" + ("; try again" if found == "busy" else "")


def watch(engine: Engine, busy_timeout: float | None = None) -> None:
    """Replace the engine's errors that a person can act on by a StoreError (see the module).
    `busy_timeout` is the seconds a SQLite writer waits for a lock, for the sentence."""

    @event.listens_for(engine, "handle_error")
    def _failed(context: ExceptionContext) -> None:
        if context.is_pre_ping:  # the pool is only checking a connection: it reconnects
            return
        error = context.original_exception
        connecting = context.connection is None or context.is_disconnect
        found = kind(error, connecting)
        if found is None and context.is_disconnect:
            found = "unreachable"
        if found is not None:
            said = sentence(found, engine.url, error, busy_timeout)
            cause = context.sqlalchemy_exception or error
            _LOG.warning("%s", said, exc_info=cause)  # the details, for the server's log
            raise StoreError(said) from cause
