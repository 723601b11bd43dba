"""OpenRLHF's shapes. openrlhf-rm, checked against openrlhf/datasets/reward_dataset.py and
cli/train_rm.py (OpenRLHF 3c3be62): `chosen` / `rejected` read whole (the prompt key defaults to
None), an optional `margin`. openrlhf-prm, checked against v0.9.5's process_reward_dataset.py
and train_prm.py (the PRM was removed in 6a981c8): `input` with a placeholder token after each
step, `label` one reward token per placeholder (or floats, soft labels)."""

from __future__ import annotations

import json

import pytest

from factories import PREMATURE, make_workspace, premature
from viz_app.cli import main
from viz_app.export.openrlhf import PLACEHOLDER
from viz_app.export.readers import read_export
from viz_app.labels.label import Reviewer

datasets = pytest.importorskip("datasets")

RM_KEYS = ("chosen", "rejected", "margin")
"""`--data.chosen_key`, `--data.rejected_key` defaults, and the margin column."""
PRM_KEYS = ("input", "label")
"""`--input_key`, `--label_key` defaults of train_prm.py."""


def export(tmp_path, format, folder, *extra) -> list[dict]:
    out = tmp_path / f"{format}.jsonl"
    assert main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(folder), "--format", format, "-o", str(out), *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture
def runs(tmp_path):
    """Two runs of one task, the second judged better by ann and bob."""
    first, second = premature().to_dict(), premature().to_dict()
    second["trace_id"] = "rerun"
    second["events"][0]["content"] = "A rerun that waits for every analyst."
    ws = make_workspace(tmp_path, traces=[first, second])
    a, b = ws.library.trace(first["trace_id"]), ws.library.trace("rerun")
    for name, strength in (("ann", 3), ("bob", 1)):
        ws.labelling.save_preference(a, b, "rerun", Reviewer(name=name, via="cli"), "waits", strength)
    return ws


def test_rm_rows_hold_the_prompt_inside_chosen_and_rejected(runs, tmp_path):
    (row,) = export(tmp_path, "openrlhf-rm", tmp_path / "traces")
    assert set(RM_KEYS) <= set(row) and "prompt" not in row
    assert row["chosen"].startswith("Task: checkout-latency-regression\nOrchestration:\n")
    assert row["rejected"].startswith("Task: checkout-latency-regression\n")
    assert row["chosen"] != row["rejected"] and "A rerun" in row["chosen"]
    assert row["margin"] == pytest.approx((1 + 1 / 3) / 2)
    assert [r["reviewer"] for r in read_export("openrlhf-rm", tmp_path / "openrlhf-rm.jsonl")] \
        == ["ann", "bob"]
    loaded = datasets.load_dataset("json", data_files=str(tmp_path / "openrlhf-rm.jsonl"),
                                   split="train")
    assert loaded.column_names[:3] == list(RM_KEYS)


def test_rm_conversational_rows_are_whole_message_lists(runs, tmp_path):
    (row,) = export(tmp_path, "openrlhf-rm", tmp_path / "traces", "--conversational")
    assert row["chosen"][0] == {"role": "user",
                                "content": "Task: checkout-latency-regression\n"}
    assert {m["role"] for m in row["chosen"][1:]} <= {"assistant", "user"}


@pytest.fixture
def labelled(tmp_path):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    trace = premature()
    for reviewer in ("ann", "bob"):
        ws.labelling.save(trace, "aggregation_quality", 4, reviewer, "e12")
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                             "stop_should_have_been": "e15"}, reviewer)
    return ws


def test_prm_rows_put_a_placeholder_after_each_step(labelled, tmp_path):
    row, pointer = export(tmp_path, "openrlhf-prm", PREMATURE)
    assert set(PRM_KEYS) <= set(row)
    assert row["input"].count(f" {PLACEHOLDER}\n") == 2 == len(row["label"])
    assert row["label"] == ["+", "-"]  # aggregate 4, premature stop
    assert "soft_label" not in row  # OpenRLHF 0.9.5 cannot put float labels in its tensor
    assert row["event_ids"] == ["e12", "e13"]
    # where to stop: the orchestrator's stop placed after e15, in a row of its own
    assert pointer["label"] == ["+", "+"] and pointer["event_ids"] == ["e12", "e15"]
    assert pointer["input"].endswith(f"[t=50.2] orchestrator orchestrator_decision (stop): "
                                     f"{premature().event('e13').text} {PLACEHOLDER}\n")
    assert pointer["corrects"] == "e13" and "[t=31]" not in pointer["input"]
    assert "System:" not in row["input"]
    before, _ = row["input"].split(f" {PLACEHOLDER}\n", 1)
    assert before.endswith(premature().event("e12").text)
    assert len(read_export("openrlhf-prm", tmp_path / "openrlhf-prm.jsonl")) == 6


def test_a_placeholder_in_a_trace_never_counts_as_a_step(tmp_path):
    raw = premature().to_dict()
    for event in raw["events"]:
        if event["id"] == "e12":
            event["content"] = f"merged {PLACEHOLDER} results"
    ws = make_workspace(tmp_path, traces=[raw])
    ws.labelling.save(ws.library.trace(raw["trace_id"]), "aggregation_quality", 4, "ann", "e12")
    (row,) = export(tmp_path, "openrlhf-prm", tmp_path / "traces")
    assert row["input"].count(PLACEHOLDER) == len(row["label"]) == 1


def test_prm_has_no_conversational_form(labelled, tmp_path, capsys):
    code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(PREMATURE), "--format", "openrlhf-prm", "--conversational", "-o",
                 str(tmp_path / "x.jsonl")])
    assert code == 2 and "no conversational variant" in capsys.readouterr().err
