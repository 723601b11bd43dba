"""The figures are right on traces whose answer is known by construction."""

from __future__ import annotations

import pytest

from factories import as_trace, example_dict
from importing import FIXTURES
from viz_app.io.detect import read_any
from viz_app.analysis import FIGURES, analyze, figure_rows, figure_text
from viz_app.synth import swarm_trace, tree_trace


@pytest.fixture(scope="module")
def example():
    return analyze(as_trace(example_dict()))


@pytest.fixture(scope="module")
def depth4():
    return analyze(as_trace(tree_trace(4, 2)))


@pytest.fixture(scope="module")
def swarm64():
    return analyze(as_trace(swarm_trace(64)))


def test_the_reference_example_has_three_agents_and_no_tool_agent(example):
    assert example.agents == ["orchestrator", "planner_1", "executor_1"]


def test_a_tool_result_named_after_its_tool_belongs_to_the_caller(example):
    assert example.actor["e6"] == "executor_1"
    assert example.call_of_result == {"e6": "e5"}


def test_the_reference_example_figures(example):
    f = example.figures
    assert (f.events, f.agents, f.depth, f.max_fanout, f.mean_fanout) == (8, 3, 1, 2, 2.0)
    assert (f.messages, f.tool_calls, f.makespan_s, f.tokens) == (1, 1, 7.0, 12000)
    # lifetimes: orchestrator 0-7, planner_1 1-3, executor_1 2-6 (its tool result at 5)
    assert f.parallelism == pytest.approx((7 + 2 + 4) / 7)
    # every event is a point in time: each one's work ran from its last input to it, and the
    # chain through the planner's message, the executor's tool call and its return spans the run
    assert f.critical_path_s == pytest.approx(7.0)
    assert f.critical_path == ["e1", "e2", "e3", "e4", "e5", "e6", "e7", "e8"]


def test_a_trace_of_points_in_time_has_a_critical_path_as_long_as_its_chain():
    """Imported traces often give no `end_t` at all: their chain of dependent events is still
    the time the run took, never 0 s beside a makespan of minutes."""
    raw = example_dict()
    raw["events"] = [e for e in raw["events"] if e["id"] not in ("e5", "e6")]  # no tool call
    raw["edges"] = [e for e in raw["edges"] if not {e["src"], e["dst"]} & {"e5", "e6"}]
    raw["edges"].append({"src": "e4", "dst": "e7", "type": "causal"})
    for event in raw["events"]:
        event["t"] *= 60
    f = analyze(as_trace(raw)).figures
    assert f.makespan_s == 420
    assert f.critical_path_s == pytest.approx(420)
    assert f.critical_path == ["e1", "e2", "e3", "e4", "e7", "e8"]


@pytest.mark.parametrize("name", ["whowhen_magentic.json", "mast_mad_records.json"])
def test_an_imported_trace_without_end_times_has_the_critical_path_of_its_run(name):
    """Who&When and MAST give each step a time and no duration: each step waited on the one
    before, so the chain is the whole run (it read 0.0 s before)."""
    [trace, *_] = read_any(FIXTURES / name, on_error=pytest.fail)
    f = analyze(trace).figures
    assert all(e.end_t is None for e in trace.events)
    assert f.makespan_s > 0 and f.critical_path_s == pytest.approx(f.makespan_s)


def test_stated_work_counts_only_from_its_start():
    """An event that gives its `end_t` states when its work began (`t`): the wait before it
    is no work of the chain."""
    raw = example_dict()
    for event in raw["events"]:
        event["end_t"] = event["t"] + 0.5
    f = analyze(as_trace(raw)).figures
    assert f.critical_path_s == pytest.approx(f.critical_path.__len__() * 0.5)


def test_the_reference_example_aggregate_merges_the_return_named_by_its_edge(example):
    [point] = example.aggregates
    assert (point.event_id, point.inputs, point.inputs_from) == ("e8", ["e7"], "edges")


def test_without_a_stop_decision_the_root_s_last_event_is_the_inferred_stop(example):
    [stop] = example.stops
    assert (stop.event_id, stop.agent, stop.inferred) == ("e8", "orchestrator", True)


def test_the_communication_graph_counts_spawns_messages_and_returns(example):
    g = example.communication
    assert g["orchestrator"]["planner_1"]["spawn"] == 1
    assert g["planner_1"]["executor_1"]["message"] == 1
    assert g["executor_1"]["orchestrator"]["return"] == 1


def test_a_depth_four_binary_tree_has_31_agents_depth_4_fanout_2(depth4):
    f = depth4.figures
    assert (f.agents, f.depth, f.max_fanout, f.mean_fanout) == (31, 4, 2, 2.0)
    assert f.warnings == []


def test_every_inner_agent_of_the_tree_aggregates_its_two_children(depth4):
    assert len(depth4.aggregates) == 15
    assert all(len(point.inputs) == 2 for point in depth4.aggregates)


def test_the_spawn_tree_lists_agents_depth_first_from_the_root(depth4):
    agents = depth4.agents
    assert agents[0] == depth4.root
    assert all(agents.index(depth4.parent[a]) < agents.index(a) for a in agents[1:])


def test_a_64_wide_swarm_has_65_agents_depth_1_and_fanout_64(swarm64):
    f = swarm64.figures
    assert (f.agents, f.depth, f.max_fanout, f.mean_fanout) == (65, 1, 64, 64.0)


def test_a_swarm_runs_its_workers_in_parallel(swarm64):
    # 64 workers each alive about ten of the run's ~16.5 seconds
    assert swarm64.figures.parallelism > 35


def test_the_swarm_aggregate_merges_all_64_returns(swarm64):
    [point] = swarm64.aggregates
    assert len(point.inputs) == 64


def test_the_swarm_stop_is_its_explicit_stop_decision(swarm64):
    [stop] = swarm64.stops
    assert stop.inferred is False
    assert swarm64.trace.event(stop.event_id).decision == "stop"


def test_the_critical_path_is_a_chain_of_dependencies_no_longer_than_the_makespan(swarm64):
    seconds, chain = swarm64.critical
    dag = swarm64.event_dag
    assert all(dag.has_edge(a, b) for a, b in zip(chain, chain[1:]))
    # decision (1 s) + one worker (~10 s) + its return + the merge (3 s) + the stop: ~16 s
    assert 14 < seconds <= swarm64.makespan


def test_the_event_dag_is_acyclic(swarm64):
    import networkx as nx

    assert nx.is_directed_acyclic_graph(swarm64.event_dag)


def test_without_aggregate_edges_an_aggregate_merges_the_returns_since_the_last_one():
    raw = example_dict()
    raw["edges"] = [e for e in raw["edges"] if e["type"] != "aggregate"]
    [point] = analyze(as_trace(raw)).aggregates
    assert point.inputs == ["e7"]
    assert point.inputs_from.startswith("returns since")


# -- the figures as people read them (one formatter for every view) -----------------------------


def test_every_figure_has_a_row_in_order_with_its_value_as_text(example):
    rows = figure_rows(example.figures)
    assert [r.name for r in rows] == list(FIGURES)
    shown = {r.name: r.value for r in rows}
    assert (shown["agents"], shown["makespan"], shown["tokens"], shown["cost"]) == \
        ("3", "7.0s", "12,000", "$0.000")


def test_figure_rows_give_only_the_figures_asked_for_in_that_order(example):
    assert [r.name for r in figure_rows(example.figures, ("cost", "agents"))] == ["cost", "agents"]


def test_a_figure_says_what_stands_behind_it(example):
    helps = {r.name: r.help for r in figure_rows(example.figures)}
    assert helps["events"] == "1 messages, 1 tool calls"
    assert helps["stops"].startswith("inferred")


def test_figure_text_writes_each_kind_of_number_one_way():
    assert figure_text("events", 20000) == "20,000"
    assert figure_text("critical path", 3.14159) == "3.1s"
    assert figure_text("parallelism", 2) == "2.00"
    assert (figure_text("cost", 0.1234), figure_text("cost", 1234.5)) == ("$0.123", "$1,234")
    assert figure_text("cost", -0.5) == "-$0.500"
