"""Benchmark of the trace core: load and validate, and full analysis, against a bare json.loads.

Run: python bench/bench_core.py [--sizes 1000 20000 200000]
Prints, per synthetic trace, the best of several runs of each step as a ratio to a bare
`json.loads` of the same bytes measured in the same run, and peak memory (tracemalloc, in a
separate pass) as a multiple of the file size. Targets: load <= 3x, analysis <= 10x, memory <= 10x.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
import tracemalloc
from pathlib import Path

import orjson

from viz_app.analysis import analyze
from viz_app.io.native import load_trace
from viz_app.synth import synth_trace
from timing import best_of, machine


def full_analysis(trace) -> None:
    """Everything the app and `orchviz inspect` compute, from a fresh analysis."""
    trace._analysis = None
    analysis = analyze(trace)
    analysis.figures
    analysis.spawn_tree
    analysis.communication


def measure(events: int, folder: Path) -> dict:
    agents = max(8, events // 25)
    path = folder / f"synth-{events}.json"
    path.write_bytes(orjson.dumps(synth_trace(agents, events, seed=1)))
    data = path.read_bytes()
    repeats = 5 if events <= 20_000 else 2
    parse = best_of(repeats, lambda: json.loads(data))
    load = best_of(repeats, lambda: load_trace(path))
    trace = load_trace(path)
    analysis = best_of(repeats, lambda: full_analysis(trace))
    del trace
    gc.collect()
    tracemalloc.start()
    trace = load_trace(path)
    full_analysis(trace)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"events": events, "agents": agents, "mb": len(data) / 1e6, "json_loads_s": parse,
            "load_ratio": load / parse, "analysis_ratio": analysis / parse,
            "memory_ratio": peak / len(data)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 20_000, 200_000])
    args = parser.parse_args()
    print(machine())
    print(f"{'events':>8} {'MB':>6} {'json.loads':>11} {'load/parse':>11} {'analysis/parse':>15} "
          f"{'peak mem/file':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            r = measure(size, Path(tmp))
            print(f"{r['events']:>8} {r['mb']:>6.1f} {r['json_loads_s']:>10.3f}s "
                  f"{r['load_ratio']:>10.2f}x {r['analysis_ratio']:>14.2f}x {r['memory_ratio']:>13.2f}x",
                  flush=True)


if __name__ == "__main__":
    main()
