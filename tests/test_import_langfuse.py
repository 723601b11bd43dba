"""Langfuse exports become traces: AGENT observations are agents spawned by the agent they run
in, TOOL and GENERATION observations that agent's tool and model calls, EVENTs its messages;
observations in any order; the trace is the root when no agent stands at the top."""

import json

import pytest
from importing import (FIXTURES, assert_reference_valid, delegations, returns, spawns,
                       stop_agents)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.langfuse import import_langfuse

EXPORT = FIXTURES / "langfuse_trace.json"


@pytest.fixture(scope="module")
def trace():
    (found,) = import_langfuse(EXPORT)
    return found


def test_export_validates_and_names_the_run(trace):
    assert_reference_valid(trace)
    assert (trace.trace_id, trace.task_id, trace.system) == (
        "7f3c9a1e-2b4d-4e8f-9a01-3c5d7e9f1b2a", "sess-42", "ai-policy-supervisor")


def test_agent_observations_are_spawned_by_the_supervisor_and_return_to_it(trace):
    assert spawns(trace) == [("supervisor", "researcher"), ("supervisor", "writer")]
    assert returns(trace) == [("researcher", "supervisor"), ("writer", "supervisor")]
    assert delegations(trace) == [("supervisor", "researcher")]  # transfer_to_researcher
    assert analyze(trace).figures.depth == 1


def test_generations_carry_model_and_usage_tools_their_errors(trace):
    models = [(e.agent, e.model, e.tokens) for e in trace.events
              if e.extras.get("kind") == "generation"]
    assert models[1] == ("researcher", "gpt-4o-mini", 515)
    assert trace.costs.tokens == 370 + 515 + 1460 + 1020 + 1245
    (failed,) = [e for e in trace.events if e.extras.get("error")]
    assert (failed.tool, failed.extras["error"]) == ("tavily_search", "HTTP 429 Too Many Requests")


def test_an_event_observation_is_a_message_of_its_agent(trace):
    (event,) = [e for e in trace.events if e.extras.get("kind") == "event"]
    assert (event.agent, event.content) == ("researcher", "retry-scheduled")


def test_the_supervisors_output_after_the_returns_aggregates_and_it_stops(trace):
    (point,) = analyze(trace).aggregates
    assert trace.event(point.event_id).agent == "supervisor" and len(point.inputs) == 2
    assert stop_agents(trace) == ["supervisor"]


def test_numeric_trace_scores_are_rewards_and_every_score_is_kept(trace):
    assert trace.rewards == {"helpfulness": 0.8}
    first = min(trace.events, key=lambda e: e.t)
    assert [s["name"] for s in first.extras["langfuse_scores"]] == ["helpfulness", "tone"]


def test_observations_alone_with_no_agent_make_the_trace_the_root(tmp_path):
    doc = json.loads(EXPORT.read_text("utf-8"))
    loose = [o for o in doc["observations"] if o["type"] in ("GENERATION", "TOOL")]
    for o in loose:
        o["parentObservationId"] = None
    page = tmp_path / "observations.json"
    page.write_text(json.dumps({"data": loose, "meta": {"page": 1}}), "utf-8")
    (flat,) = import_langfuse(page)
    assert_reference_valid(flat)
    assert {e.agent for e in flat.events} == {"trace"}
    assert len([e for e in flat.events if e.type == "tool_call"]) == 3


def test_a_file_without_observations_is_refused():
    with pytest.raises(TraceError) as err:
        import_langfuse(b'{"id": "t", "observations": []}', name="empty.json")
    assert "not a Langfuse trace export" in err.value.problem
