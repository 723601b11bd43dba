"""Failing storage: a read-only database, a lock held past the busy timeout, a full disk and an
unreachable PostgreSQL each reach the user as one sentence (a StoreError) that says what
happened and that nothing was saved; the CLI prints it in one line and exits 1."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess

import pytest

from conftest import free_port
from factories import PREMATURE_ID, make_workspace, premature
from viz_app.cli import main
from viz_app.errors import StoreError
from viz_app.labels.label import Reviewer
from viz_app.store.database import close
from viz_app.workspace import Workspace

ANN = Reviewer(name="ann", via="cli")
NOTHING_SAVED = "so nothing was saved"


@pytest.fixture(autouse=True)
def cli_log(monkeypatch):
    """orchviz's log as in a CLI process, shown nowhere (an AppTest run earlier in this process
    gave it the app's handler, which prints each failure's details for the server's log)."""
    logger = logging.getLogger("viz_app")
    monkeypatch.setattr(logger, "handlers", [])
    monkeypatch.setattr(logger, "propagate", True)


@pytest.fixture
def ws(tmp_path):
    """A workspace on demo 10 with one label saved."""
    workspace = make_workspace(tmp_path, traces=[premature()])
    workspace.library.update_index()
    workspace.labelling.save_answers(workspace.library.trace(PREMATURE_ID), "e12", {"aggregation_quality": 3}, ANN)
    return workspace


def read_only_url(ws: Workspace) -> str:
    """The workspace's SQLite file opened read-only (SQLite's own `mode=ro`: root may write any
    file, but not through a read-only connection)."""
    return f"sqlite:///file:{ws.settings.db_url.removeprefix('sqlite:///')}?mode=ro&uri=true"


def records_file(tmp_path, count: int = 1) -> str:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps({
        "trace_id": PREMATURE_ID, "event_id": "e12", "question": "aggregation_quality",
        "value": 1 + i % 5, "reviewer": f"judge-{i}"}) + "\n" for i in range(count)))
    return str(path)


def one_line_on_stderr(capsys) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]


# -- a read-only database ---------------------------------------------------------------------


def test_saving_into_a_read_only_database_is_one_sentence_and_saves_nothing(ws):
    readonly = Workspace.open(read_only_url(ws), traces=ws.settings.traces)
    trace = readonly.library.trace(PREMATURE_ID)  # reading works
    with pytest.raises(StoreError, match=f"is read-only, {NOTHING_SAVED}$") as caught:
        readonly.labelling.save_answers(trace, "e12", {"aggregation_quality": 5}, ANN)
    assert "orchviz.db" in str(caught.value)
    assert caught.value.__cause__ is not None  # the database's own error, for the log
    assert ws.labelling.count() == 1


def test_the_cli_says_a_database_is_read_only_in_one_line_and_exits_1(ws, tmp_path, capsys):
    code = main(["labels", "import", records_file(tmp_path), "--db", read_only_url(ws),
                 "--traces", str(ws.settings.traces[0])])
    assert code == 1
    line = one_line_on_stderr(capsys)
    assert line.startswith("orchviz: the database ") and line.endswith(
        f"is read-only, {NOTHING_SAVED}")
    assert ws.labelling.count() == 1


# -- a lock held past the busy timeout ---------------------------------------------------------


def test_a_lock_held_past_the_busy_timeout_is_one_sentence_and_saves_nothing(ws):
    path = ws.settings.db_url.removeprefix("sqlite:///")
    impatient = Workspace.open(f"sqlite:///{path}?timeout=0.3", traces=ws.settings.traces)
    trace = impatient.library.trace(PREMATURE_ID)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
    try:
        with pytest.raises(StoreError, match=r"^the database stayed locked by another writer for "
                                             rf"longer than 0\.3 s, {NOTHING_SAVED}; try again$"):
            impatient.labelling.save_answers(trace, "e12", {"aggregation_quality": 5}, ANN)  # no path
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert ws.labelling.count() == 1
    impatient.labelling.save_answers(trace, "e12", {"aggregation_quality": 5}, ANN)  # free again: saved
    assert ws.labelling.count() == 2


def test_the_cli_says_the_database_stayed_locked_in_one_line(ws, tmp_path, capsys):
    path = ws.settings.db_url.removeprefix("sqlite:///")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        code = main(["labels", "import", records_file(tmp_path), "--db",
                     f"sqlite:///{path}?timeout=0.2", "--traces", str(ws.settings.traces[0])])
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert code == 1
    assert one_line_on_stderr(capsys).endswith(f"{NOTHING_SAVED}; try again")


# -- a full disk --------------------------------------------------------------------------------


def test_a_full_database_is_one_sentence_and_saves_nothing(ws, tmp_path):
    """SQLite's `max_page_count` makes the database full where it stands: the same error
    (SQLITE_FULL) as a full disk."""
    from sqlalchemy import event

    with ws.engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()

    def cap(connection, _record) -> None:
        connection.execute(f"PRAGMA max_page_count={pages}")

    event.listen(ws.engine, "connect", cap)
    ws.engine.dispose()  # every connection from now on is capped
    records = [{"trace_id": PREMATURE_ID, "event_id": "e12", "question": "aggregation_quality",
                "value": 1 + i % 5, "reviewer": f"judge-{i}", "comment": "x" * 500}
               for i in range(2000)]
    trace = ws.library.trace(PREMATURE_ID)
    with pytest.raises(StoreError, match=f"is full .*, {NOTHING_SAVED}$"):
        ws.labelling.import_labels(records, {trace.trace_id: trace}, "judge.jsonl")
    event.remove(ws.engine, "connect", cap)
    ws.engine.dispose()
    assert ws.labelling.count() == 1


@pytest.fixture
def tiny_disk(tmp_path):
    """A 512 KB tmpfs (root may mount one); skipped where mounting is not allowed."""
    where = tmp_path / "tiny"
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(where)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); "
                    "the full-database test above covers SQLITE_FULL")
    yield where
    subprocess.run(["umount", "-l", str(where)], capture_output=True)


def test_a_full_disk_is_one_sentence_on_the_cli(tiny_disk, tmp_path, capsys):
    workspace = make_workspace(tmp_path, traces=[premature()], db=tiny_disk / "orchviz.db")
    url = workspace.settings.db_url
    code = main(["labels", "import", records_file(tmp_path, 3000), "--db", url,
                 "--traces", str(workspace.settings.traces[0])])
    assert code == 1
    assert one_line_on_stderr(capsys).endswith(NOTHING_SAVED)
    close(url)
    assert make_workspace(tmp_path, traces=[premature()], db=tiny_disk / "orchviz.db") \
        .labelling.count() == 0


# -- an unreachable PostgreSQL -------------------------------------------------------------------


def unreachable_url() -> str:
    return f"postgresql+psycopg://orchviz:secret@127.0.0.1:{free_port()}/orchviz"


def test_an_unreachable_postgresql_is_one_sentence():
    with pytest.raises(StoreError, match=r"the database server postgresql\+psycopg://orchviz:\*\*\*"
                                         rf"@127\.0\.0\.1:\d+/orchviz cannot be reached \(.*\), "
                                         f"{NOTHING_SAVED}$") as caught:
        Workspace.open(unreachable_url())
    assert "secret" not in str(caught.value)


def test_the_cli_says_postgresql_cannot_be_reached_in_one_line_and_exits_1(tmp_path, capsys):
    folder = make_workspace(tmp_path, traces=[premature()]).settings.traces[0]
    code = main(["labels", "progress", "--db", unreachable_url(), "--traces", str(folder)])
    assert code == 1
    line = one_line_on_stderr(capsys)
    assert "cannot be reached" in line and "secret" not in line


def test_a_sqlite_file_in_a_folder_that_is_not_there_is_one_sentence(tmp_path):
    with pytest.raises(StoreError, match=f"cannot be opened .*, {NOTHING_SAVED}$"):
        Workspace.open(f"sqlite:///{tmp_path}/no/such/folder/orchviz.db")


def test_a_missing_table_while_migrating_is_no_store_error(tmp_path):
    """The errors orchviz expects (reading a version table that is not there yet) stay as they
    are: a fresh database is created as before."""
    assert Workspace.open(tmp_path / "fresh.db").labelling.count() == 0
