"""TRL's shapes (checked against huggingface/trl f2cd577, docs/source/dataset_formats.md):
stepwise supervision {prompt, completions, labels}, unpaired preference {prompt, completion,
label} (standard and conversational), preference {prompt, chosen, rejected, margin}. The stop's
'should have stopped at' pointer is a step; rows name their agent, event and merged inputs;
bools sit beside the original values; `datasets` loads the files."""

from __future__ import annotations

import json

import pytest

from factories import PREMATURE, make_workspace, premature
from viz_app.analysis import task_text
from viz_app.cli import main
from viz_app.export import FORMATS, ExportInput
from viz_app.export.consensus import ExportOptions
from viz_app.export.prompts import stepwise_record, unpaired_records
from viz_app.export.readers import read_export

datasets = pytest.importorskip("datasets")

TRL_STEPWISE = {"prompt", "completions", "labels"}
TRL_UNPAIRED = {"prompt", "completion", "label"}
"""The columns TRL's dataset_formats.md names for each type."""


@pytest.fixture
def trace():
    return premature()


@pytest.fixture
def ws(tmp_path, trace):
    """ann and bob agree: aggregate e12 has major gaps (2), the stop at e13 was premature and
    should have waited for e15; ann says the task failed."""
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    for reviewer in ("ann", "bob"):
        ws.labelling.save(trace, "aggregation_quality", 2, reviewer, "e12")
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                             "stop_should_have_been": "e15"}, reviewer)
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    return ws


def cli(tmp_path, format, *extra) -> tuple[int, list[dict]]:
    out = tmp_path / f"{format}.jsonl"
    code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(PREMATURE), "--format", format, "-o", str(out), *extra])
    rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return code, rows


def test_the_stop_pointer_is_the_orchestrators_stop_placed_at_the_pointed_event(ws, trace):
    rows = list(FORMATS["stepwise"].rows(ExportInput(
        labels=ws.labelling.current_records(), traces={trace.trace_id: trace},
        rubric=ws.rubric)).rows)
    happened, pointer = rows
    assert TRL_STEPWISE <= set(happened)
    assert happened["event_ids"] == ["e12", "e13"] and happened["corrects"] is None
    assert happened["labels"] == [False, False]
    assert pointer["event_ids"] == ["e12", "e15"] and pointer["corrects"] == "e13"
    assert pointer["kinds"] == ["decision", "should_have_stopped"]
    assert pointer["labels"] == [False, True]
    assert pointer["agents"] == ["orchestrator"] * 2
    stop = pointer["completions"][-1].splitlines()
    assert stop[-1] == f"[t=50.2] orchestrator orchestrator_decision (stop): " \
                       f"{trace.event('e13').text}"  # the stop, not db_analyst's return
    assert stop[-2].endswith(trace.event("e15").text)  # e15 is context, up to and including
    assert "[t=31]" not in pointer["prompt"] + "".join(pointer["completions"])  # no real stop
    entries = {(e["reviewer"], e["question"]) for e in pointer["provenance"]}
    assert {("ann", "stop_should_have_been"), ("ann", "stopping_correctness")} <= entries


def test_a_late_pointer_on_a_step_is_a_step_of_its_own_never_averaged(ws, trace):
    """A late stop whose pointer falls on the aggregate: stopping there was right."""
    for reviewer in ("ann", "bob"):
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "late",
                                             "stop_should_have_been": "e12"}, reviewer)
    record = stepwise_record(trace, ws.labelling.current_records(), ws.rubric)
    assert record["event_ids"] == ["e12", "e13"]
    assert record["rewards"] == [-0.5, -0.5]  # the aggregate's own; the late stop's own
    assert record["labels"] == [False, False]
    (unpaired,) = [r for r in unpaired_records(trace, ws.labelling.current_records(), ws.rubric)
                   if r["kind"] == "should_have_stopped"]
    assert unpaired["event_id"] == "e12" and unpaired["corrects"] == "e13"
    assert unpaired["reward"] == 1.0 and unpaired["label"] is True
    assert unpaired["prompt"].endswith(trace.event("e12").text + "\n")
    assert unpaired["completion"].startswith("[t=24] orchestrator orchestrator_decision (stop)")
    (answer,) = unpaired["answers"]
    assert answer["resolution"] == "implied" and answer["disputed"] is False


def test_a_pointer_row_carries_the_dispute_and_adjudication_it_comes_from(ws, trace):
    ws.labelling.save_target(trace, "e13", {"stopping_correctness": "late",
                                         "stop_should_have_been": "e12"}, "cy")
    ws.labelling.add(ws.labelling.checked(trace, "e13", {"stopping_correctness": "premature",
                                                   "stop_should_have_been": "e15"}, "lead",
                                    source="adjudication", campaign="pilot"))
    options = ExportOptions(disputed="adjudicated")
    (row,) = [r for r in unpaired_records(trace, ws.labelling.current_records(), ws.rubric,
                                          options) if r["kind"] == "should_have_stopped"]
    (answer,) = row["answers"]
    assert answer["disputed"] is True and answer["resolution"] == "implied"
    assert {"adjudication"} <= {e["source"] for e in row["provenance"]}
    assert {"cy", "lead"} <= {e["reviewer"] for e in row["provenance"]}


def test_every_row_keeps_its_agent_values_and_provenance(ws, trace):
    rows = {r["event_id"]: r for r in unpaired_records(trace, ws.labelling.current_records(),
                                                         ws.rubric)}
    aggregate = rows["e12"]
    assert TRL_UNPAIRED <= set(aggregate)
    assert (aggregate["agent"], aggregate["merged"], aggregate["kind"]) == \
        ("orchestrator", ["e10", "e11"], "decision")
    (answer,) = aggregate["answers"]
    assert (json.loads(answer["value_json"]), answer["reward"], answer["reviewers"]) == \
        (2, -0.5, 2)
    entry = aggregate["provenance"][0]
    assert {"reviewer", "identified_by", "source", "campaign", "rubric_version",
            "rubric_sha256", "trace_sha256", "created_at", "label_id"} <= set(entry)
    assert entry["trace_sha256"] == trace.sha256 and entry["campaign"] == ""  # outside one


def test_the_conversational_unpaired_row_is_messages_seen_from_the_steps_agent(ws, trace):
    rows = {r["event_id"]: r for r in unpaired_records(
        trace, ws.labelling.current_records(), ws.rubric, ExportOptions(conversational=True))
        if r["kind"] == "decision"}
    plain = {r["event_id"]: r for r in unpaired_records(trace, ws.labelling.current_records(),
                                                          ws.rubric)}
    stop = rows["e13"]
    assert stop["prompt"][0]["role"] == "user" and stop["prompt"][0]["content"].startswith(
        f"Task: {task_text(trace)}\n")
    text = "".join(m["content"] for m in stop["prompt"] + stop["completion"])
    assert text == plain["e13"]["prompt"] + plain["e13"]["completion"]
    # the aggregate e12 came right before the stop, with nothing between: one assistant turn
    (completion,) = stop["completion"]
    assert completion["role"] == "assistant" and "aggregate" in completion["content"]
    assert completion["content"].endswith(plain["e13"]["completion"])


def test_conversational_rows_alternate_roles_across_prompt_and_completion(ws, trace):
    for row in unpaired_records(trace, ws.labelling.current_records(), ws.rubric,
                                ExportOptions(conversational=True)):
        roles = [m["role"] for m in row["prompt"] + row["completion"]]
        assert roles[0] == "user" and roles[-1] == "assistant"
        assert all(a != b for a, b in zip(roles, roles[1:])), row["event_id"]


def test_stepwise_has_no_conversational_variant_in_trl(ws, trace):
    from viz_app.errors import OrchvizError

    with pytest.raises(OrchvizError, match="no conversational variant because TRL defines none"):
        stepwise_record(trace, ws.labelling.current_records(), ws.rubric,
                        ExportOptions(conversational=True))


def test_token_ids_and_call_ids_pass_through(tmp_path):
    raw = premature().to_dict()
    for event in raw["events"]:
        if event["id"] == "e12":
            event.update(response_id="resp-12", llm_call_id="call-12",
                         prompt_token_ids=[1, 2, 3], response_token_ids=[4, 5],
                         source_id=7)
    ws = make_workspace(tmp_path, traces=[raw])
    trace = ws.library.trace(raw["trace_id"])
    ws.labelling.save(trace, "aggregation_quality", 5, "ann", "e12")
    (row,) = unpaired_records(trace, ws.labelling.current_records(), ws.rubric)
    assert json.loads(row["call_json"]) == {"response_id": "resp-12", "llm_call_id": "call-12",
                                            "prompt_token_ids": [1, 2, 3],
                                            "response_token_ids": [4, 5], "source_id": "7"}


@pytest.mark.parametrize("format, columns, count", [
    ("stepwise", TRL_STEPWISE, 2), ("unpaired", TRL_UNPAIRED, 3)])
def test_the_cli_writes_the_trl_shape_and_datasets_loads_it(ws, tmp_path, format, columns,
                                                            count):
    code, rows = cli(tmp_path, format)
    assert code == 0 and len(rows) == count and all(columns <= set(r) for r in rows)
    loaded = datasets.load_dataset("json", data_files=str(tmp_path / f"{format}.jsonl"),
                                   split="train")
    assert loaded.num_rows == count and columns <= set(loaded.column_names)
    labels = read_export(format, tmp_path / f"{format}.jsonl")
    assert {(r["reviewer"], r["question"]) for r in labels} >= {
        ("ann", "aggregation_quality"), ("bob", "stopping_correctness"),
        ("bob", "stop_should_have_been")}


def test_the_cli_writes_the_conversational_unpaired_shape(ws, tmp_path):
    code, rows = cli(tmp_path, "unpaired", "--conversational", "--prompt-with-system")
    assert code == 0 and all(isinstance(r["prompt"], list) for r in rows)
    assert "System: " in rows[0]["prompt"][0]["content"]


def test_the_cli_writes_preference_pairs(tmp_path):
    """Two runs of one task, judged: one row, its chosen and rejected differ."""
    first, second = premature().to_dict(), premature().to_dict()
    second["trace_id"] = "demo-10-rerun"
    second["events"][0]["content"] = "A rerun that waits for every analyst."
    ws = make_workspace(tmp_path, traces=[first, second])
    from viz_app.labels.label import Reviewer

    ws.labelling.save_preference(ws.library.trace(first["trace_id"]), ws.library.trace("demo-10-rerun"), "demo-10-rerun",
                       Reviewer(name="ann", via="cli"), "waits for the database", 2)
    out = tmp_path / "p.jsonl"
    assert main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(tmp_path / "traces"), "--format", "preference", "-o", str(out)]) == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert {"prompt", "chosen", "rejected", "margin"} <= set(row)
    assert row["chosen"] != row["rejected"] and row["chosen_trace_id"] == "demo-10-rerun"
    assert [r["reviewer"] for r in read_export("preference", out)] == ["ann"]
    assert FORMATS["preference"].framework == "TRL"
