"""`orchviz pool follow`: what a trainer writes goes into a pool a shard a look (new files whole,
appended lines from where they were left, a half-written line waited for), never an id twice,
and the pool's index lists it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from factories import make_workspace
from rollout_writer import append, lines
from viz_app.io import pool
from viz_app.io.follow import Follower

GROUP = 4


def test_a_follower_gives_what_was_written_since_its_last_look(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / "rollout_data_rank_0.jsonl"
    append(log, b"".join(lines(1, range(2), GROUP)))
    follower = Follower([run])
    assert len(follower.poll()) == 2 * GROUP
    assert follower.poll() == []
    step = lines(2, range(1), GROUP)
    append(log, b"".join(step[:-1]) + step[-1][:20])  # the last line half-written
    assert len(follower.poll()) == GROUP - 1
    append(log, step[-1][20:])
    (last,) = follower.poll()
    assert last.trace_id.endswith(f"/2/{3 * GROUP - 1}")


def test_pool_follow_adds_a_shard_a_look_and_never_an_id_twice(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / "rollout_data_rank_0.jsonl"
    append(log, b"".join(lines(1, range(2), GROUP)))
    out = tmp_path / "pool"
    db = tmp_path / "follow.db"

    def look() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                               "-o", str(out), "--once", "--db", str(db)],
                              capture_output=True, text=True)

    done = look()
    assert done.returncode == 0, done.stderr
    assert "added 8 traces" in done.stdout
    append(log, b"".join(lines(2, range(1), GROUP)))
    done = look()  # a new process: it goes on from where the last left the file
    assert done.returncode == 0, done.stderr
    assert "added 4 traces" in done.stdout and "was written before" not in done.stderr
    manifest = pool.read_manifest(str(out))
    assert manifest["traces"] == 3 * GROUP and len(manifest["shards"]) == 2
    ids = [t.trace_id for t in pool.read_pool(str(out), on_error=print)]
    assert len(ids) == len(set(ids)) == 3 * GROUP
    ws = make_workspace(tmp_path / "ws", db=db)
    ws.settings.pools.append(str(out))
    assert ws.library.pool_index(str(out)).count() == 3 * GROUP


def test_appending_to_a_pool_keeps_its_shards_and_adds_one(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(1, range(3), GROUP)))
    traces = Follower([run]).poll()
    out = str(tmp_path / "pool")
    first = pool.append_pool(traces[:4], out)
    again = pool.append_pool(traces, out)
    assert (first.traces, again.traces) == (4, 8) and len(again.skipped) == 4
    assert [e["path"] for e in pool.read_manifest(out)["shards"]] == [
        "part-00000.parquet", "part-00001.parquet"]
    found = pool.trace_by_id(out, traces[-1].trace_id)
    assert found.rewards == traces[-1].rewards
    assert Path(out, "_ids.parquet").exists()


# -- one follower a pool ------------------------------------------------------------------------

def test_a_second_follower_of_one_pool_is_refused_in_one_sentence_and_reads_nothing(tmp_path):
    """Two followers of one pool would keep their positions (`_follow.json`) over each other's
    and add shards at once: the second is refused while the first runs, and runs once the first
    is gone (the system lets the lock go with its process, however it ended)."""
    import os
    import signal
    import time

    run = tmp_path / "run"
    run.mkdir()
    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(1, range(2), GROUP)))
    out = tmp_path / "pool"
    first = subprocess.Popen([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                              "-o", str(out), "--interval", "0.2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert "added 8 traces" in first.stdout.readline()
        second = subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                                 "-o", str(out), "--once"], capture_output=True, text=True)
        assert second.returncode != 0 and second.stdout == ""
        said = second.stderr.strip()
        assert "is followed already by another `orchviz pool follow`" in said, said
        assert f"process {first.pid}" in said and "nothing was read" in said
        assert len(said.splitlines()) == 1
    finally:
        os.kill(first.pid, signal.SIGKILL)  # ended as a crash ends it: no release of its own
        first.wait()
        first.stdout.close()
        first.stderr.close()
    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(2, range(1), GROUP)))
    time.sleep(0.05)
    again = subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                            "-o", str(out), "--once"], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert "added 4 traces" in again.stdout  # from where the first left off, nothing twice
    assert pool.read_manifest(str(out))["traces"] == 3 * GROUP


def test_on_object_storage_the_lock_is_a_lease_a_stopped_follower_gives_up(tmp_path):
    """Object storage has no lock: `_follow.lock` is a lease renewed at every look. A live
    lease refuses a second follower; one not renewed for `lease_s` is taken over, and the
    follower that held it stops at its next look rather than keep positions over the other's."""
    from viz_app.io.follow import FollowerBusy, FollowLock

    url = f"memory://follow-lease-{tmp_path.name}/pool"
    first = FollowLock(url, lease_s=60).acquire()
    with pytest.raises(FollowerBusy, match="is followed already by another"):
        FollowLock(url, lease_s=60).acquire()
    first.renew()
    late = FollowLock(url, lease_s=0.0).acquire()  # a lease older than 0 s: taken over
    with pytest.raises(FollowerBusy, match="took this pool over"):
        first.renew()
    late.release()
    FollowLock(url, lease_s=60).acquire().release()  # let go: the next one takes it
