"""End to end in Chromium: a click on a timeline event selects it (the inspector shows it and
the browser rings it at once) without the server sending the timeline figure again, while an
event selected elsewhere is ringed on the timeline; the timeline stays mounted (its graph div and
WebGL contexts kept) from trace to trace."""

from __future__ import annotations

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import PREMATURE, PREMATURE_ID, make_workspace
from viz_app import charts
from viz_app.analysis import analyze
from viz_app.synth import synth_trace
from viz_app.workspace import Workspace

pytestmark = pytest.mark.browser

CHART = """document.querySelector('.orchviz-live-chart[data-chart$="timeline"]')"""
"""The live timeline's graph div (components/live_chart.py), in the page's JavaScript."""

POINT = """(wanted) => {
    const gd = document.querySelector('.orchviz-live-chart[data-chart$="timeline"]');
    for (const t of gd._fullData) {
        if (!t.customdata || t.name === 'selected' || !t.visible || t.visible === 'legendonly') continue;
        for (let j = 0; j < t.customdata.length; j++) {
            const where = Array.isArray(t.customdata[j]) ? t.customdata[j][0] : t.customdata[j];
            if (where === wanted) {
                const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
                const r = gd.getBoundingClientRect();
                return {x: r.left + xa._offset + xa.l2p(t.x[j]),
                        y: r.top + ya._offset + ya.l2p(t.y[j]), data: [t.x[j], t.y[j]]};
            }
        }
    }
    return null;
}"""


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    return make_workspace(tmp_path, traces=[PREMATURE])


TIMELINE_MARK = b"\"uirevision\":\"timeline\""
"""In a message only when the timeline figure is in it (its layout keeps the zoom by this)."""


def received(page, sockets, act) -> int:
    """The largest message the server sends over the websocket while `act` runs and the page
    settles, in bytes; -1 when one of them carries the timeline figure."""
    total = [0]

    def count(payload) -> None:
        raw = payload.encode() if isinstance(payload, str) else payload
        total[0] = -1 if total[0] < 0 or TIMELINE_MARK in raw else max(total[0], len(payload))

    for ws in sockets:
        ws.on("framereceived", count)
    act()
    page.wait_for_timeout(400)
    wait_for_streamlit(page, timeout=60_000)
    for ws in sockets:
        ws.remove_listener("framereceived", count)
    return total[0]


RING = """() => {
    const gd = document.querySelector('.orchviz-live-chart[data-chart$="timeline"]');
    const rings = (gd.layout.shapes || []).filter(s => s.xsizemode === 'pixel');
    return rings.length ? [rings[0].xanchor, rings[0].yanchor] : null;
}"""


def event_at(page, position: int) -> dict:
    """Where the timeline draws the event at `position` in the analysis's order: data (x, lane)
    and screen coordinates."""
    page.evaluate("window.scrollTo(0, 0)")
    page.locator('.orchviz-live-chart[data-chart$="timeline"]').scroll_into_view_if_needed()
    point = page.evaluate(POINT, position)
    assert point is not None
    return point


def click_event(page, position: int) -> None:
    point = event_at(page, position)
    page.mouse.click(point["x"], point["y"])


def test_a_click_on_the_timeline_selects_without_sending_the_figure_again(page, app_server,
                                                                          workspace):
    sockets = []
    page.on("websocket", lambda ws: sockets.append(ws))
    goto_as(page, f"{app_server(workspace)}/trace?trace={PREMATURE_ID}", "tim")
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_text("targets labelled by").wait_for()
    a = analyze(workspace.library.trace(PREMATURE_ID))
    figure = len(charts.timeline_figure(a).to_json())
    first = received(page, sockets, lambda: click_event(page, 3))
    assert "event=" in page.url
    chosen = page.url.split("event=")[1].split("&")[0]
    assert chosen == a.order[3].id
    assert page.evaluate(RING) == list(event_at(page, 3)["data"])  # ringed at once
    second = received(page, sockets, lambda: click_event(page, 6))
    assert page.url.split("event=")[1].split("&")[0] == a.order[6].id
    inspector = page.locator(".st-key-inspector-panel").inner_text()
    assert a.order[6].id in inspector
    # the ring moved to the event clicked, in the browser
    assert page.evaluate(RING) == list(event_at(page, 6)["data"])
    # neither click sent the figure again (its size is a reference: the inspector's event is
    # about half of a demo's timeline)
    assert 0 <= first < figure and 0 <= second < figure, (first, second, figure)
    shot(page, "timeline_01_clicked_event_marked")
    # an event selected elsewhere (the labels panel's next target, which reruns the panel and
    # the inspector alone) is ringed at the page's next full run: here a new figure, the
    # critical path's, handed to the same chart
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("n")
    page.wait_for_function(f"!location.search.includes('event={a.order[6].id}')", timeout=60_000)
    wait_for_streamlit(page, timeout=60_000)
    selected = page.url.split("event=")[1].split("&")[0]
    page.evaluate(f"{CHART}.__kept = true")
    page.locator(".st-key-show_critical").get_by_text("critical path").click()
    wait_for_streamlit(page, timeout=60_000)
    x, lane = charts.timeline_point(a, selected)
    page.wait_for_function(f"(() => {{ const r = ({RING})(); return r && r[0] === {x}; }})()",
                           timeout=30_000)
    assert page.evaluate(RING) == [x, lane]
    assert page.evaluate(f"{CHART}.__kept") is True  # the same chart, handed a new figure
    assert page.evaluate(f"{CHART}._fullData.some(t => t.name === 'critical path')")


HOVERED = """() => {
    const gd = document.querySelector('.orchviz-live-chart[data-chart$="timeline"]');
    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
    for (const t of gd._fullData) {
        if (t.name !== 'tool call' || t.visible !== true) continue;
        for (let j = 0; j < t.x.length; j++) {
            if (t.y[j] >= 2 && t.y[j] <= 6)
                return {x: r.left + xa._offset + xa.l2p(t.x[j]),
                        y: r.top + ya._offset + ya.l2p(t.y[j])};
        }
    }
    return null;
}"""


def test_a_large_timelines_hover_names_the_events_id_agent_and_time(page, app_server, tmp_path):
    raw = synth_trace(60, 1_800, seed=5)  # above WEBGL_EVENTS: drawn with WebGL
    workspace = make_workspace(tmp_path, traces=[raw])
    a = analyze(workspace.library.trace(raw["trace_id"]))
    goto_as(page, f"{app_server(workspace)}/trace?trace={raw['trace_id']}", "tim")
    wait_for_streamlit(page, timeout=60_000)
    page.locator('.orchviz-live-chart[data-chart$="timeline"]').scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    point = page.evaluate(HOVERED)
    assert point is not None
    page.mouse.move(point["x"] - 20, point["y"] - 20)
    page.mouse.move(point["x"], point["y"], steps=4)
    page.wait_for_selector(".hoverlayer .hovertext", timeout=10_000)
    shown = page.evaluate("document.querySelector('.hoverlayer .hovertext').textContent")
    # the hover names the marker nearest the pointer: where markers crowd, a neighbour of the
    # one aimed at, so the event is found by the id the hover names
    label, agent, seconds = shown.split(" · ")
    assert label.startswith("tool call ")
    e = a.trace.events_by_id[label.removeprefix("tool call ")]
    assert e.type == "tool_call" and agent == a.actor[e.id]
    assert abs(float(seconds.removesuffix("s")) - (e.t - a.order[0].t)) <= 0.051  # to 0.1 s
    shot(page, "timeline_02_large_timeline_hover")
