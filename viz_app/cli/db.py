"""`orchviz db ...`: where a database stands in the migration history, and bringing it to head,
for operators of a team database (every orchviz also migrates on open)."""

from __future__ import annotations

import argparse

from viz_app.cli.workspace import add_db_option
from viz_app.errors import OrchvizError
from viz_app.settings import database_url
from viz_app.store import SchemaState, check, engine_for, sqlite_file, state, upgrade
from viz_app.text import terminal_text


def register(verbs: argparse._SubParsersAction) -> None:
    """Add `db` and its verbs."""
    top = verbs.add_parser("db", help="show or upgrade the database's schema",
                           description="The database's place in orchviz's migration history. "
                           "Every orchviz brings the database to its newest revision when it "
                           "opens it; these verbs let an operator look first, or upgrade a team "
                           "database at a chosen moment.")
    sub = top.add_subparsers(dest="db_verb", metavar="VERB", required=True)

    p = sub.add_parser("upgrade", help="bring the database to the newest revision",
                       description="Create the schema in an empty database, adopt a database of "
                       "orchviz 0.1 (nothing is lost), or apply the revisions a database lacks. "
                       "Safe to run while other orchviz processes open the database. Exit 1 "
                       "when the database was written by a newer orchviz.")
    add_db_option(p)
    p.set_defaults(run=upgrade_verb)

    p = sub.add_parser("current", help="print the database's revision and whether it is head",
                       description="Print the database's revision and whether it is the newest "
                       "this orchviz knows, without changing anything. Exit 1 when the "
                       "revision is unknown (written by a newer orchviz).")
    add_db_option(p)
    p.set_defaults(run=current_verb)


def upgrade_verb(args: argparse.Namespace) -> int:
    """Bring the database to head and say what was done."""
    engine = engine_for(database_url(args.db))
    try:
        before = upgrade(engine)
    finally:
        engine.dispose()
    print(terminal_text(upgrade_text(before)))
    return 0


def current_verb(args: argparse.Namespace) -> int:
    """Print the database's revision and whether it is head."""
    url = database_url(args.db)
    path = sqlite_file(url)
    if path is not None and not path.exists():  # connecting would create it
        raise OrchvizError(f"{path}: no such database file")
    engine = engine_for(url)
    try:
        found = state(engine)
    finally:
        engine.dispose()
    check(found)
    print(terminal_text(current_text(found)))
    return 0


def current_text(found: SchemaState) -> str:
    """One line: the revision, and head or what upgrading would do."""
    if found.at_head:
        return f"{found.revision} (head)"
    if found.legacy:
        return (f"none: an orchviz 0.1 database, which `orchviz db upgrade` adopts "
                f"(head is {found.head})")
    return f"{found.revision or 'none'} (not head: head is {found.head}; run `orchviz db upgrade`)"


def upgrade_text(before: SchemaState) -> str:
    """One line: what the upgrade did."""
    if before.at_head:
        return f"{before.head} (head): already up to date"
    if before.legacy:
        return f"{before.head} (head): adopted the orchviz 0.1 database, nothing lost"
    if before.revision is None:
        return f"{before.head} (head): created the schema"
    return f"{before.head} (head): upgraded from {before.revision}"
