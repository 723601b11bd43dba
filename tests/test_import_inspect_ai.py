"""Inspect AI logs (.eval zip and .json) become one trace per sample: agent spans are agents,
a tool event naming `agent` is a handoff."""

import pytest
from importing import (FIXTURES, assert_reference_valid, delegations, returns, spawns,
                       stop_agents, warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
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
