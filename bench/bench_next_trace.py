"""Benchmark: Shift+N on the trace page, from the key press until the next trace is on screen, in
Chromium, for a demo trace and for 20,000-event traces of 800 agents.

Starts `orchviz app` (as `bench_app.py` does) on a folder holding the demo traces and three
synthetic 20k-event traces (seeds 7, 8, 9: files the server has not read, so each first hop onto
one is a cold one unless the app read it ahead), types a reviewer name and walks the library
with Shift+N, ROUNDS times round. A reviewer who labels nothing sees every trace in library
order. Each hop is timed twice, from the `keydown` in the page:

- `panel`: the next trace's labels panel is drawn (its questions: what the reviewer reads first);
- `server`: the server's script run ended (the rest is the browser drawing);
- `drawn`: its tree and timeline are drawn too (two Plotly figures with their points, none of
  them stale) and the server's script run is over: the whole page.

Each hop's CPU time is counted too, from the key press until the page has settled: the browser's
(every Chromium process, summed) and the server's, which a loaded machine stretches in wall time
far less than it stretches the wall clock (`cpu` lines, in ms of CPU).

Hops are grouped by where they land (a demo trace or a 20k one) and by round (the first round
is the server's first sight of each file, later rounds find it cached). Between hops the bench
waits PAUSE seconds, as a reviewer reads and labels, so that reading ahead has time to finish.

Run: `python bench/bench_next_trace.py` (ROUNDS=n, PAUSE=s); prints medians and 95th percentiles
with the machine's load before and after; exits 1 when the demo hops miss a 500 ms median or the
20k hops a 1 s median (`drawn`).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))

from bench_app import start_app  # noqa: E402
from conftest import CHROMIUM_ARGS, CHROMIUM_PATH, wait_for_streamlit  # noqa: E402
from timing import machine  # noqa: E402
from viz_app.synth import synth_trace  # noqa: E402

ROUNDS = int(os.environ.get("ROUNDS", "2"))
PAUSE = float(os.environ.get("PAUSE", "5"))
BIG_SEEDS = (7, 8, 9)
DEMO_TARGET_MS, BIG_TARGET_MS = 500, 1000

STAMP = """window.__t0 = null;
window.addEventListener('keydown', e => { if (!e.repeat && window.__t0 === null)
    window.__t0 = performance.now(); }, true);
new MutationObserver(() => {  // the last time a script run ended, as the attribute changes
    const app = document.querySelector('[data-testid="stApp"]');
    if (app && app.getAttribute('data-test-script-state') === 'notRunning')
        window.__server = performance.now();
}).observe(document, {attributes: true, subtree: true,
                      attributeFilter: ['data-test-script-state']});"""

# Holds (returning the trace id) once the page shows a trace other than `before` in full; notes
# the first frame its labels panel was there as `__panel`.
SHOWN = """(before) => {
    const id = new URLSearchParams(location.search).get('trace');
    if (!id || id === before) return false;
    const live = el => !el.closest('[data-stale="true"]');
    // the labels panel's buttons carry the trace id in their keys (`ann:<id>:<sha>:next`)
    const key = 'st-key-ann-' + id.replace(/[^A-Za-z0-9_-]/g, '-') + '-';
    const panel = [...document.querySelectorAll('[class*="st-key-ann-"]')]
        .some(el => live(el) && [...el.classList].some(c => c.startsWith(key)));
    if (!panel) return false;
    if (window.__panel === null) window.__panel = performance.now();
    const title = [...document.querySelectorAll('h3')]
        .some(h => live(h) && h.innerText.trim() === id);
    if (!title) return false;
    const app = document.querySelector('[data-testid="stApp"]');
    if (app && app.getAttribute('data-test-script-state') === 'running') return false;
    // Streamlit's Plotly charts (the tree) and the live timeline, which stays mounted from
    // trace to trace: it is the new trace's once its div carries the trace's id as `data-tag`
    // and no figure is pending (components/live_chart.py)
    const plots = [...document.querySelectorAll(
            '[data-testid="stPlotlyChart"] .js-plotly-plot, .orchviz-live-chart.js-plotly-plot')]
        .filter(p => live(p) && !p.closest('.st-key-chart-library'));
    if (plots.length < 2 || plots.some(p => !p._fullData || !p.querySelector('.main-svg')
            || p.dataset.pending
            || (p.classList.contains('orchviz-live-chart') && p.dataset.tag !== id)))
        return false;
    window.__t1 = performance.now();
    return id;
}"""


def cpu_ms(pids: set[int]) -> float:
    """CPU time (user and system) the processes have used, in ms; one gone counts nothing."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return 1000 * total / tick


def descendants(root: int) -> set[int]:
    """The processes below `root` (Playwright's driver and the Chromium it started)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def hop(page, before: str) -> tuple[str, float, float, float]:
    """Press Shift+N on the trace `before`; the trace shown next and the milliseconds until its
    panel was on screen, until the server's script run ended and until the whole page was on
    screen."""
    page.evaluate("document.activeElement && document.activeElement.blur()")
    page.evaluate("window.__t0 = null; window.__t1 = null; window.__panel = null; "
                  "window.__server = null")
    page.keyboard.press("Shift+N")
    shown = page.wait_for_function(SHOWN, arg=before, polling="raf", timeout=120_000)
    t0, panel, server, t1 = page.evaluate(
        "[window.__t0, window.__panel, window.__server, window.__t1]")
    wait_for_streamlit(page, timeout=120_000, quiet_ms=250)
    return shown.json_value(), panel - t0, (server or t1) - t0, t1 - t0


def summary(values: list[float]) -> str:
    """Median and 95th percentile (nearest rank), with the count."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, max(0, round(0.95 * len(ordered)) - 1))]
    return f"median {statistics.median(ordered):6.0f} ms   p95 {p95:6.0f} ms   (n={len(ordered)})"


def main() -> int:
    """Run the benchmark and print its figures."""
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="orchviz-bench-next-"))
    folder = work / "traces"
    shutil.copytree(REPO / "demo_traces", folder, ignore=shutil.ignore_patterns("*.py", "*.md"))
    big = set()
    for seed in BIG_SEEDS:
        raw = synth_trace(800, 20_000, topology="hierarchical", seed=seed)
        (folder / f"synth_20k_{seed}.json").write_text(json.dumps(raw))
        big.add(raw["trace_id"])
    first = json.loads(sorted(folder.glob("*.json"))[0].read_text())["trace_id"]
    count = len(list(folder.glob("*.json")))
    proc, base = start_app(folder, work / "bench.db")
    times: dict[str, list[float]] = {}
    load_before = os.getloadavg()[0]
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM_PATH, headless=True,
                                         args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.add_init_script(STAMP)
            page = context.new_page()
            page.goto(base)  # the library indexes the folder once
            wait_for_streamlit(page, timeout=180_000)
            page.goto(f"{base}/trace?trace={first}")
            wait_for_streamlit(page, timeout=180_000)
            box = page.get_by_role("textbox", name="Reviewer")
            box.fill("bench")
            box.press("Enter")
            page.get_by_text("labelled by").first.wait_for(timeout=180_000)
            wait_for_streamlit(page, timeout=180_000)
            current = first
            for round_ in range(ROUNDS):
                for _ in range(count):
                    time.sleep(PAUSE)
                    server_pids = descendants(proc.pid) | {proc.pid}
                    browser_pids = descendants(os.getpid()) - server_pids
                    cpu_before = cpu_ms(browser_pids), cpu_ms(server_pids)
                    current, panel, server, drawn = hop(page, current)
                    cpu_after = cpu_ms(browser_pids), cpu_ms(server_pids)
                    kind = "20k" if current in big else "demo"
                    when = "first round" if round_ == 0 else "later rounds"
                    times.setdefault(f"{kind} panel, {when}", []).append(panel)
                    times.setdefault(f"{kind} server, {when}", []).append(server)
                    times.setdefault(f"{kind} drawn, {when}", []).append(drawn)
                    times.setdefault(f"{kind} drawn", []).append(drawn)
                    times.setdefault(f"{kind} cpu: browser", []).append(
                        cpu_after[0] - cpu_before[0])
                    times.setdefault(f"{kind} cpu: server", []).append(
                        cpu_after[1] - cpu_before[1])
                print(f"round {round_ + 1} of {ROUNDS} done", file=sys.stderr)
            version = browser.version
            browser.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    print(f"{machine()}; Chromium {version}; {ROUNDS} rounds of {count} traces, {PAUSE:g} s "
          f"between hops; load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after; "
          "ms from Shift+N to the next trace on screen")
    for step, values in sorted(times.items()):
        print(f"{step:>26}: {summary(values)}")
    demo = statistics.median(times["demo drawn"])
    big_ms = statistics.median(times["20k drawn"])
    ok = demo < DEMO_TARGET_MS and big_ms < BIG_TARGET_MS
    print(f"demo: median {demo:.0f} ms (target < {DEMO_TARGET_MS}); 20k: median {big_ms:.0f} ms "
          f"(target < {BIG_TARGET_MS}): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
