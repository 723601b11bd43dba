"""Claude Code transcripts become traces: main thread as orchestrator, Task/Agent calls as spawns,
sidechains as the sub-agents' events, results as returns, the final answer as aggregate and stop."""

import shutil

import pytest
from importing import (FIXTURES, assert_reference_valid, returns, spawns, stop_agents,
                       warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.claude_code import import_claude_code, read_project
from viz_app.io.detect import library_files, read_any, read_folder

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
    assert "mystery-record" in analyze(session).warnings[-1].message


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


# -- defects found on real sessions ----------------------------------------------------------

PROGRESS = FIXTURES / "claude_code_progress"
"""Session s-3333: an Explore sub-agent (p7) whose lines are in the parent's `progress` lines and
in `s-3333/subagents/agent-p7.jsonl`, an automatic compaction, and a second human turn."""


@pytest.fixture(scope="module")
def with_folder():
    (trace,) = import_claude_code(PROGRESS / "s-3333.jsonl")
    return trace


@pytest.fixture(scope="module")
def without_folder(tmp_path_factory):
    alone = tmp_path_factory.mktemp("no-subagents") / "s-3333.jsonl"
    alone.write_bytes((PROGRESS / "s-3333.jsonl").read_bytes())
    (trace,) = import_claude_code(alone)
    return trace


def test_a_subagent_known_only_from_progress_lines_is_rebuilt_from_them(without_folder):
    """Defect: without `subagents/`, the sub-agent was spawned but empty, without a warning."""
    assert_reference_valid(without_folder)
    own = analyze(without_folder).events_of["Explore-p7"]
    assert [e.type for e in own] == ["tool_call", "tool_result", "message", "return"]
    assert own[0].model == "claude-haiku-4-5" and own[0].tool == "Grep"
    assert "subagent_from_progress" in warning_codes(without_folder)


def test_automatic_compaction_is_an_event_of_main_not_a_spawned_agent(with_folder):
    """Defect: `agent-acompact-*` was shown as a spawned sub-agent, inflating fan-out."""
    a = analyze(with_folder)
    assert spawns(with_folder) == [("main", "Explore-p7")]
    assert a.figures.max_fanout == 1 and "unclaimed_sidechain" not in warning_codes(with_folder)
    (compaction,) = [e for e in with_folder.events if e.extras.get("kind") == "compaction"]
    assert (compaction.agent, compaction.type) == ("main", "message")
    assert compaction.content.startswith("Summary:") and compaction.end_t > compaction.t


def test_the_aggregate_is_the_first_main_text_after_the_returns(with_folder):
    """Defect: the aggregate was the session's last assistant text, turns after the return."""
    (point,) = analyze(with_folder).aggregates
    aggregate = with_folder.event(point.event_id)
    assert aggregate.extras["source_id"] == "m4"
    assert [with_folder.event(i).from_ for i in point.inputs] == ["Explore-p7"]
    last = [e for e in with_folder.events if e.extras.get("source_id") == "m9"]
    assert [e.type for e in last] == ["message"]


def test_subagent_files_beside_their_session_in_a_plain_folder_are_joined_to_it(tmp_path):
    """Defect: read file by file, a session and its two sub-agent files gave three traces with
    one id, the session without its sub-agents."""
    project = tmp_path / "projects" / "-repo"
    shutil.copytree(PROJECT, project)
    traces = read_folder(tmp_path / "projects")
    assert [t.trace_id for t in traces] == ["s-2222"]
    assert {e.agent for e in traces[0].events} == {"main", "coder-c3", "reviewer-d4"}
    (by_path,) = read_any(project / "s-2222.jsonl")
    assert spawns(by_path) == spawns(traces[0])
    (alone,) = read_any(project / "agent-d4.jsonl")
    assert alone.trace_id == "s-2222/agent-d4"


def test_the_same_run_with_and_without_its_subagents_folder_has_one_spawn_tree(
        with_folder, without_folder):
    """Fidelity: the progress lines and the sub-agent's own transcript tell the same tree."""
    def tree(trace):
        a = analyze(trace)
        return sorted((e.agent, e.to, e.role) for e in a.order if e.type == "spawn"), \
            sorted(a.agents), [(e.type, e.agent) for e in a.order
                               if e.agent != "main" or e.type in ("spawn", "return")]
    assert tree(with_folder) == tree(without_folder)
    assert analyze(with_folder).figures.depth == analyze(without_folder).figures.depth == 1


# -- a sub-agent whose own context filled: its compaction is its own -------------------------------

SUBCOMPACT = FIXTURES / "claude_code_subcompact"
"""Session s-4444: main spawns general-purpose agent q9, whose transcript marks a
`compact_boundary` (and gets the summary back as an `isCompactSummary` line) right after
`subagents/agent-acompact-7c2.jsonl` ran; main's own transcript never compacts."""


@pytest.fixture(scope="module")
def subcompacted():
    (trace,) = import_claude_code(SUBCOMPACT / "s-4444.jsonl")
    return trace


def test_a_sub_agents_own_compaction_is_an_event_of_that_sub_agent(subcompacted):
    """Defect: every `agent-acompact-*` file was taken as a compaction of `main`."""
    assert_reference_valid(subcompacted)
    (compaction,) = [e for e in subcompacted.events if e.extras.get("kind") == "compaction"]
    assert compaction.agent == "general-purpose-q9"
    assert spawns(subcompacted) == [("main", "general-purpose-q9")]


def test_the_summary_given_back_after_a_compaction_is_no_human_turn(subcompacted):
    assert not [e for e in subcompacted.events if e.type == "human_intervention"
                and e.agent != "main"]


def test_a_compaction_file_read_alone_is_a_trace_of_its_own_not_the_session(tmp_path):
    """Defect: read without its session, the file took the session's id (s-4444, the id of
    another trace in the same library) and showed its compaction as agent `main`."""
    alone = tmp_path / "agent-acompact-7c2.jsonl"
    alone.write_bytes((SUBCOMPACT / "s-4444" / "subagents" / alone.name).read_bytes())
    (trace,) = read_any(alone)
    assert_reference_valid(trace)
    assert trace.trace_id == "s-4444/agent-acompact-7c2"
    assert {e.agent for e in trace.events} == {"acompact-7c2"}
    assert "compaction_owner_unknown" in warning_codes(trace)


TEAM = FIXTURES / "claude_code_team"
WORKFLOW = FIXTURES / "claude_code_workflow"


def test_an_agent_team_is_one_trace_its_teammates_named_as_the_team_names_them():
    (trace,) = read_folder(TEAM)
    assert_reference_valid(trace)
    assert trace.trace_id == "5b1f0c2e-team-lead-0001"
    assert spawns(trace) == [("main", "qa-tester"), ("main", "doc-writer")]
    assert {e.agent for e in trace.events} == {"main", "qa-tester", "doc-writer"}
    first = min(trace.events, key=lambda e: e.t)
    assert first.extras["team_name"] == "qa-team"
    tested = [e for e in trace.events if e.agent == "qa-tester" and e.type == "tool_call"]
    assert tested[0].tool == "Bash"  # a teammate's work is under it


def test_send_message_is_a_message_between_agents_and_reports_reach_the_lead():
    (trace,) = read_folder(TEAM)
    said = [(e.agent, e.to, e.content) for e in sorted(trace.events, key=lambda e: e.t)
            if e.type == "message" and e.tool == "SendMessage"]
    assert said == [
        ("qa-tester", "main", "Two failures: coupon codes are ignored, and the total drops "
                              "shipping."),
        ("qa-tester", "doc-writer", "Failures: test_coupon_applies, "
                                    "test_total_includes_shipping."),
        ("doc-writer", "main", "docs/checkout.md lists both failures with repro steps.")]
    assert not [e for e in trace.events if e.type == "human_intervention"
                and "teammate-message" in (e.content or "")]
    (point,) = analyze(trace).aggregates  # the lead's answer once both reported
    assert "docs/checkout.md" in trace.event(point.event_id).content


def test_a_teammate_message_whose_sender_session_is_missing_stands_for_it(tmp_path):
    for path in TEAM.glob("*.jsonl"):
        if "doc" not in path.name:
            shutil.copy(path, tmp_path)
    (trace,) = read_folder(tmp_path)
    inferred = [(e.agent, e.to) for e in trace.events if e.extras.get("inferred_by")
                == "importer" and e.type == "message"]
    assert inferred == [("doc-writer", "main")]


def test_teammate_sessions_are_not_listed_on_their_own():
    listed = library_files([TEAM])
    assert [p.name for p in listed] == ["5b1f0c2e-team-lead-0001.jsonl"]


def test_workflow_agents_are_spawned_sub_agents_returning_their_journal_results():
    (trace,) = read_folder(WORKFLOW)
    assert_reference_valid(trace)
    children = [child for parent, child in spawns(trace)]
    assert children == ["workflow-a00eb133276976080", "workflow-a11fc244387087191",
                        "workflow-a22ad355498198202"]
    back = {e.agent: e.content for e in trace.events if e.type == "return"}
    assert back["workflow-a22ad355498198202"] == (
        '{"plan":"Merge the two walkers; drop the dead team_name branch."}')
    assert all(e.extras.get("workflow_run") == "wf_dd551b62-a1d" for e in trace.events
               if e.type in ("spawn", "return"))
    assert "unclaimed_sidechain" not in warning_codes(trace)
    (point,) = analyze(trace).aggregates
    assert trace.event(point.event_id).content.startswith("Plan: merge")


def test_a_workflow_runs_files_are_read_with_their_session_never_listed_alone():
    listed = library_files([WORKFLOW])
    assert [p.name for p in listed] == ["20ddae6f-workflow-session.jsonl"]
    (trace,) = read_any(WORKFLOW / "20ddae6f-workflow-session.jsonl")
    assert len(spawns(trace)) == 3
