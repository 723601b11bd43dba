"""Corrections: the time to write one by keyboard on the Review page, and the decision-pairs
exports of 100,000 of them.

    python bench/bench_corrections.py [--corrections 100000] [--repeat 3] [--no-keyboard]
                                      [--targets 12]

**Keyboard.** A campaign over the aggregates of the demo traces asks `aggregation_quality` and
`merge_correction`; one reviewer in Chromium (headless, 1600x1000) works it: 1 scores the merge,
W puts the focus in the correction box (prefilled with the aggregator's output), Ctrl+A and a
typed merge of 60 characters replace it, Ctrl+Enter saves. Printed per target: the seconds from
the first key to the next target on screen (the machine's part: the reviewer's own thinking and
typing speed are not in it, beyond Playwright's typing), median and p95.

**Export.** Correction labels on synthetic orchestrations (`viz_app.synth`, 240 events and 12
agents each, cloned under their own ids): on every aggregate a score and a written merge, on
every spawn *redundant* and "reuse agent X", on every message *redundant* and "not sent" or a
message to send, on every stop *premature* with a pointer and a final answer; two reviewers on
each, choosing the same decision, in their own words half the time. Each shape runs
`write_export` in a process of its own (bench_exports.run_one: CPU time, peak resident memory).
Targets: under 5 s of CPU and 500 MB peak each.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import msgspec

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_exports import MEMORY_TARGET_MB, TIME_TARGET_S, TEMPLATES  # noqa: E402
from timing import machine  # noqa: E402

SHAPES = ("decision-pairs", "openrlhf-decision-pairs")


# -- the export ----------------------------------------------------------------------------------


def make_corrections(wanted: int, seed: int = 11, sound: float = 0.0):
    """Traces and current label records holding about `wanted` correction labels (with
    `sound`, that share of the targets answered with their question's best answer instead,
    which makes confirmation pairs, and `wanted` counts every label)."""
    from viz_app.analysis import analyze
    from viz_app.io.native import trace_from_dict
    from viz_app.labels.label import FIELDS
    from viz_app.labels.rubric import default_rubric, reward_of, targets
    from viz_app.synth import synth_trace

    rubric = default_rubric()
    rng = random.Random(seed)
    templates = [trace_from_dict(synth_trace(12, 240, "hierarchical", seed + i), f"t{i}")
                 for i in range(TEMPLATES)]
    plans = [(t, analyze(t), targets(rubric, analyze(t))) for t in templates]
    stamp = "2026-01-02T03:04:05.000000Z"

    def label(trace, event_id, question, value, reviewer):
        row = dict.fromkeys(FIELDS)
        row.update(label_id=uuid.uuid4().hex, trace_id=trace.trace_id,
                   trace_sha256=trace.sha256, event_id=event_id, question=question,
                   value=value, reward=reward_of(rubric.question(question), value),
                   reviewer=reviewer, created_at=stamp, rubric_version=rubric.version,
                   rubric_sha256=rubric.sha256, comment="", seconds_spent=20.0,
                   source="human", origin="", identified_by="cli")
        return row

    traces, records, corrections, n = {}, [], 0, 0
    while corrections < wanted:
        template, analysis, found = plans[n % TEMPLATES]
        trace = msgspec.structs.replace(template, trace_id=f"bench-{n}")
        trace._analysis = None
        trace._sha256 = uuid.uuid4().hex * 2
        traces[trace.trace_id] = trace
        agents = analysis.agents
        for target in found:
            event = template.event(target.event_id) if target.event_id else None
            if event is None:
                continue
            answers: dict[str, object] = {}
            if sound and rng.random() < sound:
                kind = next((k for k in ("aggregate", "stop", "spawn", "message")
                             if k in target.kinds), None)
                answers = {"aggregate": {"aggregation_quality": 5},
                           "stop": {"stopping_correctness": "correct"},
                           "spawn": {"spawn_necessity": "necessary"},
                           "message": {"message_necessity": "necessary"}}.get(kind, {})
            elif "aggregate" in target.kinds:
                answers = {"aggregation_quality": 2, "merge_correction": {
                    "action": "merge", "text": f"{event.text} Also keeps the result of "
                    f"{rng.choice(agents)}."}}
            elif "stop" in target.kinds:
                later = analysis.order[analysis.position[event.id] + 1:]
                answers = {"stopping_correctness": "premature",
                           "stop_should_have_been": later[len(later) // 2].id if later
                           else "<later than this run recorded>",
                           "stop_correction": {"action": "stop", "text": "The final answer, "
                                               "with every result."}}
            elif "spawn" in target.kinds:
                answers = {"spawn_necessity": "redundant", "spawn_correction": {
                    "action": "reuse_agent", "agent": agents[0]}}
            elif "message" in target.kinds:
                answers = {"message_necessity": "redundant", "message_correction": (
                    {"action": "not_sent"} if rng.random() < 0.5 else
                    {"action": "send", "to": agents[0], "text": "Wait for the results."})}
            for reviewer in ("ann", "bob"):
                for question, value in answers.items():
                    if isinstance(value, dict) and value.get("text") and reviewer == "bob" \
                            and rng.random() < 0.5:
                        value = {**value, "text": value["text"] + " (in bob's words)"}
                    records.append(label(trace, target.event_id, question, value, reviewer))
                    corrections += isinstance(value, dict) or bool(sound)
        n += 1
    return traces, records, rubric, corrections


def bench_export(wanted: int, repeat: int, sound: float = 0.0) -> int:
    start = time.perf_counter()
    traces, records, rubric, corrections = make_corrections(wanted, sound=sound)
    fixes = sum(isinstance(r["value"], dict) for r in records)
    print(f"{fixes:,} correction labels ({len(records):,} labels in all, two reviewers "
          f"a target, {sound:.0%} of the targets judged sound) on {len(traces):,} traces of "
          f"240 events (made in {time.perf_counter() - start:.1f} s)")
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data.pickle"
        with data.open("wb") as out:
            pickle.dump((traces, records, rubric), out, protocol=pickle.HIGHEST_PROTOCOL)
        del traces, records
        print(f"{'shape':<26}{'rows':>9}{'MB out':>9}{'wall s':>8}{'CPU s':>8}{'peak MB':>9}"
              f"{'held MB':>9}")
        for shape in SHAPES:
            runs = []
            for _ in range(max(1, repeat)):
                done = subprocess.run([sys.executable, str(HERE / "bench_exports.py"), "--one",
                                       str(data), shape, "0"], capture_output=True, text=True)
                if done.returncode:
                    print(f"{shape}: failed\n{done.stderr[-2000:]}")
                    failed += 1
                    break
                runs.append(json.loads(done.stdout.splitlines()[-1]))
            if not runs:
                continue
            r = min(runs, key=lambda run: run["cpu"])
            peak = max(run["peak_mb"] for run in runs)
            ok = r["cpu"] < TIME_TARGET_S and peak < MEMORY_TARGET_MB
            failed += not ok
            print(f"{shape:<26}{r['rows']:>9,}{r['mb_written']:>9.1f}{r['seconds']:>8.2f}"
                  f"{r['cpu']:>8.2f}{peak:>9.0f}{r['held_mb']:>9.0f}"
                  + ("" if ok else "  over target"))
    print(f"targets: under {TIME_TARGET_S:g} s of CPU and {MEMORY_TARGET_MB:g} MB peak per shape "
          "(least CPU and greatest peak over the runs; held MB: the traces and labels loaded "
          "before the export)")
    return failed


# -- the keyboard --------------------------------------------------------------------------------


def bench_keyboard(wanted: int) -> list[float]:
    """Seconds per correction written by keyboard on the Review page, one per target."""
    import re
    import shutil

    from playwright.sync_api import sync_playwright

    from viz_app.labels.campaign import CampaignSpec
    from viz_app.labels.label import Reviewer
    from viz_app.workspace import Workspace

    folder = Path(tempfile.mkdtemp())
    demos = folder / "demos"
    demos.mkdir()
    for path in sorted((HERE.parent / "demo_traces").glob("*.json")):
        shutil.copy(path, demos / path.name)
    ws = Workspace.open(folder / "orchviz.db", traces=[demos])
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name="merges", questions=[
        "aggregation_quality", "merge_correction"]), Reviewer(name="lee", via="cli"))
    port = 8600 + os.getpid() % 300
    server = subprocess.Popen([sys.executable, "-m", "viz_app", "app", "--traces", str(demos),
                               "--db", str(folder / "orchviz.db"), "--port", str(port),
                               "--host", "127.0.0.1"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    seconds: list[float] = []
    try:
        import urllib.request

        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=[
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"])
            context = browser.new_context(viewport={"width": 1600, "height": 1000})
            context.add_cookies([{"name": "orchviz_reviewer", "value": "ann",
                                  "domain": "127.0.0.1", "path": "/"}])
            page = context.new_page()
            page.set_default_timeout(90_000)
            page.goto(f"http://127.0.0.1:{port}/?campaign=merges")
            page.get_by_role("button", name=re.compile("Start")).wait_for()
            page.keyboard.press("Control+Enter")
            page.locator(".st-key-review-target").wait_for()
            for _ in range(wanted):
                box = page.locator(".st-key-review-target")
                if not box.count():
                    break
                shown = box.inner_text()
                page.locator(".st-key-ann-correction-merge_correction textarea").wait_for()
                page.evaluate("document.activeElement && document.activeElement.blur()")
                start = time.perf_counter()
                page.keyboard.press("1")
                page.keyboard.press("w")
                page.keyboard.press("Control+a")
                page.keyboard.type("Every result kept; the conflict resolved in favour of B.")
                page.keyboard.press("Control+Enter")
                page.wait_for_function(
                    """(before) => {
                        const box = document.querySelector('.st-key-review-target');
                        if (box) return box.innerText !== before;
                        return /nothing is left for you/.test(document.body.innerText);
                    }""", arg=shown, polling="raf")
                seconds.append(time.perf_counter() - start)
            browser.close()
    finally:
        os.killpg(server.pid, 15)
        server.wait(timeout=20)
    saved = [r for r in ws.labelling.current_records() if r["question"] == "merge_correction"]
    print(f"{len(saved)} corrections saved by keyboard")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corrections", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--targets", type=int, default=12, help="corrections by keyboard")
    parser.add_argument("--no-keyboard", action="store_true")
    parser.add_argument("--no-export", action="store_true")
    parser.add_argument("--sound", type=float, default=0.0, help="share of the targets "
                        "answered sound (confirmation pairs); then --corrections counts every "
                        "label")
    args = parser.parse_args()
    print(machine())
    print("load average (1, 5, 15 min) at the start: %.2f %.2f %.2f" % os.getloadavg())
    failed = 0
    if not args.no_keyboard:
        seconds = bench_keyboard(args.targets)
        if seconds:
            ordered = sorted(seconds)
            p95 = ordered[math.ceil(0.95 * len(ordered)) - 1]  # nearest rank
            print("correction by keyboard (1, W, Ctrl+A, 57 characters typed, Ctrl+Enter -> the "
                  f"next target): {', '.join(f'{s:.2f}' for s in seconds)} s")
            print(f"median {statistics.median(seconds):.2f} s, p95 {p95:.2f} s over "
                  f"{len(seconds)} targets")
        else:
            failed += 1
    if not args.no_export:
        failed += bench_export(args.corrections, args.repeat, args.sound)
    print("load average (1, 5, 15 min) at the end: %.2f %.2f %.2f" % os.getloadavg())
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
