"""Codex rollouts become traces: a root thread with its child threads, spawn_agent as spawns,
send_input as messages, task_complete as returns and the stop."""

import pytest
from importing import (FIXTURES, assert_reference_valid, returns, spawns, stop_agents,
                       warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.codex import import_codex, read_rollouts

FOLDER = FIXTURES / "codex_rollouts"
ROOT = "0197a3b0-0000-7000-8000-000000000001"


@pytest.fixture(scope="module")
def trace():
    (found,) = read_rollouts(FOLDER)
    return found


def test_a_folder_of_three_rollouts_is_one_trace_per_root_thread(trace):
    assert trace.trace_id == ROOT
    assert_reference_valid(trace)


def test_children_are_named_by_nickname_and_spawned_in_parallel(trace):
    assert spawns(trace) == [("main", "Ada"), ("main", "Bo")]
    assert len({e.t for e in trace.events if e.type == "spawn"}) == 1
    assert analyze(trace).role_of("Ada") == "worker"


def test_send_input_is_a_message_to_the_child(trace):
    (message,) = [e for e in trace.events if e.type == "message" and e.to]
    assert (message.agent, message.to, message.content) == ("main", "Ada",
                                                            "Also check token expiry")


def test_task_complete_of_a_child_returns_to_its_parent(trace):
    assert returns(trace) == [("Ada", "main"), ("Bo", "main")]


def test_close_agent_is_a_despawn(trace):
    assert [(e.agent, e.to) for e in trace.events if e.type == "despawn"] == [("main", "Ada")]


def test_root_answer_after_returns_aggregates_and_task_complete_stops(trace):
    (point,) = analyze(trace).aggregates
    assert len(point.inputs) == 2
    assert stop_agents(trace) == ["main"]


def test_environment_context_is_not_the_task(trace):
    assert trace.task_id == "Audit the auth and billing modules."


def test_token_count_goes_on_the_latest_model_event(trace):
    assert trace.costs.tokens == 500 + 900


def test_a_child_file_written_out_of_order_still_reads_in_time_order(trace):
    own = analyze(trace).events_of["Bo"]
    assert [e.type for e in own] == ["tool_call", "tool_result", "message", "return"]


def test_events_point_back_to_file_and_line(trace):
    assert all(":" in e.extras.get("source_id", ":") for e in trace.events)


def test_a_single_rollout_file_imports_alone():
    path = next(FOLDER.rglob(f"*{ROOT}.jsonl"))
    (alone,) = import_codex(path)
    assert {e.agent for e in alone.events} == {"main"}
    assert len(spawns(alone)) == 2


def test_a_cut_rollout_is_refused_with_its_line(tmp_path):
    path = next(FOLDER.rglob(f"*{ROOT}.jsonl"))
    cut = tmp_path / "rollout-cut.jsonl"
    cut.write_bytes(path.read_bytes()[:1500])
    with pytest.raises(TraceError) as err:
        import_codex(cut)
    assert err.value.place.startswith("line ")


# -- forked threads: their rollouts begin with a copy of the parent's history -----------------

FORK = FIXTURES / "codex_fork"
"""A root thread forks two workers (fork_context): Ada's rollout writes its session_meta again
after the copied history, Bo's marks its own first turn only by a UUIDv7 turn id."""


@pytest.fixture(scope="module")
def forked():
    (found,) = read_rollouts(FORK)
    return found


def test_history_copied_from_the_parent_makes_no_phantom_grandchild(forked):
    """Defect: the parent's spawn_agent calls, copied into each child, spawned grandchildren."""
    assert_reference_valid(forked)
    assert spawns(forked) == [("main", "Ada"), ("main", "Bo")]
    assert analyze(forked).figures.depth == 1
    assert warning_codes(forked).count("fork_replay_skipped") == 2
    assert not [e for e in forked.events if e.agent in ("Ada", "Bo")
                and e.content == "Audit the auth and billing modules."]


def test_a_forked_threads_events_keep_their_own_times(forked):
    """Defect: every event of a forked child sat at t = 0 (the instant its copy was stamped)."""
    times = {(e.agent, e.type): e.t for e in forked.events if e.agent in ("Ada", "Bo")}
    assert times == {("Ada", "tool_call"): 2.8, ("Ada", "tool_result"): 3.8,  # from 0.2 s,
                     ("Ada", "message"): 5.8, ("Ada", "return"): 5.9,  # the task's arrival
                     ("Bo", "tool_call"): 3.3, ("Bo", "tool_result"): 4.8,
                     ("Bo", "message"): 7.8, ("Bo", "return"): 7.9}
    (alone,) = import_codex(next(FORK.rglob("*8ccc*.jsonl")))
    assert len({e.t for e in alone.events}) == len(alone.events) > 3


def test_newer_flattened_lines_and_state_sentinels_are_read(tmp_path):
    import json

    path = next(FOLDER.rglob(f"*{ROOT}.jsonl"))
    lines = []
    for raw in path.read_text("utf-8").splitlines():
        value = json.loads(raw)
        if value["type"] == "response_item":
            value = {"timestamp": value["timestamp"], **value["payload"]}
        lines.append(json.dumps(value))
    lines.insert(1, json.dumps({"record_type": "state"}))
    flat = tmp_path / path.name
    flat.write_text("\n".join(lines) + "\n", "utf-8")
    (trace,) = import_codex(flat)
    (wrapped,) = import_codex(path)
    assert [(e.type, e.agent, e.t) for e in trace.events] == [
        (e.type, e.agent, e.t) for e in wrapped.events]
