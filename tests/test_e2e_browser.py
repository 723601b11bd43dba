"""End to end in Chromium: `orchviz app` on a temporary library, driven like a reviewer would."""

from __future__ import annotations

import pytest

from conftest import shot, wait_for_streamlit
from factories import make_workspace, review_library
from viz_app.synth import HOSTILE_MARKER

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def base_url(module_app_server, tmp_path_factory):
    """The app on demo traces, the hostile trace and a broken file, with a fresh database: one
    for the module, as its tests only look (each in a browser context of its own)."""
    folder = tmp_path_factory.mktemp("e2e-browser")
    return module_app_server(make_workspace(folder, traces=[review_library(folder / "library")]))


def open_page(page, url: str) -> None:
    page.goto(url)
    wait_for_streamlit(page, timeout=60_000)


def scroll_main(page, y: int) -> None:
    page.evaluate(f"document.querySelector('[data-testid=\"stMain\"]').scrollTo(0, {y})")
    page.wait_for_timeout(400)


def pwned_anywhere(page) -> list[str]:
    """The frames (the page itself included) where the hostile marker got set."""
    hit = []
    for frame in page.frames:
        try:
            if frame.evaluate(f"() => Boolean(window['{HOSTILE_MARKER}'])"):
                hit.append(frame.url[:80] or "<main>")
        except Exception:  # an opaque-origin frame we cannot evaluate in is not our origin
            continue
    return hit


def test_library_lists_traces_and_the_broken_file(page, base_url):
    open_page(page, base_url)
    assert page.title() == "orchviz"
    body = page.locator('[data-testid="stMain"]').inner_text()
    assert "orchviz" in body and "Files that failed to load (1)" in body
    shot(page, "e2e-library")
    scroll_main(page, 600)
    shot(page, "e2e-library-failures")


def test_open_a_trace_from_the_table(page, base_url):
    open_page(page, base_url)
    grid = page.locator('[data-testid="stDataFrame"]').first
    grid.wait_for()
    box = grid.bounding_box()
    # the first data row's selection box: header row and data rows are 35 px each
    page.mouse.click(box["x"] + 14, box["y"] + 35 + 17)
    page.wait_for_url("**/trace?trace=*", timeout=30_000)
    wait_for_streamlit(page, timeout=60_000)
    assert "trace=demo-01-centralized-faithful" in page.url
    assert page.locator(".orchviz-live-chart.js-plotly-plot").count() == 2  # tree, timeline
    shot(page, "e2e-trace-from-table")


def test_a_deep_link_opens_the_trace_with_the_event_selected(page, base_url):
    open_page(page, f"{base_url}/?trace=demo-05-hierarchical-ebikes&event=e10")
    assert "trace=demo-05-hierarchical-ebikes" in page.url
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "demo-05-hierarchical-ebikes" in main
    assert "Spawn approval analyst." in main  # e10's content in the inspector
    shot(page, "e2e-deep-link")
    scroll_main(page, 650)
    shot(page, "e2e-deep-link-timeline")


def test_clicking_a_tree_node_shows_that_agent_in_the_inspector(page, base_url):
    open_page(page, f"{base_url}/?trace=demo-05-hierarchical-ebikes")
    tree = page.locator('.orchviz-live-chart[data-chart$="tree"]')
    tree.wait_for()
    page.wait_for_timeout(800)
    # find the on-screen position of the node "market_lead" from plotly's own data
    point = page.evaluate("""() => {
        const gd = document.querySelector('.orchviz-live-chart[data-chart$="tree"]');
        for (let i = 0; i < gd.data.length; i++) {
            const t = gd.data[i];
            if (!t.customdata) continue;
            for (let j = 0; j < t.customdata.length; j++) {
                if (t.customdata[j][1] === 'market_lead') {
                    const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
                    const r = gd.getBoundingClientRect();
                    return {x: r.left + xa._offset + xa.l2p(t.x[j]),
                            y: r.top + ya._offset + ya.l2p(t.y[j])};
                }
            }
        }
        return null;
    }""")
    assert point is not None
    page.mouse.click(point["x"], point["y"])
    page.wait_for_timeout(500)
    wait_for_streamlit(page, timeout=60_000)
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Agent market_lead" in main.replace("\n", " ")
    assert "role: lead" in main
    shot(page, "e2e-tree-node-selected")


def test_the_hostile_trace_runs_no_script_in_any_view(page, base_url):
    open_page(page, f"{base_url}/?trace=hostile-xss&event=e5")
    main = page.locator('[data-testid="stMain"]')
    assert "<script>window.__pwned=1</script>" in main.inner_text()  # shown, as text
    page.locator('.orchviz-live-chart[data-chart$="tree"]').hover()
    page.wait_for_timeout(300)
    assert pwned_anywhere(page) == []
    shot(page, "e2e-hostile-tree")
    # the live timeline's hover labels show the events' hostile text, escaped
    page.locator('.orchviz-live-chart[data-chart$="timeline"]').scroll_into_view_if_needed()
    points = page.evaluate("""(n) => {
        const gd = document.querySelector('.orchviz-live-chart[data-chart$="timeline"]');
        const xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis, r = gd.getBoundingClientRect();
        return gd._fullData.filter(t => t.customdata && t.visible === true).flatMap(t =>
            [...t.x].map((x, j) => ({x: r.left + xa._offset + xa.l2p(x),
                                     y: r.top + ya._offset + ya.l2p(t.y[j])}))).slice(0, n);
    }""", 12)
    assert points
    for point in points:
        page.mouse.move(point["x"], point["y"], steps=2)
        page.wait_for_timeout(80)
    assert pwned_anywhere(page) == []
    page.get_by_text("Communication graph", exact=True).click()
    wait_for_streamlit(page, timeout=60_000)
    frame = page.locator("iframe").first
    frame.wait_for()
    page.wait_for_timeout(2500)  # let vis-network draw and settle
    assert page.locator("iframe").count() >= 1
    assert pwned_anywhere(page) == []
    shot(page, "e2e-hostile-communication")
    open_page(page, base_url)
    page.locator('[data-testid="stTextInput"] input').last.fill("hostile")
    page.keyboard.press("Enter")
    wait_for_streamlit(page, timeout=60_000)
    assert pwned_anywhere(page) == []
    shot(page, "e2e-hostile-library")
