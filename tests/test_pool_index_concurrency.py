"""A pool's index is read by one process while another updates it: the app holds the index open
while `orchviz pool index` (a cron job, a person in a terminal) adds a new shard's rows. Updates
write a copy of the DuckDB file and swap it in under a writer lock, so the reader is never
refused, sees the new rows once the update finishes, and an update that dies leaves the index
as it was."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest

from factories import REPO, example_trace
from test_library_pool import captions, listed, pool_env  # noqa: F401  (the app over a pool)
from test_library_pool import run as run_app
from viz_app.errors import StoreError
from viz_app.io import pool
from viz_app.labels.rubric import default_rubric
from viz_app.store.pool_index import IndexBusy, PoolIndex, default_index_path


def write_shard(folder: Path, name: str, first: int, count: int = 6) -> None:
    """A Parquet shard of `count` traces (rollout-<first>...), each with a word of its own
    (its system, `sysNNNx`), put into a bare pool folder (no manifest: its shards are listed)."""
    traces = [example_trace(f"rollout-{i:03d}", task_id=f"task-{i // 4}", system=f"sys{i:03d}x")
              for i in range(first, first + count)]
    scratch = folder.parent / f"scratch-{name}"
    pool.write_pool(traces, str(scratch), shard_rows=count, row_group_rows=2)
    folder.mkdir(exist_ok=True)
    shutil.move(scratch / "part-00000.parquet", folder / f"{name}.parquet")
    shutil.rmtree(scratch)


@pytest.fixture
def location(tmp_path) -> str:
    """A bare pool of 18 traces in 3 shards (part-0, part-1, part-2)."""
    for n in range(3):
        write_shard(tmp_path / "pool", f"part-{n}", 6 * n)
    return str(tmp_path / "pool")


@pytest.fixture
def db(tmp_path) -> Path:
    return tmp_path / "orchviz.db"


@pytest.fixture
def held(location, db) -> PoolIndex:
    """The index as the app holds it: where the CLI puts it, updated, read, and kept open."""
    index = PoolIndex(default_index_path(location, f"sqlite:///{db}"), location)
    index.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert index.count() == 18 and index.page()  # its DuckDB file is open from here on
    yield index
    index.close()


def cli(*argv: str, **options) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "viz_app", *argv], cwd=REPO,
                          capture_output=True, text=True, timeout=300, **options)


def ids(index: PoolIndex, **query) -> set[str]:
    return {r.trace_id for r in index.page(limit=1000, **query)}


def expected(*numbers) -> set[str]:
    return {f"rollout-{i:03d}" for i in numbers}


def test_the_cli_indexes_a_pool_the_app_holds_open_and_the_app_pages_its_new_rows(
        held, location, db):
    write_shard(Path(location), "part-3", 18)
    done = cli("pool", "index", location, "--db", str(db), "--workers", "1")
    assert done.returncode == 0, done.stderr
    assert "24 traces indexed from 4 shards (1 read, 3 unchanged" in done.stdout
    assert held.count() == 24  # the same object, never reopened by the test
    assert ids(held) == expected(*range(24))
    assert held.count(search="sys020x") == 1 and ids(held, search="sys020x") == expected(20)
    assert held.locate("rollout-021") is not None


def test_the_app_reads_while_the_cli_indexes(held, location, db):
    """Every read the app makes while the CLI runs answers with the old rows or the new (never
    an error, never a mixture of both, never a refusal to open the file)."""
    for n in range(3, 6):
        write_shard(Path(location), f"part-{n}", 6 * n)
    run = subprocess.Popen([sys.executable, "-m", "viz_app", "pool", "index", location, "--db",
                            str(db), "--workers", "1"], cwd=REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    seen = set()
    while run.poll() is None:
        count, searched = held.count(), held.count(search="rollout")
        assert count in (18, 36) and searched in (18, 36)  # the old index or the new
        seen.add(count)
    assert run.returncode == 0, run.stderr.read()
    assert seen  # read while the CLI ran
    assert held.count() == held.count(search="rollout") == 36
    assert ids(held, search="sys030x") == expected(30)


def test_an_update_waits_for_the_one_under_way_and_both_shards_end_up_indexed(
        held, location, db):
    """The app's Re-index is part-way (paused after its first shard) when the CLI starts: the
    CLI says it waits, then indexes the shard added meanwhile once the app's update is done."""
    Path(location, "part-2.parquet").unlink()
    write_shard(Path(location), "part-2", 100)  # rewritten: rollouts 100-105
    paused, go = threading.Event(), threading.Event()

    def progress(done: int, total: int, shard: str) -> None:
        if done and not go.is_set():  # the first shard's traces are written
            paused.set()
            assert go.wait(60)

    app = threading.Thread(target=held.update, args=(pool.shards(location),),
                           kwargs=dict(rubric=default_rubric(), workers=1, progress=progress))
    app.start()
    assert paused.wait(60)
    write_shard(Path(location), "part-3", 18)
    run = subprocess.Popen([sys.executable, "-m", "viz_app", "pool", "index", location, "--db",
                            str(db), "--workers", "1"], cwd=REPO, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    said: list[str] = []
    reader = threading.Thread(target=lambda: said.extend(run.stderr), daemon=True)
    reader.start()
    deadline = time.monotonic() + 120
    while not any("another update of this pool's index is under way" in line for line in said):
        assert run.poll() is None and time.monotonic() < deadline, said
        time.sleep(0.1)
    time.sleep(1)
    assert run.poll() is None  # waiting for the app's update
    assert held.count() == 18 and ids(held) == expected(*range(18))  # still the old index
    go.set()
    app.join(60)
    out = run.stdout.read()
    assert run.wait(300) == 0, said
    assert "24 traces indexed from 4 shards (1 read, 3 unchanged" in out
    assert ids(held) == expected(*range(12), *range(18, 24), *range(100, 106))
    assert held.count(search="sys016x") == 0 and held.count(search="sys103x") == 1


def test_an_update_under_way_makes_another_that_will_not_wait_say_so(held, location):
    other = PoolIndex(held.path, location)  # a second object in one process: another thread
    with held._writing():
        with pytest.raises(IndexBusy, match="being updated"):
            other.update(pool.shards(location), rubric=default_rubric(), workers=1, wait=False)
    assert other.count() == 18
    other.close()


def test_a_second_object_in_the_process_sees_the_rows_the_first_adds(held, location):
    other = PoolIndex(held.path, location)
    assert other.count() == 18
    write_shard(Path(location), "part-3", 18)
    held.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert other.count() == 24 and other.count(search="sys019x") == 1
    other.close()


KILLED = """
import os, signal, sys
from viz_app.io import pool
from viz_app.labels.rubric import default_rubric
from viz_app.store.pool_index import PoolIndex

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

setattr(PoolIndex, sys.argv[3], die)
index = PoolIndex(sys.argv[1], sys.argv[2])
index.update(pool.shards(sys.argv[2]), rubric=default_rubric(), workers=int(sys.argv[4]))
"""


def killed_update(index: PoolIndex, location: str, at: str, workers: int = 1) -> None:
    """An update by another process, killed (SIGKILL) when it reaches PoolIndex.`at`."""
    done = subprocess.run([sys.executable, "-c", KILLED, str(index.path), location, at,
                           str(workers)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr


def test_an_update_killed_while_its_workers_read_leaves_no_lock_behind(held, location):
    """The workers forked to read shards do not hold the writer lock: once the update's own
    process is dead, the next update starts at once, even while they finish their shard."""
    for n in range(3, 8):
        write_shard(Path(location), f"part-{n}", 6 * n)
    killed_update(held, location, "_write", workers=2)  # killed at its first shard's rows
    done = held.update(pool.shards(location), rubric=default_rubric(), workers=1, wait=False)
    assert done.traces == 48 == held.count(search="rollout")


def test_an_update_killed_before_its_swap_leaves_the_index_as_it_was(held, location):
    Path(location, "part-0.parquet").unlink()  # gone: its rows would leave
    write_shard(Path(location), "part-3", 18)
    killed_update(held, location, "_publish")  # the new file and words written, not swapped
    assert ids(held) == expected(*range(18))
    assert held.count(search="rollout") == 18 and held.count(search="sys019x") == 0
    assert ids(held, search="sys003x") == expected(3)
    fresh = PoolIndex(held.path, location)  # as an app started now would
    assert fresh.count() == 18 and fresh.count(search="rollout") == 18
    fresh.close()
    done = held.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert done.traces == 18 and ids(held) == expected(*range(6, 24))
    assert held.count(search="rollout") == 18 and held._words_exact()
    assert list(held.path.parent.glob("*.tmp*")) == []  # the dead update's copy went


def test_an_update_killed_after_its_swap_has_its_rows_and_no_stray_words(held, location):
    Path(location, "part-0.parquet").unlink()
    killed_update(held, location, "_forget_words")  # swapped; old words not yet forgotten
    assert ids(held) == expected(*range(6, 18))
    assert held.count(search="sys003x") == 0 and held.count(search="rollout") == 12
    assert held.page(search="rollout", limit=100) and not held._words_exact()
    held.update(pool.shards(location), rubric=default_rubric(), workers=1)  # nothing new
    assert held._words_exact() and held.count(search="rollout") == 12


def test_a_failure_while_writing_leaves_the_index_readable_and_complete(
        held, location, monkeypatch):
    write_shard(Path(location), "part-3", 18)
    write_shard(Path(location), "part-4", 24)

    def failing(*args, **kwargs):
        raise OSError("No space left on device")

    monkeypatch.setattr(PoolIndex, "_publish", failing)
    with pytest.raises(StoreError, match="could not be updated .No space left on device.; "
                                         "it was left as it was"):
        held.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert ids(held) == expected(*range(18)) and held.count(search="rollout") == 18
    assert list(held.path.parent.glob("*.tmp*")) == []
    monkeypatch.undo()
    assert held.update(pool.shards(location), rubric=default_rubric(), workers=1).traces == 30
    assert held.count(search="rollout") == 30 and held._words_exact()


def test_an_index_of_another_layout_is_made_again_while_the_app_reads_the_old(
        held, location):
    con = duckdb.connect(":memory:")
    copy = held.path.with_name("copy.duckdb")
    shutil.copyfile(held.path, copy)
    con.execute(f"ATTACH '{copy}' AS c")
    con.execute("UPDATE c.meta SET value = 'old' WHERE key = 'version'")
    con.close()
    copy.replace(held.path)  # as an older orchviz would have left it
    fresh = PoolIndex(held.path, location)
    assert fresh.count() == 0
    fresh.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert held.count() == fresh.count() == 18 == held.count(search="rollout")
    fresh.close()


def test_the_first_index_is_made_by_whichever_process_comes_first(tmp_path, location, db):
    path = default_index_path(location, f"sqlite:///{db}")
    runs = [subprocess.Popen([sys.executable, "-m", "viz_app", "pool", "index", location,
                              "--db", str(db), "--workers", "1"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]
    outs = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outs
    index = PoolIndex(path, location)
    assert index.count() == 18 == index.count(search="rollout") and index._words_exact()
    assert sorted(out.split(" traces")[0] for out, _ in outs) == ["18", "18"]
    index.close()


def test_the_library_page_says_an_update_is_under_way_and_shows_the_index_as_it_was(pool_env):
    """Another process holds the index's writer lock: the page's own check (and its Re-index)
    does not wait for it, says so, and pages the index as it was."""
    with pool_env.library.pool_index()._writing():  # as `orchviz pool index` running elsewhere does
        at = run_app()
        assert not at.exception
        assert "update of this pool's index is under way" in " ".join(i.value for i in at.info)
        assert listed(at) == [f"rollout-{i:04d}" for i in range(50)]
        at.button(key="pool_reindex").click().run()
        assert not at.exception and len(at.info) == 1
        assert "120 of 120 traces" in captions(at)
    at.button(key="pool_reindex").click().run()
    assert not at.exception and not at.info


def test_an_index_file_that_is_not_duckdbs_is_made_again(tmp_path, location):
    path = tmp_path / "index" / "pool.duckdb"
    path.parent.mkdir()
    path.write_bytes(b"not a database, a file cut short by a full disk")
    index = PoolIndex(path, location)
    assert index.count() == 0
    index.update(pool.shards(location), rubric=default_rubric(), workers=1)
    assert index.count() == 18 == index.count(search="rollout")
    index.close()


def _children(pid: int) -> list[int]:
    """Live (not zombie) processes whose parent is `pid`, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                state, parent = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:2]
            except OSError:
                continue
            if int(parent) == pid and state != "Z":
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_kill_9_of_pool_index_takes_its_workers_with_it(tmp_path):
    folder = tmp_path / "big"
    pool.write_pool((example_trace(f"rollout-{i:04d}", task_id=f"t{i}") for i in range(1600)),
                    str(folder), shard_rows=200)
    command = subprocess.Popen(
        [sys.executable, "-m", "viz_app", "pool", "index", str(folder), "--workers", "2",
         "--db", str(tmp_path / "orchviz.db")], cwd=REPO, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(workers := _children(command.pid)) < 2 and time.monotonic() < deadline:
            assert command.poll() is None, "the index was made before its workers were seen"
            time.sleep(0.02)
        assert len(workers) >= 2
    finally:
        command.kill()
        command.wait()
    deadline = time.monotonic() + 10
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [w for w in workers if _alive(w)]
    for pid in left:  # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    assert left == []
