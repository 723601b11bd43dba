"""The suggestion rules: throughput, and precision and recall against expected answers.

    python bench/bench_suggest.py [--traces 200] [--big 20000] [--whowhen DIR]

1. Throughput on one core (this process, no workers): traces per second for 100-event synthetic
   traces (`viz_app.synth.synth_trace`, analysis included, as `orchviz suggest` runs), and the time
   for one 20,000-event trace.
2. Each detector's precision and recall on the demo traces against the answers written in
   tests/fixtures/demo_expected_suggestions.yaml (a target not listed there is expected fine).
3. With `--whowhen DIR` (a checkout's `Who&When` folder of the published dataset,
   arXiv:2505.00212: `Hand-Crafted/*.json`, `Algorithm-Generated/*.json`), read by orchviz's
   Who&When importer: how often the rules' most confident suggestion sits on the blamed agent
   and on the blamed step, beside the published figures of the paper's methods.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import best_of, machine  # noqa: E402
from viz_app.analysis import analyze  # noqa: E402
from viz_app.io.native import load_trace, trace_from_dict  # noqa: E402
from viz_app.labels.rubric import default_rubric  # noqa: E402
from viz_app.suggest.rules import PRODUCER, suggest  # noqa: E402
from viz_app.synth import synth_trace  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
EXPECTED = REPO / "tests" / "fixtures" / "demo_expected_suggestions.yaml"
DEMOS = REPO / "demo_traces"

DETECTORS = {
    "premature stop": ("stopping_correctness", lambda v: v == "premature"),
    "late stop": ("stopping_correctness", lambda v: v == "late"),
    "dropped or unfaithful merge": ("aggregation_quality", lambda v: v <= 2),
    "over-spawning": ("spawn_necessity", lambda v: v in ("redundant", "harmful")),
    "redundant message": ("message_necessity", lambda v: v == "redundant"),
    "wrong delegate": ("delegation_fit", lambda v: v == "wrong_agent"),
}
"""Each detector, as the (question, answers) it says a target is at fault with."""

PUBLISHED = [
    ("Who&When all-at-once (GPT-4o, best published prompt method)", "~50%", "~14%"),
    ("trained 8B attributor", "~69%", "~21%"),
]
"""The published figures quoted in issue 15 (agent-level, step-level accuracy)."""


def throughput(count: int, big: int) -> None:
    rubric = default_rubric()
    raws = [synth_trace(agents=10, events=100, topology="centralized" if i % 2 else
                        "hierarchical", seed=i) for i in range(count)]
    sizes = Counter(len(r["events"]) for r in raws)
    suggest(trace_from_dict(raws[0], "<warm-up>"), rubric)  # imports and caches, not timed
    times, made = [], 0
    for _ in range(3):  # fresh traces each time, so every analysis is built inside the timing
        traces = [trace_from_dict(r, f"<synth {i}>") for i, r in enumerate(raws)]
        gc.collect()
        start = time.perf_counter()
        made = sum(len(suggest(t, rubric)) for t in traces)
        times.append(time.perf_counter() - start)
    spent = min(times)
    print(f"{count} traces of {min(sizes)}-{max(sizes)} events: {spent:.2f} s, "
          f"{count / spent:.0f} traces/s on one core (analysis included, best of 3), "
          f"{made} suggestions")
    def rules_alone() -> None:
        for t in traces:  # the rules' own facts are kept on the analysis: start them afresh
            analyze(t).__dict__.pop("_rules_context", None)
            suggest(t, rubric)
    rules_only = best_of(3, rules_alone)
    print(f"  the same with each analysis already built: {count / rules_only:.0f} traces/s")
    raw = synth_trace(agents=max(50, big // 40), events=big, topology="hierarchical", seed=7)
    trace = trace_from_dict(raw, "<big>")
    start = time.perf_counter()
    analyze(trace)
    analysed = time.perf_counter() - start
    start = time.perf_counter()
    found = suggest(trace, rubric)
    spent = time.perf_counter() - start
    print(f"one {len(trace.events)}-event trace: analysis {analysed:.2f} s, rules {spent:.2f} s "
          f"({len(found)} suggestions)")


def precision_recall() -> None:
    expected = yaml.safe_load(EXPECTED.read_text("utf-8"))
    rubric = default_rubric()
    traces = [load_trace(p) for p in sorted(DEMOS.glob("*.json"))]
    said = {(s.trace_id, s.event_id, s.question): s.value
            for t in traces for s in suggest(t, rubric)}
    print(f"demo traces: {len(traces)}; rules {PRODUCER.version}; answers from "
          f"{EXPECTED.relative_to(REPO)}")
    print(f"  {'detector':<30}{'TP':>4}{'FP':>4}{'FN':>4}  precision  recall")
    for name, (question, faulty) in DETECTORS.items():
        truth = {(trace_id, event_id) for trace_id, events in expected.items()
                 for event_id, answers in events.items()
                 if question in answers and faulty(answers[question])}
        guessed = {(trace_id, event_id) for (trace_id, event_id, q), v in said.items()
                   if q == question and faulty(v)}
        tp, fp, fn = len(truth & guessed), len(guessed - truth), len(truth - guessed)
        precision = f"{tp / (tp + fp):.2f}" if tp + fp else "  -"
        recall = f"{tp / (tp + fn):.2f}" if tp + fn else "  -"
        print(f"  {name:<30}{tp:>4}{fp:>4}{fn:>4}  {precision:>9}  {recall:>6}")
        for trace_id, event_id in sorted(guessed - truth):
            print(f"      false positive: {trace_id} {event_id}")
        for trace_id, event_id in sorted(truth - guessed):
            print(f"      missed: {trace_id} {event_id}")


def whowhen(folder: Path) -> None:
    from viz_app.io.whowhen import _same_agent, annotation, import_whowhen

    rubric = default_rubric()
    print(f"Who&When at {folder}: the rules' most confident suggestion as the blamed event")
    print(f"  {'subset':<22}{'tasks':>6}{'silent':>8}{'agent':>8}{'step':>8}  (accuracy over all "
          "tasks; silence counts as wrong)")
    for subset in ("Hand-Crafted", "Algorithm-Generated"):
        files = sorted((folder / subset).glob("*.json"), key=lambda p: int(p.stem)
                       if p.stem.isdigit() else 0)
        tasks = silent = agent = step = 0
        for path in files:
            [trace] = import_whowhen(path)
            blamed = annotation(trace)
            if blamed is None:
                continue
            tasks += 1
            found = suggest(trace, rubric)
            if not found:
                silent += 1
                continue
            best = max(found, key=lambda s: s.confidence)
            event = trace.event(best.event_id)
            where = re.search(r"\[(\d+)\]", str(event.extras.get("source_id", "")))
            index = int(where.group(1)) if where else int(event.t)
            agent += _same_agent(analyze(trace).actor[event.id], blamed["mistake_agent"])
            step += index == blamed["mistake_step"]
        if tasks:
            spoke = tasks - silent
            where = f"  (on the {spoke} they spoke on: agent {agent}, step {step})" if spoke else ""
            print(f"  {subset:<22}{tasks:>6}{silent:>8}{agent / tasks:>8.0%}{step / tasks:>8.0%}"
                  f"{where}")
    for method, agent_level, step_level in PUBLISHED:
        print(f"  published: {method}: agent {agent_level}, step {step_level}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=200, help="100-event traces to time")
    parser.add_argument("--big", type=int, default=20000, help="events of the one big trace")
    parser.add_argument("--whowhen", type=Path, help="the Who&When folder of the dataset")
    args = parser.parse_args()
    print(machine(), f"load {os.getloadavg()[0]:.2f}")
    throughput(args.traces, args.big)
    precision_recall()
    if args.whowhen is not None:
        whowhen(args.whowhen)


if __name__ == "__main__":
    main()
