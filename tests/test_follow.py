"""Following a run: the library picks up the rollouts a trainer appends, from where it left the
file, waits for a half-written last line without calling it an error, and never moves a row it
listed before; a rewritten file is read whole again."""

import os
import time
from pathlib import Path

from factories import make_workspace

from viz_app.io.follow import read_file, read_more
from viz_app.io.openrlhf import file_key

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rollouts"
RANK = FIXTURES / "openrlhf" / "poem-ppo" / "rollout_data_rank_0_1313.jsonl"
LINES = RANK.read_bytes().splitlines(keepends=True)
KEY = file_key(LINES[0])
"""What the samples' ids name their file by (the hash of its first line)."""


def _touch_later(path: Path) -> None:
    """A modification time the index cannot mistake for the last one."""
    later = time.time_ns() + 2_000_000_000
    os.utime(path, ns=(later, later))


def test_read_more_goes_on_from_the_first_line_not_read(tmp_path):
    (tmp_path / "rollouts").mkdir()
    log = tmp_path / "rollouts" / "rollout_data_rank_0.jsonl"
    log.write_bytes(b"".join(LINES[:2]))
    first, tail = read_file(log)
    assert len(first) == 2 and (tail.lines, tail.traces) == (2, 2)
    with log.open("ab") as stream:
        stream.write(LINES[2] + LINES[3][:25])  # the fourth line is being written
    more, tail = read_more(log, tail)
    assert [t.trace_id for t in more] == [f"openrlhf/rollouts/rank0@{KEY}/4/2"]
    assert (tail.lines, tail.traces) == (3, 3)
    with log.open("ab") as stream:
        stream.write(LINES[3][25:])
    more, tail = read_more(log, tail)
    assert [t.trace_id for t in more] == [f"openrlhf/rollouts/rank0@{KEY}/5/3"]
    whole, _ = read_file(log)
    assert [t.sha256 for t in whole] == [t.sha256 for t in first] + [
        t.sha256 for t in read_file(log)[0][2:]]


def test_a_rewritten_file_is_not_followed_but_read_whole(tmp_path):
    log = tmp_path / "rollout_data_rank_0.jsonl"
    log.write_bytes(b"".join(LINES[:3]))
    _, tail = read_file(log)
    log.write_bytes(b"".join(LINES[1:]))
    assert read_more(log, tail) is None
    log.write_bytes(LINES[0])
    assert read_more(log, tail) is None


def test_the_library_lists_appended_rollouts_and_keeps_the_rows_it_had(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / "rollout_data_rank_0.jsonl"
    log.write_bytes(b"".join(LINES[:2]))
    ws = make_workspace(tmp_path, [run])
    before = ws.library.update_index().rows
    assert [(r.position, r.rollout_step, r.trainer_reward) for r in before] == [
        (0, 4, 0.0), (1, 4, 1.0)]
    assert before[0].rollout_group == before[1].rollout_group
    with log.open("ab") as stream:
        stream.write(LINES[2] + LINES[3][:30])
    _touch_later(log)
    result = ws.library.update_index()
    assert not result.failures
    assert [r.trace_id for r in result.rows] == [
        f"openrlhf/run/rank0@{KEY}/4/{n}" for n in range(3)]
    assert result.rows[:2] == before
    with log.open("ab") as stream:
        stream.write(LINES[3][30:])
    _touch_later(log)
    rows = ws.library.update_index().rows
    assert [r.rollout_step for r in rows] == [4, 4, 4, 5] and rows[:2] == before
    assert ws.library.trace(f"openrlhf/run/rank0@{KEY}/5/3").rewards["trainer"] == 1.0


def test_a_bad_line_appended_is_a_failure_of_its_file_not_of_the_rows_before(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    log = run / "rollout_data_rank_0.jsonl"
    log.write_bytes(LINES[0])
    ws = make_workspace(tmp_path, [run])
    ws.library.update_index()
    with log.open("ab") as stream:
        stream.write(b"{\"prompt\": oops}\n")
    _touch_later(log)
    result = ws.library.update_index()
    assert [r.position for r in result.rows] == [0]
    (failure,) = result.failures
    assert "line 2" in failure.error
