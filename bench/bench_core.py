"""Benchmark of the trace core: load and validate, and full analysis, against a bare json.loads.

Run: python bench/bench_core.py [--sizes 1000 20000 200000] [--lean 1000000]
Prints, per synthetic trace, the best of several runs of each step as a ratio to a bare
`json.loads` of the same bytes measured in the same run, and peak memory as a multiple of the
file size: the Python objects' peak (tracemalloc, in a separate pass), and the whole process's
peak resident memory (in a fresh process, which also counts what tracemalloc cannot see, such as
a parser's own buffers), after loading and after a full analysis. `--sizes` makes realistic
traces (synth_trace, ~380 bytes an event); `--lean` makes traces of events with only the keys the
schema requires (lean_trace, ~60 bytes an event: the most memory per byte of file).
Targets: load <= 3x, analysis <= 10x, memory <= 10x.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import orjson

from viz_app.analysis import analyze
from viz_app.io.native import load_trace
from viz_app.synth import lean_trace, synth_trace
from timing import best_of, machine

PEAK_RSS = """
import sys
from viz_app.analysis import analyze
from viz_app.io.native import load_trace

def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))

trace = load_trace(sys.argv[1])
loaded = peak()
analysis = analyze(trace)
analysis.figures, analysis.spawn_tree, analysis.communication
print(loaded, peak())
"""
"""Loads a trace in a fresh process and prints its peak resident bytes after loading and after a
full analysis: the high-water mark of its own memory (Linux's VmHWM; ru_maxrss would report the
benchmark's own size, which a child inherits across exec)."""


def full_analysis(trace) -> None:
    """Everything the app and `orchviz inspect` compute, from a fresh analysis."""
    trace._analysis = None
    analysis = analyze(trace)
    analysis.figures
    analysis.spawn_tree
    analysis.communication


def peak_rss(path: Path) -> tuple[int, int]:
    """Peak resident bytes of a fresh process after loading `path`, and after analysing it."""
    done = subprocess.run([sys.executable, "-c", PEAK_RSS, str(path)], capture_output=True,
                          text=True, check=True)
    loaded, analysed = done.stdout.split()
    return int(loaded), int(analysed)


def measure(name: str, raw: dict, folder: Path) -> dict:
    path = folder / f"{name}.json"
    path.write_bytes(orjson.dumps(raw))
    events = len(raw["events"])
    del raw
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
    del trace
    gc.collect()
    loaded, analysed = peak_rss(path)
    return {"name": name, "events": events, "mb": len(data) / 1e6, "json_loads_s": parse,
            "load_ratio": load / parse, "analysis_ratio": analysis / parse,
            "memory_ratio": peak / len(data), "rss_load_mb": loaded / 1e6,
            "rss_load_ratio": loaded / len(data), "rss_ratio": analysed / len(data)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 20_000, 200_000],
                        help="events of realistic synthetic traces")
    parser.add_argument("--lean", type=int, nargs="*", default=[],
                        help="events of traces with only the required keys (1000000: 60 MB)")
    args = parser.parse_args()
    cases = [(f"synth-{n}", lambda n=n: synth_trace(max(8, n // 25), n, seed=1))
             for n in args.sizes]
    cases += [(f"lean-{n}", lambda n=n: lean_trace(n)) for n in args.lean]
    print(machine())
    print(f"{'trace':<14} {'events':>8} {'MB':>6} {'json.loads':>11} {'load/parse':>11} "
          f"{'analysis/parse':>15} {'py peak/file':>13} {'RSS loaded':>11} {'RSS/file':>9} "
          f"{'+analysis':>10}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, make in cases:
            r = measure(name, make(), Path(tmp))
            print(f"{r['name']:<14} {r['events']:>8} {r['mb']:>6.1f} {r['json_loads_s']:>10.3f}s "
                  f"{r['load_ratio']:>10.2f}x {r['analysis_ratio']:>14.2f}x "
                  f"{r['memory_ratio']:>12.2f}x {r['rss_load_mb']:>8.0f} MB "
                  f"{r['rss_load_ratio']:>8.1f}x {r['rss_ratio']:>9.1f}x", flush=True)


if __name__ == "__main__":
    main()
