"""Following a run across restarts: where each file was left (its byte offset, lines and traces
read, its head's hash, inode, size and modification time) is kept, by `orchviz pool follow` in
the pool and by the library's index in its database with the rows read, so a follower or an app
started again reads only what a trainer wrote since: never a line twice, none skipped, a
half-written last line still waited for; a truncated or rotated file is read whole again."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from factories import make_workspace
from rollout_writer import append, lines
from viz_app.io import follow, pool
from viz_app.io.follow import POSITIONS, Follower, read_positions, write_positions

GROUP = 4


def later(path: Path) -> None:
    """A modification time no look can mistake for the last one."""
    stamp = time.time_ns() + 2_000_000_000
    os.utime(path, ns=(stamp, stamp))


def run_with(tmp_path: Path, data: bytes) -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    append(run / "rollout_data_rank_0.jsonl", data)
    return run


def no_whole_reads(monkeypatch) -> list[Path]:
    """Fail any whole read of a file (what a restart must not do to a followed file)."""
    read: list[Path] = []

    def refuse(path, *args, **kwargs):
        read.append(Path(path))
        raise AssertionError(f"{path} was read whole again")

    monkeypatch.setattr(follow, "read_file", refuse)
    return read


# -- a follower's positions ----------------------------------------------------------------------


def test_a_follower_given_its_positions_reads_only_what_is_new(tmp_path, monkeypatch):
    step_one = lines(1, range(2), GROUP)
    run = run_with(tmp_path, b"".join(step_one))
    first = Follower([run])
    assert len(first.poll()) == 2 * GROUP
    kept = tmp_path / "positions.json"
    write_positions(str(kept), first.positions)
    step_two = lines(2, range(1), GROUP)
    append(run / "rollout_data_rank_0.jsonl", b"".join(step_two[:-1]) + step_two[-1][:30])

    no_whole_reads(monkeypatch)
    again = Follower([run], read_positions(str(kept)))  # a new process, as it were
    fresh = again.poll()
    assert [t.trace_id.rsplit("/", 1)[-1] for t in fresh] == [str(n) for n in range(8, 11)]
    assert again.poll() == []  # the half-written line is waited for, not an error
    append(run / "rollout_data_rank_0.jsonl", step_two[-1][30:])
    (last,) = again.poll()
    assert last.trace_id.endswith("/11")
    tail = again.positions.tails[str(run / "rollout_data_rank_0.jsonl")]
    stat = (run / "rollout_data_rank_0.jsonl").stat()
    assert (tail.offset, tail.lines, tail.traces) == (stat.st_size, 3 * GROUP, 3 * GROUP)
    assert (tail.inode, tail.size, tail.mtime_ns) == (stat.st_ino, stat.st_size,
                                                      stat.st_mtime_ns)


def test_a_truncated_or_rotated_file_is_read_whole_again(tmp_path):
    log = run_with(tmp_path, b"".join(lines(1, range(2), GROUP))) / "rollout_data_rank_0.jsonl"
    follower = Follower([log.parent])
    assert len(follower.poll()) == 2 * GROUP
    log.write_bytes(b"".join(lines(5, range(1), GROUP)))  # truncated, and written anew
    later(log)
    fresh = follower.poll()
    assert len(fresh) == GROUP and all("/5/" in t.trace_id for t in fresh)

    log.rename(log.with_suffix(".old"))  # rotated: another file (inode) at the same path,
    log.write_bytes(b"".join(lines(5, range(1), GROUP)))  # its head and size alike
    follower.sources = [log]
    assert follower.positions.tails[str(log)].inode != log.stat().st_ino
    assert len(follower.poll()) == GROUP  # read whole: the old offset means nothing there


def test_a_rotated_rank_file_whose_lines_repeat_the_old_ids_is_kept_whole_by_a_pool(tmp_path):
    """A trainer rotates its rank file mid-step: the old one moved aside (still a rollout file
    of the run), a new one begun at the same path, numbered from line 1 again within the same
    step. Its samples are other samples: the pool keeps every one of them, and the moved file,
    read again under its new name, adds nothing twice (its ids name it by its first line)."""
    run = run_with(tmp_path, b"".join(lines(3, range(2), GROUP)))
    log = run / "rollout_data_rank_0.jsonl"
    out = tmp_path / "pool"
    follower = Follower([run])
    first = pool.append_pool(follower.poll(), str(out))
    assert first.traces == 2 * GROUP and not first.skipped
    log.rename(run / "rollout_data_rank_0.1.jsonl")  # rotated: moved aside, a new file begun
    append(log, b"".join(lines(3, range(2, 4), GROUP)))  # the same step, lines from 1 again
    fresh = follower.poll()
    assert len(fresh) == 4 * GROUP  # the moved file (read whole: a new name) and the new one
    done = pool.append_pool(fresh, str(out))
    assert done.traces == 2 * GROUP and len(done.skipped) == 2 * GROUP  # the moved file's: held
    held = list(pool.read_pool(str(out), on_error=print))
    assert len(held) == len({t.trace_id for t in held}) == 4 * GROUP
    assert {t.task_id for t in held} == {t.task_id for t in fresh}  # all four prompts kept
    again = [t.trace_id for t in Follower([run]).poll()]  # deterministic: the same ids again
    assert sorted(again) == sorted(t.trace_id for t in held)


def test_positions_that_cannot_be_read_are_none(tmp_path):
    assert read_positions(str(tmp_path / "missing.json")) is None
    (tmp_path / "bad.json").write_text("{not json")
    assert read_positions(str(tmp_path / "bad.json")) is None


# -- orchviz pool follow -------------------------------------------------------------------------


def test_pool_follow_started_again_reads_only_what_is_new(tmp_path):
    run = run_with(tmp_path, b"".join(lines(1, range(2), GROUP)))
    out = tmp_path / "pool"

    def look() -> subprocess.CompletedProcess:
        done = subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                               "-o", str(out), "--once"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done

    assert "added 8 traces" in look().stdout
    assert (out / POSITIONS).exists()
    step = lines(2, range(1), GROUP)
    append(run / "rollout_data_rank_0.jsonl", b"".join(step[:-1]) + step[-1][:40])
    done = look()  # a new process: it goes on from the position kept in the pool
    assert "added 3 traces" in done.stdout and "was written before" not in done.stderr
    append(run / "rollout_data_rank_0.jsonl", step[-1][40:])
    done = look()
    assert "added 1 trace " in done.stdout and "was written before" not in done.stderr
    assert look().stdout == ""  # nothing new: nothing read, nothing added
    ids = [t.trace_id for t in pool.read_pool(str(out), on_error=print)]
    assert len(ids) == len(set(ids)) == 3 * GROUP
    assert pool.read_manifest(str(out))["traces"] == 3 * GROUP


def test_pool_follow_that_stopped_before_keeping_its_position_adds_nothing_twice(tmp_path):
    run = run_with(tmp_path, b"".join(lines(1, range(2), GROUP)))
    out = tmp_path / "pool"
    command = [sys.executable, "-m", "viz_app", "pool", "follow", str(run), "-o", str(out),
               "--once"]
    assert subprocess.run(command, capture_output=True).returncode == 0
    (out / POSITIONS).unlink()  # as if it stopped between the shard and the position
    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(2, range(1), GROUP)))
    done = subprocess.run(command, capture_output=True, text=True)
    assert "added 4 traces" in done.stdout  # read whole: the 8 it had are skipped by id
    ids = [t.trace_id for t in pool.read_pool(str(out), on_error=print)]
    assert len(ids) == len(set(ids)) == 3 * GROUP


# -- the library's index (orchviz app --follow) --------------------------------------------------


def test_the_library_started_again_goes_on_from_where_its_files_were_left(tmp_path,
                                                                           monkeypatch):
    step = lines(2, range(1), GROUP)
    run = run_with(tmp_path, b"".join(lines(1, range(2), GROUP)) + step[0] + step[1][:30])
    log = run / "rollout_data_rank_0.jsonl"
    ws = make_workspace(tmp_path, [run])
    before = ws.library.update_index().rows
    assert len(before) == 2 * GROUP + 1  # the cut line waited for, not a failure
    append(log, step[1][30:] + b"".join(step[2:]))

    import viz_app.store.index as index_module

    read: list[Path] = []
    monkeypatch.setattr(index_module, "read_file", lambda path, *a, **k: (
        read.append(path), pytest.fail(f"{path} was read whole again")))
    again = make_workspace(tmp_path, [run])  # the same database, a new process as it were
    result = again.library.update_index()
    assert read == [] and result.failures == []
    rows = result.rows
    assert len(rows) == len({r.trace_id for r in rows}) == 3 * GROUP
    assert [(r.trace_id, r.position, r.sha256) for r in rows[:len(before)]] == [
        (r.trace_id, r.position, r.sha256) for r in before]  # nothing listed before moved
    assert [r.position for r in rows] == list(range(3 * GROUP))


def test_the_library_reads_a_file_truncated_while_it_was_stopped_whole(tmp_path):
    run = run_with(tmp_path, b"".join(lines(1, range(2), GROUP)))
    log = run / "rollout_data_rank_0.jsonl"
    make_workspace(tmp_path, [run]).library.update_index()
    log.write_bytes(b"".join(lines(7, range(1), GROUP)))
    later(log)
    rows = make_workspace(tmp_path, [run]).library.update_index().rows
    assert len(rows) == GROUP and {r.rollout_step for r in rows} == {7}


def test_another_process_that_read_the_file_whole_is_not_followed_from_a_stale_place(tmp_path):
    step = lines(2, range(1), GROUP)
    run = run_with(tmp_path, b"".join(lines(1, range(2), GROUP)))
    log = run / "rollout_data_rank_0.jsonl"
    app = make_workspace(tmp_path, [run])
    app.library.update_index()
    append(log, step[0])
    later(log)
    other = make_workspace(tmp_path, [run])  # a command, say, reads the file whole
    other.library.index.reindex(log)
    append(log, b"".join(step[1:]))
    later(log)
    rows = app.library.update_index().rows  # goes on from where the database says
    assert [r.position for r in rows] == list(range(3 * GROUP))
    assert len({r.trace_id for r in rows}) == 3 * GROUP
