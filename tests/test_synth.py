"""The synthetic trace factories return valid traces with the counts they promise."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from viz_app.model import TOPOLOGIES
from viz_app.synth import HOSTILE_MARKER, hostile_trace, swarm_trace, synth_trace, tree_trace

SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "viz_app" / "trace_schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA)


def agents_of(trace: dict) -> set[str]:
    """Agents that act in a trace (tool results excluded) plus every spawned child."""
    acting = {e["agent"] for e in trace["events"] if e["type"] != "tool_result"}
    return acting | {e["to"] for e in trace["events"] if e["type"] == "spawn"}


def assert_consistent(trace: dict) -> None:
    """Fail unless event ids are unique and every edge points at an existing event."""
    ids = [e["id"] for e in trace["events"]]
    assert len(ids) == len(set(ids))
    known = set(ids)
    assert all(e["src"] in known and e["dst"] in known for e in trace["edges"])


@pytest.fixture(scope="module")
def big() -> dict:
    """The 800-agent, 20000-event synthetic trace, built once for this module."""
    return synth_trace(800, 20000)


def test_synth_trace_validates_against_the_reference_schema(big):
    assert list(VALIDATOR.iter_errors(big)) == []


def test_synth_trace_has_exactly_the_requested_agents(big):
    assert len(agents_of(big)) == 800


def test_synth_trace_has_about_the_requested_events(big):
    assert abs(len(big["events"]) - 20000) <= 1000


def test_synth_trace_ids_are_unique_and_edges_resolve(big):
    assert_consistent(big)


def test_synth_trace_ends_with_a_stop_decision(big):
    last = max(big["events"], key=lambda e: e["t"])
    assert last.get("decision") == "stop"


def test_synth_trace_has_every_promised_edge_type(big):
    wanted = {"spawn", "return", "aggregate", "tool_dependency", "message", "causal"}
    assert wanted <= {e["type"] for e in big["edges"]}


def test_synth_trace_is_deterministic_for_a_seed():
    assert synth_trace(40, 600, seed=3) == synth_trace(40, 600, seed=3)


def test_synth_trace_differs_between_seeds():
    assert synth_trace(40, 600, seed=1) != synth_trace(40, 600, seed=2)


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_synth_trace_validates_for_every_topology(topology):
    trace = synth_trace(60, 1500, topology=topology)
    assert list(VALIDATOR.iter_errors(trace)) == [] and trace["topology"] == topology


def test_synth_trace_builds_200k_events_within_a_few_seconds():
    start = time.process_time()  # its own work: the wall clock counts a busy machine's too
    trace = synth_trace(2000, 200000)
    assert time.process_time() - start < 10
    assert abs(len(trace["events"]) - 200000) <= 10000


def test_tree_trace_4_2_has_31_agents():
    assert len(agents_of(tree_trace(4, 2))) == 31


def test_tree_trace_validates_against_the_reference_schema():
    assert list(VALIDATOR.iter_errors(tree_trace(3, 3))) == []


def test_tree_trace_ids_are_unique_and_edges_resolve():
    assert_consistent(tree_trace(3, 3))


def test_tree_trace_aggregates_once_per_non_leaf():
    trace = tree_trace(3, 2)
    assert sum(1 for e in trace["events"] if e["type"] == "aggregate") == 1 + 2 + 4


def test_swarm_trace_64_has_65_agents():
    assert len(agents_of(swarm_trace(64))) == 65


def test_swarm_trace_aggregate_merges_every_return():
    trace = swarm_trace(64)
    aggregate = next(e["id"] for e in trace["events"] if e["type"] == "aggregate")
    merged = {e["src"] for e in trace["edges"] if e["type"] == "aggregate" and e["dst"] == aggregate}
    assert len(merged) == 64


def test_swarm_trace_workers_run_concurrently():
    calls = [e for e in swarm_trace(64)["events"] if e["type"] == "tool_call"]
    assert max(e["t"] for e in calls) < min(e["end_t"] for e in calls)


def test_swarm_trace_validates_against_the_reference_schema():
    assert list(VALIDATOR.iter_errors(swarm_trace(64))) == []


def test_hostile_trace_validates_against_the_reference_schema():
    assert list(VALIDATOR.iter_errors(hostile_trace())) == []


def test_hostile_trace_ids_are_unique_and_edges_resolve():
    assert_consistent(hostile_trace())


def test_hostile_trace_id_is_url_safe():
    assert hostile_trace()["trace_id"] == "hostile-xss"


def test_hostile_trace_agent_names_carry_the_marker():
    assert any(HOSTILE_MARKER in a for a in agents_of(hostile_trace()))


def test_hostile_trace_every_content_carries_the_marker():
    assert all(HOSTILE_MARKER in e["content"] for e in hostile_trace()["events"])


def test_hostile_trace_reward_names_carry_the_marker():
    assert any(HOSTILE_MARKER in name for name in hostile_trace()["rewards"])


def test_hostile_trace_is_structurally_complete():
    types = {e["type"] for e in hostile_trace()["events"]}
    assert {"spawn", "message", "tool_call", "tool_result", "return", "aggregate"} <= types
