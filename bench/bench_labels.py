"""Label store speed on SQLite: the median time to save one label, and to export 100,000.

    python bench/bench_labels.py [--labels 100000] [--saves 200]

Targets: a save under 20 ms, the export (current labels -> JSON Lines) under 2 s.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from viz_app.export import export  # noqa: E402
from viz_app.io.native import load_trace  # noqa: E402
from viz_app.labels.label import Label, now  # noqa: E402
from viz_app.labels.rubric import Rubric  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

DEMO = Path(__file__).resolve().parent.parent / "demo_traces" / "10_review_premature_stop.json"
SAVE_TARGET_MS = 20.0
EXPORT_TARGET_S = 2.0


def synthetic_labels(rubric: Rubric, trace_id: str, count: int) -> list[Label]:
    """`count` labels, each on its own (trace, reviewer) pair, so every one of them is current."""
    stamp = now()
    return [Label(label_id=f"bench-{i}", trace_id=f"{trace_id}-{i % 1000}", trace_sha256="0" * 64,
                  event_id="e12", question="aggregation_quality", value=1 + i % 5,
                  reward=(i % 5) / 2 - 1, reviewer=f"reviewer-{i // 1000}", created_at=stamp,
                  rubric_version=rubric.version, rubric_sha256=rubric.sha256)
            for i in range(count)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=100_000)
    parser.add_argument("--saves", type=int, default=200)
    args = parser.parse_args()
    trace = load_trace(DEMO)
    with tempfile.TemporaryDirectory() as folder:
        store = Workspace.open(Path(folder) / "bench.db").labelling
        times = []
        for i in range(args.saves):
            start = time.perf_counter()
            store.save(trace, "aggregation_quality", 1 + i % 5, "bench", "e12")
            times.append(time.perf_counter() - start)
        save_ms = statistics.median(times) * 1000

        store.add(synthetic_labels(store.rubric, trace.trace_id, args.labels))
        runs, cpu = [], []
        for run in range(3):
            start, start_cpu = time.perf_counter(), time.process_time()
            labels = store.current_records()
            export("jsonl", labels, {}, store.rubric, Path(folder) / f"out{run}.jsonl")
            runs.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        export_s = statistics.median(runs)
        stored = store.count()
    print(f"save one label (median of {args.saves}): {save_ms:.2f} ms  "
          f"(target {SAVE_TARGET_MS:.0f} ms: {save_ms / SAVE_TARGET_MS:.2f} of it)")
    print(f"export {len(labels):,} current labels of {stored:,} stored (median of 3): "
          f"{export_s:.2f} s  (target {EXPORT_TARGET_S:.0f} s: "
          f"{export_s / EXPORT_TARGET_S:.2f} of it; CPU {statistics.median(cpu):.2f} s, load "
          f"average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    return 0 if save_ms < SAVE_TARGET_MS and export_s < EXPORT_TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
