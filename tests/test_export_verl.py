"""verl's shape, checked against volcengine/verl b178a3c (docs/preparation/prepare_data.rst,
examples/data_preprocess/full_hh_rlhf.py, verl/utils/dataset/rl_dataset.py): Parquet rows
{data_source, prompt (chat messages), ability, reward_model {style, ground_truth},
extra_info {index, ...}}, one per answer a judge can learn."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from factories import PREMATURE, make_workspace, premature
from viz_app.analysis import task_text
from viz_app.cli import main
from viz_app.export.readers import read_export

datasets = pytest.importorskip("datasets")

VERL_FIELDS = ["data_source", "prompt", "ability", "reward_model", "extra_info"]


@pytest.fixture
def rows(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    trace = premature()
    for reviewer in ("ann", "bob"):
        ws.labelling.save(trace, "aggregation_quality", 2, reviewer, "e12")
        ws.labelling.save(trace, "aggregation_issues", ["dropped_result"], reviewer, "e12")
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                             "stop_should_have_been": "e15"}, reviewer)
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    out = tmp_path / "verl.parquet"
    assert main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(PREMATURE), "--format", "verl", "-o", str(out)]) == 0
    return pq.read_table(out).to_pylist()


def test_rows_have_verls_five_fields(rows):
    assert [list(r) for r in rows] == [VERL_FIELDS] * 5
    assert [r["extra_info"]["index"] for r in rows] == [0, 1, 2, 3, 4]
    assert {r["ability"] for r in rows} == {"orchestration_review"}
    for row in rows:
        assert row["prompt"][0]["role"] == "user" and len(row["prompt"]) == 1
        assert row["reward_model"]["style"] == "rule"


def test_each_answer_is_a_ground_truth_with_its_question(rows):
    truth = {(r["extra_info"]["event_id"], r["data_source"]): r["reward_model"]["ground_truth"]
             for r in rows}
    assert truth == {
        (None, "orchviz/task_outcome"): "failure",
        ("e12", "orchviz/aggregation_quality"): "2",
        ("e12", "orchviz/aggregation_issues"): '["dropped_result"]',
        ("e13", "orchviz/stopping_correctness"): "premature",
        ("e13", "orchviz/stop_should_have_been"): "e15"}


def test_the_judge_reads_the_orchestration_the_target_and_the_choices(rows):
    aggregate = next(r for r in rows if r["data_source"] == "orchviz/aggregation_quality")
    text = aggregate["prompt"][0]["content"]
    assert text.startswith(f"Task: {task_text(premature())}\nOrchestration:\n")  # its words
    assert "Target: event e12 (aggregate by orchestrator at t=24), which merged e10, e11" in text
    assert "- 2 (2 major gaps): Keeps some results" in text
    assert premature().event("e15").text not in text  # what the orchestrator had then
    assert premature().system not in text
    stop = next(r for r in rows if r["data_source"] == "orchviz/stopping_correctness")
    assert premature().event("e15").text in stop["prompt"][0]["content"]  # judged in hindsight
    info = aggregate["extra_info"]
    assert (info["agent"], info["merged"], info["reviewers"], info["reward"]) == \
        ("orchestrator", ["e10", "e11"], 2, -0.5)


def test_datasets_loads_it_and_the_labels_read_back(rows, tmp_path):
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "verl.parquet"),
                                   split="train")
    assert loaded.column_names == VERL_FIELDS and loaded.num_rows == 5
    back = read_export("verl", tmp_path / "verl.parquet")
    assert len(back) == 9 and json.loads(json.dumps(back[0]["value"])) == back[0]["value"]


def test_the_parquet_holds_every_key_of_every_row(tmp_path):
    """verl's Parquet is written against a fixed schema: no key of a row may fall outside it."""
    from viz_app.export import FORMATS, ExportInput

    ws = make_workspace(tmp_path, traces=[PREMATURE])
    trace = premature()
    ws.labelling.save(trace, "aggregation_quality", 2, "ann", "e12", comment="gaps")
    ws.labelling.save_target(trace, "e13", {"stopping_correctness": "late",
                                         "stop_should_have_been": "e12"}, "ann")
    given = ExportInput(labels=ws.labelling.current_records(), traces={trace.trace_id: trace},
                        rubric=ws.rubric)
    rows = list(FORMATS["verl"].rows(given).rows)
    out = tmp_path / "v.parquet"
    main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces", str(PREMATURE),
          "--format", "verl", "-o", str(out)])
    assert pq.read_table(out).to_pylist() == rows
