"""Benchmark of the pool index: indexing throughput against a bare parse, and queries at scale.

Run: python bench/bench_pool_index.py [--traces 100000] [--rows 1000000] [--workers 2]

Part 1 writes a pool of `--traces` synthetic traces of about 100 events (a few hundred traces
from `synth.synth_trace`, each written under many ids, tasks and rewards) straight as Parquet
shards in the layout `viz_app.io.pool` writes (fields as text columns, events as JSON text, row
groups of 64, each row's `_sha256`; `--no-sha` leaves it out, as a pool written by another
tool does, and the hash is then computed from the trace), then measures on one core: a bare
parse (reading the shards' columns and `orjson.loads` of every JSON column: the least any
reader must do), what each step of `summarise_shard` costs per trace on the first shard
(reading and validating, the analysis figures, the label targets, the words), and indexing
(`PoolIndex.update` with one worker: validation, analysis, targets under the default rubric,
the DuckDB rows and the FTS5 words); then indexing with `--workers` processes (give
`--shard-rows` so that there are several shards per worker: a shard is the unit of work). Both wall time and CPU seconds (of this process and its workers) are printed: on a
shared machine the CPU seconds are the figure to compare. Targets: indexing within 2x of the
bare parse on one core, and near-linear speed-up over cores.

Part 2 puts `--rows` summary rows straight into a fresh index (DuckDB rows and FTS5 words made
here, not by reading traces: indexing a million traces would take hours on a laptop), each
pointing at a real shard and row of part 1's pool, and measures from a fresh `PoolIndex`: the
library's first page (count + page), a search (count + first page), a filter plus count, and
opening one trace (locate + read its row group). Targets: < 1 s, < 1 s, < 0.5 s, < 2 s.
`--rows 0` runs part 1 only.
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
from viz_app.labels.rubric import counted, default_rubric, targets
from viz_app.model import TOPOLOGIES, paused_gc
from viz_app.store.index import search_text
from viz_app.store.pool_index import POOL_TEXT_LIMIT, Condition, PoolIndex, summarise_shard
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
    collector paused, as there): reading and validating a row (`read_shard`), the analysis
    figures the index keeps, the label targets, the words (`search_text`)."""
    shard = pool.shards(location)[0]
    rubric = default_rubric()
    spent = dict.fromkeys(("read + validate", "analysis", "targets", "words"), 0.0)
    count = 0
    clock = time.process_time
    with paused_gc():
        rows = pool.read_shard(shard, on_error=print)
        while True:
            started = clock()
            found = next(rows, None)
            spent["read + validate"] += clock() - started
            if found is None:
                break
            trace = found[1]
            started = clock()
            a = analyze(trace)
            (len(a.order), len(a.agents), a.depth, a.makespan, a.parallelism, a.tokens,
             a.cost_usd, len(a.warnings))
            middle = clock()
            {t.key: t.required for t in targets(rubric, a) if counted(t)}
            late = clock()
            search_text(trace, POOL_TEXT_LIMIT)
            spent["analysis"] += middle - started
            spent["targets"] += late - middle
            spent["words"] += clock() - late
            forget(trace)
            count += 1
    return {name: seconds * 1000 / count for name, seconds in spent.items()}


def indexing(location: str, folder: Path, workers: int) -> tuple[float, float, int]:
    """Wall and CPU seconds (this process and its workers) to index the pool from scratch on
    `workers` processes, and the traces indexed."""
    shutil.rmtree(folder, ignore_errors=True)
    index = PoolIndex(folder / "pool.duckdb", location)
    cpu = cpu_seconds()
    done = index.update(pool.shards(location), rubric=default_rubric(), workers=workers)
    cpu = cpu_seconds() - cpu
    assert done.failures == 0, index.failures(3)
    index.close()
    return done.seconds, cpu, done.traces


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
               NULL AS targets, NULL AS target_count, '' AS sha256, 0 AS warnings
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
    parser.add_argument("--no-sha", action="store_true",
                        help="write no _sha256 column values (a pool written by another tool)")
    args = parser.parse_args()
    print(machine())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = Path(tempfile.mkdtemp(prefix="bench-pool-"))
    try:
        location = str(work / "pool")
        seconds, text_bytes = timed(lambda: write_pool(work / "pool", args.traces,
                                                       args.shard_rows, not args.no_sha))
        print(f"pool: {args.traces:,} traces of ~100 events, {text_bytes / 1e6:.0f} MB of JSON "
              f"text in {len(pool.shards(location))} Parquet shards (written in {seconds:.0f} s)")
        parse, parse_cpu = bare_parse(location)
        print(f"bare parse (read columns + orjson.loads): {parse:.1f} s, {parse_cpu:.1f} CPU s, "
              f"{args.traces / parse_cpu:,.0f} traces per CPU second")
        parse_one, summarise_one = shard_ratio(location)
        first = min(args.traces, args.shard_rows)
        print(f"one shard ({first} traces), best of 3 taken in turns: bare parse "
              f"{parse_one:.2f} s, summarise_shard {summarise_one:.2f} s "
              f"({summarise_one / parse_one:.1f}x)")
        steps = breakdown(location)
        print(f"per trace, CPU ms (first shard): bare parse {parse_one * 1000 / first:.2f}; "
              + ", ".join(f"{name} {ms:.2f}" for name, ms in steps.items())
              + f"; summarise_shard {summarise_one * 1000 / first:.2f}")
        ones, manys = [], []
        for _ in range(max(1, args.turns)):
            ones.append(indexing(location, work / "one", 1))
            one, one_cpu, count = ones[-1]
            print(f"index, 1 core: {one:.1f} s, {one_cpu:.1f} CPU s, {count / one_cpu:,.0f} "
                  f"traces per CPU second ({one_cpu / parse_cpu:.1f}x the bare parse in CPU "
                  f"seconds, {one / parse:.1f}x in wall time; target 2x)")
            print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
            manys.append(indexing(location, work / "many", args.workers))
            many, many_cpu, _ = manys[-1]
            print(f"index, {args.workers} workers: {many:.1f} s, {many_cpu:.1f} CPU s in all, "
                  f"{count / many:,.0f} traces/s (speed-up {one / many:.2f}x over 1 core in "
                  "wall time)")
            print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        if len(ones) > 1:
            one, many = min(r[0] for r in ones), min(r[0] for r in manys)
            print(f"best of {len(ones)} in turns: 1 core {one:.1f} s, {args.workers} workers "
                  f"{many:.1f} s: speed-up {one / many:.2f}x")
        size = sum(p.stat().st_size for p in (work / "one").iterdir())
        print(f"index files: {size / 1e6:.0f} MB for {text_bytes / 1e6:.0f} MB of traces")

        if args.rows <= 0:  # indexing only
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
        opening, trace = timed(lambda: fresh().trace(target))
        print(f"opening {target} (locate + read its row group): {opening * 1000:.0f} ms "
              "(target < 2000)")
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
