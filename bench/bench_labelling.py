"""Benchmark: the labelling loop in Chromium, from a key press (or click) until the page shows the
result, on a demo trace and on a 20,000-event trace of 800 agents.

Starts `orchviz app` (as `bench_app.py` does) on a folder holding demo 10 (an aggregate, a stop and
the whole trace to label) and a synthetic 20k-event trace, types a fresh reviewer name for each
round, and times each step of the loop:

- `pick`: a digit key picks the first question's answer; done when its radio shows it checked;
- `save`: Ctrl+Enter saves; done when the progress bar counts one more target labelled;
- `next target`: key N; done when the Target box names another target;
- `next trace`: the "Next trace" button (Shift+N where the page has it); done when the other
  trace's labels panel is drawn.

The clock starts in the page, at the `keydown` (or `mousedown`) event, and stops in the first
animation frame in which the result is in the DOM. Each step waits for the page to be idle
before the next one starts.

Run: `python bench/bench_labelling.py` (ROUNDS=n sets the rounds; prints the median and the 95th
percentile of each step; exits 1 when the demo trace misses median < 150 ms and p95 < 300 ms, or
the 20k trace misses median < 300 ms).
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
from playwright.sync_api import TimeoutError as PlaywrightTimeout  # noqa: E402
from conftest import CHROMIUM_ARGS, CHROMIUM_PATH, wait_for_streamlit  # noqa: E402
from timing import machine  # noqa: E402
from viz_app.synth import synth_trace  # noqa: E402

DEMO = REPO / "demo_traces" / "10_review_premature_stop.json"
ROUNDS = int(os.environ.get("ROUNDS", "4"))
BIG_TARGETS = int(os.environ.get("BIG_TARGETS", "4"))

STAMP = """window.__t0 = null;
window.addEventListener('keydown', e => { if (!e.repeat && window.__t0 === null)
    window.__t0 = performance.now(); }, true);
window.addEventListener('mousedown', () => { if (window.__t0 === null)
    window.__t0 = performance.now(); }, true);"""

CHECKED = """(n) => {
    const radio = document.querySelector('[data-testid="stRadio"]');
    const inputs = radio ? radio.querySelectorAll('input[type="radio"]') : [];
    if (inputs.length >= n && inputs[n - 1].checked) { window.__t1 = performance.now(); return true; }
    return false;
}"""

PROGRESS = """() => {
    const bar = [...document.querySelectorAll('[data-testid="stProgress"]')]
        .map(p => p.innerText).find(t => /targets? labelled by/.test(t));
    return bar || null;
}"""

PROGRESS_CHANGED = """(before) => {
    const bar = [...document.querySelectorAll('[data-testid="stProgress"]')]
        .map(p => p.innerText).find(t => /targets? labelled by/.test(t));
    if (bar && bar !== before) { window.__t1 = performance.now(); return true; }
    return false;
}"""

TARGET_NOW = """() => {
    const box = [...document.querySelectorAll('[data-testid="stSelectbox"]')]
        .find(b => b.textContent.trim().startsWith('Target'));
    const input = box ? box.querySelector('input') : null;
    return input ? input.value : null;
}"""

TARGET_CHANGED = """(before) => {
    const box = [...document.querySelectorAll('[data-testid="stSelectbox"]')]
        .find(b => b.textContent.trim().startsWith('Target'));
    const input = box ? box.querySelector('input') : null;
    if (input && input.value && input.value !== before) {
        window.__t1 = performance.now(); return true; }
    return false;
}"""

TRACE_SHOWN = """(traceId) => {
    if (new URLSearchParams(location.search).get('trace') !== traceId) return false;
    const title = [...document.querySelectorAll('h3')].some(h => h.innerText.trim() === traceId);
    const bar = [...document.querySelectorAll('[data-testid="stProgress"]')]
        .some(p => /targets? labelled by/.test(p.innerText));
    if (title && bar) { window.__t1 = performance.now(); return true; }
    return false;
}"""


def timed(page, act, predicate: str, arg=None, timeout: float = 120_000) -> float:
    """Milliseconds from the key press or click `act` makes until `predicate` holds."""
    page.evaluate("window.__t0 = null; window.__t1 = null")
    act()
    page.wait_for_function(predicate, arg=arg, polling="raf", timeout=timeout)
    t0, t1 = page.evaluate("[window.__t0, window.__t1]")
    wait_for_streamlit(page, timeout=120_000, quiet_ms=250)
    return t1 - t0


def blur(page) -> None:
    """Move the focus out of any field, as a reviewer clicking on the page would."""
    page.evaluate("document.activeElement && document.activeElement.blur()")


def sign_in(page, url: str, name: str) -> None:
    """Open a trace's link and type the reviewer's name in the sidebar."""
    page.goto(url)
    wait_for_streamlit(page, timeout=180_000)
    box = page.get_by_role("textbox", name="Reviewer")
    box.wait_for(timeout=180_000)
    if box.input_value() != name:
        box.fill(name)
        box.press("Enter")
        wait_for_streamlit(page, timeout=180_000)
    page.get_by_text("labelled by").first.wait_for(timeout=180_000)
    blur(page)


def label_targets(page, count: int, times: dict[str, list[float]], case: str) -> None:
    """Pick 1, save, next target, `count` times."""
    for i in range(count):
        blur(page)
        try:
            times[f"{case} pick"].append(timed(page, lambda: page.keyboard.press("1"), CHECKED,
                                               1, timeout=8_000))
        except PlaywrightTimeout:  # no digit key for this question: click the answer
            times.setdefault(f"{case} pick: no key", []).append(0.0)
            page.locator('[data-testid="stRadio"] [data-testid="stRadioOption"]').first.click()
            wait_for_streamlit(page, timeout=120_000, quiet_ms=250)
            blur(page)  # a focused radio keeps Enter to itself
        before = page.evaluate(PROGRESS)
        times[f"{case} save"].append(timed(page, lambda: page.keyboard.press("Control+Enter"),
                                           PROGRESS_CHANGED, before))
        if i + 1 < count:
            blur(page)
            before = page.evaluate(TARGET_NOW)
            times[f"{case} next target"].append(
                timed(page, lambda: page.keyboard.press("n"), TARGET_CHANGED, before))


def next_trace(page, trace_id: str) -> float:
    """Go on to the next trace: Shift+N, or the button where the page has no such key."""
    blur(page)
    try:
        return timed(page, lambda: page.keyboard.press("Shift+N"), TRACE_SHOWN, trace_id,
                     timeout=15_000)
    except PlaywrightTimeout:
        return timed(page, page.get_by_role("button", name="Next trace").click, TRACE_SHOWN,
                     trace_id)


def summary(values: list[float]) -> tuple[float, float]:
    """Median and 95th percentile (nearest rank)."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return statistics.median(ordered), p95


def main() -> int:
    """Run the benchmark and print its figures."""
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="orchviz-bench-labelling-"))
    folder = work / "traces"
    folder.mkdir()
    shutil.copy(DEMO, folder / DEMO.name)
    demo_id = json.loads(DEMO.read_text())["trace_id"]
    raw = synth_trace(800, 20_000, topology="hierarchical", seed=7)
    (folder / "synth_20k.json").write_text(json.dumps(raw))
    big_id = raw["trace_id"]
    proc, base = start_app(folder, work / "bench.db")
    times: dict[str, list[float]] = {}
    for case in ("demo", "20k"):
        for step in ("pick", "save", "next target"):
            times[f"{case} {step}"] = []
    times["next trace"] = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM_PATH, headless=True,
                                         args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.add_init_script(STAMP)
            page = context.new_page()
            page.goto(base)  # the library indexes the folder once
            wait_for_streamlit(page, timeout=180_000)
            for round_ in range(ROUNDS):
                name = f"bench{round_}"
                sign_in(page, f"{base}/trace?trace={demo_id}", name)
                label_targets(page, 3, times, "demo")
                times["next trace"].append(next_trace(page, big_id))
                label_targets(page, BIG_TARGETS, times, "20k")
                print(f"round {round_ + 1} of {ROUNDS} done", file=sys.stderr)
            version = browser.version
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{machine()}; Chromium {version}; {ROUNDS} rounds; ms from key press to result")
    for step, values in times.items():
        if step.endswith("no key"):
            print(f"{step:>16}: {len(values)} answers had no key and were clicked (untimed)")
        elif values:
            median, p95 = summary(values)
            print(f"{step:>16}: median {median:6.0f} ms   p95 {p95:6.0f} ms   (n={len(values)})")
    demo = [v for k, vs in times.items() if k.startswith("demo") and "no key" not in k
            for v in vs]
    big = [v for k, vs in times.items() if k.startswith("20k") and "no key" not in k
           for v in vs]
    demo_median, demo_p95 = summary(demo)
    big_median, _ = summary(big)
    ok = demo_median < 150 and demo_p95 < 300 and big_median < 300
    print(f"demo loop: median {demo_median:.0f} ms, p95 {demo_p95:.0f} ms (target < 150, < 300); "
          f"20k loop: median {big_median:.0f} ms (target < 300): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
