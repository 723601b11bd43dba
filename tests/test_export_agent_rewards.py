"""The per-agent reward matrix (the MARTI style: TsinghuaC3I/MARTI
marti/verifiers/auto_reward_alloc.py keeps a problems x agents array beside one outcome per
problem): one row per trace, one `reward.<agent>` column per agent, the outcome beside."""

from __future__ import annotations

import json

import pytest

from factories import DROPPED, PREMATURE, demo_trace, make_workspace, premature
from viz_app.cli import main
from viz_app.export.readers import read_export, read_rows


@pytest.fixture
def ws(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE, DROPPED])
    trace, dropped = premature(), demo_trace(DROPPED.stem)
    for reviewer in ("ann", "bob"):
        ws.labelling.save(trace, "aggregation_quality", 4, reviewer, "e12")
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                             "stop_should_have_been": "e15"}, reviewer)
        ws.labelling.save(dropped, "aggregation_quality", 1, reviewer, "e12")
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    return ws


def export(tmp_path, name, *extra):
    out = tmp_path / name
    assert main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(PREMATURE), "--traces", str(DROPPED), "--format", "agent-rewards", "-o",
                 str(out), *extra]) == 0
    return out


def test_one_row_per_trace_one_column_per_agent(ws, tmp_path):
    rows = {r["trace_id"]: r for r in read_rows(export(tmp_path, "m.jsonl"))}
    assert set(rows) == {"demo-10-review-premature-stop", "demo-09-review-dropped-finding"}
    row = rows["demo-10-review-premature-stop"]
    columns = [k for k in row if k.startswith("reward.")]
    assert columns == sorted(columns) and "reward.orchestrator" in columns
    assert row["reward.orchestrator"] == pytest.approx((0.5 - 1.0) / 2)  # no pointer in it
    assert row["reward.db_analyst"] is None and row["outcome_reward"] == -1.0
    assert row["agents"][0] == "orchestrator"
    assert row["rewards"][0] == row["reward.orchestrator"]
    assert row["steps"] == [2, 0, 0, 0]
    other = rows["demo-09-review-dropped-finding"]
    assert other["reward.orchestrator"] == -1.0 and other["outcome_reward"] is None
    assert set(k for k in other if k.startswith("reward.")) == set(columns)


def test_csv_and_parquet_hold_the_same_matrix(ws, tmp_path):
    as_json = read_rows(export(tmp_path, "m.jsonl"))
    for name in ("m.csv", "m.parquet"):
        rows = read_rows(export(tmp_path, name))
        assert [r["trace_id"] for r in rows] == [r["trace_id"] for r in as_json]
        assert [r["reward.orchestrator"] for r in rows] == pytest.approx(
            [r["reward.orchestrator"] for r in as_json])
        assert read_export("agent-rewards", tmp_path / name) == read_export(
            "agent-rewards", tmp_path / "m.jsonl")
    cells = (tmp_path / "m.csv").read_text().splitlines()[1]
    assert json.dumps(["orchestrator"])[:-1] in cells.replace('""', '"')


def test_every_label_reads_back(ws, tmp_path):
    back = read_export("agent-rewards", export(tmp_path, "m.jsonl"))
    assert len(back) == 9
