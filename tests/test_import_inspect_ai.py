"""Inspect AI logs (.eval zip and .json) become one trace per sample: agent spans are agents,
a tool event naming `agent` is a handoff."""

import json

import pytest
from importing import (FIXTURES, assert_reference_valid, delegations, returns, spawns,
                       stop_agents, warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.detect import detect_format, read_any
from viz_app.io.inspect_ai import import_inspect


@pytest.fixture(scope="module", params=["inspect_handoff.eval", "inspect_handoff.json"])
def trace(request):
    (found,) = import_inspect(FIXTURES / request.param)
    return found


def test_sample_validates_against_the_reference_schema(trace):
    assert_reference_valid(trace)
    assert trace.trace_id == "ev123:q1:1"
    assert trace.task_id == "arith/q1"


def test_nested_agent_span_is_spawned_by_the_enclosing_agent(trace):
    assert spawns(trace) == [("supervisor", "researcher")]
    assert returns(trace) == [("researcher", "supervisor")]


def test_tool_event_with_agent_is_a_handoff(trace):
    assert delegations(trace) == [("supervisor", "researcher")]


def test_model_and_tool_events_belong_to_their_span_agent(trace):
    a = analyze(trace)
    assert [e.tool for e in a.events_of["researcher"] if e.type == "tool_call"] == ["python"]
    assert trace.costs.tokens == 25 + 40 + 60


def test_scores_become_rewards(trace):
    assert trace.rewards == {"match": 1.0, "f1": 0.9}


def test_root_agent_stops_after_aggregating(trace):
    assert stop_agents(trace) == ["supervisor"]
    assert len(analyze(trace).aggregates) == 1


def test_unknown_event_kinds_are_counted(trace):
    assert warning_codes(trace) == ["unknown_record"]


def test_a_truncated_eval_zip_is_refused_clearly():
    with pytest.raises(TraceError) as err:
        import_inspect(FIXTURES / "inspect_truncated.eval")
    assert "truncated" in err.value.problem


# -- transcript events outside a full log ------------------------------------------------------

EVENTS = FIXTURES / "inspect_transcript_events.json"
"""A sample's events alone (a JSON list): a solver span holding agent `lead`, which runs agents
`triager` (its model call in a nested generate span) and `fixer` in turn, then answers."""


def test_transcript_events_outside_a_log_are_read_as_inspect():
    """Defect: a list of events was refused as "in no format orchviz reads"."""
    assert detect_format(EVENTS) == "inspect_ai"
    (trace,) = read_any(EVENTS)
    assert_reference_valid(trace)
    assert spawns(trace) == [("lead", "triager"), ("lead", "fixer")]
    assert returns(trace) == [("triager", "lead"), ("fixer", "lead")]


def test_an_event_in_a_span_nested_in_an_agent_span_is_that_agents():
    (trace,) = read_any(EVENTS)
    assert [e.content for e in analyze(trace).events_of["triager"] if e.type == "message"] == [
        "Issue 12 (data loss) is the worst."]


def test_events_alone_take_their_final_score_as_reward():
    (trace,) = read_any(EVENTS)
    assert trace.rewards == {"score": 1.0}


def test_events_one_a_line_read_like_the_list(tmp_path):
    lines = tmp_path / "events.jsonl"
    lines.write_text("".join(json.dumps(e) + "\n" for e in json.loads(EVENTS.read_text())))
    (trace,) = read_any(lines)
    (listed,) = read_any(EVENTS)
    assert [(e.t, e.type, e.agent) for e in trace.events] == [
        (e.t, e.type, e.agent) for e in listed.events]


def test_a_sample_read_alone_keeps_its_id_and_scores(tmp_path):
    log = json.loads((FIXTURES / "inspect_handoff.json").read_text())
    alone = tmp_path / "1_epoch_1.json"
    alone.write_text(json.dumps(log["samples"][0]))
    (trace,) = read_any(alone)
    assert_reference_valid(trace)
    assert trace.trace_id == "inspect:q1:1"
    assert spawns(trace) == [("supervisor", "researcher")]
    assert trace.rewards == {"match": 1.0, "f1": 0.9}


def test_a_list_that_is_not_all_events_is_refused_naming_the_item(tmp_path):
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps([*json.loads(EVENTS.read_text())[:5], {"note": "x"}]))
    with pytest.raises(TraceError) as err:
        import_inspect(mixed)
    assert err.value.place == "item 6"


def test_a_general_log_of_events_is_not_taken_for_inspect(tmp_path):
    log = tmp_path / "service.jsonl"
    log.write_text('{"event": "error", "timestamp": "2025-06-02T09:00:00Z", "msg": "x"}\n'
                   '{"event": "info", "timestamp": "2025-06-02T09:00:01Z", "msg": "y"}\n')
    with pytest.raises(TraceError) as err:
        detect_format(log)
    assert "no format orchviz reads" in err.value.problem


def test_model_events_without_completed_keep_the_calls_duration_from_output_time(tmp_path):
    events = json.loads(EVENTS.read_text("utf-8"))
    took = {}
    for e in events:
        if e.get("event") == "model":
            e.pop("completed", None)
            e.setdefault("output", {})["time"] = took[e["timestamp"]] = 0.25 + len(took) / 10
        elif e.get("event") == "tool":
            e.pop("completed", None)  # its working_time stands for it
    log = tmp_path / "sample_events.json"
    log.write_text(json.dumps(events), "utf-8")
    (trace,) = read_any(log)
    assert_reference_valid(trace)
    calls = [e for e in trace.events if e.extras.get("kind") == "generation"]
    assert [round(e.end_t - e.t, 6) for e in calls] == [round(v, 6) for v in took.values()]
    results = [e for e in trace.events if e.type == "tool_result"]
    assert results and all(e.t > 0 for e in results)
    assert trace.costs.wall_clock_s > 0
