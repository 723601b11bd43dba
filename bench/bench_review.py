"""Benchmark: the review page in Chromium, from Ctrl+Enter (save) until the next claimed target
is on screen, and from a digit key until its answer shows checked.

Starts `orchviz app` (as `bench_app.py` does) on the demo traces (or, with BIG=1, adds a
20,000-event trace of 800 agents), creates a campaign asking `stopping_correctness` on every stop
(one reviewer per target), opens `/review?campaign=NAME`, types the name `bench` into the
sidebar's Reviewer box and presses Enter, presses Ctrl+Enter to start and then, for every
target: 1 (correct), Ctrl+Enter. The clock starts in the page at the
`keydown` and stops in the first animation frame in which the other target's heading (or the
done message) is in the DOM. The next step waits for the page to be idle.

Run: `python bench/bench_review.py` (BIG=1 adds the 20k trace); prints the median and the 95th
percentile of each step, with the machine's load.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from bench_app import start_app  # noqa: E402
from conftest import CHROMIUM_ARGS, CHROMIUM_PATH, wait_for_streamlit  # noqa: E402
from timing import machine  # noqa: E402
from viz_app.labels.campaign import CampaignSpec  # noqa: E402
from viz_app.labels.label import Reviewer  # noqa: E402
from viz_app.synth import synth_trace  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

NAME = "bench-stops"

# on the window, capturing, and first (an init script): the page's key script stops the keys it
# handles from going further
STAMP = """window.__t0 = null;
window.addEventListener('keydown', e => { if (!e.repeat && window.__t0 === null)
    window.__t0 = performance.now(); }, true);"""

TARGET_NOW = """() => {
    const box = document.querySelector('.st-key-review-target');
    return box ? box.innerText : '';
}"""

NEXT_SHOWN = """(before) => {
    const box = document.querySelector('.st-key-review-target');
    const done = /nothing is left for you/.test(document.body.innerText);
    if ((box && box.innerText !== before) || done) {
        window.__t1 = performance.now(); return true; }
    return false;
}"""

CHECKED = """() => {
    const input = document.querySelector(
        '.st-key-ann-form [data-testid="stRadio"] input[type="radio"]');
    if (input && input.checked) { window.__t1 = performance.now(); return true; }
    return false;
}"""


def timed(page, key: str, predicate: str, arg=None) -> float:
    """Milliseconds from pressing `key` (focus on the page) until `predicate` holds."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.evaluate("window.__t0 = null; window.__t1 = null")
    page.keyboard.press(key)
    page.wait_for_function(predicate, arg=arg, polling="raf", timeout=180_000)
    t0, t1 = page.evaluate("[window.__t0, window.__t1]")
    wait_for_streamlit(page, timeout=180_000, quiet_ms=250)
    return t1 - t0


def summary(values: list[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank)."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return statistics.median(ordered), p95


def main() -> int:
    """Run the benchmark and print its figures."""
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="orchviz-bench-review-"))
    folder = work / "traces"
    shutil.copytree(REPO / "demo_traces", folder, ignore=shutil.ignore_patterns("*.py", "*.md"))
    if os.environ.get("BIG") == "1":
        (folder / "synth_20k.json").write_text(json.dumps(
            synth_trace(800, 20_000, topology="hierarchical", seed=7)))
    db = work / "bench.db"
    ws = Workspace.open(db, traces=[folder])
    campaign = ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness"]),
                                  Reviewer(name="lead", via="cli"))
    proc, base = start_app(folder, db)
    times: dict[str, list[float]] = {"pick (1)": [], "save to next target": []}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM_PATH, headless=True,
                                         args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.add_init_script(STAMP)
            page = context.new_page()
            page.goto(f"{base}/review?campaign={NAME}")  # links carry no name: it is typed
            wait_for_streamlit(page, timeout=180_000)
            page.locator('[data-testid="stSidebar"]').get_by_role(
                "textbox", name="Reviewer").click()
            page.keyboard.type("bench")
            page.keyboard.press("Enter")
            wait_for_streamlit(page, timeout=180_000)
            page.get_by_role("button", name="Start").wait_for(timeout=180_000)
            start = timed(page, "Control+Enter", NEXT_SHOWN, "")
            for _ in range(campaign.targets):
                times["pick (1)"].append(timed(page, "1", CHECKED))
                before = page.evaluate(TARGET_NOW)
                times["save to next target"].append(
                    timed(page, "Control+Enter", NEXT_SHOWN, before))
            page.get_by_text("nothing is left for you").wait_for(timeout=60_000)
            version = browser.version
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{machine()}; load average {os.getloadavg()[0]:.1f}; Chromium {version}; "
          f"{campaign.targets} targets; ms from key press to result")
    print(f"{'start':>20}: {start:6.0f} ms")
    for step, values in times.items():
        median, p95 = summary(values)
        print(f"{step:>20}: median {median:6.0f} ms   p95 {p95:6.0f} ms   (n={len(values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
