"""Benchmark of the pool index: indexing throughput against a bare parse, how it scales over
workers, and queries at scale.

Run: python bench/bench_pool_index.py [--traces 100000] [--rows 1000000] [--workers 2] [--ray]

Part 1 writes a pool of `--traces` synthetic traces of about 100 events (a few hundred traces
from `synth.synth_trace`, each written under many ids, tasks and rewards) straight as Parquet
shards in the layout `viz_app.io.pool` writes (fields as text columns, events as JSON text, row
groups of 64, each row's `_sha256`; `--no-sha` leaves it out, as a pool written by another
tool does, and the hash is then computed from the trace), then measures on one core: a bare
parse (reading the shards' columns and `orjson.loads` of every JSON column: the least any
reader must do), what each step of `summarise_shard` costs per trace on the first shard
(reading and validating, the analysis figures, the label targets, the words), and indexing
(`PoolIndex.update` with one worker: validation, analysis, targets under the default rubric,
the DuckDB rows and the FTS5 words).

Scaling: indexing on one core, on `--workers` processes and (`--ray`) on a local Ray of as
many CPUs, in turns (`--turns`, best of each: a shared machine's load varies), each run in a
Python process of its own, as `orchviz pool index` runs (its process pool forked, not spawned;
a local Ray started in it before the update, its workers warmed with a task each, both timed
apart), each run's wall time and CPU seconds (the process; each kind of process it started:
the pool's workers, Ray's workers and daemons), the load average around it, and the costs
`PoolUpdate.costs` measured in the run: per trace, the workers' CPU (reading, decoding and
summarising; making and pickling the batch) and this process's serial part (unpickling, the
DuckDB rows, the FTS5 words), and the fixed part (publishing the file, forgetting old words).
From them, the time for N cores is projected: on one machine the writer shares the cores,
T(N) = n * max((s + w) / N, v) + fixed; on a Ray cluster of C CPUs with the writer on a
machine of its own, T(C) = n * max(s / C, v) + fixed, where s is the workers' CPU, w the
writer's CPU and v its serial part per trace (the larger of its words, written on a thread of
their own, and the rest: receiving and the DuckDB rows). Each run also says how much of the
cores other processes took meanwhile (the machine's busy CPU from /proc/stat, less this
run's), and the benchmark how fast each engine could run on cores of its own from its CPU
seconds against one core's.
Target: 2 workers at least 1.8x one core. `--compare DIR` runs the same turns with the viz_app
of another checkout too (main's, say), one after the other, so code is compared on the same
minutes of a shared machine; `--pool DIR` indexes a pool written before (`--write-pool`);
`--scaling-only` skips the bare parse and the per-step costs.

`--write-pool DIR` writes the pool into DIR (kept) and stops: for an end-to-end run of
`orchviz pool index DIR` (the million-trace figure in docs/pools.md).

Part 2 puts `--rows` summary rows straight into a fresh index (DuckDB rows and FTS5 words made
here, not by reading traces), each pointing at a real shard and row of part 1's pool, and
measures from a fresh `PoolIndex`: the library's first page (count + page), a search (count +
first page), a filter plus count, and opening one trace (locate + read its row group).
Targets: < 1 s, < 1 s, < 0.5 s, < 2 s. `--rows 0` runs part 1 only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import resource
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

import duckdb
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from viz_app.analysis import analyze, forget
from viz_app.io import pool
from viz_app.labels.rubric import default_rubric, required_questions
from viz_app.model import TOPOLOGIES, paused_gc
from viz_app.summary import search_text
from viz_app.store.pool_index import (POOL_TEXT_LIMIT, Condition, PoolIndex, pack_words,
                                      summarise_shard)
from viz_app.synth import synth_trace
from timing import best_of, machine

SCHEMA = pa.schema([(name, pa.string()) for name in pool.FIELDS + pool.META_COLUMNS])
BASES = 200
WORDS = ("alpha beta gamma delta search verify summarise browse compile retry plan merge "
         "critic judge vote tool error timeout aggregate stop").split()


def write_pool(folder: Path, traces: int, shard_rows: int, sha: bool = True) -> int:
    """Parquet shards of `traces` rows made from BASES synthetic traces; returns the bytes of
    JSON text written (what a bare parse reads)."""
    bases = []
    for i in range(BASES):
        raw = synth_trace(4 + i % 6, 100, topology=TOPOLOGIES[i % 6], seed=i)
        bases.append({name: orjson.dumps(raw[name]).decode() if name in pool.JSON_COLUMNS
                      and raw.get(name) is not None else raw.get(name) for name in pool.FIELDS})
    folder.mkdir(parents=True)
    text_bytes = 0
    for start in range(0, traces, shard_rows):
        columns: dict[str, list] = {name: [] for name in SCHEMA.names}
        for i in range(start, min(traces, start + shard_rows)):
            base = bases[i % BASES]
            rewards = orjson.dumps({"team": (i * 37 % 100) / 100, "tool": (i % 7) / 7}).decode()
            row = {**base, "trace_id": f"rollout-{i:07d}", "task_id": f"task-{i // 8:06d}",
                   "rewards": rewards, "_sha256": None, "_source": None,
                   "_source_format": "orchviz"}
            if sha:  # as `orchviz pool write` keeps it: the hash of the file the trace came from
                row["_sha256"] = hashlib.sha256(f"{row['trace_id']}{rewards}".encode()).hexdigest()
            for name in SCHEMA.names:
                columns[name].append(row.get(name))
            text_bytes += sum(len(v) for v in row.values() if isinstance(v, str))
        pq.write_table(pa.table(columns, schema=SCHEMA), folder / f"part-{start // shard_rows:05d}.parquet",
                       row_group_size=64, compression="zstd")
    return text_bytes


def cpu_seconds() -> float:
    """CPU seconds of this process and of its children that have ended (the workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def bare_parse(location: str) -> tuple[float, float]:
    """Wall and CPU seconds to read every shard's columns and parse every JSON column with
    orjson."""
    started, cpu = time.perf_counter(), cpu_seconds()
    for shard in pool.shards(location):
        parse_shard(shard)
    return time.perf_counter() - started, cpu_seconds() - cpu


def parse_shard(shard: pool.Shard) -> None:
    table = pq.read_table(shard.url)
    for name in pool.JSON_COLUMNS:
        for value in table.column(name).to_pylist():
            if value is not None:
                orjson.loads(value)


def shard_ratio(location: str) -> tuple[float, float]:
    """Best of 3 seconds of a bare parse and of `summarise_shard` on the first shard, taken
    in turns, so a noisy machine weighs on both alike."""
    shard = pool.shards(location)[0]
    rubric = default_rubric()
    parse, summarise = [], []
    for _ in range(3):
        parse.append(best_of(1, lambda: parse_shard(shard)))
        summarise.append(best_of(1, lambda: summarise_shard(shard, rubric)))
    return min(parse), min(summarise)


def breakdown(location: str) -> dict[str, float]:
    """CPU milliseconds per trace of each step of `summarise_shard` on the first shard (the
    collector paused, as there): reading a row and decoding it into the trace's structs
    (`read_shard`: the compiled read path), the analysis's structural pass (agents, actors,
    spawn tree, warnings), the figures of the summary (makespan, parallelism, depth, fan-out,
    tokens, cost), the label targets that count (`rubric.required_questions`), the words
    (`search_text`) and the rest of the row (the words' copy, `pack_words`). The index keeps no
    critical path: `critical path (not indexed)` is what it would add."""
    shard = pool.shards(location)[0]
    rubric = default_rubric()
    steps = ("read + decode", "structure", "figures", "targets", "words", "row",
             "critical path (not indexed)")
    spent = dict.fromkeys(steps, 0.0)
    count = 0
    clock = time.process_time
    with paused_gc():
        rows = pool.read_shard(shard, on_error=print)
        while True:
            started = clock()
            found = next(rows, None)
            spent["read + decode"] += clock() - started
            if found is None:
                break
            trace = found[1]
            marks = [clock()]
            a = analyze(trace)
            marks.append(clock())
            (len(a.order), len(a.agents), a.depth, a.fanouts, a.makespan, a.parallelism,
             a.tokens, a.cost_usd, len(a.warnings))
            marks.append(clock())
            required_questions(rubric, a)
            marks.append(clock())
            text = search_text(trace, POOL_TEXT_LIMIT)
            marks.append(clock())
            pack_words(text)
            marks.append(clock())
            a.critical
            marks.append(clock())
            for name, start, end in zip(steps[1:], marks, marks[1:]):
                spent[name] += end - start
            forget(trace)
            count += 1
    return {name: seconds * 1000 / count for name, seconds in spent.items()}


def tree_cpu() -> dict[int, tuple[str, float]]:
    """Name and CPU seconds so far of each live process descended from this one (a local Ray's
    daemons and workers: they end after the run, so rusage cannot count them), from /proc."""
    parents: dict[int, list[int]] = {}
    cpu: dict[int, tuple[str, float]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                name, fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)
            except OSError:
                continue
            fields = fields.split()
            parents.setdefault(int(fields[1]), []).append(int(entry))
            cpu[int(entry)] = (name.split("(", 1)[1][:15],
                               (int(fields[11]) + int(fields[12])) / tick)
    found, todo = {}, list(parents.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        found[pid] = cpu.get(pid, ("?", 0.0))
        todo += parents.get(pid, [])
    return found


def machine_cpu() -> float:
    """CPU seconds the whole machine has been busy (every process, /proc/stat), to tell how
    much of the cores other people's work took during a run."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return 0.0
    busy = sum(int(x) for i, x in enumerate(fields[:8]) if i not in (3, 4))  # not idle, iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _rusage() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime)


def indexing(location: str, folder: Path, workers: int = 1, ray: bool = False,
             code: str | None = None) -> dict:
    """One index of the pool from scratch, in a fresh Python process, as `orchviz pool index`
    runs it (so a process pool is forked from a process of one thread, as the command's is:
    in this process, a local Ray's threads would make it spawn its workers): inline (`workers`
    1), on `workers` processes, or on a local Ray of `workers` CPUs started in that process
    before the update and its workers warmed with a task each (a Ray that is up, as a cluster
    serving many updates is: `ray.init` and the warm-up are timed apart). Its wall seconds (of
    the update, and of the whole process), the CPU seconds of the process and of each process
    it started, the load average before and after, and the update's own costs. `code`: the
    folder whose `viz_app` it runs (another checkout, to compare in turns), else this one's."""
    import json
    import subprocess

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    started = time.perf_counter()
    ran = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one-run",
                          json.dumps([location, str(folder), workers, ray])],
                         capture_output=True, text=True, env={
                             **os.environ, "PYTHONPATH": code or str(Path(__file__).resolve()
                                                                    .parent.parent)})
    if ran.returncode:
        raise SystemExit(f"the indexing run failed:\n{ran.stderr[-3000:]}")
    run = json.loads(ran.stdout.strip().splitlines()[-1])
    run["process_wall"] = time.perf_counter() - started
    return run


def one_run(location: str, folder: str, workers: int, ray: bool) -> dict:
    """`indexing`'s run, in the fresh process."""
    from collections import Counter

    setup = {}
    if ray:
        import ray as ray_module

        setup["ray.init"], _ = timed(lambda: ray_module.init(
            num_cpus=workers, include_dashboard=False, logging_level="ERROR",
            log_to_driver=False))

        @ray_module.remote(num_cpus=1)
        def warm() -> int:
            import viz_app.store.pool_index  # noqa: F401  (what a piece's task imports)

            time.sleep(0.5)  # long enough for each worker to take one
            return os.getpid()

        setup["warm-up"], _ = timed(lambda: ray_module.get([warm.remote()
                                                            for _ in range(workers)]))
    index = PoolIndex(Path(folder) / "pool.duckdb", location)
    shards = pool.shards(location)
    load = os.getloadavg()[0]
    own, children = _rusage()
    alive = tree_cpu()
    busy = machine_cpu()
    done = index.update(shards, rubric=default_rubric(), workers=workers,
                        ray="auto" if ray else None)
    busy = machine_cpu() - busy
    after = tree_cpu()
    own2, children2 = _rusage()
    assert done.failures == 0, index.failures(3)
    index.close()
    processes: Counter = Counter()  # CPU seconds of each kind of process it started
    processes["workers (ended)"] += children2 - children
    for pid, (name, cpu) in after.items():
        processes[name] += cpu - alive.get(pid, (name, 0.0))[1]
    if ray:
        ray_module.shutdown()
    return {"engine": done.engine, "wall": done.seconds, "traces": done.traces,
            "pieces": done.pieces, "costs": done.costs, "load": (load, os.getloadavg()[0]),
            "own_cpu": own2 - own, "children_cpu": sum(processes.values()),
            "processes": {k: round(v, 2) for k, v in processes.most_common() if v >= 0.01},
            "machine_cpu": busy, "setup": setup}


def describe(run: dict, one: float | None) -> str:
    c, n = run["costs"], run["traces"]
    workers = c["summarise_cpu"] + c["pack_cpu"]
    writer = c["writer_cpu"]
    speed = f", {one / run['wall']:.2f}x one core" if one else ""
    others = max(0.0, run["machine_cpu"] - run["own_cpu"] - run["children_cpu"])
    return (f"{run['engine']:>9}: {run['wall']:6.1f} s wall{speed}; {n / run['wall']:,.0f} "
            f"traces/s; CPU s: this process {run['own_cpu']:.1f}, its children (workers; "
            f"Ray's daemons and workers) {run['children_cpu']:.1f}; read+summarise+pack {workers:.1f} "
            f"({workers * 1000 / n:.3f} ms/trace), writer CPU {writer:.1f} "
            f"({writer * 1000 / n:.3f} ms/trace), waited {c['wait']:.1f}, "
            f"{run['pieces']} pieces; load {run['load'][0]:.2f} -> {run['load'][1]:.2f}, "
            f"others' work took {others / run['wall']:.2f} of the {os.cpu_count()} cores"
            + ("" if run["engine"] == "inline" else
               f"; {os.cpu_count()} x wall - CPU s of the run - others' = "
               f"{os.cpu_count() * run['wall'] - run['own_cpu'] - run['children_cpu'] - others:.1f}"
               " core-s idle")
            + f"\n        the process: {run['process_wall']:.1f} s wall in all (its start and "
            + "".join(f"{k} {v:.1f} s, " for k, v in run["setup"].items())
            + "the update, its end); CPU s of the processes it started: "
            + (", ".join(f"{k} {v:.2f}" for k, v in run["processes"].items()) or "none"))


def costs_table(run: dict) -> str:
    """Per trace, milliseconds of each step of a run (the workers' CPU; this process's wall)."""
    c, n = run["costs"], run["traces"]
    lines = [f"  per trace, ms ({run['engine']}, {n:,} traces, {run['pieces']} pieces):"]
    for key, what in (("summarise_cpu", "read + decode + summarise (worker CPU)"),
                      ("pack_cpu", "batch table + pickle (worker CPU)"),
                      ("receive", "unpickle (writer)"), ("write_rows", "DuckDB rows (writer)"),
                      ("write_words", "FTS5 words + copies (writer)"),
                      ("writer_cpu", "writer CPU over the three steps above"),
                      ("words_cpu", "of which the words (their thread's CPU)"),
                      ("wait", "writer waiting for the next piece"),
                      ("wait_words", "writer waiting for the words' thread")):
        unit = "CPU" if key.endswith("_cpu") else "wall"
        lines.append(f"    {what:<42} {c[key] * 1000 / n:8.3f} ({unit})")
    words = "write_words" if run["engine"] == "inline" else "wait_words"  # else overlapping
    lines.append(f"  fixed, s: publish {c['publish']:.2f}, forget {c['forget']:.2f}, rest "
                 f"{run['wall'] - sum(c[k] for k in ('receive', 'write_rows', words, 'wait', 'publish', 'forget')):.2f}")
    return "\n".join(lines)


def projection(run: dict, traces: int = 1_000_000) -> str:
    """The time to index `traces` on N cores from a run's per-trace costs (see the docstring)."""
    c, n = run["costs"], run["traces"]
    s = (c["summarise_cpu"] + c["pack_cpu"]) / n
    w = c["writer_cpu"] / n
    # with workers, the words go in on a thread of their own beside the rest of the writer
    serial = w if run["engine"] == "inline" else max(c["words_cpu"], c["writer_cpu"] -
                                                      c["words_cpu"]) / n
    fixed = (c["publish"] + c["forget"]) * traces / n  # both grow with the index
    lines = [f"  projection from the {run['engine']} run (s = {s * 1000:.3f} ms/trace of worker "
             f"CPU, w = {w * 1000:.3f} ms/trace of the writer's CPU, its serial part "
             f"{serial * 1000:.3f}):"]
    for cores in (1, 2, 4, 8, 16):
        t = traces * max((s + w) / cores, serial) + fixed
        lines.append(f"    one machine, {cores:>2} cores: {traces:,} traces in {t:7.0f} s "
                     f"({traces / t:,.0f} traces/s; {traces * s / cores / t:.0%} of it the "
                     "workers' part)")
    for cores in (64,):
        t = traces * max(s / cores, serial) + fixed
        bound = "the writer" if serial > s / cores else "the workers"
        lines.append(f"    Ray cluster of {cores} CPUs, the writer on two cores of its own: "
                     f"{traces:,} traces in {t:.0f} s ({traces / t:,.0f} traces/s, bound by "
                     f"{bound})")
    return "\n".join(lines)


def big_index(folder: Path, rows: int, shards: list[pool.Shard], shard_rows: int) -> PoolIndex:
    """An index of `rows` summary rows made here (not by reading traces), each pointing at a real
    row of the pool, with a few dozen words per trace in the word index."""
    index = PoolIndex(folder / "big.duckdb", "bench")
    rng = random.Random(0)
    con = duckdb.connect(str(index.path))
    con.execute("INSERT INTO shards SELECT url, format, compressed, '', '', 0, 0, 0 FROM "
                "(SELECT unnest(?) AS url, 'parquet' AS format, false AS compressed)",
                [[s.url for s in shards]])
    con.execute(f"""
        INSERT INTO traces
        SELECT i AS doc, printf('rollout-%07d', i) AS trace_id,
               (?)[1 + (i // {shard_rows}) % {len(shards)}] AS shard,
               (i % {shard_rows})::INTEGER AS position,
               printf('task-%06d', i // 8) AS task_id, 'synthetic' AS system,
               (?)[1 + i % 6] AS topology, 'orchviz' AS source_format,
               (80 + i % 60)::INTEGER AS events, (2 + i % 40)::INTEGER AS agents,
               (1 + i % 5)::INTEGER AS depth, (i % 997) / 3.0 AS makespan_s,
               1 + (i % 13) / 4.0 AS parallelism, (10000 + i % 50000)::DOUBLE AS tokens,
               (i % 1000) / 1e4 AS cost_usd,
               MAP {{'team': (i * 37 % 100) / 100.0, 'tool': (i % 7) / 7.0}} AS rewards,
               NULL AS targets, NULL AS target_count, '' AS sha256, 0 AS warnings,
               NULL AS rollout_step, NULL AS rollout_group, NULL AS trainer_reward,
               NULL AS task
        FROM range({rows}) t(i)""", [[s.url for s in shards], list(TOPOLOGIES[:6])])
    con.execute("INSERT OR REPLACE INTO meta VALUES ('next_doc', ?)", [str(rows)])
    con.execute("""INSERT OR REPLACE INTO meta VALUES ('reward_names', '["team", "tool"]')""")
    con.close()
    db = sqlite3.connect(index.text_path)
    batch = []
    for i in range(rows):
        words = " ".join(rng.choice(WORDS) for _ in range(24))
        rare = f" needle{i % 1000}" if i % 100 == 0 else ""
        batch.append((i, f"rollout-{i:07d} task-{i // 8:06d} orchestrator worker_{i % 40} "
                         f"{words}{rare}"))
        if len(batch) == 50_000:
            db.executemany("INSERT INTO words(rowid, body) VALUES (?, ?)", batch)
            batch = []
    db.executemany("INSERT INTO words(rowid, body) VALUES (?, ?)", batch)
    db.commit()
    db.execute("INSERT INTO words(words) VALUES ('optimize')")
    db.commit()
    db.close()
    return index


def timed(step) -> tuple[float, object]:
    started = time.perf_counter()
    value = step()
    return time.perf_counter() - started, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=100_000)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--shard-rows", type=int, default=2_000)
    parser.add_argument("--turns", type=int, default=1,
                        help="index with 1 and with --workers processes this many times, in "
                        "turns, and give the best of each (a shared machine's load varies)")
    parser.add_argument("--ray", action="store_true",
                        help="index on a local Ray of --workers CPUs too (orchviz[ray])")
    parser.add_argument("--write-pool", metavar="DIR", default=None,
                        help="only write the pool of --traces into DIR (kept), and stop")
    parser.add_argument("--no-sha", action="store_true",
                        help="write no _sha256 column values (a pool written by another tool)")
    parser.add_argument("--compare", metavar="DIR", action="append", default=[],
                        help="also index with the viz_app of this checkout (e.g. main's), in "
                        "turns with this one's (repeatable)")
    parser.add_argument("--pool", metavar="DIR", default=None,
                        help="index this pool (written by --write-pool) rather than writing one")
    parser.add_argument("--scaling-only", action="store_true",
                        help="skip the bare parse and the per-step costs: indexing runs only")
    parser.add_argument("--one-run", metavar="JSON", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_run:  # one indexing run in a process of its own (`indexing`)
        import json

        print(json.dumps(one_run(*json.loads(args.one_run))))
        return
    print(machine())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.write_pool:
        seconds, text_bytes = timed(lambda: write_pool(Path(args.write_pool), args.traces,
                                                       args.shard_rows, not args.no_sha))
        print(f"pool: {args.traces:,} traces, {text_bytes / 1e9:.1f} GB of JSON text, written "
              f"to {args.write_pool} in {seconds:.0f} s")
        return
    work = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    try:
        if args.pool:
            location = str(Path(args.pool).resolve())
            text_bytes = sum(p.stat().st_size for p in Path(location).glob("*.parquet"))
            print(f"pool: {location}, {len(pool.shards(location))} Parquet shards, "
                  f"{text_bytes / 1e6:.0f} MB (compressed)")
        else:
            location = str(work / "pool")
            seconds, text_bytes = timed(lambda: write_pool(work / "pool", args.traces,
                                                           args.shard_rows, not args.no_sha))
            print(f"pool: {args.traces:,} traces of ~100 events, {text_bytes / 1e6:.0f} MB of "
                  f"JSON text in {len(pool.shards(location))} Parquet shards (written in "
                  f"{seconds:.0f} s)")
        parse = parse_cpu = 0.0
        if not args.scaling_only:
            parse, parse_cpu = bare_parse(location)
            print(f"bare parse (read columns + orjson.loads): {parse:.1f} s, {parse_cpu:.1f} "
                  f"CPU s, {args.traces / parse_cpu:,.0f} traces per CPU second")
            parse_one, summarise_one = shard_ratio(location)
            first = min(args.traces, args.shard_rows)
            print(f"one shard ({first} traces), best of 3 taken in turns: bare parse "
                  f"{parse_one:.2f} s, summarise_shard {summarise_one:.2f} s "
                  f"({summarise_one / parse_one:.1f}x)")
            steps = breakdown(location)
            print(f"per trace, CPU ms (first shard): bare parse {parse_one * 1000 / first:.2f}; "
                  + ", ".join(f"{name} {ms:.2f}" for name, ms in steps.items())
                  + f"; summarise_shard {summarise_one * 1000 / first:.2f}")
        engines = [("one", 1, False), ("many", args.workers, False)]
        if args.ray:
            engines.append(("ray", args.workers, True))
        codes = [("this", None)] + [(f"code {c}", c) for c in args.compare]
        runs: dict[str, list[dict]] = {name: [] for name, _, _ in engines}
        others: dict[tuple[str, str], list[dict]] = {}
        for turn in range(max(1, args.turns)):
            for label, code in codes:
                mine: dict[str, list[dict]] = runs if code is None else others.setdefault(
                    label, {name: [] for name, _, _ in engines})
                for name, workers, ray in engines:
                    mine[name].append(indexing(location, work / name, workers, ray, code))
                    one = mine["one"][-1]["wall"] if name != "one" else None
                    print(f"turn {turn + 1}, {label}: {describe(mine[name][-1], one)}",
                          flush=True)
        for label, found in others.items():
            print(f"{label}: " + "; ".join(
                f"{name} " + ", ".join(f"{r['wall']:.1f} s" for r in found[name])
                + ("" if name == "one" else " (" + ", ".join(
                    f"{o['wall'] / r['wall']:.2f}x" for o, r in zip(found["one"], found[name]))
                   + " its one core of the same turn)")
                for name, _, _ in engines))
        print("this code: " + "; ".join(
            f"{name} " + ", ".join(f"{r['wall']:.1f} s" for r in runs[name])
            + ("" if name == "one" else " (" + ", ".join(
                f"{o['wall'] / r['wall']:.2f}x" for o, r in zip(runs["one"], runs[name]))
               + " its one core of the same turn)")
            for name, _, _ in engines))
        best = {name: min(found, key=lambda r: r["wall"]) for name, found in runs.items()}
        one = best["one"]
        if parse_cpu:
            print(f"index, 1 core: {one['traces'] / one['own_cpu']:,.0f} traces per CPU second "
                  f"({one['own_cpu'] / parse_cpu:.1f}x the bare parse in CPU seconds, "
                  f"{one['wall'] / parse:.1f}x in wall time; target 2x)")
        print(f"best of {max(1, args.turns)} in turns: 1 core {one['wall']:.1f} s; "
              + "; ".join(f"{best[name]['engine']} ({workers}) {best[name]['wall']:.1f} s: "
                          f"{one['wall'] / best[name]['wall']:.2f}x"
                          for name, workers, _ in engines[1:]))
        cores = os.cpu_count() or 1
        for name, workers, _ in engines[1:]:
            run = best[name]
            mine = run["own_cpu"] + run["children_cpu"]
            spare = cores - max(0.0, run["machine_cpu"] - mine) / run["wall"]
            print(f"{run['engine']}: CPU {mine:.1f} s in all against {one['own_cpu']:.1f} on "
                  f"one core ({mine / one['own_cpu']:.2f}x); with {workers} cores of its own it "
                  f"could run {min(workers, cores) * one['own_cpu'] / mine:.2f}x one core; here "
                  f"others left it {spare:.2f} cores and it used {mine / run['wall']:.2f}")
        for name in best:
            print(costs_table(best[name]))
        print(projection(best["many"]))
        size = sum(p.stat().st_size for p in (work / "one").iterdir())
        print(f"index files: {size / 1e6:.0f} MB for {text_bytes / 1e6:.0f} MB of traces")

        if args.rows <= 0:  # indexing only
            print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            return
        shards = pool.shards(location)
        seconds, big = timed(lambda: big_index(work, args.rows, shards, args.shard_rows))
        print(f"\n{args.rows:,} summary rows put into a fresh index in {seconds:.0f} s "
              "(made here, not by indexing traces)")
        fresh = lambda: PoolIndex(big.path, "bench")  # noqa: E731  (as a new app process would)
        first, _ = timed(lambda: (fresh().count(), fresh().page(limit=50)))
        print(f"first page (count + 50 rows): {first * 1000:.0f} ms (target < 1000)")
        search, found = timed(lambda: (fresh().count(search="needle7"),
                                       fresh().page(search="needle7", limit=50)))
        print(f"search 'needle7' ({found[0]:,} hits, count + first page): "
              f"{search * 1000:.0f} ms (target < 1000)")
        common, found = timed(lambda: (fresh().count(search="merge"),
                                       fresh().page(search="merge", limit=50)))
        print(f"search 'merge' ({found[0]:,} hits, count + first page): "
              f"{common * 1000:.0f} ms (target < 1000)")
        filters = [Condition(field="agents", op=">", value=30),
                   Condition(field="topology", op="=", value=TOPOLOGIES[1])]
        counting, n = timed(lambda: fresh().count(filters))
        print(f"filter agents>30 and topology={TOPOLOGIES[1]} + count ({n:,}): "
              f"{counting * 1000:.0f} ms (target < 500)")
        sorted_page, _ = timed(lambda: fresh().page(filters, sort="reward.team",
                                                    descending=True, offset=5000, limit=50))
        print(f"the same, sorted by reward.team, page 101: {sorted_page * 1000:.0f} ms")
        histogram, _ = timed(lambda: fresh().histogram("makespan_s", filters, bins=30))
        print(f"histogram of makespan_s over the filter: {histogram * 1000:.0f} ms")
        sample, _ = timed(lambda: fresh().sample(200, seed=1, stratify="topology"))
        print(f"stratified sample of 200: {sample * 1000:.0f} ms")
        target = f"rollout-{args.rows - 17:07d}"
        opening, trace = timed(lambda: fresh().library.trace(target))
        print(f"opening {target} (locate + read its row group): {opening * 1000:.0f} ms "
              "(target < 2000)")
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
