"""Benchmark of analysis at the extremes of shape: deep spawn chains and very wide fan-outs.

Run: python bench/bench_scaling.py [--chains 20000 100000] [--fanouts 100000]
Prints, per synthetic trace, the time of a bare `json.loads` of its file, then loading and a full
analysis (every figure, graph and order the app and `orchviz inspect` compute) as seconds and as
ratios to that parse, with the slowest analysis step. Every step is linear or n log n in events and
agents, so the ratios stay flat as the chain deepens or the fan-out widens: a chain five times
deeper takes about five times as long. Target: analysis <= 10x the parse at any shape.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import orjson

from viz_app.analysis import analyze
from viz_app.io.native import load_trace
from viz_app.synth import chain_trace, swarm_trace
from timing import best_of, machine

STEPS = ("warnings", "agents", "lanes", "figures", "spawn_tree", "communication", "event_dag")
"""What a full analysis builds, in the order the app asks for it."""


def analysis_steps(trace) -> dict[str, float]:
    """Seconds of each step of a fresh analysis (a step reuses what the steps before it built)."""
    trace._analysis = None
    times: dict[str, float] = {}
    start = time.perf_counter()
    analysis = analyze(trace)
    times["warnings"] = time.perf_counter() - start
    for step in STEPS[1:]:
        start = time.perf_counter()
        getattr(analysis, step)
        times[step] = time.perf_counter() - start
    return times


def measure(name: str, raw: dict, folder: Path) -> dict:
    path = folder / f"{name}.json"
    path.write_bytes(orjson.dumps(raw))
    data = path.read_bytes()
    repeats = 3 if len(raw["events"]) <= 50_000 else 1
    parse = best_of(repeats, lambda: json.loads(data))
    load = best_of(repeats, lambda: load_trace(path))
    trace = load_trace(path)
    runs = [analysis_steps(trace) for _ in range(repeats)]
    steps = min(runs, key=lambda r: sum(r.values()))
    analysis = sum(steps.values())
    slowest = max(steps, key=steps.__getitem__)
    return {"name": name, "events": len(raw["events"]), "mb": len(data) / 1e6, "parse_s": parse,
            "load_s": load, "analysis_s": analysis, "load_ratio": load / parse,
            "analysis_ratio": analysis / parse, "slowest": f"{slowest} {steps[slowest]:.2f}s"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, nargs="*", default=[20_000, 100_000],
                        help="depths of spawn chains to analyse")
    parser.add_argument("--fanouts", type=int, nargs="*", default=[100_000],
                        help="children of one orchestrator to analyse")
    args = parser.parse_args()
    cases = [(f"chain of {n:,} spawns", lambda n=n: chain_trace(n)) for n in args.chains]
    cases += [(f"fan-out of {n:,} children", lambda n=n: swarm_trace(n)) for n in args.fanouts]
    print(machine())
    print(f"{'trace':<28} {'events':>8} {'MB':>6} {'json.loads':>11} {'load':>8} {'analysis':>9} "
          f"{'load/parse':>11} {'analysis/parse':>15}  slowest step")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in cases:
            r = measure(name.split()[0] + name.split()[-2].replace(",", ""), make(), Path(tmp))
            print(f"{name:<28} {r['events']:>8} {r['mb']:>6.1f} {r['parse_s']:>10.3f}s "
                  f"{r['load_s']:>7.2f}s {r['analysis_s']:>8.2f}s {r['load_ratio']:>10.2f}x "
                  f"{r['analysis_ratio']:>14.2f}x  {r['slowest']}", flush=True)


if __name__ == "__main__":
    main()
