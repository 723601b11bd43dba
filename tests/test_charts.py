"""The figures: tree layout and collapsing, timeline lanes and markers, escaping, the pyvis page."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

from factories import as_trace, demo_paths, example_dict
from viz_app import charts
from viz_app.analysis import analyze
from viz_app.io.native import load_trace
from viz_app.model import EVENT_TYPES
from viz_app.synth import HOSTILE_MARKER, hostile_trace, swarm_trace, synth_trace, tree_trace
from viz_app.text import plotly_text


def analysis_of(raw: dict):
    return analyze(as_trace(raw))


@pytest.fixture(scope="module")
def big():
    """800 agents and 20,000 events."""
    return analysis_of(synth_trace(800, 20_000, seed=3))


@pytest.fixture(scope="module")
def hostile():
    return analysis_of(hostile_trace())


def shown_text(figure: go.Figure) -> str:
    """Every string Plotly may render: all of the figure but customdata (data handed back to
    the app on a click, never drawn)."""
    found: list[str] = []

    def walk(value, key=""):
        if key == "customdata":
            return
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v, key)
        elif isinstance(value, str):
            found.append(value)
        elif hasattr(value, "tolist"):
            walk(value.tolist(), key)

    walk(figure.to_dict())
    return "\n".join(found)


def test_every_event_type_has_its_own_symbol_and_colour():
    assert set(charts.EVENT_STYLES) == set(EVENT_TYPES)
    assert len({s.symbol for s in charts.EVENT_STYLES.values()}) == len(EVENT_TYPES)
    assert len({s.colour for s in charts.EVENT_STYLES.values()}) == len(EVENT_TYPES)


def test_roles_keep_one_colour_and_numbered_roles_share_it():
    assert charts.role_colour("researcher") == charts.role_colour("researcher_2")
    assert charts.role_colour("critic") != charts.role_colour("executor")
    assert charts.role_colour("an unheard-of role") == charts.role_colour("an unheard-of role")


def test_the_layout_centres_each_parent_over_its_children():
    a = analysis_of(tree_trace(2, 3))
    nodes = charts.visible_tree(a)
    pos = charts.tree_layout(nodes)
    for node in nodes:
        kids = [n.key for n in nodes if n.parent == node.key]
        if kids:
            xs = sorted(pos[k][0] for k in kids)
            assert pos[node.key][0] == pytest.approx((xs[0] + xs[-1]) / 2)
            assert all(pos[k][1] == pos[node.key][1] - 1 for k in kids)


def test_no_two_nodes_of_the_layout_overlap():
    a = analysis_of(tree_trace(3, 3))
    pos = charts.tree_layout(charts.visible_tree(a))
    assert len(set(pos.values())) == len(pos)


def test_a_small_tree_shows_every_agent():
    a = analysis_of(tree_trace(2, 3))
    nodes = charts.visible_tree(a)
    assert {n.agent for n in nodes} == set(a.agents)
    assert all(n.kind == "agent" for n in nodes)


def side_by_side(nodes: list[charts.TreeNode]) -> int:
    """How many nodes the tree lays side by side: the drawn tree's leaves."""
    parents = {n.parent for n in nodes}
    return sum(n.key not in parents for n in nodes)


def test_a_large_tree_collapses_to_the_width_budget_and_keeps_every_agent_counted(big):
    nodes = charts.visible_tree(big, budget=30)
    assert 20 <= side_by_side(nodes) <= 30  # opens as far as the width allows, no further
    assert any(n.kind != "agent" for n in nodes)
    counted = [m for n in nodes for m in n.members]
    assert sorted(counted) == sorted(big.agents)  # each agent drawn or inside exactly one node


def test_expanding_a_collapsed_node_shows_its_children(big):
    collapsed = next(n for n in charts.visible_tree(big, budget=100) if n.kind == "collapsed")
    opened = charts.visible_tree(big, budget=100, expanded={collapsed.agent})
    shown = {n.agent for n in opened if n.kind != "more"}
    assert set(big.children[collapsed.agent]) <= shown


def test_the_focused_agent_is_always_visible(big):
    deepest = max(big.agents, key=big.depth_of.__getitem__)
    nodes = charts.visible_tree(big, budget=20, focus=deepest)
    assert any(n.agent == deepest and n.kind in ("agent", "collapsed") for n in nodes)


def test_a_wide_fan_out_groups_the_siblings_that_do_not_fit():
    a = analysis_of(swarm_trace(300))
    nodes = charts.visible_tree(a, budget=50)
    more = [n for n in nodes if n.kind == "more"]
    assert len(more) == 1 and more[0].hidden > 200 and side_by_side(nodes) <= 50


def test_the_800_agent_tree_fits_its_width_and_no_two_nodes_touch(big):
    figure = charts.tree_figure(big)
    nodes = [t for t in figure.data if t.customdata is not None]
    xs = [x for t in nodes for x in t.x]
    px_per_unit = charts.TREE_WIDTH_PX / (max(xs) - min(xs) + 1)
    largest = max(size for t in nodes for size in t.marker.size)
    assert side_by_side(charts.visible_tree(big)) <= charts.TREE_BUDGET
    assert largest < px_per_unit  # neighbours stand at least one unit apart


def test_tree_nodes_tell_a_click_which_agent_it_was():
    a = analysis_of(tree_trace(2, 2))
    figure = charts.tree_figure(a)
    clicked = [tuple(c) for t in figure.data if t.customdata is not None for c in t.customdata]
    assert {agent for _, agent in clicked} == set(a.agents)


def test_the_tree_sizes_nodes_by_the_measure_asked_for():
    a = analyze(load_trace(demo_paths()[0]))

    def sizes(size_by):
        figure = charts.tree_figure(a, size_by=size_by)
        return [s for t in figure.data if t.customdata is not None for s in t.marker.size]

    assert sizes("tokens") != sizes("active time")


def test_the_tree_at_a_replay_time_leaves_out_agents_not_yet_started():
    a = analysis_of(tree_trace(2, 3))
    late = max(a.agents, key=lambda x: a.agent_stats[x].first_t)
    at = a.agent_stats[late].first_t - a.order[0].t - 0.01
    figure = charts.tree_figure(a, until=at)
    drawn = {c[1] for t in figure.data if t.customdata is not None for c in t.customdata}
    assert late not in drawn and a.root in drawn


def test_the_timeline_has_a_lane_per_agent_in_tree_order():
    a = analyze(load_trace(demo_paths()[4]))
    figure = charts.timeline_figure(a)
    assert list(figure.layout.yaxis.ticktext) == [plotly_text(x, 26) for x in a.agents]


def test_the_timeline_marks_every_event_once_with_its_position():
    a = analyze(load_trace(demo_paths()[3]))
    figure = charts.timeline_figure(a)
    markers = [t for t in figure.data if t.name in {s.label for s in charts.EVENT_STYLES.values()}
               and t.hovertemplate]
    positions = sorted(int(p) for t in markers for p in t.customdata)
    assert positions == list(range(len(a.order)))


def test_the_timeline_draws_an_arrow_for_every_link_between_agents():
    a = analyze(load_trace(demo_paths()[0]))
    figure = charts.timeline_figure(a)
    links = sum(1 for e in a.order if a.link_of(e) is not None)
    segments = sum(int(sum(1 for v in t.x if v != v)) for t in figure.data  # NaN gaps
                   if t.name and t.name.endswith("→"))
    assert segments == links


def test_a_large_timeline_switches_to_webgl(big):
    figure = charts.timeline_figure(big)
    assert any(isinstance(t, go.Scattergl) for t in figure.data)
    small = charts.timeline_figure(analyze(load_trace(demo_paths()[0])))
    assert not any(isinstance(t, go.Scattergl) for t in small.data)


def test_a_large_timeline_reaches_the_browser_in_under_1_5_mb(big):
    # 2.25 MB before its hover text was cut to id and agent (the time read from x) and its
    # lines sent as 32-bit numbers: the browser parses and keeps every byte of it
    assert len(charts.timeline_figure(big).to_json()) < 1_500_000


def test_a_large_timelines_hover_shows_each_events_id_agent_and_time(big):
    figure = charts.timeline_figure(big)
    markers = [t for t in figure.data if isinstance(t, go.Scattergl) and t.customdata is not None]
    shown = 0
    for t in markers:
        assert "%{text}" in t.hovertemplate and "%{x:.1f}s" in t.hovertemplate
        for position, text in zip(t.customdata, t.text):
            e = big.order[int(position)]
            assert text == f"{plotly_text(e.id, 12)} · {plotly_text(big.actor[e.id], 20)}"
            shown += 1
    assert shown == len(big.order)


def test_a_large_timelines_hover_is_escaped(hostile):
    figure = charts.timeline_figure(hostile, webgl=True)
    text = shown_text(figure)
    assert plotly_text(hostile.agents[0], 20) in text  # the agent's name, as text
    assert not re.search(r"<(script|img|svg|iframe|a |details|style)", text, re.IGNORECASE)


def test_a_large_timeline_starts_with_messages_hidden_in_its_legend_and_its_structure_drawn(big):
    links = {t.name: t.visible for t in charts.timeline_figure(big).data
             if t.name and t.name.endswith("→")}
    assert links == {"spawn →": True, "delegate →": True, "message →": "legendonly",
                     "return →": True}
    small = charts.timeline_figure(analyze(load_trace(demo_paths()[0])))
    assert all(t.visible is True for t in small.data if t.name and t.name.endswith("→"))


def test_the_timeline_at_a_replay_time_shows_only_what_had_happened():
    a = analyze(load_trace(demo_paths()[0]))
    until = a.makespan / 2
    figure = charts.timeline_figure(a, until=until)
    xs = [x for t in figure.data if t.hovertemplate for x in t.x]
    assert xs and max(xs) <= until
    assert len(xs) == sum(1 for e in a.order if e.t - a.order[0].t <= until)


def test_the_critical_path_overlay_follows_the_chain():
    a = analyze(load_trace(demo_paths()[1]))
    figure = charts.timeline_figure(a, critical=True)
    overlay = next(t for t in figure.data if t.name == "critical path")
    assert len(overlay.x) == len(a.critical[1])


def test_a_selected_event_is_ringed_where_it_is():
    a = analyze(load_trace(demo_paths()[0]))
    e = a.order[5]
    (ring,) = charts.timeline_highlight(a, e.id)
    assert ring.x[0] == e.t - a.order[0].t and ring.y[0] == a.agents.index(a.actor[e.id])
    assert charts.timeline_highlight(a, "no-such-event") == []


@pytest.mark.parametrize("build", [charts.tree_figure, charts.timeline_figure])
def test_no_trace_text_reaches_a_figure_unescaped(hostile, build):
    text = shown_text(build(hostile))
    assert HOSTILE_MARKER in text  # the payloads are there, as text
    assert not re.search(r"<(script|img|svg|iframe|a |details|style)", text, re.IGNORECASE)


def test_the_communication_page_escapes_every_label_and_title(hostile):
    page = charts.communication_html(hostile)
    data = page[page.index("new vis.DataSet"):]
    assert "\\u003cscript\\u003e" in data  # the text as it is, escaped as JSON in the script
    assert "&lt;" not in data and "\\u0026lt;" not in data  # no entity to show literally
    assert not re.search(r"<script>window", page)
    assert not re.search(r"<(img|svg)[^>]*on\w+=", page, re.IGNORECASE)


def test_the_communication_page_has_no_heading_no_remote_script_and_a_policy(hostile):
    page = charts.communication_html(hostile)
    assert "<h1>" not in page
    assert not re.search(r"<script[^>]+src=", page)
    assert not re.search(r"<link[^>]+https?://", page)
    assert "vis.Network" in page  # the library itself is inlined
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "'unsafe-inline'" not in policy.split("script-src")[1].split(";")[0]


def test_every_demo_trace_draws_all_three_views():
    for path in demo_paths():
        a = analyze(load_trace(path))
        assert charts.tree_figure(a).data and charts.timeline_figure(a).data
        assert "vis.DataSet" in charts.communication_html(a)


def test_a_tool_result_that_matches_no_call_gets_a_lane_of_its_own():
    raw = example_dict()
    raw["events"][5]["tool"] = "shell.run"
    raw["edges"] = [e for e in raw["edges"] if e["dst"] != "e6"]
    analysis = analyze(as_trace(raw))
    fig = charts.timeline_figure(analysis)
    assert analysis.lanes[-1] == "browser.search"
    assert list(fig.layout.yaxis.ticktext)[-1] == "browser.search"
