"""A trainer's rollout joined with the spans recorded for the same rollout: whether the spans name
it in an attribute (Agent Lightning's resource attribute `agentlightning.rollout_id`, a harness's
own `rollout_id`, OpenInference's `session.id`) or by their trace id (an Agent Lightning store's
span records), the two are one trace: the spans give the orchestration graph (agents, spawns,
tools), the rollout file its step, group, checkpoint and the trainer's reward. Fixtures are
written by hand in the shapes those tools write (docs/importers.md says where each comes from)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from viz_app.analysis import analyze
from viz_app.io import pool
from viz_app.io.detect import read_any
from viz_app.io.follow import Follower
from viz_app.io.rollouts import join, rollout_of, span_rollout_ids, trainer_reward

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "rollouts"
JOINED = FIXTURES / "joined"


def read(*paths: Path):
    return [t for path in paths for t in read_any(path)]


def joined_warning(trace) -> list[str]:
    return [w.message for w in trace.reader_warnings if w.code == "rollout_joined"]


def test_agent_lightning_otlp_resource_attribute_joins_an_art_trajectory():
    spans = JOINED / "agentlightning_otlp" / "spans.json"
    log = next((JOINED / "agentlightning_otlp").rglob("0012.jsonl"))
    (span_trace,) = read(spans)
    assert span_rollout_ids(span_trace)[0] == "ro-4c68a7e686a1"  # not its hex trace id
    traces = join(read(log, spans))
    assert len(traces) == 2  # the other trajectory names another rollout: kept as it was
    one = next(t for t in traces if t.source_format == "otlp")
    other = next(t for t in traces if t.source_format == "art")
    assert one.trace_id == span_trace.trace_id
    analysis = analyze(one)
    assert {"orchestrator", "inbox_searcher"} <= set(analysis.agents)  # the spans' graph
    assert any(e.type == "spawn" and e.to == "inbox_searcher" for e in one.events)
    assert any(e.type == "tool_call" and e.tool == "search_inbox" for e in one.events)
    found = rollout_of(one)  # the rollout file's facts
    assert (found.trainer, found.step, found.rollout_id) == ("art", 12, "ro-4c68a7e686a1")
    assert found.group == rollout_of(other).group and found.checkpoint == "agent-7b@0012"
    assert trainer_reward(one) == 0.8 and trainer_reward(other) == 0.1
    assert joined_warning(one) and "step 12" in joined_warning(one)[0]


def test_a_rollout_id_span_attribute_joins_a_verl_sample():
    spans = JOINED / "otlp_rollout_attribute" / "spans.json"
    samples = JOINED / "otlp_rollout_attribute" / "rollout_data" / "3.jsonl"
    traces = join(read(samples, spans))
    assert [t.source_format for t in traces] == ["otlp", "verl"]  # in the rollouts' order
    one = traces[0]
    assert {"planner", "sql_writer"} <= set(analyze(one).agents)
    assert any(e.type == "tool_call" and e.tool == "run_sql" for e in one.events)
    assert rollout_of(one).rollout_id == "req-7f3a" and rollout_of(one).step == 3
    assert trainer_reward(one) == 1.0 and one.rewards["trainer.acc"] == 1.0
    assert rollout_of(one).group == rollout_of(traces[1]).group  # still siblings


def test_an_openinference_session_id_joins_an_rllm_episode():
    traces = join(read(JOINED / "openinference_session" / "episodes.jsonl",
                       JOINED / "openinference_session" / "spans.jsonl"))
    (one,) = traces
    assert one.source_format == "otlp" and {"solver", "judge"} <= set(analyze(one).agents)
    found = rollout_of(one)
    assert (found.trainer, found.step, found.rollout_id, found.split) == (
        "rllm", 5, "task7:0", "training")
    assert trainer_reward(one) == 1.0


def test_agent_lightning_store_spans_join_by_their_rollout():
    traces = join(read(FIXTURES / "verl" / "sql-agent" / "rollout_data" / "7.jsonl",
                       FIXTURES.parent / "importers" / "agentlightning_rollout.json"))
    (one,) = traces
    assert one.source_format == "agentlightning" and rollout_of(one).step == 7
    assert trainer_reward(one) == 1.0 and span_rollout_ids(one)[0] == "ro-5f2c1a"


def test_spans_without_a_rollout_id_and_rollouts_without_spans_stay_apart():
    plain = FIXTURES.parent / "importers" / "otlp_genai_hex.json"
    samples = FIXTURES / "verl" / "gsm8k-grpo" / "rollout_data" / "3.jsonl"
    alone = read(samples, plain)
    assert [t.trace_id for t in join(alone)] == [t.trace_id for t in alone]


def test_two_span_traces_of_one_rollout_join_the_first_and_say_so_of_the_second():
    spans = JOINED / "otlp_rollout_attribute" / "spans.json"
    samples = JOINED / "otlp_rollout_attribute" / "rollout_data" / "3.jsonl"
    first, again = read(spans), read(spans)
    again[0].trace_id = "retried"
    traces = join([*read(samples), *first, *again])
    assert [t.trace_id for t in traces] == [first[0].trace_id, "req-7f3b", "retried"]
    assert [w.code for w in traces[2].reader_warnings][-1] == "rollout_joined_elsewhere"


def test_orchviz_import_joins_the_files_it_reads_together(tmp_path):
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "viz_app", "import",
                           str(JOINED / "otlp_rollout_attribute"), "--out-dir", str(out)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    written = sorted(p.name for p in out.iterdir())
    assert len(written) == 2, written  # the joined trace and the other sample


# -- the library and a pool join as `orchviz import` does -----------------------------------------

def imported(folder: Path) -> dict[str, dict]:
    """What `orchviz import` makes of a folder: its traces by id, as dicts."""
    from viz_app.cli.imports import collect

    traces, errors = collect([str(folder)], None)
    assert errors == []
    return {t.trace_id: t.to_dict() for t in traces}


def test_the_folder_library_lists_the_one_joined_trace_import_gives(tmp_path):
    from factories import make_workspace

    folder = JOINED / "otlp_rollout_attribute"
    ws = make_workspace(tmp_path, [folder])
    rows = ws.library.update_index().rows
    want = imported(folder)
    assert sorted(r.trace_id for r in rows) == sorted(want)  # the joined trace, the other sample
    for row in rows:
        trace = ws.library.trace(row.trace_id)
        assert trace.to_dict() == want[row.trace_id]
        assert row.sha256 == trace.sha256  # a label names the version the library lists
    joined = next(r for r in rows if r.source_format == "otlp")
    assert (joined.rollout_step, joined.trainer_reward) == (3, 1.0) and joined.rollout_group
    assert ws.library.find("req-7f3a") is None  # the rollout is no trace of its own now
    assert set(ws.library.versions()) == set(want)


def test_spans_written_before_their_rollout_are_joined_when_it_comes(tmp_path):
    """A following library: the spans arrive first, listed alone; once the trainer writes the
    rollout file, the next look lists the one joined trace."""
    import shutil

    from factories import make_workspace

    folder = JOINED / "otlp_rollout_attribute"
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(folder / "spans.json", run / "spans.json")
    ws = make_workspace(tmp_path, [run])
    (alone,) = ws.library.update_index().rows
    assert alone.rollout_step is None and alone.trainer_reward is None
    shutil.copytree(folder / "rollout_data", run / "rollout_data")
    rows = {r.trace_id: r for r in ws.library.update_index().rows}
    assert sorted(rows) == sorted(imported(folder))
    assert rows[alone.trace_id].rollout_step == 3
    assert rows[alone.trace_id].sha256 != alone.sha256  # another version: the rollout's facts joined it
    assert ws.library.trace(alone.trace_id).to_dict() == imported(folder)[alone.trace_id]
    (run / "rollout_data" / "3.jsonl").unlink()  # the rollout gone: the spans alone again
    (again,) = ws.library.update_index().rows
    assert again.trace_id == alone.trace_id and again.sha256 == alone.sha256
    assert ws.library.trace(alone.trace_id).sha256 == alone.sha256


def test_every_join_fixture_lists_in_the_folder_library_as_import_gives_it(tmp_path):
    from factories import make_workspace

    for n, folder in enumerate(sorted(p for p in JOINED.iterdir() if p.is_dir())):
        (tmp_path / str(n)).mkdir()
        ws = make_workspace(tmp_path / str(n), [folder])
        rows = ws.library.update_index().rows
        want = imported(folder)
        assert sorted(r.trace_id for r in rows) == sorted(want), folder.name
        assert all(ws.library.trace(r.trace_id).to_dict() == want[r.trace_id] for r in rows)


def pooled(out: Path) -> dict[str, dict]:
    return {t.trace_id: t.to_dict() for t in pool.read_pool(str(out), on_error=print)}


def test_pool_write_and_pool_follow_hold_the_joined_trace_import_gives(tmp_path):
    for folder in sorted(p for p in JOINED.iterdir() if p.is_dir()):
        want = imported(folder)
        for verb in ("write", "follow"):
            out = tmp_path / f"{folder.name}-{verb}"
            done = subprocess.run([sys.executable, "-m", "viz_app", "pool", verb, str(folder),
                                   "-o", str(out),
                                   *(["--once", "--span-wait", "0"] if verb == "follow" else [])],
                                  capture_output=True, text=True)
            assert done.returncode == 0, done.stderr
            assert pooled(out) == want, (folder.name, verb)


def test_the_pool_index_lists_the_joined_rollouts_step_group_and_reward(tmp_path):
    from factories import make_workspace

    folder = JOINED / "otlp_rollout_attribute"
    out = tmp_path / "pool"
    pool.append_pool(join(Follower([folder]).poll()), str(out))
    ws = make_workspace(tmp_path, [])
    ws.settings.pools.append(str(out))
    ws.library.update_pool_index()
    rows = {r.trace_id: r for r in ws.library.pool_index().page(limit=10)}
    (tmp_path / "f").mkdir()
    folder_rows = {r.trace_id: r for r in make_workspace(tmp_path / "f", [folder])
                   .library.update_index().rows}
    assert sorted(rows) == sorted(folder_rows) == sorted(imported(folder))
    for trace_id, row in rows.items():  # the pool and the folder library agree
        same = folder_rows[trace_id]
        assert (row.rollout_step, row.rollout_group, row.trainer_reward, row.sha256) == (
            same.rollout_step, same.rollout_group, same.trainer_reward, same.sha256)


def test_every_door_to_a_folder_trace_opens_the_joined_trace(tmp_path):
    """The library's storage, a campaign's and the labelling's reads of a row all read the
    index's one way (`TraceIndex.read`): the joined trace, not the span file's alone."""
    from factories import make_workspace

    folder = JOINED / "otlp_rollout_attribute"
    ws = make_workspace(tmp_path, [folder])
    want = imported(folder)
    rows = ws.library.update_index().rows
    for row in rows:
        assert ws.library.storage().trace(row.trace_id).to_dict() == want[row.trace_id]
        assert ws.library.index.read(row.path, row.position).to_dict() == want[row.trace_id]


def test_pool_follow_waits_for_a_rollout_written_after_its_spans(tmp_path):
    """Agent Lightning writes a rollout's spans while it runs, the trainer its line after the
    reward: the spans wait (`--join-wait`) and go into the pool joined, across runs of
    `--once` too (where they began waiting is kept); spans whose rollout never comes go alone
    once the wait is over."""
    import shutil
    import time

    folder = JOINED / "otlp_rollout_attribute"
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(folder / "spans.json", run / "spans.json")
    out = tmp_path / "pool"

    def look(wait: str = "600") -> subprocess.CompletedProcess:
        # req-7f3b has no spans: --span-wait 0 adds it in the look that reads it (however
        # new the checkout's files; tests/test_join_follow.py holds the rollouts' wait)
        done = subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                               "-o", str(out), "--once", "--join-wait", wait,
                               "--span-wait", "0"],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done

    assert look().stdout == ""  # the spans wait: nothing added yet
    shutil.copytree(folder / "rollout_data", run / "rollout_data")
    assert "added 2 traces" in look().stdout
    assert pooled(out) == imported(folder)  # the spans and their rollout joined, the other alone
    assert look().stdout == ""  # nothing new, nothing twice

    lone = tmp_path / "lone"  # spans whose rollout never comes
    lone.mkdir()
    shutil.copy(folder / "spans.json", lone / "spans.json")
    alone = tmp_path / "alone"
    for wait, added in (("600", ""), ("0", "added 1 trace ")):
        time.sleep(0.01)
        done = subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(lone),
                               "-o", str(alone), "--once", "--join-wait", wait],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert (added in done.stdout) if added else done.stdout == "", done.stdout
    (spans,) = pooled(alone).values()
    assert spans == read(folder / "spans.json")[0].to_dict()


def test_a_rollout_labelled_before_its_spans_come_keeps_its_trace_and_its_labels(tmp_path):
    """A following library lists a rollout alone while its spans are not written yet, and a
    reviewer labels it. When the spans come, joining would take the rollout's trace out of the
    library (the joined trace has the spans' id and events): so the rollout stays listed as it
    was, with its label (so would a bookmark or a campaign's target on it), and the spans are
    listed apart, saying which trace holds their rollout. Nothing saved: joined as ever."""
    import shutil

    from factories import make_workspace

    folder = JOINED / "otlp_rollout_attribute"
    run = tmp_path / "run"
    shutil.copytree(folder / "rollout_data", run / "rollout_data")
    ws = make_workspace(tmp_path, [run])
    ws.library.update_index()
    rollout = ws.library.trace("req-7f3a")
    saved = ws.labelling.save(rollout, "task_outcome", "success", "ann")
    shutil.copy(folder / "spans.json", run / "spans.json")
    rows = {r.trace_id: r for r in ws.library.update_index().rows}
    (spans_id,) = set(rows) - {"req-7f3a", "req-7f3b"}
    assert ws.library.trace("req-7f3a").sha256 == rollout.sha256  # as it was labelled
    assert [label.label_id for label in ws.labelling.current("req-7f3a")] == [saved.label_id]
    assert rows["req-7f3a"].rollout_step == 3 and rows[spans_id].rollout_step is None
    apart = ws.library.trace(spans_id)
    (note,) = [w for w in apart.reader_warnings if w.code == "rollout_labelled_apart"]
    assert "names rollout req-7f3a, listed apart as its own trace req-7f3a" in note.message
    assert apart.to_dict() == read(folder / "spans.json")[0].to_dict()  # the spans, alone

    from viz_app.labels.campaign import CampaignSpec, Sample
    from viz_app.labels.label import Reviewer

    later = tmp_path / "later"  # a campaign took both rollouts: its reviewer gets them, whole
    shutil.copytree(folder / "rollout_data", later / "rollout_data")
    (tmp_path / "ws3").mkdir()
    ws3 = make_workspace(tmp_path / "ws3", [later])
    ws3.library.update_index()
    ws3.campaigns.create(CampaignSpec(name="live", questions=["task_outcome"], sample=Sample(
        kind="per_step", n=5, seed=1)), Reviewer(name="lead", via="cli"))
    shutil.copy(folder / "spans.json", later / "spans.json")
    assert len(ws3.library.update_index().rows) == 3  # both rollouts, the spans apart
    ann = Reviewer(name="ann", via="self-declared")
    while (claim := ws3.campaigns.claim_next("live", ann)) is not None:
        ws3.campaigns.submit(claim, {"task_outcome": "success"})
    assert sorted(label.trace_id for label in ws3.labelling.current()) == [
        "req-7f3a", "req-7f3b"]

    other = tmp_path / "other"  # the same run, nothing saved on its rollouts: joined
    shutil.copytree(folder / "rollout_data", other / "rollout_data")
    (tmp_path / "ws2").mkdir()
    ws2 = make_workspace(tmp_path / "ws2", [other])
    ws2.library.update_index()
    shutil.copy(folder / "spans.json", other / "spans.json")
    assert sorted(r.trace_id for r in ws2.library.update_index().rows) == sorted(
        imported(folder))
