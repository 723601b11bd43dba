"""Odd but legal structure loads, and the analysis of the trace warns of it."""

from __future__ import annotations

from factories import as_trace, example_dict
from viz_app.analysis import analyze


def codes(raw) -> list[str]:
    return [w.code for w in analyze(as_trace(raw)).warnings]


def test_the_reference_example_has_no_warnings():
    assert codes(example_dict()) == []


def test_an_agent_spawned_twice_is_a_warning():
    raw = example_dict()
    raw["events"].append({"id": "e9", "t": 8, "type": "spawn", "agent": "orchestrator",
                          "to": "planner_1"})
    assert "spawned_twice" in codes(raw)


def test_a_spawn_cycle_is_a_warning():
    raw = example_dict()
    raw["events"].append({"id": "e9", "t": 8, "type": "spawn", "agent": "planner_1",
                          "to": "orchestrator"})
    assert "spawn_cycle" in codes(raw)


def test_an_event_before_its_agent_s_spawn_is_a_warning():
    raw = example_dict()
    raw["events"][3]["t"] = 0.5  # planner_1 speaks before its spawn at t=1
    assert "event_before_spawn" in codes(raw)


def test_a_return_to_an_agent_that_does_not_exist_is_a_warning():
    raw = example_dict()
    raw["events"][6]["to"] = "ghost"
    assert "return_to_unknown_agent" in codes(raw)


def test_a_tool_result_without_a_tool_call_is_a_warning():
    raw = example_dict()
    raw["events"][5]["tool"] = "calculator"
    raw["edges"] = [e for e in raw["edges"] if e["dst"] != "e6"]
    assert "unmatched_tool_result" in codes(raw)


def test_a_warning_names_its_event():
    raw = example_dict()
    raw["events"][6]["to"] = "ghost"
    [warning] = analyze(as_trace(raw)).warnings
    assert warning.event_id == "e7" and "ghost" in warning.message
