"""Codex rollouts become traces: a root thread with its child threads, spawn_agent as spawns,
send_input as messages, task_complete as returns and the stop."""

import pytest
from importing import (FIXTURES, assert_reference_valid, returns, spawns, stop_agents,
                       warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.codex import import_codex, read_rollouts
from viz_app.io.detect import library_files, read_any

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


def test_an_uploaded_rollout_imports_alone():
    path = next(FOLDER.rglob(f"*{ROOT}.jsonl"))
    (alone,) = import_codex(path.read_bytes(), name=path.name)
    assert {e.agent for e in alone.events} == {"main"}
    assert len(spawns(alone)) == 2


def test_a_root_rollout_read_from_its_folder_brings_its_children(trace):
    """As a library reads a sessions folder, file by file: the root's file is the whole run and
    its children's files are not traces of their own."""
    path = next(FOLDER.rglob(f"*{ROOT}.jsonl"))
    (whole,) = import_codex(path)
    assert [(e.type, e.agent, e.t) for e in whole.events] == [
        (e.type, e.agent, e.t) for e in trace.events]
    assert [p.name for p in library_files([FOLDER])] == [path.name]


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
    (wrapped,) = import_codex(path.read_bytes(), name=path.name)
    assert [(e.type, e.agent, e.t) for e in trace.events] == [
        (e.type, e.agent, e.t) for e in wrapped.events]


# -- a child whose copy of its parent's history carries no mark of where it ends ----------------

UNMARKED = FIXTURES / "codex_spawn_call"
"""The root spawns Ada with a plain spawn_agent call (no collab event); Ada's rollout repeats the
root's task, reasoning and spawn_agent call at the fork instant, with neither its session_meta
written again nor UUIDv7 turn ids to say where the copy ends."""


@pytest.fixture(scope="module")
def unmarked():
    (found,) = read_rollouts(UNMARKED)
    return found


def test_a_spawn_copied_from_the_parent_without_marks_makes_no_phantom_grandchild(unmarked):
    """Defect: the copied spawn_agent call spawned a third agent at depth 2."""
    assert_reference_valid(unmarked)
    assert spawns(unmarked) == [("main", "Ada")]
    assert len(analyze(unmarked).agents) == 2
    assert analyze(unmarked).figures.depth == 1


def test_the_child_begins_with_its_own_task_not_the_copied_one(unmarked):
    own = [(e.type, e.content) for e in unmarked.events if e.agent == "Ada"]
    assert own[0] == ("tool_call", '{"command":["pytest","-x","tests/test_clock.py"]}')
    assert "fork_replay_skipped" in warning_codes(unmarked)


def test_events_of_a_rollout_folder_take_their_lines_timestamps(unmarked):
    assert [(e.agent, e.type, e.t) for e in unmarked.events if e.type != "human_intervention"] == [
        ("main", "orchestrator_decision", 0.5), ("main", "spawn", 0.9),
        ("main", "tool_call", 1.4), ("Ada", "tool_call", 2.9), ("Ada", "tool_result", 4.9),
        ("Ada", "message", 6.9), ("Ada", "return", 7.0), ("main", "tool_result", 7.4),
        ("main", "aggregate", 8.9), ("main", "orchestrator_decision", 9.0)]


def test_a_spawns_collab_end_event_pairs_the_child_when_the_output_names_none(tmp_path):
    """Newer rollouts keep `collab_agent_spawn_end` (extended persistence): its `new_thread_id`
    says which child a spawn made, where pairing by order would swap them."""
    import json
    import shutil

    folder = tmp_path / "sessions"
    shutil.copytree(FOLDER, folder)
    path = next(folder.rglob(f"*{ROOT}.jsonl"))
    lines = []
    for raw in path.read_text("utf-8").splitlines():
        value = json.loads(raw)
        payload = value["payload"]
        if payload.get("type") == "function_call_output" and payload["call_id"] in (
                "call_s1", "call_s2"):
            child = json.loads(payload["output"])["agent_id"]
            payload["output"] = "spawned"
            lines.append(json.dumps({**value, "payload": payload}))
            value = {"timestamp": value["timestamp"], "type": "event_msg", "payload": {
                "type": "collab_agent_spawn_end", "call_id": payload["call_id"],
                "sender_thread_id": ROOT, "new_thread_id": child, "prompt": "",
                "status": "pending_init"}}
        lines.append(json.dumps(value))
    lines[6], lines[7] = lines[7], lines[6]  # billing's spawn first: order would pair it with Ada
    path.write_text("\n".join(lines) + "\n", "utf-8")
    (trace,) = read_rollouts(folder)
    assert [(e.to, e.content) for e in trace.events if e.type == "spawn"] == [
        ("Bo", "Audit billing"), ("Ada", "Audit auth")]
    assert not [w for w in analyze(trace).warnings if "collab" in w.message]


def test_a_folder_whose_session_meta_lines_pass_64_kb_is_still_one_trace(tmp_path):
    """Defect: the folder was told a rollout folder by the first 64 KB of a file, and a
    session_meta carrying the session's instructions is longer: each thread became a trace of
    its own, the child shown as `main`."""
    import json
    import shutil

    folder = tmp_path / "sessions"
    shutil.copytree(UNMARKED, folder)
    for path in folder.rglob("*.jsonl"):
        lines = path.read_text("utf-8").splitlines()
        meta = json.loads(lines[0])
        meta["payload"]["base_instructions"] = {"text": "You are Codex, a coding agent. " * 3000}
        lines[0] = json.dumps(meta)
        path.write_text("\n".join(lines) + "\n", "utf-8")
    (trace,) = read_any(folder)
    assert spawns(trace) == [("main", "Ada")]


def test_a_child_rollout_read_without_its_parent_leaves_the_copy_out_too():
    """Defect: read alone (as a library reads each file), the child kept the copy: the
    parent's spawn_agent call made a phantom agent and the copied lines sat at t = 0."""
    (alone,) = import_codex(next(UNMARKED.rglob("*8bbb*.jsonl")))
    assert_reference_valid(alone)
    assert spawns(alone) == []
    assert [(e.type, e.t) for e in alone.events if e.type != "orchestrator_decision"] == [
        ("human_intervention", 0.0), ("tool_call", 1.7), ("tool_result", 3.7),
        ("message", 5.7)]
    assert "fork_replay_skipped" in warning_codes(alone)


def _parent_without_spawn_call(tmp_path, collab_end: bool):
    """The unmarked folder with the root's spawn_agent call removed: its spawn recorded by
    upstream's `collab_agent_spawn_end` event only, or by nothing at all."""
    import json
    import shutil

    folder = tmp_path / "sessions"
    shutil.copytree(UNMARKED, folder)
    path = next(folder.rglob("*8aaa*.jsonl"))
    lines = []
    for raw in path.read_text("utf-8").splitlines():
        value = json.loads(raw)
        payload = value["payload"]
        if payload.get("call_id") == "call_spawn":
            if payload["type"] == "function_call" or not collab_end:
                continue
            value = {"timestamp": value["timestamp"], "type": "event_msg", "payload": {
                "type": "collab_agent_spawn_end", "call_id": "call_spawn",
                "sender_thread_id": path.stem[-36:],
                "new_thread_id": "019904b8-254c-7000-8bbb-0000000000b2",
                "new_agent_nickname": "Ada", "new_agent_role": "worker",
                "prompt": "Find which clock test is flaky and why", "status": "pending_init"}}
        lines.append(json.dumps(value))
    path.write_text("\n".join(lines) + "\n", "utf-8")
    (trace,) = read_rollouts(folder)
    return trace


def test_a_spawn_only_upstreams_collab_event_records_is_a_spawn(tmp_path):
    trace = _parent_without_spawn_call(tmp_path, collab_end=True)
    assert_reference_valid(trace)
    (spawn,) = [e for e in trace.events if e.type == "spawn"]
    assert (spawn.agent, spawn.to, spawn.content) == ("main", "Ada",
                                                      "Find which clock test is flaky and why")
    assert analyze(trace).figures.depth == 1


def test_a_child_whose_spawn_nothing_records_hangs_under_its_parent(tmp_path):
    trace = _parent_without_spawn_call(tmp_path, collab_end=False)
    assert_reference_valid(trace)
    assert spawns(trace) == [("main", "Ada")] and returns(trace) == [("Ada", "main")]
    assert "unclaimed_child" in warning_codes(trace)


def test_a_childs_turn_context_like_its_parents_still_names_its_model(tmp_path):
    import json
    import shutil

    folder = tmp_path / "sessions"
    shutil.copytree(UNMARKED, folder)
    turn = {"type": "turn_context", "payload": {"cwd": "/repo", "model": "gpt-5-codex"}}
    for path in folder.rglob("*.jsonl"):  # each thread's turn opens with the same turn_context
        lines = path.read_text("utf-8").splitlines()
        at = 1 if "8aaa" in path.name else 4  # the root's first line, the child's own task
        stamp = json.loads(lines[at])["timestamp"]
        lines.insert(at, json.dumps({"timestamp": stamp, **turn}))
        path.write_text("\n".join(lines) + "\n", "utf-8")
    (trace,) = read_rollouts(folder)
    assert {e.extras.get("model") for e in trace.events
            if e.agent == "Ada" and e.type == "message"} == {"gpt-5-codex"}


def test_rollouts_that_name_each_other_as_parents_both_stay_in_the_library(tmp_path):
    import json

    folder = tmp_path / "sessions"
    folder.mkdir()
    ids = ("019904b8-2100-7000-8aaa-0000000000c1", "019904b8-2100-7000-8aaa-0000000000c2")
    for me, other in (ids, ids[::-1]):
        meta = {"timestamp": "2025-09-01T10:00:00.000Z", "type": "session_meta", "payload": {
            "id": me, "source": {"subagent": {"thread_spawn": {"parent_thread_id": other}}}}}
        said = {"timestamp": "2025-09-01T10:00:01.000Z", "type": "response_item", "payload": {
            "type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                 "text": "hi"}]}}
        (folder / f"rollout-2025-09-01T10-00-00-{me}.jsonl").write_text(
            json.dumps(meta) + "\n" + json.dumps(said) + "\n")
    assert len(library_files([folder])) == 2
