"""Claude Code transcripts become traces: main thread as orchestrator, Task/Agent calls as spawns,
sidechains as the sub-agents' events, results as returns, the final answer as aggregate and stop."""

import pytest
from importing import (FIXTURES, assert_reference_valid, returns, spawns, stop_agents,
                       warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.claude_code import import_claude_code, read_project

SESSION = FIXTURES / "claude_session.jsonl"
PROJECT = FIXTURES / "claude_code_project"


@pytest.fixture(scope="module")
def session():
    (trace,) = import_claude_code(SESSION)
    return trace


def test_session_validates_against_the_reference_schema(session):
    assert_reference_valid(session)


def test_two_parallel_task_calls_spawn_two_researchers_from_main(session):
    assert spawns(session) == [("main", "researcher-a1"), ("main", "researcher-b2")]
    spawn_times = {e.t for e in session.events if e.type == "spawn"}
    assert len(spawn_times) == 1


def test_spawn_role_comes_from_subagent_type(session):
    assert analyze(session).role_of("researcher-a1") == "researcher"


def test_sidechain_lines_are_the_subagents_events(session):
    a = analyze(session)
    tools = [e.tool for e in a.events_of["researcher-a1"] if e.type == "tool_call"]
    assert tools == ["WebSearch"]
    assert all(e.agent != "main" for e in a.events_of["researcher-b2"])


def test_out_of_order_lines_are_put_in_time_order(session):
    own = analyze(session).events_of["researcher-a1"]
    assert [e.type for e in own] == ["tool_call", "tool_result", "message", "return"]
    assert [e.t for e in session.events] == sorted(e.t for e in session.events)


def test_task_results_are_returns_to_main(session):
    assert returns(session) == [("researcher-a1", "main"), ("researcher-b2", "main")]
    back = [e for e in session.events if e.type == "return"]
    assert back[0].extras["total_tokens"] == 321


def test_final_answer_after_returns_is_an_aggregate_of_both(session):
    (point,) = analyze(session).aggregates
    assert point.agent == "main"
    assert [session.event(i).from_ for i in point.inputs] == ["researcher-a1", "researcher-b2"]


def test_the_main_threads_end_is_the_stop(session):
    assert stop_agents(session) == ["main"]
    stop = [e for e in session.events if e.decision == "stop"][0]
    assert stop.t == max(e.t for e in session.events)


def test_usage_shared_by_lines_of_one_message_is_counted_once(session):
    first_turn = [e for e in session.events if e.extras.get("source_id") in ("u2", "u3", "u4")]
    assert sum(e.tokens or 0 for e in first_turn) == 140


def test_times_are_seconds_from_the_first_line(session):
    assert min(e.t for e in session.events) == 0
    assert session.costs.wall_clock_s == 14


def test_every_event_keeps_its_source_uuid(session):
    inferred = {e.id for e in session.events if e.extras.get("inferred_by")}
    assert all(e.extras.get("source_id") for e in session.events if e.id not in inferred)


def test_an_unknown_line_type_is_counted_as_a_warning_not_a_crash(session):
    assert warning_codes(session).count("unknown_record") == 1
    assert "mystery-record" in session.warnings[-1].message


def test_project_folder_groups_subagent_files_with_their_session():
    (trace,) = read_project(PROJECT)
    assert trace.trace_id == "s-2222"
    assert spawns(trace) == [("main", "coder-c3"), ("main", "reviewer-d4")]
    assert {e.agent for e in trace.events} == {"main", "coder-c3", "reviewer-d4"}
    assert_reference_valid(trace)


def test_agent_tool_of_version_2_1_is_a_spawn_too():
    (trace,) = read_project(PROJECT)
    assert [e.tool for e in trace.events if e.type == "spawn"] == ["Agent", "Task"]


def test_a_truncated_transcript_names_the_cut_line():
    with pytest.raises(TraceError) as err:
        import_claude_code(FIXTURES / "claude_truncated.jsonl")
    assert err.value.place.startswith("line 7")
    assert "truncated" in err.value.problem


def test_a_file_of_another_format_is_refused_clearly():
    with pytest.raises(TraceError) as err:
        import_claude_code(FIXTURES / "otlp_openinference.jsonl")
    assert "not a Claude Code transcript" in err.value.problem
