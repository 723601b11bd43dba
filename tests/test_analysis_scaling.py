"""Analysis is linear (or n log n) in events and agents, whatever the shape of the trace: deep
spawn chains, very wide fan-outs, many calls waiting for their results, many aggregating agents.

Checked without a clock: the Python lines a full analysis runs are counted, and doubling the
trace must about double them (a walk up the chain for every spawn would quadruple them).
bench/bench_scaling.py measures the times.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from viz_app.analysis import analyze
from viz_app.io.native import trace_from_dict
from viz_app.model import Trace
from viz_app.synth import chain_trace, swarm_trace

GROWTH = 2.4
"""Most that doubling a trace may multiply the work by: 2 when linear, a little over for n log n,
4 when quadratic."""


def full_analysis(trace: Trace) -> None:
    """Everything the app, the report and `orchviz inspect` ask an analysis for."""
    trace._analysis = None
    analysis = analyze(trace)
    analysis.figures
    analysis.lanes
    analysis.spawn_tree
    analysis.communication
    analysis.event_dag
    for agent in analysis.agents:
        analysis.root_of(agent)


def lines_run(step: Callable[[], object]) -> int:
    """How many Python lines `step()` runs, in every module it reaches."""
    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        if event == "line":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        step()
    finally:
        sys.settrace(previous)
    return count


def growth(make: Callable[[int], dict], n: int) -> float:
    """How much more work analysing `make(2n)` takes than `make(n)`, both measured warm: a first
    analysis runs what a process runs once (lazy imports, patterns compiled, caches filled),
    which would count against whichever trace is measured first, and the large one is."""
    small, large = (trace_from_dict(make(size), "<scaling>") for size in (n, 2 * n))
    full_analysis(trace_from_dict(make(n), "<warm-up>"))
    return lines_run(lambda: full_analysis(large)) / lines_run(lambda: full_analysis(small))


def waiting_calls(n: int) -> dict:
    """Agent `a` makes n calls of one tool, then `b` makes n; b's results come back first, then
    a's: every result must find its call among 2n waiting ones."""
    events = [{"id": "root", "t": 0, "type": "orchestrator_decision", "agent": "a"},
              {"id": "hello", "t": 0, "type": "message", "agent": "b", "to": "a"}]
    for who, start in (("a", 1), ("b", 1 + n)):
        events += [{"id": f"{who}-call-{k}", "t": start + k, "type": "tool_call", "agent": who,
                    "tool": "search"} for k in range(n)]
    for who, start in (("b", 1 + 2 * n), ("a", 1 + 3 * n)):
        events += [{"id": f"{who}-result-{k}", "t": start + k, "type": "tool_result",
                    "agent": who, "tool": "search"} for k in range(n)]
    return _trace("waiting", events)


def late_aggregates(n: int) -> dict:
    """n agents, spawned one after another, each returning to the root and aggregating only at
    the very end, with no edges to say what they merged."""
    events = [{"id": "root", "t": 0, "type": "orchestrator_decision", "agent": "root"}]
    for k in range(n):
        events += [{"id": f"spawn-{k}", "t": 1 + k, "type": "spawn", "agent": "root",
                    "to": f"w{k}"},
                   {"id": f"return-{k}", "t": 1 + n + k, "type": "return", "agent": f"w{k}",
                    "from": f"w{k}", "to": "root"}]
    events += [{"id": f"aggregate-{k}", "t": 1 + 2 * n + k, "type": "aggregate", "agent": f"w{k}"}
               for k in range(n)]
    return _trace("aggregates", events)


def codes(analysis, code: str) -> list[str]:
    """The events that the analysis warns about with this code."""
    return [w.event_id for w in analysis.warnings if w.code == code]


def _trace(name: str, events: list[dict]) -> dict:
    return {"trace_id": name, "task_id": name, "events": events, "edges": [], "rewards": {},
            "costs": {"tokens": 0, "wall_clock_s": 0}}


@pytest.mark.parametrize("make, n", [(chain_trace, 400), (swarm_trace, 400), (waiting_calls, 300),
                                     (late_aggregates, 300)],
                         ids=["deep chain", "wide fan-out", "waiting calls", "late aggregates"])
def test_doubling_a_trace_about_doubles_the_work_of_its_analysis(make, n):
    assert growth(make, n) < GROWTH


def test_a_50000_deep_chain_analyses_without_recursion():
    analysis = analyze(trace_from_dict(chain_trace(50_000), "<chain>"))
    figures = analysis.figures  # tree order, depths, roots, the critical path: none recurses
    assert figures.depth == 50_000 and figures.agents == 50_001 and not figures.warnings
    assert analysis.root == analysis.root_of("a50000") == "orchestrator"
    assert len(analysis.lanes) == 50_001 and len(figures.critical_path) > 100_000


def test_a_spawn_closing_a_cycle_deep_in_a_chain_is_still_refused():
    raw = chain_trace(300)
    raw["events"].append({"id": "loop", "t": 10_000, "type": "spawn", "agent": "a300",
                          "to": "orchestrator"})
    analysis = analyze(trace_from_dict(raw, "<cycle>"))
    assert codes(analysis, "spawn_cycle") == ["loop"]
    assert analysis.parent.get("orchestrator") is None and analysis.figures.depth == 300


def test_trees_joined_by_later_spawns_still_see_a_loop_closing():
    events = [{"id": "x1", "t": 0, "type": "spawn", "agent": "x", "to": "y"},
              {"id": "p1", "t": 1, "type": "spawn", "agent": "p", "to": "q"},
              {"id": "q1", "t": 2, "type": "spawn", "agent": "q", "to": "x"},
              {"id": "y1", "t": 3, "type": "spawn", "agent": "y", "to": "p"}]
    analysis = analyze(trace_from_dict(_trace("join", events), "<join>"))
    assert analysis.parent == {"y": "x", "q": "p", "x": "q"}
    assert codes(analysis, "spawn_cycle") == ["y1"]
    assert {analysis.root_of(a) for a in "pqxy"} == {"p"}


def test_results_still_match_their_calls_first_in_first_out():
    analysis = analyze(trace_from_dict(waiting_calls(3), "<calls>"))
    assert analysis.call_of_result == {f"{who}-result-{k}": f"{who}-call-{k}"
                                       for who in "ab" for k in range(3)}


def test_an_aggregate_without_edges_merges_the_returns_since_its_previous_one():
    analysis = analyze(trace_from_dict(late_aggregates(3), "<aggregates>"))
    assert [p.inputs for p in analysis.aggregates] == [[], [], []]  # the returns go to root
    events = [{"id": "s", "t": 0, "type": "spawn", "agent": "root", "to": "w"},
              {"id": "r1", "t": 1, "type": "return", "agent": "w", "to": "root"},
              {"id": "g1", "t": 2, "type": "aggregate", "agent": "root"},
              {"id": "r2", "t": 3, "type": "return", "agent": "w", "to": "root"},
              {"id": "r3", "t": 4, "type": "return", "agent": "w", "to": "root"},
              {"id": "g2", "t": 5, "type": "aggregate", "agent": "root"}]
    analysis = analyze(trace_from_dict(_trace("merge", events), "<merge>"))
    assert [p.inputs for p in analysis.aggregates] == [["r1"], ["r2", "r3"]]
