"""The big-trace views stay readable: the communication graph of 800 agents grouped by subtree
and laid out here (no live physics), and the spawn tree's count labels never printed over one
another."""

from __future__ import annotations

import json
import re

import pytest

from factories import as_trace
from viz_app import charts
from viz_app.analysis import analyze
from viz_app.synth import synth_trace


@pytest.fixture(scope="module")
def big():
    """800 agents and 20,000 events, hierarchical."""
    return analyze(as_trace(synth_trace(800, 20_000, topology="hierarchical", seed=7)))


def data_sets(page: str) -> tuple[list[dict], list[dict]]:
    """The nodes and the edges the pyvis page draws."""
    found = re.findall(r"new vis\.DataSet\((\[.*?\])\);", page, re.DOTALL)
    return json.loads(found[0]), json.loads(found[1])


def test_an_800_agent_graph_is_a_few_dozen_placed_nodes_carrying_every_message(big):
    nodes, edges = data_sets(charts.communication_html(big))
    assert 10 <= len(nodes) <= 3 * charts.GRAPH_BUDGET
    assert all(n["physics"] is False and "x" in n and "y" in n for n in nodes)
    places = {(n["x"], n["y"]) for n in nodes}
    assert len(places) == len(nodes)  # no two nodes on one spot
    assert len({n["y"] for n in nodes}) >= 2  # rows by depth, not one flat strip
    assert any(n["shape"] == "square" and "+" in n["label"] for n in nodes)  # groups say how many
    assert '"enabled": false' in re.sub(r"\s+", " ", re.search(
        r"var options = (\{.*?\});", charts.communication_html(big), re.DOTALL).group(1))
    ids = {n["id"] for n in nodes}
    assert edges and all(e["from"] in ids and e["to"] in ids and e["from"] != e["to"]
                         for e in edges)


def test_the_selected_agent_stands_on_its_own_however_deep(big):
    deepest = max(big.agents, key=lambda a: (big.depth_of[a], a))
    nodes, _ = data_sets(charts.communication_html(big, selected=deepest))
    mine = [n for n in nodes if n["label"] == deepest]
    assert len(mine) == 1 and mine[0]["borderWidth"] == 4 and mine[0]["shape"] == "dot"
    assert len(nodes) <= 3 * charts.GRAPH_BUDGET


def test_a_small_graph_keeps_every_agent_and_its_physics():
    small = analyze(as_trace(synth_trace(12, 200, seed=1)))
    nodes, _ = data_sets(charts.communication_html(small))
    assert sorted(n["label"] for n in nodes) == sorted(small.agents)


def test_count_labels_of_an_opened_tree_never_overlap(big):
    opened = tuple(big.children[big.root][:6])
    nodes = charts.visible_tree(big, expanded=opened)
    pos = charts.tree_layout(nodes)
    places = charts.label_places(nodes, pos, labelled=False)
    assert sum(1 for text, _ in places.values() if text) >= len(nodes) // 3  # most still say
    xs = [x for x, _ in pos.values()]
    px = charts.TREE_WIDTH_PX / (max(xs) - min(xs) + 1)
    spans: dict[tuple[float, str], list[tuple[float, float]]] = {}
    for key, (text, where) in places.items():
        if text:
            half = len(text) * charts.LABEL_CHAR_PX / 2
            spans.setdefault((pos[key][1], where), []).append(
                (pos[key][0] * px - half, pos[key][0] * px + half))
    for row in spans.values():
        row.sort()
        assert all(a[1] <= b[0] for a, b in zip(row, row[1:])), row
    figure = charts.tree_figure(big, expanded=opened)
    drawn = [t for trace in figure.data if trace.text for t in trace.text if t]
    assert sorted(drawn) == sorted(t for t, _ in places.values() if t)


LONG = "general-purpose-subagent-3"


def _long_named_tree():
    """A small tree whose last-placed worker has a Claude Code sub-agent's long name."""
    import json

    raw = json.loads(json.dumps(synth_trace(5, 40, seed=1)).replace("researcher_4", LONG))
    return analyze(as_trace(raw))


def test_a_long_agent_name_is_wrapped_on_two_lines_not_cut():
    assert charts.wrapped_name(LONG) == "general-purpose-<br>subagent-3"
    assert charts.wrapped_name("short_name") == "short_name"
    assert "…" not in charts.wrapped_name(LONG)


def test_every_label_of_the_tree_lies_inside_its_x_range():
    a = _long_named_tree()
    figure = charts.tree_figure(a)
    low, high = figure.layout.xaxis.range
    px = charts.TREE_WIDTH_PX / (high - low)
    shown = 0
    for trace in figure.data:
        for x, text in zip(trace.x or (), trace.text or ()):
            if text:
                half = charts.label_half_px(text) / px
                assert low <= x - half and x + half <= high, (text, x, low, high)
                shown += 1
    assert shown >= 5
    assert any("general-purpose-<br>subagent-3" == t for trace in figure.data
               for t in (trace.text or ()))
