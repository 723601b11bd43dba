"""AgentOps exports become traces: the CrewAI workflow is the root agent, each task's agent is
spawned with the task as its prompt and returns the task's output, model calls carry their
tokens, and the crew's result after the returns is its aggregate."""

import json

import pytest
from importing import FIXTURES, assert_reference_valid, returns, spawns, stop_agents

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.agentops import import_agentops

EXPORT = FIXTURES / "agentops_crewai.json"


@pytest.fixture(scope="module")
def trace():
    (found,) = import_agentops(EXPORT)
    return found


def test_export_validates_and_keeps_its_ids(trace):
    assert_reference_valid(trace)
    assert (trace.trace_id, trace.system) == ("b520ab60214d54b570cf701c7ad28faf", "crewai")
    assert trace.task_id.startswith("Research this URL for songwriting material")


def test_the_workflow_spawns_each_tasks_agent_with_the_task_as_prompt(trace):
    assert spawns(trace) == [("Crew", "Website Researcher"), ("Crew", "Songwriter")]
    first = [e for e in trace.events if e.type == "spawn"][0]
    assert first.content.startswith("Research this URL for songwriting material: https://")
    assert first.role == "Website Researcher"
    assert first.extras["description"] == "Find useful content for songwriting."


def test_agents_return_their_tasks_output_and_the_crew_result_aggregates(trace):
    assert returns(trace) == [("Website Researcher", "Crew"), ("Songwriter", "Crew")]
    (point,) = analyze(trace).aggregates
    assert len(point.inputs) == 2 and trace.event(point.event_id).agent == "Crew"
    assert stop_agents(trace) == ["Crew"]


def test_model_and_tool_spans_belong_to_the_agent_that_encloses_them(trace):
    assert [(e.agent, e.tool) for e in trace.events if e.type == "tool_call"] == [
        ("Website Researcher", "Read website content")]
    models = [(e.agent, e.tokens, e.model) for e in trace.events if e.extras.get("kind") ==
              "generation"]
    assert models == [("Website Researcher", 240, "ollama/llama3:latest"),
                      ("Website Researcher", 53, "ollama/llama3:latest"),
                      ("Songwriter", 684, "ollama/llama3:latest")]


def test_tokens_are_counted_once_not_again_for_the_workflow(trace):
    assert trace.costs.tokens == 240 + 53 + 684


def test_iso_times_give_seconds_and_nanosecond_durations_are_kept(trace):
    assert trace.costs.wall_clock_s == 29.0
    (tool,) = [e for e in trace.events if e.type == "tool_result"]
    assert tool.t == pytest.approx(7.9)


def test_a_bare_list_of_spans_and_one_span_a_line_read_the_same(tmp_path, trace):
    spans = json.loads(EXPORT.read_text("utf-8"))["spans"]
    for span in spans:
        span["trace_id"] = "b520ab60214d54b570cf701c7ad28faf"
    lines = tmp_path / "spans.jsonl"
    lines.write_text("".join(json.dumps(s) + "\n" for s in spans), "utf-8")
    (again,) = import_agentops(lines)
    assert [(e.type, e.agent, e.t) for e in again.events] == [
        (e.type, e.agent, e.t) for e in trace.events]


def test_a_document_without_spans_is_refused():
    with pytest.raises(TraceError) as err:
        import_agentops(b'{"trace": {"trace_id": "x"}, "spans": []}', name="empty.json")
    assert "not an AgentOps trace export" in err.value.problem
