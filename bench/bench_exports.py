"""Training exports at scale: 100,000 current labels written in every training shape, as a file
and as a `datasets` folder, each timed and its peak memory measured in a process of its own.

    python bench/bench_exports.py [--labels 100000] [--shapes stepwise,verl] [--no-hf]
                                  [--repeat 3]

The labels are made on synthetic orchestrations (`viz_app.synth`, 240 events and 12 agents each,
cloned under their own ids): three reviewers on most targets (aggregates, messages, the stop,
the trace), agreeing nine times in ten, with 'should have stopped at' pointers and pairwise
judgements. Each shape runs `viz_app.export.write_export` from the records and traces in
memory: the export's own cost (reading 100,000 current labels from the store is
bench/bench_labels.py's figure; importing orchviz and pyarrow, with the pandas pyarrow's first
conversion imports, is done before and reported apart: a process pays it once). Time is that call's CPU time (its wall clock beside: on a
machine other work shares, the wall clock also counts their turns); peak is the process's peak
resident memory during it (Linux: the high-water mark is reset just before, through
/proc/self/clear_refs), with what the process held before (the traces and labels) beside.
Targets: under 5 s of CPU and under 500 MB peak each.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import machine  # noqa: E402

from viz_app.export import FORMATS, TRAINING, ExportInput, write_export  # noqa: E402

TIME_TARGET_S = 5.0
MEMORY_TARGET_MB = 500.0
TEMPLATES = 8
"""Distinct synthetic orchestrations; the rest are clones of them under their own ids."""


def _rss_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


class AnonPeak:
    """The peak of the process's anonymous memory (RssAnon: what it allocated, not the files
    it maps), sampled every few milliseconds while it runs."""

    def __init__(self):
        import threading

        self.peak = _rss_mb("RssAnon")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _rss_mb("RssAnon"))

    def __enter__(self) -> AnonPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb("RssAnon"))


def _reset_peak() -> None:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def make_data(labels_wanted: int, seed: int = 7):
    """Traces and current label records: about `labels_wanted` of them."""
    from viz_app.analysis import analyze
    from viz_app.io.native import trace_from_dict
    from viz_app.labels.label import FIELDS
    from viz_app.labels.pairs import PAIRWISE_QUESTION
    from viz_app.labels.rubric import default_rubric, reward_of, targets
    from viz_app.synth import synth_trace

    rubric = default_rubric()
    rng = random.Random(seed)
    templates = [trace_from_dict(synth_trace(12, 240, "hierarchical", seed + i), f"t{i}")
                 for i in range(TEMPLATES)]
    plans = []
    for template in templates:
        analysis = analyze(template)
        plans.append((template, analysis, targets(rubric, analysis)))
    stamp = "2026-01-02T03:04:05.000000Z"

    def label(trace, event_id, question, value, reviewer, **extra):
        row = dict.fromkeys(FIELDS)
        row.update(label_id=uuid.uuid4().hex, trace_id=trace.trace_id,
                   trace_sha256=trace.sha256, event_id=event_id, question=question,
                   value=value, reward=reward_of(rubric.question(question), value)
                   if question != PAIRWISE_QUESTION else None, reviewer=reviewer,
                   created_at=stamp, rubric_version=rubric.version,
                   rubric_sha256=rubric.sha256, comment="", seconds_spent=12.0, source="human",
                   origin="", identified_by="name")
        row.update(extra)
        return row

    traces, records, n = {}, [], 0
    while len(records) < labels_wanted:
        template, analysis, found = plans[n % TEMPLATES]
        trace = msgspec.structs.replace(template, trace_id=f"bench-{n}",
                                        task_id=f"task-{n // 5}")
        trace._analysis = None
        trace._sha256 = uuid.uuid4().hex * 2
        traces[trace.trace_id] = trace
        for target in found:
            for question_id in target.questions:
                question = rubric.question(question_id)
                if question.ask_when is not None or not question.choices:
                    continue
                if question.kind == "tags":
                    agreed = [question.choices[0].value]
                else:
                    agreed = rng.choice([c.value for c in question.choices])
                for reviewer in ("ann", "bob", "cy"):
                    value = agreed if rng.random() < 0.9 else rng.choice(
                        [c.value for c in question.choices])
                    if question.kind == "tags" and not isinstance(value, list):
                        value = [value]
                    records.append(label(trace, target.event_id, question_id, value, reviewer))
                    if value in ("premature", "late"):
                        here = analysis.position[target.event_id]
                        pool = analysis.order[here + 1:] if value == "premature" \
                            else analysis.order[:here]
                        if pool:
                            records.append(label(trace, target.event_id,
                                                 "stop_should_have_been", pool[len(pool) // 2].id,
                                                 reviewer))
        if n % 5 == 4:
            first, second = f"bench-{n - 1}", trace.trace_id
            for reviewer in ("ann", "bob"):
                records.append(label(traces[first], None, PAIRWISE_QUESTION,
                                     {"chosen": second, "strength": 2, "pair_sha256": "x"},
                                     reviewer, pair_trace_id=second, comment="waits longer"))
        n += 1
    for record in records:
        record["event_id"] = record["event_id"] or None
    return traces, records[:labels_wanted], rubric


def _import_arrow() -> float:
    """Import pyarrow as a first Arrow export would (its first conversion imports pandas too);
    returns the CPU seconds it took. Like the imports of orchviz itself, it is paid once per
    process, whatever the export's size, and is left out of an export's CPU time."""
    cpu = time.process_time()
    import pyarrow as pa
    import pyarrow.parquet  # noqa: F401

    pa.array([0])
    return time.process_time() - cpu


def run_one(data: Path, shape: str, hf: bool) -> dict:
    """Export one shape in this process; time and peak memory."""
    with data.open("rb") as found:
        traces, records, rubric = pickle.load(found)
    imports = _import_arrow()
    given = ExportInput(labels=records, traces=traces, rubric=rubric)
    gc.collect()
    before = _rss_mb("VmRSS")
    _reset_peak()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / ("hf" if hf else FORMATS[shape].file_name)
        with AnonPeak() as anon:
            start, cpu = time.perf_counter(), time.process_time()
            written = write_export(shape, given, out, hf_dataset=hf)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        size = sum(p.stat().st_size for p in written.paths)
    return {"shape": shape, "hf": hf, "seconds": seconds, "cpu": cpu, "peak_mb": _rss_mb("VmHWM"),
            "anon_mb": anon.peak,
            "held_mb": before, "rows": written.rows, "labels": len(records),
            "traces": len(traces), "mb_written": size / 2**20, "imports": imports}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", type=int, default=100_000)
    parser.add_argument("--shapes", default=",".join(TRAINING))
    parser.add_argument("--no-hf", action="store_true", help="skip the datasets folders")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each export this many times (each in a process of its own) "
                             "and report its least CPU time and its greatest peak: on a shared "
                             "machine other processes only ever add to CPU time")
    parser.add_argument("--one", nargs=3, metavar=("DATA", "SHAPE", "HF"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        data, shape, hf = args.one
        print(json.dumps(run_one(Path(data), shape, hf == "1")))
        return 0
    print(machine())
    print("load average (1, 5, 15 min) at the start: %.2f %.2f %.2f" % os.getloadavg())
    start = time.perf_counter()
    traces, records, rubric = make_data(args.labels)
    print(f"{len(records):,} current labels on {len(traces):,} traces of 240 events "
          f"(made in {time.perf_counter() - start:.1f} s)")
    failed = 0
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "data.pickle"
        with data.open("wb") as out:
            pickle.dump((traces, records, rubric), out, protocol=pickle.HIGHEST_PROTOCOL)
        del traces, records
        print(f"{'shape':<18}{'as':<9}{'rows':>8}{'MB out':>9}{'wall s':>8}{'CPU s':>8}"
              f"{'peak MB':>9}{'anon MB':>9}{'held MB':>9}{'import s':>9}")
        for shape in args.shapes.split(","):
            for hf in ((False,) if args.no_hf else (False, True)):
                runs = []
                for _ in range(max(1, args.repeat)):
                    done = subprocess.run([sys.executable, __file__, "--one", str(data), shape,
                                           "1" if hf else "0"], capture_output=True, text=True)
                    if done.returncode:
                        break
                    runs.append(json.loads(done.stdout.splitlines()[-1]))
                if done.returncode:
                    print(f"{shape}: failed\n{done.stderr[-2000:]}")
                    failed += 1
                    continue
                r = min(runs, key=lambda run: run["cpu"])
                r = {**r, "peak_mb": max(run["peak_mb"] for run in runs),
                     "anon_mb": max(run["anon_mb"] for run in runs)}
                ok = r["cpu"] < TIME_TARGET_S and r["peak_mb"] < MEMORY_TARGET_MB
                failed += not ok
                print(f"{shape:<18}{'datasets' if hf else 'file':<9}{r['rows']:>8,}"
                      f"{r['mb_written']:>9.1f}{r['seconds']:>8.2f}{r['cpu']:>8.2f}"
                      f"{r['peak_mb']:>9.0f}{r['anon_mb']:>9.0f}{r['held_mb']:>9.0f}{r['imports']:>9.2f}"
                      + ("" if ok else "  over target"))
    print("load average (1, 5, 15 min) at the end: %.2f %.2f %.2f" % os.getloadavg())
    print(f"targets: under {TIME_TARGET_S:g} s of CPU and {MEMORY_TARGET_MB:g} MB peak per shape. "
          "CPU s is the process's CPU time (what the export costs; wall s adds what other "
          "processes took of a shared machine); peak MB is the whole process's peak resident "
          "memory, anon MB the peak of what it allocated (files it maps left out), held MB what "
          "it held before (the traces and labels), import s the CPU time of importing pyarrow "
          "(and the pandas its first conversion imports), paid once per process before the "
          "export and left out of CPU s as orchviz's own imports are")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
