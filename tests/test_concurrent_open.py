"""Concurrent first open is safe: writers started at once on a fresh store, each opening it for
the first time, all create-or-find the schema and all save their label, on SQLite and
PostgreSQL. (With 0.1, 8 such writers crashed about every other time: `table orchviz_schema
already exists`.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from factories import REPO
from test_migrations import postgres_database
from viz_app.store.database import HEAD, close, connect
from viz_app.store.tables import labels_table

TRACE = REPO / "demo_traces" / "09_review_dropped_finding.json"

WRITERS = r"""
import json, os, sys, traceback
from viz_app.io.native import load_trace
from viz_app.labels.rubric import load_rubric
from viz_app.store.database import history
from viz_app.workspace import Workspace

url, count, trace_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
trace, rubric = load_trace(trace_file), load_rubric()
history()  # Alembic too: it is loaded only to migrate, which every writer of a fresh store tries
gate, release = os.pipe()
children = []
for number in range(count):
    pid = os.fork()
    if pid == 0:
        os.close(release)
        os.read(gate, 1)  # the barrier: every writer waits until all are forked
        try:
            workspace = Workspace.open(url, rubric=rubric)
            workspace.labelling.save(trace, "aggregation_quality", 2, f"writer-{number}", "e12")
            code = 0
        except BaseException:
            traceback.print_exc()
            code = 1
        sys.stderr.flush()
        os._exit(code)
    children.append(pid)
os.close(gate)
os.close(release)  # end of file for every writer at once: they open the store together
print(json.dumps([os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children]))
"""
"""Forks `count` writers and lets them go at once; prints their exit codes. The modules (Alembic
too), the trace and the rubric are loaded once, before the fork, so that 32 writers collide on a
2-core machine within a second instead of importing one after another for a minute; each writer
is its own process with its own connections, and none has opened the store before the barrier.
(Without the schema lock most of them fail here, on SQLite and on PostgreSQL.)"""

UPGRADE_AT_THE_GATE = r"""
import pathlib, sys, time
from viz_app.cli import main
print("ready", flush=True)
while not pathlib.Path(sys.argv[1]).exists():
    time.sleep(0.002)
sys.exit(main(["db", "upgrade", "--db", sys.argv[2]]))
"""
"""One `orchviz db upgrade`, imported and then held until the gate file appears."""


def run_writers(url: str, count: int) -> None:
    """Start `count` writers on the store at once; fails unless every one exits 0."""
    done = subprocess.run([sys.executable, "-c", WRITERS, url, str(count), str(TRACE)],
                          capture_output=True, text=True, timeout=300, env=_env())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [0] * count, done.stderr


def _env() -> dict[str, str]:
    return {**os.environ,
            "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}


def labels_saved(url: str) -> int:
    """How many labels the store holds."""
    try:
        with connect(url).connect() as conn:
            return conn.execute(select(func.count()).select_from(labels_table)).scalar_one()
    finally:
        close(url)


@pytest.fixture
def fresh_postgres(postgres_url) -> Iterator[str]:
    """A new, empty PostgreSQL database of this test's own."""
    with postgres_database(postgres_url) as url:
        yield url


@pytest.mark.parametrize("count", [8, 32])
def test_writers_started_at_once_on_a_fresh_sqlite_file_all_save(tmp_path, count):
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    run_writers(url, count)
    assert labels_saved(url) == count


@pytest.mark.postgres
@pytest.mark.parametrize("count", [8, 32])
def test_writers_started_at_once_on_a_fresh_postgresql_database_all_save(fresh_postgres, count):
    run_writers(fresh_postgres, count)
    assert labels_saved(fresh_postgres) == count


def test_orchviz_db_upgrade_run_8_times_at_once_creates_the_schema_once(tmp_path):
    """Separate `orchviz` processes, each importing on its own, started at once."""
    db = tmp_path / "fresh.db"
    gate = tmp_path / "go"
    processes = [subprocess.Popen([sys.executable, "-c", UPGRADE_AT_THE_GATE, str(gate), str(db)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=_env())
                 for _ in range(8)]
    assert [p.stdout.readline() for p in processes] == ["ready\n"] * 8
    gate.touch()
    outputs = [p.communicate(timeout=300) for p in processes]
    assert [p.returncode for p in processes] == [0] * 8, [err for _, err in outputs]
    said = sorted(out.strip() for out, _ in outputs)
    assert said == [f"{HEAD} (head): already up to date"] * 7 + \
        [f"{HEAD} (head): created the schema"]
