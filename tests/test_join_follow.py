"""`orchviz pool follow` joins a rollout with its spans whichever the trainer and the span exporter
write first: spans before their rollout wait for it (`--join-wait`), and, once the run has shown
that it writes spans, a rollout before its spans waits for them (`--span-wait`); a run without
spans never waits. What comes too late is kept apart, saying so and naming the trace it belongs
with; nothing waiting is lost when the follower stops, and nothing is added twice when it starts
again. Fixtures: the verl samples and OTLP spans of tests/fixtures/rollouts/joined."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from pathlib import Path

from viz_app.io import pool
from viz_app.io.follow import POSITIONS, read_positions

FOLDER = Path(__file__).resolve().parent / "fixtures" / "rollouts" / "joined" / \
    "otlp_rollout_attribute"
SAMPLES = (FOLDER / "rollout_data" / "3.jsonl").read_bytes().splitlines(keepends=True)
"""Two verl samples of step 3: `req-7f3a` and `req-7f3b`."""


def spans_of(request_id: str) -> bytes:
    """The fixture's OTLP spans, as recorded for the rollout `request_id` (its own trace id)."""
    text = (FOLDER / "spans.json").read_text()
    hex_id = "0af7651916cd43dd8448eb211c80319c"
    own = hashlib.sha256(request_id.encode()).hexdigest()[:32]
    return text.replace("req-7f3a", request_id).replace(hex_id, own).encode()


def write(path: Path, data: bytes, *, append: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab" if append else "wb") as stream:
        stream.write(data)


def imported(folder: Path) -> dict[str, dict]:
    """What `orchviz import` makes of the folder: its traces by id, as dicts."""
    from viz_app.cli.imports import collect

    traces, errors = collect([str(folder)], None)
    assert errors == []
    return {t.trace_id: t.to_dict() for t in traces}


def pooled(out: Path) -> dict[str, dict]:
    found = list(pool.read_pool(str(out), on_error=print))
    assert len({t.trace_id for t in found}) == len(found)  # no id twice
    return {t.trace_id: t.to_dict() for t in found}


def has_rollout(tree: dict) -> bool:
    """Whether a trace (as a dict) carries a trainer's rollout: a rollout, or spans joined."""
    return any("rollout" in event for event in tree["events"])


def look(run: Path, out: Path, *options: str) -> subprocess.CompletedProcess:
    """One `pool follow --once`: a new process each time, as a cron line runs it."""
    done = subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                           "-o", str(out), "--once", *options], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done


LONG = ("--join-wait", "600", "--span-wait", "600")


def test_a_rollout_written_before_its_spans_waits_for_them_and_is_pooled_joined(tmp_path):
    """The run shows spans (those of req-7f3a, waiting for their line); the step's file brings
    req-7f3a, joined at once, and req-7f3b, which waits for its spans; they come, and the pool
    holds what `orchviz import` gives of the finished folder: every rollout joined."""
    run, out = tmp_path / "run", tmp_path / "pool"
    write(run / "spans" / "a.json", spans_of("req-7f3a"))
    assert look(run, out, *LONG).stdout == ""  # the spans wait for their rollout
    write(run / "rollout_data" / "3.jsonl", b"".join(SAMPLES))
    first = look(run, out, *LONG)
    assert "added 1 trace " in first.stdout  # req-7f3a joined; req-7f3b waits for its spans
    assert "1 rollout waiting for spans" in first.stderr
    assert read_positions(str(out / POSITIONS)).spans
    write(run / "spans" / "b.json", spans_of("req-7f3b"))
    assert "added 1 trace " in look(run, out, *LONG).stdout
    want = imported(run)
    assert len(want) == 2 and all(has_rollout(t) for t in want.values())
    assert pooled(out) == want
    assert look(run, out, *LONG).stdout == ""  # nothing new, nothing twice


def test_a_live_follower_joins_spans_that_land_after_the_rollout_line(tmp_path):
    """A follower looking every 0.2 s with the default waits: the trainer writes both lines,
    the spans exporter flushes a second later; the pool gets each rollout once, joined (how
    soon: bench/bench_join_follow.py)."""
    run, out = tmp_path / "run", tmp_path / "pool"
    write(run / "spans" / "early.json", spans_of("req-0000"))  # the run writes spans
    follower = subprocess.Popen([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                                 "-o", str(out), "--interval", "0.2"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(1.5)
        write(run / "rollout_data" / "3.jsonl", b"".join(SAMPLES))
        time.sleep(1.0)
        write(run / "spans" / "a.json", spans_of("req-7f3a"))
        written = time.monotonic()
        write(run / "spans" / "b.json", spans_of("req-7f3b"))
        while time.monotonic() - written < 30:  # how soon: bench/bench_join_follow.py
            found = pooled(out) if pool.read_manifest(str(out)) else {}
            if len(found) == 2:
                break
            time.sleep(0.1)
    finally:
        follower.terminate()
        follower.communicate(timeout=30)
    want = {k: v for k, v in imported(run).items() if has_rollout(v)}  # early.json's: alone
    assert len(found) == 2 and found == want


def test_a_run_without_spans_is_added_at_once(tmp_path):
    """Rollouts with ids and no span anywhere in the run: added in the look that reads them,
    however long --span-wait is."""
    run, out = tmp_path / "run", tmp_path / "pool"
    write(run / "rollout_data" / "3.jsonl", b"".join(SAMPLES))
    assert "added 2 traces" in look(run, out, *LONG).stdout
    assert pooled(out) == imported(run)
    assert not read_positions(str(out / POSITIONS)).spans


def test_a_follower_stopped_mid_wait_loses_nothing_and_adds_nothing_twice(tmp_path):
    """req-7f3a is joined and req-7f3b waits in the same file; the follower stops. Started again,
    it reads the file from where it stood before that look (not whole), finds req-7f3b still
    waiting since then, and req-7f3a, read again, is not added a second time, alone."""
    run, out = tmp_path / "run", tmp_path / "pool"
    write(run / "spans" / "a.json", spans_of("req-7f3a"))
    look(run, out, *LONG)
    write(run / "rollout_data" / "3.jsonl", SAMPLES[0])
    assert "added 1 trace " in look(run, out, *LONG).stdout  # req-7f3a joined
    write(run / "rollout_data" / "3.jsonl", SAMPLES[1], append=True)
    assert look(run, out, *LONG).stdout == ""  # req-7f3b waits
    kept = read_positions(str(out / POSITIONS))
    (held,) = kept.held.values()
    tail = kept.tails[str(run / "rollout_data" / "3.jsonl")]
    assert tail.lines == 1  # put back before the line that waits
    again = look(run, out, *LONG)
    assert again.stdout == "" and read_positions(str(out / POSITIONS)).held == kept.held
    write(run / "spans" / "b.json", spans_of("req-7f3b"))
    assert "added 1 trace " in look(run, out, *LONG).stdout
    assert pooled(out) == imported(run)
    assert read_positions(str(out / POSITIONS)).held == {} and held > 0


def test_a_rollout_whose_wait_is_over_goes_alone_and_is_added_once(tmp_path):
    run, out = tmp_path / "run", tmp_path / "pool"
    write(run / "spans" / "a.json", spans_of("req-7f3a"))
    write(run / "rollout_data" / "3.jsonl", b"".join(SAMPLES))
    assert "added 1 trace " in look(run, out, *LONG).stdout  # req-7f3b waits
    assert "added 1 trace " in look(run, out, "--span-wait", "0").stdout  # then goes alone
    assert pooled(out) == imported(run)


def test_spans_later_than_the_wait_are_kept_apart_naming_the_rollout_and_its_label_stays(
        tmp_path):
    """req-7f3b went alone (its wait over) and a reviewer labelled it; its spans come later. A
    pool is written once and a joined trace would take the spans' id and events: so the spans
    go in apart, saying which trace holds their rollout, and the label stays on that trace."""
    from factories import make_workspace

    run, out, db = tmp_path / "run", tmp_path / "pool", tmp_path / "follow.db"
    write(run / "spans" / "a.json", spans_of("req-7f3a"))
    write(run / "rollout_data" / "3.jsonl", b"".join(SAMPLES))
    look(run, out, "--span-wait", "0", "--db", str(db))
    ws = make_workspace(tmp_path / "ws", db=db)
    ws.settings.pools.append(str(out))
    rollout = ws.library.trace("req-7f3b")
    saved = ws.labelling.save(rollout, "task_outcome", "failure", "ann")
    write(run / "spans" / "b.json", spans_of("req-7f3b"))
    late = look(run, out, "--span-wait", "0", "--db", str(db))
    assert "added 1 trace " in late.stdout
    (said,) = [line for line in late.stderr.splitlines() if "req-7f3b" in line]
    assert "kept apart from its rollout req-7f3b, trace req-7f3b of this pool" in said
    spans_id = next(t for t, tree in pooled(out).items() if not has_rollout(tree))
    assert said.startswith(spans_id)
    ws.library.update_pool_index(wait=True)
    apart = ws.library.trace(spans_id)
    assert [w.code for w in apart.reader_warnings][-1] == "rollout_pooled_apart"
    assert ws.library.trace("req-7f3b").sha256 == rollout.sha256  # the rollout as labelled
    (label,) = ws.labelling.current("req-7f3b")
    assert (label.label_id, label.trace_sha256) == (saved.label_id, rollout.sha256)
    assert list(ws.labelling.current(spans_id)) == []


def test_a_rollout_later_than_its_spans_wait_is_kept_apart_naming_the_spans(tmp_path):
    run, out = tmp_path / "run", tmp_path / "pool"
    write(run / "spans" / "a.json", spans_of("req-7f3a"))
    assert "added 1 trace " in look(run, out, "--join-wait", "0").stdout  # the spans, alone
    write(run / "rollout_data" / "3.jsonl", SAMPLES[0])
    late = look(run, out, "--join-wait", "0")
    assert "added 1 trace " in late.stdout
    (said,) = late.stderr.splitlines()
    assert said.startswith("req-7f3a: kept apart from its spans, trace ")
    (spans_id,) = imported(run / "spans")
    assert sorted(pooled(out)) == sorted([spans_id, "req-7f3a"])
    assert f"trace {spans_id} of this pool" in said and "rollout (req-7f3a)" in said


def test_a_look_that_keeps_many_apart_names_three_and_counts_the_rest(capsys):
    """An exporter that flushes later than --span-wait keeps every rollout apart: the terminal
    gets three sentences naming both traces and one that counts the rest, not one a rollout."""
    from viz_app.cli.pool import _say_apart
    from viz_app.io.detect import read_any
    from viz_app.io.join_wait import APART, apart_noted

    traces = []
    for n in range(5):
        (spans,) = read_any(FOLDER / "spans.json")
        spans.trace_id = f"spans-{n}"
        traces.append(apart_noted(spans, f"req-{n}", f"req-{n}"))
    _say_apart(traces, APART)
    said = capsys.readouterr().err.splitlines()
    assert [line.split(":")[0] for line in said[:3]] == ["spans-0", "spans-1", "spans-2"]
    assert said[3].startswith("and 2 more kept apart") and len(said) == 4


def test_the_kept_position_goes_back_only_as_far_as_the_oldest_waiting_line(tmp_path):
    """A rank or step file a trainer keeps appending to: each look's new rollouts wait for their
    spans, so some line always waits; the position kept goes back to before the oldest that
    still waits, never to where the first wait began (a restart would read the run again)."""
    import time as clock

    from viz_app.io.follow import Follower
    from viz_app.io.join_wait import JoinWait

    run = tmp_path / "run"
    log = run / "rollout_data" / "3.jsonl"
    write(run / "spans" / "early.json", spans_of("req-0000"))
    follower, waits = Follower([run]), JoinWait(600, 600)

    def look() -> list[str]:
        before = follower.positions
        found = waits.ready(follower.poll(), clock.time(), before=before,
                            written=follower.written)
        return sorted(t.trace_id for t in found)

    assert look() == []  # the early spans wait for their rollout
    write(log, SAMPLES[0])
    assert look() == []  # req-7f3a waits for its spans
    write(log, SAMPLES[1], append=True)
    assert look() == []  # req-7f3b too
    assert str(log) not in waits.positions(follower.positions).tails  # new then: read whole
    write(run / "spans" / "a.json", spans_of("req-7f3a"))
    assert len(look()) == 1  # req-7f3a joined
    kept = waits.positions(follower.positions)
    assert kept.tails[str(log)].lines == 1  # back to before req-7f3b only
    assert str(run / "spans" / "a.json") in kept.seen  # done with: not read again
    assert str(run / "spans" / "early.json") not in kept.seen  # still waiting: read again
