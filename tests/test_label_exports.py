"""Label exports: every format holds the current labels; rewards are means with their spread;
labelled traces validate against the reference schema; stepwise and unpaired prompts are the
orchestration up to each decision."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import jsonschema
import pyarrow.parquet as pq
import pytest

from factories import DEMO_DIR as DEMO
from factories import PREMATURE, SCHEMA_PATH, make_workspace, premature
from viz_app.analysis import task_text
from viz_app.cli import main
from viz_app.export import FORMATS, export
from viz_app.export.consensus import ExportOptions
from viz_app.export.prompts import stepwise_record, unpaired_records
from viz_app.export.rewards import reward_rows
from viz_app.export.traces import labelled_trace
from viz_app.labels.label import FIELDS

SCHEMA = json.loads(SCHEMA_PATH.read_text())


@pytest.fixture
def trace():
    return premature()


@pytest.fixture
def db(tmp_path) -> str:
    return str(tmp_path / "orchviz.db")


@pytest.fixture
def store(tmp_path, trace):
    """Two reviewers: ann and bob disagree on the aggregate, agree the stop was premature;
    ann changed her mind once (her first answer is history, not current)."""
    store = make_workspace(tmp_path, traces=[PREMATURE]).labelling
    store.save(trace, "aggregation_quality", 5, "ann", "e12")
    store.save(trace, "aggregation_quality", 2, "ann", "e12")
    store.save(trace, "aggregation_quality", 4, "bob", "e12")
    store.save_target(trace, "e13", {"stopping_correctness": "premature",
                                     "stop_should_have_been": "e15"}, "ann")
    store.save(trace, "stopping_correctness", "premature", "bob", "e13")
    store.save(trace, "task_outcome", "failure", "ann")
    return store


def test_jsonl_holds_one_row_per_current_label_with_every_field(store, tmp_path):
    path = export("jsonl", store.current_records(), {}, store.rubric, tmp_path / "l.jsonl")
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert len(rows) == 6 and all(list(r) == list(FIELDS) for r in rows)
    assert {(r["reviewer"], r["value"]) for r in rows if r["question"] == "aggregation_quality"} \
        == {("ann", 2), ("bob", 4)}
    assert [r["event_id"] for r in rows if r["question"] == "task_outcome"] == [None]


def test_csv_holds_the_same_rows_with_values_as_json(store, tmp_path):
    path = export("csv", store.current_records(), {}, store.rubric, tmp_path / "l.csv")
    rows = list(csv.DictReader(Path(path).open()))
    assert len(rows) == 6 and list(rows[0]) == list(FIELDS)
    assert {r["value"] for r in rows if r["question"] == "stopping_correctness"} == {'"premature"'}


def test_parquet_holds_the_same_rows_with_typed_rewards(store, tmp_path):
    table = pq.read_table(export("parquet", store.current_records(), {}, store.rubric,
                                 tmp_path / "l.parquet"))
    assert table.num_rows == 6 and table.column_names == list(FIELDS)
    assert str(table.schema.field("reward").type) == "double"


def test_rewards_are_the_mean_over_reviewers_with_count_and_spread(store):
    found = reward_rows(store.current_records(), store.rubric)
    rows = {(r["event_id"], r["question"]): r for r in found}
    aggregate = rows[("e12", "aggregation_quality")]
    assert (aggregate["reward"], aggregate["reward_std"], aggregate["reviewers"]) == \
        (pytest.approx(0.0), pytest.approx(0.5), 2)  # ann 2 -> -0.5, bob 4 -> 0.5
    assert (aggregate["family"], aggregate["credit_unit"], aggregate["sub_decision"]) == \
        ("R7", "orchestrator", "O4")
    stop = rows[("e13", "stopping_correctness")]
    assert (stop["reward"], stop["reward_std"], stop["reviewers"]) == (-1.0, 0.0, 2)
    assert rows[(None, "task_outcome")]["channel"] == "team.task_outcome"


def test_answers_without_a_reward_are_not_in_the_rewards(store):
    questions = {r["question"] for r in reward_rows(store.current_records(), store.rubric)}
    assert "stop_should_have_been" not in questions


def test_a_labelled_trace_keeps_its_rewards_and_gains_the_label_channels(store, trace):
    raw = labelled_trace(trace, store.current_records(), store.rubric)
    assert raw["rewards"]["orchestration.aggregation_quality"] == pytest.approx(0.0)
    assert raw["rewards"]["orchestration.stopping_correctness"] == -1.0
    assert raw["rewards"]["team"] == trace.rewards["team"]


def test_exported_traces_validate_against_the_reference_schema(store, trace, tmp_path):
    written = export("traces", store.current_records(), {trace.trace_id: trace}, store.rubric,
                     tmp_path / "traces")
    assert len(written) == 1
    jsonschema.validate(json.loads(written[0].read_text()), SCHEMA)


MEAN = ExportOptions(disputed="mean")


def test_a_stepwise_record_has_one_step_per_labelled_decision(store, trace):
    record = stepwise_record(trace, store.current_records(), store.rubric, MEAN)
    assert record["event_ids"] == ["e12", "e13"]  # as it happened: the pointer has its row
    assert record["kinds"] == ["decision", "decision"]
    assert record["labels"] == [False, False] and record["rewards"] == [0.0, -1.0]
    assert record["completions"][0].rstrip().endswith(trace.event("e12").text)
    assert "Root cause" not in record["prompt"]  # the aggregate's own text is the completion
    assert record["prompt"].startswith(f"Task: {task_text(trace)}\n")  # the task's words


def test_a_disputed_aggregate_is_no_step_by_default(store, trace):
    """ann 2 and bob 4 disagree: the default never turns that into a confident label."""
    record = stepwise_record(trace, store.current_records(), store.rubric)
    assert record["event_ids"] == ["e13"]
    assert "aggregation_quality" not in {a["question"] for step in record["answers"] for a in step}


def test_stepwise_prompt_and_completions_rebuild_the_orchestration_up_to_the_last_step(
        store, trace):
    """What TRL's PRMTrainer reads with its default step separator ("\n" after each step)."""
    from viz_app.analysis import analyze
    from viz_app.export.prompts import header
    from viz_app.export.steps import event_line

    record = stepwise_record(trace, store.current_records(), store.rubric)
    whole = record["prompt"] + "".join(c + "\n" for c in record["completions"])
    analysis = analyze(trace)
    upto = analysis.position["e13"] + 1
    assert whole == header(trace) + "".join(event_line(e, analysis) for e in analysis.order[:upto])
    assert not any(c.endswith("\n") for c in record["completions"])


def test_prompts_leave_the_system_description_out_unless_asked(store, trace):
    assert trace.system
    plain = stepwise_record(trace, store.current_records(), store.rubric)
    asked = stepwise_record(trace, store.current_records(), store.rubric,
                            ExportOptions(prompt_with_system=True))
    assert trace.system not in plain["prompt"] and "System:" not in plain["prompt"]
    assert f"System: {trace.system}" in asked["prompt"]


def test_an_unpaired_prompt_is_everything_before_its_decision(store, trace):
    records = {r["event_id"]: r for r in unpaired_records(trace, store.current_records(),
                                                            store.rubric)}
    stop = records["e13"]
    assert trace.event("e12").text in stop["prompt"] and trace.event("e13").text not in \
        stop["prompt"]
    assert trace.event("e13").text in stop["completion"] and stop["label"] is False
    assert stop["agent"] == "orchestrator" and stop["reward"] == -1.0


def test_a_positive_reward_is_a_true_label_beside_its_value(store, trace):
    store.save(trace, "aggregation_quality", 5, "bob", "e12")  # ann -0.5, bob 1.0: mean 0.25
    records = {r["event_id"]: r for r in unpaired_records(trace, store.current_records(),
                                                            store.rubric, MEAN)}
    aggregate = records["e12"]
    assert aggregate["label"] is True and aggregate["reward"] == pytest.approx(0.25)
    (answer,) = aggregate["answers"]
    assert answer["disputed"] and answer["resolution"] == "mean" and answer["value_json"] == \
        "null"
    assert sorted(json.loads(p["value_json"]) for p in aggregate["provenance"]) == [2, 5]


def test_an_agreed_neutral_answer_is_a_false_label_and_the_threshold_moves_it(store, trace):
    store.save(trace, "aggregation_quality", 3, "ann", "e12")
    store.save(trace, "aggregation_quality", 3, "bob", "e12")
    records = {r["event_id"]: r for r in unpaired_records(trace, store.current_records(),
                                                            store.rubric)}
    assert records["e12"]["label"] is False and records["e12"]["reward"] == 0.0
    assert json.loads(records["e12"]["answers"][0]["value_json"]) == 3
    lower = {r["event_id"]: r for r in unpaired_records(
        trace, store.current_records(), store.rubric, ExportOptions(threshold=-0.25))}
    assert lower["e12"]["label"] is True and lower["e12"]["threshold"] == -0.25


@pytest.mark.parametrize("format", sorted(FORMATS))
def test_every_format_is_written_by_the_cli(store, db, tmp_path, format, capsys):
    out = tmp_path / ("out" if format == "traces" else f"out.{format}")
    code = main(["labels", "export", "--db", db, "--format", format, "-o", str(out),
                 "--traces", str(PREMATURE)])
    assert code == 0 and out.exists()
    said = {"preference": "0 preference pairs", "openrlhf-rm": "0 preference pairs",
            "bookmarks": "0 current bookmarks", "suggestions": "0 suggestions",
            "traces": f"6 current labels -> 1 traces in {out}"}
    expected = said.get(format) or (f" {FORMATS[format].unit} -> {out}" if FORMATS[format].training
                                    else f"6 current labels -> {out}")
    assert expected in capsys.readouterr().out


@pytest.mark.parametrize("format", [f for f in sorted(FORMATS) if f != "traces"])
def test_the_cli_writes_what_the_registry_writes(store, db, trace, tmp_path, format):
    """One registry: the CLI's file is byte for byte what `export` writes from the records."""
    out, direct = tmp_path / f"cli.{format}", tmp_path / f"direct.{format}"
    assert main(["labels", "export", "--db", db, "--format", format, "-o", str(out),
                 "--traces", str(PREMATURE)]) == 0
    export(format, store.current_records(), {trace.trace_id: trace}, store.rubric, direct)
    if format in ("parquet", "verl"):
        assert pq.read_table(out).equals(pq.read_table(direct))
    else:
        assert out.read_bytes() == direct.read_bytes()


def test_every_label_record_says_how_its_reviewer_was_identified(store, tmp_path):
    path = export("jsonl", store.current_records(), {}, store.rubric, tmp_path / "l.jsonl")
    rows = [json.loads(line) for line in Path(path).read_text().splitlines()]
    assert list(rows[0]) == list(FIELDS) and {r["identified_by"] for r in rows} == {"cli"}


def test_the_jsonl_export_imports_into_another_store_and_again_adds_nothing(store, db, tmp_path,
                                                                              capsys):
    out = tmp_path / "l.jsonl"
    main(["labels", "export", "--db", db, "--format", "jsonl", "-o", str(out)])
    other = tmp_path / "other.db"
    args = ["labels", "import", str(out), "--db", str(other), "--traces", str(DEMO)]
    assert main(args) == 0 and main(args) == 0
    printed = capsys.readouterr().out
    assert "6 records, 6 new labels" in printed and "6 records, 0 new labels" in printed


def test_the_apps_agreement_page_takes_its_exports_from_the_registry(tmp_path, monkeypatch,
                                                                     trace):
    """One registry: the page offers the formats that need no traces as downloads and names
    every other one, the training shapes included, for the command line."""
    from streamlit.testing.v1 import AppTest

    from factories import APP, app_env

    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    ws.labelling.save(trace, "aggregation_quality", 2, "ann", "e12")
    at = AppTest.from_file(str(APP), default_timeout=120).run()
    at.switch_page("app_pages/agreement.py").run()
    assert not at.exception
    shown = " ".join(c.value for c in at.caption)
    assert all(name in shown for name, f in FORMATS.items() if f.needs_traces)
    assert "openrlhf-prm" in shown and "agent-lightning" in shown
