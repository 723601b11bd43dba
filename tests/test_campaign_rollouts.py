"""A campaign over a run while it trains: N whole groups of each training step, the steps a
trainer writes later sampled as they arrive (a step still being written topped up), from the
command line as `--per-step N`."""

from __future__ import annotations

import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from factories import make_workspace
from rollout_writer import append, lines
from viz_app.errors import LabelError
from viz_app.labels.campaign import CampaignSpec, Sample
from viz_app.labels.campaign_plan import per_step_rows
from viz_app.labels.label import Reviewer

LEAD = Reviewer(name="lead", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
GROUP = 4


def run_of(tmp_path: Path, steps: dict[int, range]) -> Path:
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    for step, prompts in steps.items():
        append(run / "rollout_data_rank_0.jsonl", b"".join(lines(step, prompts, GROUP)))
    return run


def groups_of(ws, name: str) -> dict[int, set[str]]:
    rows = {r.trace_id: r for r in ws.library.update_index().rows}
    found: dict[int, set[str]] = {}
    for target in ws.campaigns.targets(ws.campaigns.get(name)):
        row = rows[target.trace_id]
        found.setdefault(row.rollout_step, set()).add(row.rollout_group)
    return found


def test_n_whole_groups_of_each_step_seeded_by_step_alone(tmp_path):
    ws = make_workspace(tmp_path, [run_of(tmp_path, {1: range(5), 2: range(5)})])
    rows = ws.library.update_index().rows
    chosen = per_step_rows(rows, 2, seed=7)
    assert len(chosen) == 2 * 2 * GROUP  # two groups of each of the two steps, whole
    by_group: dict[str, int] = {}
    for row in chosen:
        by_group[row.rollout_group] = by_group.get(row.rollout_group, 0) + 1
    assert set(by_group.values()) == {GROUP}
    step_one = [r for r in chosen if r.rollout_step == 1]
    assert step_one == [r for r in per_step_rows([r for r in rows if r.rollout_step == 1], 2,
                                                 seed=7)]  # later steps change nothing before
    assert per_step_rows(rows, 2, 7, taken={1: {r.rollout_group for r in step_one},
                                            2: set()})[0].rollout_step == 2


def test_the_campaign_keeps_sampling_as_steps_arrive(tmp_path):
    run = run_of(tmp_path, {1: range(3)})
    ws = make_workspace(tmp_path, [run])
    ws.campaigns.create(CampaignSpec(name="live", questions=["task_outcome"],
                                    sample=Sample(kind="per_step", n=2, seed=1)), LEAD)
    assert {k: len(v) for k, v in groups_of(ws, "live").items()} == {1: 2}
    done = 0
    while (claim := ws.campaigns.claim_next("live", ANN)) is not None and done < 2 * GROUP:
        ws.campaigns.submit(claim, {"task_outcome": "success"})
        done += 1
    assert claim is None and done == 2 * GROUP  # step 1's two groups, all labelled

    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(2, range(1), GROUP)))
    claim = ws.campaigns.claim_next("live", ANN)  # the queue was empty: step 2 is sampled now
    assert claim is not None
    assert {k: len(v) for k, v in groups_of(ws, "live").items()} == {1: 2, 2: 1}
    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(2, range(1, 4), GROUP)))
    assert ws.campaigns.top_up("live") == GROUP  # step 2 was being written: one more group
    assert {k: len(v) for k, v in groups_of(ws, "live").items()} == {1: 2, 2: 2}
    assert ws.campaigns.top_up("live") == 0  # N groups of each step: nothing more


def test_a_group_sampled_while_it_was_written_gets_its_late_members(tmp_path):
    run = run_of(tmp_path, {1: range(1)})
    log = run / "rollout_data_rank_0.jsonl"
    step_two = lines(2, range(1), GROUP)
    append(log, b"".join(step_two[:2]) + step_two[2][:40])  # two members, a third cut short
    ws = make_workspace(tmp_path, [run])
    ws.campaigns.create(CampaignSpec(name="live", questions=["task_outcome"],
                                    sample=Sample(kind="per_step", n=1, seed=1)), LEAD)
    members = {r.trace_id: r for r in ws.library.update_index().rows if r.rollout_step == 2}
    targets = {t.trace_id for t in ws.campaigns.targets(ws.campaigns.get("live"))}
    assert len(members) == 2 and set(members) <= targets

    append(log, step_two[2][40:] + step_two[3])  # the trainer finishes the group
    assert ws.campaigns.top_up("live") == 2  # its two late members join it: the group is whole
    rows = ws.library.update_index().rows
    targets = {t.trace_id for t in ws.campaigns.targets(ws.campaigns.get("live"))}
    assert {r.trace_id for r in rows if r.rollout_step == 2} <= targets
    assert {k: len(v) for k, v in groups_of(ws, "live").items()} == {1: 1, 2: 1}
    assert ws.campaigns.top_up("live") == 0


def test_a_per_step_sample_needs_its_n():
    with pytest.raises(ValueError, match="per-step sample needs its size N"):
        Sample(kind="per_step")


def test_campaign_create_per_step_from_the_command_line(tmp_path):
    run = run_of(tmp_path, {1: range(3), 2: range(3)})
    db = tmp_path / "cli.db"
    done = subprocess.run([sys.executable, "-m", "viz_app", "campaign", "create", "live",
                           "--traces", str(run), "--db", str(db), "--per-step", "1",
                           "--questions", "task_outcome"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ws = make_workspace(tmp_path, [run], db=db)
    assert {k: len(v) for k, v in groups_of(ws, "live").items()} == {1: 1, 2: 1}
    with pytest.raises(LabelError):
        ws.campaigns.create(CampaignSpec(name="none", questions=["task_outcome"],
                                        sample=Sample(kind="per_step", n=1),
                                        filter={"text": "no-such-words"}), LEAD)


@pytest.fixture(params=["sqlite", "postgresql"])
def shared_db(request, tmp_path):
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_url")
    return str(tmp_path / "shared.db")


def test_two_sessions_topping_up_at_once_add_each_target_once(tmp_path, shared_db):
    """Two sessions follow the same run (two browser tabs, or the app and a reviewer's queue
    running empty) and top the campaign up at the same moment, step after step: they take
    turns, so neither fails on the campaign's unique target and no target is added twice."""
    run = run_of(tmp_path, {1: range(2)})
    sessions = [make_workspace(tmp_path / f"s{i}", [run], db=shared_db) for i in range(2)]
    name = f"live-{uuid.uuid4().hex[:8]}"
    sessions[0].campaigns.create(CampaignSpec(name=name, questions=["task_outcome"],
                                              sample=Sample(kind="per_step", n=2, seed=1)),
                                 LEAD)
    for step in range(2, 8):
        append(run / "rollout_data_rank_0.jsonl", b"".join(lines(step, range(3), GROUP)))
        for ws in sessions:
            ws.library.update_index()
        start = threading.Barrier(2)
        added: list[int] = []
        failed: list[BaseException] = []

        def top_up(ws):
            start.wait()
            try:
                added.append(ws.campaigns.top_up(name))
            except BaseException as error:  # noqa: BLE001 - the test reports it
                failed.append(error)

        threads = [threading.Thread(target=top_up, args=(ws,)) for ws in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert failed == [], failed
        assert sorted(added) == [0, 2 * GROUP]  # step's two groups, added by one of them
    targets = sessions[1].campaigns.targets(sessions[1].campaigns.get(name))
    keys = [(t.trace_id, t.event_id) for t in targets]
    assert len(keys) == len(set(keys))
    assert {k: len(v) for k, v in groups_of(sessions[1], name).items()} == {
        step: 2 for step in range(1, 8)}
