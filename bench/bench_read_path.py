"""Benchmark of the compiled read path (issue 28): what reading a trace costs against a bare
`orjson.loads` of the same bytes, measured in one run, in CPU seconds on one core.

Run: python bench/bench_read_path.py [--events 20000] [--traces 2000] [--turns 7]
     [--part app|index|both]

Part 1, the app: one trace of `--events` events (synth_trace, 800 agents, ~380 bytes an event),
written as `write_trace` writes it (indented JSON). Bare parse: read the file and
`orjson.loads` it. Load: `load_trace(path)` (read, decode into the trace's structs with
msgspec, check, check references, hash the bytes: the trace the app holds), then each step
alone. Then the same trace with other keys in a third of its events (`kind`, `inferred_by`),
which the general path reads. Target: load within 1.5x the bare parse.

Part 2, the pool index: `--traces` traces of ~100 events in one Parquet shard as the pool
writes them (`bench_pool_index.write_pool`). Bare parse: read the shard's columns and
`orjson.loads` every JSON column. Index per trace: `summarise_shard` (read each row and decode
it into the trace's structs, the summary: figures, critical path, targets under the default rubric, words,
the row), then its steps one by one (`bench_pool_index.breakdown`). The writer (DuckDB rows,
FTS5 words) is not in it: bench_pool_index measures indexing end to end. Target: within 2x.

Every figure is the least CPU time of `--turns` runs taken in turns (bare parse, then the
path measured, and again), so that a loaded machine weighs on both alike; the load average is
printed beside them.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pool_index import breakdown, parse_shard, write_pool  # noqa: E402
from timing import machine  # noqa: E402

from viz_app.io import pool  # noqa: E402
from viz_app.io.decode import decode  # noqa: E402
from viz_app.io.native import _check_references, load_trace, trace_from_dict, write_trace  # noqa: E402
from viz_app.labels.rubric import default_rubric  # noqa: E402
from viz_app.store.pool_index import summarise_shard  # noqa: E402
from viz_app.synth import synth_trace  # noqa: E402


def cpu_best(turns: int, steps: dict[str, Callable[[], object]]) -> dict[str, float]:
    """The least CPU seconds of each step over `turns` rounds, the steps taken in turns, each
    after a full collection and with the collector paused (as the read path pauses it)."""
    best = dict.fromkeys(steps, float("inf"))
    clock = time.process_time
    for _ in range(turns):
        for name, step in steps.items():
            gc.collect()
            gc.disable()
            started = clock()
            step()
            best[name] = min(best[name], clock() - started)
            gc.enable()
    return best


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def app_load(folder: Path, events: int, turns: int) -> None:
    path = write_trace(trace_from_dict(synth_trace(800, events, "hierarchical", seed=1), "synth"),
                       folder / "big.json")
    data = path.read_bytes()
    record = decode(data)
    assert record is not None, "the synthetic trace should take the compiled path"
    raw = orjson.loads(data)
    for index, event in enumerate(raw["events"]):
        if index % 3 == 0:  # keys orchviz does not read: the general path
            event["kind"], event["inferred_by"] = "step", {"rule": "r", "n": index}
    other = folder / "other_keys.json"
    other.write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2))
    assert decode(other.read_bytes()) is None
    best = cpu_best(turns, {
        "bare parse (read + orjson.loads)": lambda: orjson.loads(path.read_bytes()),
        "load_trace": lambda: load_trace(path),
        "  decode (msgspec + key check)": lambda: decode(data),
        "  references": lambda: _check_references(record, "x", ""),
        "  sha256 of the bytes": lambda: hashlib.sha256(data).hexdigest(),
        "bare parse, a third of events with other keys": lambda: orjson.loads(other.read_bytes()),
        "load_trace of it (the general path)": lambda: load_trace(other),
    })
    bare = best["bare parse (read + orjson.loads)"]
    print(f"\napp: one trace of {events:,} events, {len(data) / 1e6:.1f} MB (indented), "
          f"load average {load_average()}")
    for name, seconds in best.items():
        if name.startswith("bare parse"):
            bare = seconds  # each load against the bare parse of its own bytes
        print(f"  {name:<46} {seconds * 1000:8.1f} ms CPU  {seconds / bare:5.2f}x")
    print(f"  target: load_trace within 1.5x the bare parse")


def index_per_trace(folder: Path, traces: int, turns: int) -> None:
    write_pool(folder / "pool", traces, traces)
    shard = pool.shards(str(folder / "pool"))[0]
    rubric = default_rubric()
    best = cpu_best(turns, {"bare parse": lambda: parse_shard(shard),
                            "summarise_shard": lambda: summarise_shard(shard, rubric)})
    bare, index = best["bare parse"], best["summarise_shard"]
    print(f"\npool index: one shard of {traces:,} traces of ~100 events, "
          f"load average {load_average()}")
    print(f"  bare parse (columns + orjson.loads) {bare * 1000 / traces:.3f} ms CPU a trace")
    print(f"  summarise_shard                     {index * 1000 / traces:.3f} ms CPU a trace "
          f"({index / bare:.2f}x; target 2x)")
    steps = breakdown(str(folder / "pool"))
    print("  its steps, ms CPU a trace: " + ", ".join(f"{name} {ms:.3f}"
                                                      for name, ms in steps.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--traces", type=int, default=2_000)
    parser.add_argument("--turns", type=int, default=7)
    parser.add_argument("--part", choices=("app", "index", "both"), default="both",
                        help="measure the app's load, the pool index, or both (default)")
    args = parser.parse_args()
    print(machine())
    work = Path(tempfile.mkdtemp(prefix="bench-read-"))
    try:
        if args.part in ("app", "both"):
            app_load(work, args.events, args.turns)
        if args.part in ("index", "both"):
            index_per_trace(work, args.traces, args.turns)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
