"""`orchviz pool follow`: what a trainer writes goes into a pool a shard a look (new files whole,
appended lines from where they were left, a half-written line waited for), never an id twice,
and the pool's index lists it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
