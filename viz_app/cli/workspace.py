"""The one place a command declares the store it works on (`--db`) and the rubric it judges by
(`--rubric`), and opens the Workspace on them: every verb of `orchviz` that reads or writes
labels, campaigns, pools' indexes or models does it here, so the options read alike in every
`--help` and a rubric that cannot be used stops each command the same way."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from viz_app.workspace import Workspace

DEFAULT_DB = "orchviz.db"
"""The store a command works on when `--db` is not given."""

DB_HELP = "the store: a SQLAlchemy URL or a SQLite file (default: orchviz.db)"
RUBRIC_HELP = "a rubric YAML file (default: the packaged rubric)"


def add_db_option(p: argparse.ArgumentParser, *, help: str = DB_HELP,
                  default: str | None = DEFAULT_DB, metavar: str | None = None) -> None:
    """`--db`: the store (labels, campaigns, bookmarks, models, the pools' indexes); a command
    that may run without one gives `default=None` and says what it does with one."""
    p.add_argument("--db", default=default, metavar=metavar, help=help)


def add_rubric_option(p: argparse.ArgumentParser, *, help: str = RUBRIC_HELP,
                      metavar: str | None = None) -> None:
    """`--rubric`: the rubric labels are checked against (default: the packaged one)."""
    p.add_argument("--rubric", default=None, metavar=metavar, help=help)


def store_options(p: argparse.ArgumentParser, *, rubric: bool = True,
                  db_help: str = DB_HELP) -> None:
    """`--db`, and `--rubric` unless told otherwise."""
    add_db_option(p, help=db_help)
    if rubric:
        add_rubric_option(p)


def open_workspace(args: argparse.Namespace, *, traces: Sequence[str | Path] | None = None,
                   pools: Sequence[str] = (), rubric_first: bool = True,
                   db: str | None = None) -> Workspace:
    """The Workspace a command works on: the store `--db` names (or `db`), listing `traces` (default: the
    command's `--traces`, if it has them) and `pools`, under the rubric `--rubric` names (the
    packaged one when the command has no `--rubric` or it is not given).

    The rubric is loaded first, before the store is opened or any trace read, so one that
    cannot be used stops the command (RubricError); with `rubric_first=False` the Workspace
    opens whatever it says and keeps why it cannot be used (`ws.rubric_error`), as the app
    does: a pool's index is written, and says which traces it could not judge."""
    # imported here, not above: every verb declares `--db` through this module, and a verb
    # that runs without a store (`pool follow` without `--db`) need not load the Workspace
    from viz_app.labels import load_rubric
    from viz_app.settings import Settings, database_url
    from viz_app.workspace import Workspace

    given = getattr(args, "rubric", None)
    listed = traces if traces is not None else getattr(args, "traces", None) or ()
    settings = Settings(traces=[Path(t) for t in listed], pools=list(pools),
                        db_url=database_url(db if db is not None else args.db),
                        rubric=None if rubric_first or not given else Path(given))
    return Workspace(settings, rubric=load_rubric(given) if rubric_first else None)


def no_store(db: str) -> bool:
    """Whether `--db` names a SQLite file that is not there (a command that only reads says
    so rather than create one)."""
    return "://" not in db and not Path(db).expanduser().exists()
