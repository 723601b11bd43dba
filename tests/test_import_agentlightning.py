"""Agent Lightning rollouts become traces: one per rollout attempt, agents from whichever
tracer wrote the spans, the framework's reward spans as the trace's rewards."""

import json

import pytest
from importing import (FIXTURES, assert_reference_valid, delegations, returns, spawns,
                       stop_agents)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.agentlightning import import_agentlightning

EXPORT = FIXTURES / "agentlightning_rollout.json"


@pytest.fixture(scope="module")
def trace():
    (found,) = import_agentlightning(EXPORT)
    return found


def test_a_rollout_attempt_is_one_trace_named_by_its_rollout(trace):
    assert_reference_valid(trace)
    assert (trace.trace_id, trace.task_id, trace.system) == (
        "ro-5f2c1a", "How many orders shipped late in March?", "sql-agent")


def test_the_checker_is_spawned_then_delegated_to_and_returns_each_time(trace):
    assert spawns(trace) == [("sql_agent", "checker")]
    assert delegations(trace) == [("sql_agent", "checker")]
    assert returns(trace) == [("checker", "sql_agent"), ("checker", "sql_agent")]


def test_flat_gen_ai_attributes_give_content_model_and_tokens(trace):
    models = [(e.agent, e.tokens, e.content) for e in trace.events
              if e.extras.get("kind") == "generation"]
    assert models[0] == ("sql_agent", 860, "SELECT count(*) FROM orders WHERE ...")
    assert trace.costs.tokens == 860 + 630 + 652 + 905


def test_reward_spans_are_the_traces_rewards_and_messages_are_kept(trace):
    assert trace.rewards == {"reward": 1.0, "efficiency": 0.6}
    (note,) = [e for e in trace.events if e.extras.get("kind") == "message"]
    assert note.content == "answer checked against gold: 42"


def test_the_root_answer_aggregates_and_the_rollout_is_described(trace):
    (point,) = analyze(trace).aggregates
    assert trace.event(point.event_id).content == "42" and len(point.inputs) == 2
    assert stop_agents(trace) == ["sql_agent"]
    first = min(trace.events, key=lambda e: e.t)
    assert (first.extras["rollout_mode"], first.extras["rollout_status"]) == ("train",
                                                                              "succeeded")


def test_spans_one_a_line_with_two_attempts_give_two_traces(tmp_path):
    spans = json.loads(EXPORT.read_text("utf-8"))["spans"]
    second = [{**s, "attempt_id": "at-02"} for s in spans]
    lines = tmp_path / "spans.jsonl"
    lines.write_text("".join(json.dumps(s) + "\n" for s in spans + second), "utf-8")
    traces = import_agentlightning(lines)
    assert [t.trace_id for t in traces] == ["ro-5f2c1a/at-01", "ro-5f2c1a/at-02"]
    assert all(spawns(t) == [("sql_agent", "checker")] for t in traces)


def test_nanosecond_times_are_read_as_seconds():
    spans = json.loads(EXPORT.read_text("utf-8"))["spans"]
    nanos = [{**s, "start_time": int(s["start_time"] * 1e9), "end_time": int(s["end_time"] * 1e9)}
             for s in spans]
    (found,) = import_agentlightning(json.dumps(nanos).encode(), name="nanos.json")
    assert found.costs.wall_clock_s == pytest.approx(14.0, abs=1e-3)


def test_records_without_spans_are_refused():
    with pytest.raises(TraceError) as err:
        import_agentlightning(b'{"rollout": {"rollout_id": "r"}, "spans": []}', name="r.json")
    assert "no Agent Lightning spans" in err.value.problem
