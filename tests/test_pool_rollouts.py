"""A pool of a trainer's rollouts knows their step, group and trainer reward as its folder
library does: its index keeps them as columns, the one filter language selects on them
(`step>=2 group:...`), and a campaign over the pool samples N whole groups of each step,
topped up as `pool follow` adds the steps a trainer writes later."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from factories import make_workspace
from rollout_writer import append, lines
from viz_app.io import pool
from viz_app.io.follow import Follower
from viz_app.labels import CampaignSpec, Sample, per_step_rows
from viz_app.labels.label import Reviewer
from viz_app.query import Condition, FilterError, holds, parse_condition, parse_conditions
from viz_app.store.pool_index import INDEX_VERSION

LEAD = Reviewer(name="lead", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
GROUP = 4


def run_pool(tmp_path: Path, steps: dict[int, range]) -> tuple[Path, Path]:
    """A trainer's run folder (OpenRLHF rank file) and the pool `pool follow` made of it."""
    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    log = run / "rollout_data_rank_0.jsonl"
    for step, prompts in steps.items():
        append(log, b"".join(lines(step, prompts, GROUP)))
    out = tmp_path / "pool"
    pool.append_pool(Follower([run]).poll(), str(out))
    return run, out


def folder_ws(tmp_path: Path, name: str, traces=()):
    (tmp_path / name).mkdir(exist_ok=True)
    return make_workspace(tmp_path / name, traces)


def pool_ws(tmp_path: Path, out: Path):
    ws = folder_ws(tmp_path, "ws")
    ws.settings.pools.append(str(out))
    ws.library.update_pool_index()
    return ws


def test_the_pool_index_keeps_each_rollouts_step_group_and_trainer_reward(tmp_path):
    run, out = run_pool(tmp_path, {1: range(2), 2: range(3)})
    ws = pool_ws(tmp_path, out)
    pooled = ws.library.pool_index().page(limit=100)
    folder = {r.trace_id: r for r in folder_ws(tmp_path, "f", [run]).library
              .update_index().rows}
    assert len(pooled) == len(folder) == 5 * GROUP
    for row in pooled:  # the same facts the folder index keeps
        same = folder[row.trace_id]
        assert (row.rollout_step, row.rollout_group, row.trainer_reward) == (
            same.rollout_step, same.rollout_group, same.trainer_reward)
        assert row.rollout_step in (1, 2) and row.rollout_group and row.group == \
            row.rollout_group and row.trainer_reward in (0.0, 1.0)


def test_step_group_and_trainer_reward_filter_in_the_one_language(tmp_path):
    _, out = run_pool(tmp_path, {1: range(2), 2: range(3), 3: range(1)})
    index = pool_ws(tmp_path, out).library.pool_index()
    rows = index.page(limit=100)
    one = next(r for r in rows if r.rollout_step == 2).rollout_group
    filters = parse_conditions(f"step>=2 group:{one}")
    assert [(c.field, c.op, c.value) for c in filters] == [("step", ">=", 2.0),
                                                            ("group", "=", one)]
    found = index.page(filters, limit=100)
    assert len(found) == GROUP and {r.rollout_group for r in found} == {one}
    assert index.count(parse_conditions("step>=2")) == 4 * GROUP
    right = index.count(parse_conditions("trainer_reward=1, step<3"))
    assert right == sum(r.trainer_reward == 1.0 and r.rollout_step < 3 for r in rows)
    for condition in (*filters, parse_condition("trainer_reward>0.5")):  # folders alike
        assert {r.trace_id for r in rows if holds(r, condition)} == {
            r.trace_id for r in index.page([condition], limit=100)}
    assert [b.count for b in index.histogram("step")] == [2 * GROUP, 3 * GROUP, GROUP]
    with pytest.raises(FilterError, match="compares step, a number"):
        parse_conditions("step>=forty")


def test_a_value_with_spaces_and_commas_between_conditions():
    assert [(c.field, c.value) for c in parse_conditions("system=my system step>3, agents<2")] \
        == [("system", "my system"), ("step", 3.0), ("agents", 2.0)]


def test_a_pool_campaign_samples_whole_groups_per_step_as_the_folders_do(tmp_path):
    run, out = run_pool(tmp_path, {1: range(5), 2: range(5)})
    ws = pool_ws(tmp_path, out)
    ws.campaigns.create(CampaignSpec(name="live", questions=["task_outcome"],
                                    sample=Sample(kind="per_step", n=2, seed=7)), LEAD)
    held = [t.trace_id for t in ws.campaigns.targets(ws.campaigns.get("live"))]
    folder_rows = folder_ws(tmp_path, "f", [run]).library.update_index().rows
    assert list(dict.fromkeys(held)) == [r.trace_id for r in per_step_rows(folder_rows, 2, 7)]
    rows = ws.library.pool_index().rows(held)
    groups = {(r.rollout_step, r.rollout_group) for r in rows}
    assert len(rows) == 4 * GROUP and len(groups) == 4  # two whole groups of each step
    assert {s for s, _ in groups} == {1, 2}


def test_a_pool_campaign_keeps_sampling_as_pool_follow_adds_steps(tmp_path):
    run, out = run_pool(tmp_path, {1: range(3)})
    ws = pool_ws(tmp_path, out)
    ws.campaigns.create(CampaignSpec(name="live", questions=["task_outcome"],
                                    sample=Sample(kind="per_step", n=2, seed=1)), LEAD)
    done = 0
    while (claim := ws.campaigns.claim_next("live", ANN)) is not None and done < 2 * GROUP:
        ws.campaigns.submit(claim, {"task_outcome": "success"})
        done += 1
    assert claim is None and done == 2 * GROUP

    append(run / "rollout_data_rank_0.jsonl", b"".join(lines(2, range(3), GROUP)))
    followed = subprocess.run([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                               "-o", str(out), "--once"], capture_output=True, text=True)
    assert followed.returncode == 0, followed.stderr
    claim = ws.campaigns.claim_next("live", ANN)  # the queue was empty: step 2 sampled now
    assert claim is not None
    rows = ws.library.pool_index().rows(
        [t.trace_id for t in ws.campaigns.targets(ws.campaigns.get("live"))])
    steps: dict[int, set[str]] = {}
    for row in rows:
        steps.setdefault(row.rollout_step, set()).add(row.rollout_group)
    assert {k: len(v) for k, v in steps.items()} == {1: 2, 2: 2}
    assert ws.campaigns.top_up("live") == 0  # N groups of each step: nothing more


def test_an_index_of_the_earlier_layout_is_rebuilt_with_the_new_columns(tmp_path):
    import duckdb

    _, out = run_pool(tmp_path, {1: range(1)})
    ws = pool_ws(tmp_path, out)
    index = ws.library.pool_index()
    index.close()
    with duckdb.connect(str(index.path)) as con:  # as an index of layout 1 would say
        con.execute("UPDATE meta SET value = '1' WHERE key = 'version'")
    again = folder_ws(tmp_path, "ws")
    again.settings.pools.append(str(out))
    again.library.update_pool_index()
    assert again.library.pool_index()._live_version() == INDEX_VERSION
    assert {r.rollout_step for r in again.library.pool_index().page(
        [Condition(field="step", op=">=", value=1)])} == {1}
