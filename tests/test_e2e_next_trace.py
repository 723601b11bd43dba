"""End to end in Chromium: Shift+N on the trace page opens the next trace the reviewer has left to
label (read ahead while they worked on this one), its tree, timeline and labels panel drawn, its
file named relative to the library folder."""

from __future__ import annotations

import re

import pytest

from conftest import goto_as, shot, wait_for_streamlit
from factories import DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, copy_demos, make_workspace

pytestmark = pytest.mark.browser

DRAWN = """(id) => [...document.querySelectorAll(
        '[data-testid="stPlotlyChart"] .js-plotly-plot, .orchviz-live-chart.js-plotly-plot')]
    .filter(p => !p.closest('[data-stale="true"]') && !p.closest('.st-key-chart-library')
                 && p._fullData && p.querySelector('.main-svg') && !p.dataset.pending
                 && (!p.classList.contains('orchviz-live-chart') || p.dataset.tag === id)).length"""
"""Plotly figures drawn on the page: the tree, and the live timeline once it shows trace `id`."""


def test_shift_n_shows_the_next_trace_with_its_views_and_panel(page, app_server, tmp_path):
    library = tmp_path / "library"
    copy_demos(library / "week-49", [DROPPED.name, PREMATURE.name])
    base = app_server(make_workspace(tmp_path, traces=[library]))
    goto_as(page, f"{base}/trace?trace={DROPPED_ID}", "ann")
    wait_for_streamlit(page, timeout=60_000)
    page.get_by_text("0 of 3 targets labelled by ann").wait_for(timeout=60_000)
    page.wait_for_function(f"({DRAWN})('{DROPPED_ID}') >= 2", timeout=60_000)
    page.evaluate("document.querySelectorAll('.orchviz-live-chart').forEach(c => c.__kept = true)")
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.keyboard.press("Shift+N")
    page.wait_for_url(re.compile(f"trace={PREMATURE_ID}"), timeout=60_000)
    page.get_by_role("heading", name=PREMATURE_ID).wait_for(timeout=60_000)
    wait_for_streamlit(page, timeout=60_000)
    page.wait_for_function(f"({DRAWN})('{PREMATURE_ID}') >= 2", timeout=60_000)
    # the tree and the timeline were handed the next trace's figures: the same charts, not new ones
    assert page.evaluate("[...document.querySelectorAll('.orchviz-live-chart')].map(c => c.__kept)") \
        == [True, True]
    assert page.get_by_text(re.compile(r"\d+ of \d+ targets labelled by ann")).count() == 1
    header = page.get_by_text(re.compile(r"format orchviz · file")).inner_text()
    assert f"file week-49/{PREMATURE.name}" in header and str(tmp_path) not in header
    assert str(tmp_path) not in page.locator('[data-testid="stMain"]').inner_text()
    shot(page, "next-trace-shift-n")
