"""The migration history: a fresh database is created by it, a database of the 0.1 release is
adopted with nothing lost, a database of a newer orchviz is refused, on SQLite and PostgreSQL;
and `orchviz db current` / `orchviz db upgrade` say where a database stands."""

from __future__ import annotations

import re
import shutil
import sqlite3
import tomllib
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, event, inspect, insert, make_url, text

from factories import REPO
from viz_app.cli import main
from viz_app.errors import SchemaError
from viz_app.labels.rubric import default_rubric
from viz_app.store import database
from viz_app.store.bookmarks import BookmarkStore
from viz_app.store.database import HEAD, alembic_config, close, connect, engine_for, upgrade
from viz_app.store.labels import LabelStore
from viz_app.store.migrations import legacy
from viz_app.store.tables import metadata

LEGACY_DB = REPO / "tests" / "fixtures" / "legacy" / "orchviz-0.1.db"
"""A database written by the 0.1 release: 5 labels (one a pairwise judgement), 2 versions of one
bookmark, the trace index of demo_traces, and 0.1's ledger (orchviz 2, labels 2, bookmarks 1)."""


# -- factories ----------------------------------------------------------------------------------


@contextmanager
def postgres_database(server_url: str) -> Iterator[str]:
    """The URL of a new, empty database on the test server, dropped afterwards: a test of a fresh
    database needs its own (pytest-xdist workers share the server)."""
    name = f"orchviz_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    url = make_url(server_url).set(database=name).render_as_string(hide_password=False)
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield url
    finally:
        close(url)
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


@pytest.fixture
def fresh_postgres(postgres_url) -> Iterator[str]:
    """A new, empty PostgreSQL database of this test's own."""
    with postgres_database(postgres_url) as url:
        yield url


@pytest.fixture
def legacy_copy(tmp_path) -> Iterator[str]:
    """The URL of a copy of the 0.1 database (the fixture itself is never opened)."""
    path = tmp_path / "orchviz-0.1.db"
    shutil.copy(LEGACY_DB, path)
    url = f"sqlite:///{path}"
    yield url
    close(url)


def rows(path: Path | str, table: str) -> list[dict]:
    """Every row of a table of a SQLite file, as dicts, in a stable order."""
    with sqlite3.connect(path) as conn:
        conn.row_factory = sqlite3.Row
        return sorted((dict(r) for r in conn.execute(f"SELECT * FROM {table}")),
                      key=lambda r: sorted(r.items(), key=str))


def table_names(url: str) -> set[str]:
    """The tables in a database."""
    engine = create_engine(url)
    try:
        return set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def set_revision(url: str, revision: str) -> None:
    """Write another revision into alembic_version, as an orchviz of another release would."""
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = :r"), {"r": revision})
    engine.dispose()


def schema_differences(url: str) -> list:
    """What Alembic finds between a database's schema and `tables.metadata` (types and server
    defaults compared too)."""
    engine = engine_for(url)
    try:
        with engine.connect() as conn:
            defaults = _same_literal_default if conn.dialect.name == "sqlite" else True
            context = MigrationContext.configure(
                conn, opts={"compare_type": True, "compare_server_default": defaults})
            return compare_metadata(context, metadata)
    finally:
        engine.dispose()


def _same_literal_default(_context, _inspected_column, _metadata_column, inspected, _default,
                          rendered):
    """Alembic's SQLite comparison reads the reflected empty string ('') as differing from the
    declared one; compare the two literals without their quotes and parentheses."""
    if inspected is None or rendered is None:
        return None
    return (re.sub(r"^\(?'(.*)'\)?$", r"\1", inspected) != re.sub(r"^'(.*)'$", r"\1", rendered))


def write_legacy_postgres(url: str) -> None:
    """Make a PostgreSQL database as the 0.1 release left it, with the 0.1 fixture's rows."""
    engine = create_engine(url)
    with engine.begin() as conn:
        legacy.schema.create_all(conn)
        legacy.ledger.create(conn)
        conn.execute(insert(legacy.ledger), [{"name": "orchviz", "version": 2},
                                             {"name": "labels", "version": 2},
                                             {"name": "bookmarks", "version": 1}])
        for name in ("labels", "bookmarks", "orchviz_trace_index"):
            found = rows(LEGACY_DB, name)
            for row in found if name == "bookmarks" else ():
                row["removed"] = bool(row["removed"])
            conn.execute(insert(legacy.schema.tables[name]), found)
    engine.dispose()


# -- the history ---------------------------------------------------------------------------------


def test_head_names_the_newest_revision_of_the_history():
    assert database.history().get_current_head() == HEAD


def test_the_history_is_one_line_from_the_0_1_schema():
    revisions = [(s.revision, s.down_revision) for s in database.history().walk_revisions()]
    assert revisions == [("0018", "0017"), ("0017", "0016"), ("0016", "0015"), ("0015", "0014"), ("0014", "0013"), ("0013", "0012"), ("0012", "0011"), ("0011", "0010"), ("0010", "0009"), ("0009", "0008"), ("0008", "0007"), ("0007", "0006"), ("0006", "0005"), ("0005", "0004"), ("0004", "0003"), ("0003", "0002"), ("0002", "0001"), ("0001", None)]


def test_the_history_ships_in_the_package():
    from setuptools import find_packages

    packages = set(find_packages(str(REPO), include=["viz_app*"]))
    assert {"viz_app.store.migrations", "viz_app.store.migrations.versions"} <= packages
    package_data = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["tool"][
        "setuptools"]["package-data"]["viz_app"]
    assert "store/migrations/*.mako" in package_data


def test_a_fresh_sqlite_database_is_created_at_head(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    connect(url)
    assert rows(tmp_path / "fresh.db", "alembic_version") == [{"version_num": HEAD}]
    assert table_names(url) == {*metadata.tables, "alembic_version"}
    close(url)


def test_the_head_schema_is_the_declared_tables_on_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    connect(url)
    assert schema_differences(url) == []
    close(url)


@pytest.mark.postgres
def test_a_fresh_postgresql_database_is_created_at_head(fresh_postgres):
    engine = connect(fresh_postgres)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).all() == [(HEAD,)]
    assert table_names(fresh_postgres) == {*metadata.tables, "alembic_version"}


@pytest.mark.postgres
def test_the_head_schema_is_the_declared_tables_on_postgresql(fresh_postgres):
    connect(fresh_postgres)
    assert schema_differences(fresh_postgres) == []


def test_every_revision_can_be_undone_and_done_again(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    engine = engine_for(url)
    upgrade(engine)
    with engine.begin() as conn:
        command.downgrade(alembic_config(conn), "base")
    assert table_names(url) == {"alembic_version"}
    upgrade(engine)
    engine.dispose()
    assert schema_differences(url) == []


def test_a_hiding_written_before_showing_again_existed_reads_as_a_hiding(tmp_path):
    """0018 gives each row of dispute_comment_hidings its action: a row of a 0017 database is
    a hiding (its comment stays hidden), and a showing again appended after it decides."""
    from viz_app.labels import DisputeComment
    from viz_app.store import CommentStore

    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = engine_for(url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0017")
        conn.execute(text(
            "INSERT INTO dispute_comment_hidings VALUES ('h1', 'c1', 'stops', 'lee', 'cli', "
            "'off topic', '2026-12-06T10:00:00.000000Z')"))
    upgrade(engine)
    store = CommentStore(engine)
    (hiding,) = store.hidings("stops").values()
    assert (hiding.action, hiding.hidden_by, hiding.reason) == ("hidden", "lee", "off topic")
    comment = DisputeComment(comment_id="c1", campaign="stops", trace_id="t", event_id="",
                             author="ann", identified_by="cli", role="reviewer", text="x",
                             created_at="2026-12-06T09:00:00.000000Z")
    store.show(comment, "kim", "oidc")
    assert store.hidings("stops") == {}
    assert [r.action for r in store.moderation("stops")["c1"]] == ["hidden", "shown"]
    engine.dispose()


def test_an_up_to_date_database_is_opened_with_one_query(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    upgrade(engine_for(url))
    engine = engine_for(url)
    statements: list[str] = []
    event.listen(engine, "before_cursor_execute",
                 lambda _c, _k, statement, *_: statements.append(statement))
    assert upgrade(engine).at_head
    engine.dispose()
    assert statements == ["SELECT version_num FROM alembic_version"]


# -- a database of the 0.1 release ---------------------------------------------------------------


def test_a_0_1_database_keeps_every_label_with_its_values(legacy_copy):
    before = rows(LEGACY_DB, "labels")
    connect(legacy_copy)
    after = rows(make_url(legacy_copy).database, "labels")
    assert len(after) == 5
    added = ("identified_by", "created_at_given", "mapping", "campaign",
             "suggestions_visible")  # columns of later revisions
    assert [{k: v for k, v in r.items() if k not in added} for r in after] == before


def test_a_0_1_database_keeps_its_pairwise_judgement(legacy_copy):
    [pair] = [r for r in rows(LEGACY_DB, "labels") if r["pair_trace_id"]]
    store = LabelStore(connect(legacy_copy), default_rubric())
    [kept] = [r for r in store.current_records() if r.get("pair_trace_id")]
    assert (kept["label_id"], kept["trace_id"], kept["pair_trace_id"]) == \
        (pair["label_id"], pair["trace_id"], pair["pair_trace_id"])


def test_a_0_1_database_keeps_both_versions_of_its_bookmark(legacy_copy):
    bookmarks = BookmarkStore(connect(legacy_copy))
    assert {(v.version_id, v.note) for v in bookmarks.versions()} == \
        {(r["version_id"], r["note"]) for r in rows(LEGACY_DB, "bookmarks")}
    assert [b.note for b in bookmarks.current()] == ["the dropped finding (SQL)"]


def test_a_0_1_database_keeps_its_trace_index(legacy_copy):
    connect(legacy_copy)
    kept = rows(make_url(legacy_copy).database, "orchviz_trace_index")
    before = rows(LEGACY_DB, "orchviz_trace_index")
    assert [{k: r[k] for k in before[0]} for r in kept] == before
    assert {(r["rollout_step"], r["rollout_group"], r["trainer_reward"]) for r in kept} == {
        (None, None, None)}  # the rollout columns of 0008, empty for what 0.1 indexed


def test_labels_of_a_0_1_database_say_nobody_recorded_how_their_reviewer_was_known(legacy_copy):
    connect(legacy_copy)
    assert {r["identified_by"] for r in rows(make_url(legacy_copy).database, "labels")} == {""}


def test_a_0_1_database_is_left_at_head_without_its_ledger(legacy_copy):
    connect(legacy_copy)
    path = make_url(legacy_copy).database
    assert rows(path, "alembic_version") == [{"version_num": HEAD}]
    assert legacy.LEDGER not in table_names(legacy_copy)


def test_a_0_1_database_has_the_head_schema(legacy_copy):
    connect(legacy_copy)
    assert schema_differences(legacy_copy) == []


def test_a_0_1_database_opened_again_is_not_changed(legacy_copy):
    connect(legacy_copy)
    close(legacy_copy)
    path = make_url(legacy_copy).database
    before = {name: rows(path, name) for name in table_names(legacy_copy)}
    assert upgrade(engine_for(legacy_copy)).at_head
    assert {name: rows(path, name) for name in table_names(legacy_copy)} == before


def test_a_0_1_database_whose_ledger_owes_the_pair_column_gets_it(legacy_copy):
    path = make_url(legacy_copy).database
    with sqlite3.connect(path) as conn:
        conn.execute("DELETE FROM labels WHERE pair_trace_id IS NOT NULL")
        conn.execute("ALTER TABLE labels DROP COLUMN pair_trace_id")
        conn.execute("UPDATE orchviz_schema SET version = 1 WHERE name = 'labels'")
    connect(legacy_copy)
    assert [r["pair_trace_id"] for r in rows(path, "labels")] == [None] * 4
    assert schema_differences(legacy_copy) == []


def test_a_0_1_database_whose_ledger_owes_the_index_rebuild_gets_an_empty_index(legacy_copy):
    path = make_url(legacy_copy).database
    with sqlite3.connect(path) as conn:  # the index as orchviz schema 1 had it
        conn.execute("ALTER TABLE orchviz_trace_index DROP COLUMN targets")
        conn.execute("ALTER TABLE orchviz_trace_index DROP COLUMN rubric_sha")
        conn.execute("UPDATE orchviz_schema SET version = 1 WHERE name = 'orchviz'")
    connect(legacy_copy)
    assert rows(path, "orchviz_trace_index") == []
    assert len(rows(path, "labels")) == 5
    assert schema_differences(legacy_copy) == []


@pytest.mark.postgres
def test_a_0_1_postgresql_database_is_adopted_with_nothing_lost(fresh_postgres):
    write_legacy_postgres(fresh_postgres)
    labels = LabelStore(connect(fresh_postgres), default_rubric())
    assert sorted(x.label_id for x in labels.all()) == \
        sorted(r["label_id"] for r in rows(LEGACY_DB, "labels"))
    assert {x.identified_by for x in labels.all()} == {""}
    assert len(BookmarkStore(connect(fresh_postgres)).versions()) == 2
    assert legacy.LEDGER not in table_names(fresh_postgres)
    assert schema_differences(fresh_postgres) == []


# -- databases orchviz will not open -------------------------------------------------------------


def test_a_database_of_a_newer_orchviz_is_refused_and_left_as_it_is(legacy_copy):
    connect(legacy_copy)
    close(legacy_copy)
    set_revision(legacy_copy, "0099")
    with pytest.raises(SchemaError, match="revision 0099.*newer orchviz"):
        connect(legacy_copy)
    assert rows(make_url(legacy_copy).database, "alembic_version") == [{"version_num": "0099"}]


@pytest.mark.postgres
def test_a_postgresql_database_of_a_newer_orchviz_is_refused(fresh_postgres):
    connect(fresh_postgres)
    close(fresh_postgres)
    set_revision(fresh_postgres, "0099")
    with pytest.raises(SchemaError, match="newer orchviz"):
        connect(fresh_postgres)


def test_tables_like_orchviz_s_without_a_version_are_not_taken_over(tmp_path):
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE labels (id INTEGER PRIMARY KEY, name TEXT)")
    with pytest.raises(SchemaError, match="labels"):
        connect(f"sqlite:///{path}")
    assert rows(path, "labels") == []


# -- orchviz db ----------------------------------------------------------------------------------


def test_db_upgrade_creates_the_schema_of_a_fresh_database(tmp_path, capsys):
    assert main(["db", "upgrade", "--db", str(tmp_path / "fresh.db")]) == 0
    assert capsys.readouterr().out == f"{HEAD} (head): created the schema\n"


def test_db_upgrade_adopts_a_0_1_database(legacy_copy, capsys):
    assert main(["db", "upgrade", "--db", make_url(legacy_copy).database]) == 0
    assert capsys.readouterr().out == f"{HEAD} (head): adopted the orchviz 0.1 database, " \
                                      "nothing lost\n"


def test_db_upgrade_of_an_older_revision_names_it(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = engine_for(url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0001")
    engine.dispose()
    assert main(["db", "upgrade", "--db", url]) == 0
    assert capsys.readouterr().out == f"{HEAD} (head): upgraded from 0001\n"


def test_db_upgrade_twice_has_nothing_to_do(tmp_path, capsys):
    main(["db", "upgrade", "--db", str(tmp_path / "fresh.db")])
    capsys.readouterr()
    assert main(["db", "upgrade", "--db", str(tmp_path / "fresh.db")]) == 0
    assert capsys.readouterr().out == f"{HEAD} (head): already up to date\n"


def test_db_current_says_a_database_is_at_head(tmp_path, capsys):
    connect(f"sqlite:///{tmp_path / 'fresh.db'}")
    assert main(["db", "current", "--db", str(tmp_path / "fresh.db")]) == 0
    assert capsys.readouterr().out == f"{HEAD} (head)\n"


def test_db_current_says_a_0_1_database_will_be_adopted_and_changes_nothing(legacy_copy, capsys):
    path = make_url(legacy_copy).database
    assert main(["db", "current", "--db", path]) == 0
    assert capsys.readouterr().out == \
        f"none: an orchviz 0.1 database, which `orchviz db upgrade` adopts (head is {HEAD})\n"
    assert {name: rows(path, name) for name in table_names(legacy_copy)} == \
        {name: rows(LEGACY_DB, name) for name in table_names(f"sqlite:///{LEGACY_DB}")}


@pytest.mark.postgres
def test_db_current_and_upgrade_on_postgresql(fresh_postgres, capsys):
    assert main(["db", "current", "--db", fresh_postgres]) == 0
    assert main(["db", "upgrade", "--db", fresh_postgres]) == 0
    assert main(["db", "current", "--db", fresh_postgres]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"none (not head: head is {HEAD}; run `orchviz db upgrade`)",
        f"{HEAD} (head): created the schema",
        f"{HEAD} (head)"]


def test_db_current_of_a_missing_file_says_so_and_creates_none(tmp_path, capsys):
    assert main(["db", "current", "--db", str(tmp_path / "missing.db")]) == 1
    assert "no such database file" in capsys.readouterr().err
    assert not (tmp_path / "missing.db").exists()


def test_a_version_row_behind_its_tables_is_one_sentence_and_changes_nothing(legacy_copy,
                                                                            capsys):
    connect(legacy_copy)
    close(legacy_copy)
    set_revision(legacy_copy, "0004")  # its tables are at head
    path = make_url(legacy_copy).database
    before = sqlite3.connect(path).execute("SELECT sql FROM sqlite_master").fetchall()
    assert main(["db", "upgrade", "--db", legacy_copy]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert re.fullmatch(r"orchviz: the database \S+ records schema revision 0004 but its tables "
                        r"are not at it, so upgrading them failed \(duplicate column name: \w+\) "
                        r"and nothing was changed \(.*alembic_version.*\)\n", err)
    assert rows(path, "alembic_version") == [{"version_num": "0004"}]
    assert sqlite3.connect(path).execute("SELECT sql FROM sqlite_master").fetchall() == before


@pytest.mark.parametrize("verb", ["current", "upgrade"])
def test_db_of_a_newer_orchviz_prints_one_sentence_and_exits_1(legacy_copy, capsys, verb):
    connect(legacy_copy)
    close(legacy_copy)
    set_revision(legacy_copy, "0099")
    assert main(["db", verb, "--db", legacy_copy]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "revision 0099" in err and "newer orchviz" in err


@pytest.mark.parametrize("verb", ["current", "upgrade"])
def test_db_verbs_have_help(verb, capsys):
    with pytest.raises(SystemExit) as done:
        main(["db", verb, "--help"])
    assert done.value.code == 0
    assert "--db" in capsys.readouterr().out
