"""MAST / MAD records become traces: agents and turns recovered from each system's raw log as
far as its text allows (the log kept whole otherwise), the failure modes kept verbatim and
mapped to the rubric's questions, uncertain where orchviz interprets."""

import pytest
from factories import make_workspace
from importing import FIXTURES, assert_reference_valid, delegations, returns, spawns, warning_codes

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.detect import detect_format, read_any
from viz_app.io.mast import annotation_records, failure_modes, import_mast
from viz_app.io.records import published

QUESTIONS = {"stopping_correctness", "aggregation_quality", "task_outcome", "message_necessity"}


@pytest.fixture(scope="module")
def runs():
    return {t.system: t for t in import_mast(FIXTURES / "mast_mad_records.json")}


def test_each_record_is_a_trace_that_validates(runs):
    assert sorted(runs) == ["AG2", "AppWorld", "HyperAgent", "MysteryMAS"]
    for trace in runs.values():
        assert_reference_valid(trace)
    assert runs["AG2"].trace_id == "mast-AG2-GSM-Plus-17"
    assert runs["AG2"].task_id.startswith("What is the smallest positive integer n")


def test_ag2_messages_go_to_the_next_speaker(runs):
    trace = runs["AG2"]
    assert [(e.agent, e.to) for e in trace.events if e.type == "message"] == [
        ("mathproxyagent", "assistant"), ("assistant", "mathproxyagent"),
        ("mathproxyagent", "assistant"), ("assistant", None)]


def test_hyperagent_subgoals_are_delegations_and_interns_return_to_the_planner(runs):
    trace = runs["HyperAgent"]
    assert spawns(trace) == [("Planner", "Navigator"), ("Planner", "Editor")]
    assert delegations(trace) == spawns(trace)
    assert returns(trace) == [("Navigator", "Planner"), ("Editor", "Planner")]
    (point,) = analyze(trace).aggregates
    assert trace.event(point.event_id).content == "Final Answer: fixed _cstack."


def test_appworld_messages_to_an_agent_delegate_and_its_response_returns(runs):
    trace = runs["AppWorld"]
    assert spawns(trace) == [("Supervisor", "Spotify")]
    assert returns(trace) == [("Spotify", "Supervisor")]
    assert [e.agent for e in trace.events if e.type == "tool_result"] == ["Spotify"]
    assert trace.task_id == "Play my Spotify playlist with the most songs."


def test_a_log_no_parser_reads_is_kept_whole_with_its_labels(runs):
    trace = runs["MysteryMAS"]
    assert "mast_unparsed" in warning_codes(trace)
    assert [e.content for e in trace.events if e.type == "message"] == [
        "step one... step two... the end."]
    (record,) = annotation_records(trace, QUESTIONS)
    assert (record["question"], record["value"], record["mapping"]) == (
        "stopping_correctness", "premature", "uncertain")  # 3.1 and 1.5 both marked


def test_the_record_is_kept_verbatim_without_its_trajectory(runs):
    ((event_id, kept),) = published(runs["AppWorld"], "MAST")
    assert kept["record"]["trace"] == {"key": "appworld_0", "index": 0}
    assert kept["record"]["mast_annotation"]["1.1"] is None
    assert kept["modes"]["3.3"] == 1 and kept["dataset_version"].startswith("MAST")


def test_premature_termination_is_a_certain_premature_stop(runs):
    trace = runs["AG2"]
    records = {r["question"]: r for r in annotation_records(trace, QUESTIONS)}
    stop = analyze(trace).stops[-1].event_id
    assert (records["stopping_correctness"]["event_id"], records["stopping_correctness"]["value"],
            records["stopping_correctness"]["mapping"]) == (stop, "premature", "certain")
    assert "aggregation_quality" not in records  # 3.2 marked, but the run has no aggregate
    assert "3.2 No or incomplete verification" in records["stopping_correctness"]["comment"]


def test_unaware_of_termination_is_an_uncertain_late_stop_and_withholding_a_raw_tag(runs):
    (record,) = annotation_records(runs["HyperAgent"], QUESTIONS)
    assert (record["value"], record["mapping"]) == ("late", "uncertain")
    assert "2.4 Information withholding" in record["comment"]
    assert record["comment"].startswith("[uncertain mapping: MAST 1.5")


def test_incorrect_verification_is_an_uncertain_label_on_the_last_aggregate(runs):
    trace = runs["AppWorld"]
    (record,) = annotation_records(trace, QUESTIONS)
    (point,) = analyze(trace).aggregates
    assert (record["question"], record["event_id"], record["value"], record["mapping"]) == (
        "aggregation_quality", point.event_id, 2, "uncertain")
    assert "2.5 Ignored other agent's input" in record["comment"]


def test_human_labelled_rounds_count_a_mode_when_two_annotators_agree():
    (trace,) = import_mast(FIXTURES / "mast_human_labelled.json")
    assert_reference_valid(trace)
    assert trace.task_id == "Write a gomoku game."
    assert [(e.agent, e.to) for e in trace.events if e.type == "message"][:2] == [
        ("Chief Product Officer", "Chief Executive Officer"),
        ("Chief Executive Officer", "Chief Product Officer")]
    ((_, kept),) = published(trace, "MAST")
    assert kept["modes"] == {"1.5": 0, "3.2": 1, "1.1 Poor task constraint compliance": 1}


def test_failure_modes_read_codes_and_nulls():
    assert failure_modes({"mast_annotation": {"3.1": 1, "1.1": None, "2.2": 0}}) == {
        "3.1": 1, "1.1": None, "2.2": 0}


def test_the_labels_go_into_the_workspace_once(runs, tmp_path):
    workspace = make_workspace(tmp_path)
    assert workspace.labelling.import_published(runs.values()) == 4
    assert workspace.labelling.import_published(runs.values()) == 0
    by_trace = {(lab.trace_id, lab.question): lab for lab in workspace.labelling.all()}
    premature = by_trace[("mast-AG2-GSM-Plus-17", "stopping_correctness")]
    assert (premature.value, premature.reward, premature.origin) == ("premature", -1.0, "MAST")


def test_a_list_with_something_else_in_it_is_refused_naming_the_record():
    with pytest.raises(TraceError) as err:
        import_mast(b'[{"mas_name": "AG2", "trace": "x"}, {"hello": 1}]', name="mixed.json")
    assert err.value.place.endswith("record 2")


# -- MAST's raw run files: a MetaGPT log in `content` -------------------------------------------

RUN = FIXTURES / "mast_metagpt_run.json"
"""A raw ProgramDev run `{run_id, prompt, content, timestamp, cost, log_file}`: MetaGPT's log
(loguru lines padded as `| INFO     |`) of SimpleCoder, SimpleTester, SimpleReviewer and
SimpleTester again."""


@pytest.fixture(scope="module")
def run():
    (trace,) = import_mast(RUN)
    return trace


def test_a_raw_run_file_is_detected_and_validates():
    """Defect: such a file was refused, and read as a record its log was one message."""
    assert detect_format(RUN) == "mast"
    (trace,) = read_any(RUN)
    assert_reference_valid(trace)
    assert "mast_unparsed" not in warning_codes(trace)


def test_a_raw_runs_roles_are_its_agents_and_its_turns_messages(run):
    said = [(e.agent, e.to) for e in run.events if e.type == "message"]
    assert said == [("SimpleCoder", "SimpleTester"), ("SimpleTester", "SimpleReviewer"),
                    ("SimpleReviewer", "SimpleTester"), ("SimpleTester", None)]


def test_a_turn_holds_what_the_role_wrote_not_the_loggers_bookkeeping(run):
    (first, *_) = [e for e in run.events if e.type == "message"]
    assert "def is_leap" in first.content and "Total running cost" not in first.content


def test_a_raw_run_keeps_its_task_cost_and_file_but_publishes_no_labels(run):
    assert run.task_id.startswith("Write a function is_leap(year)")
    assert run.metrics == {"cost": 0.0042}
    kept = run.events[0].extras["mast_run"]
    assert kept["log_file"] == "logs/programdev/leap-year-3.log" and "content" not in kept
    assert published(run) == [] and annotation_records(run, {"stopping_correctness"}) == []


def test_a_metagpt_log_keeps_its_wall_clock(run):
    """Defect: every turn was at t = i, whatever the log's stamps said."""
    said = [(e.agent, e.t) for e in sorted(run.events, key=lambda e: e.t)
            if e.type == "message"]
    # 14:46:40.217, 14:46:45.580, 14:46:51.003, 14:46:55.410 from the first stamped turn
    assert said == [("SimpleCoder", 0.0), ("SimpleTester", pytest.approx(5.363)),
                    ("SimpleReviewer", pytest.approx(10.786)),
                    ("SimpleTester", pytest.approx(15.193))]
    assert run.costs.wall_clock_s == pytest.approx(15.193)


def test_the_inferred_stop_of_a_round_of_roles_is_the_last_speakers(run):
    """Defect: the first role to speak was said to stop the run."""
    (stop,) = [e for e in run.events if e.decision == "stop"]
    assert stop.agent == "SimpleTester" and stop.extras["inferred_by"] == "importer"
