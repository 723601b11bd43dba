"""Benchmark of the Parquet layout of a pool: events as one JSON text column (what orchviz
writes) against events as a nested list of structs, on synthetic traces of 100 events.

Run: python bench/bench_pool_layout.py [--traces 10000] [--opens 100] [--row-groups 16,64,256]
Prints, per layout (and per row-group size of the JSON layout): write time, bytes on disk, the
median and 95th percentile time to open one trace (a fresh open of its shard, as `pool show`
does), and the time to read every trace back validated; then the same traces read from one
JSON Lines file as the baseline. The corpus is generated once into a temporary folder and
reused (`--corpus DIR` keeps it elsewhere).

Both layouts validate every trace they read as a trace file is validated; only the way the
events are stored and turned back into objects differs. The nested layout keeps the schema's
event fields and orchviz's known extra keys as struct fields and any other key as JSON text.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from timing import machine
from viz_app.io import pool
from viz_app.io.native import trace_from_dict, trace_from_json
from viz_app.model import Trace
from viz_app.synth import synth_trace

TOPOLOGIES = ("hierarchical", "swarm", "debate", "centralized", "harness", "mixed",
              "planner_executor_critic")

STRING = pa.string()
EVENT_FIELDS = [("id", STRING), ("t", pa.float64()), ("type", STRING), ("agent", STRING),
                ("role", STRING), ("from", STRING), ("to", STRING), ("tool", STRING),
                ("content_ref", STRING), ("trusted", pa.bool_()), ("content", STRING),
                ("end_t", pa.float64()), ("tokens", pa.float64()), ("cost_usd", pa.float64()),
                ("model", STRING), ("decision", STRING), ("extra", STRING)]
EVENT = pa.struct(EVENT_FIELDS)
EDGE = pa.struct([("src", STRING), ("dst", STRING), ("type", STRING)])
NESTED = pa.schema([("trace_id", STRING), ("task_id", STRING), ("system", STRING),
                    ("topology", STRING), ("events", pa.list_(EVENT)), ("edges", pa.list_(EDGE)),
                    ("rewards", STRING), ("costs", STRING), ("metrics", STRING),
                    ("_sha256", STRING)])
KNOWN = {name for name, _ in EVENT_FIELDS} - {"extra"}


def corpus(folder: Path, count: int) -> Path:
    """A gzipped JSON Lines file of `count` synthetic traces of about 100 events each."""
    path = folder / f"corpus-{count}.jsonl.gz"
    if path.exists():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    partial = path.with_suffix(".part")
    with gzip.open(partial, "wb", compresslevel=1) as out:
        for seed in range(count):
            raw = synth_trace(rng.randint(3, 12), 100, TOPOLOGIES[seed % len(TOPOLOGIES)],
                              seed=seed)
            out.write(orjson.dumps(raw) + b"\n")
            if seed % 1000 == 999:
                print(f"  corpus: {seed + 1} traces", file=sys.stderr)
    partial.rename(path)
    return path


class Timed:
    """The traces of the corpus, a line at a time, counting the seconds spent reading them (to
    be taken off the write time)."""

    def __init__(self, path: Path):
        self.path = path
        self.seconds = 0.0
        self.bytes = 0

    def __iter__(self) -> Iterator[Trace]:
        with gzip.open(self.path, "rb") as lines:
            while True:
                start = time.perf_counter()
                line = lines.readline()
                if not line:
                    self.seconds += time.perf_counter() - start
                    return
                self.bytes += len(line)
                trace = trace_from_json(line.rstrip(b"\n"), str(self.path))
                self.seconds += time.perf_counter() - start
                yield trace


def nested_event(event: dict) -> dict:
    """An event as a row of the nested layout."""
    row = {key: event.get(key) for key in KNOWN}
    other = {key: value for key, value in event.items() if key not in KNOWN}
    row["extra"] = orjson.dumps(other).decode() if other else None
    return row


def write_nested(traces: Timed, folder: Path, row_group_rows: int) -> Path:
    """The traces as one Parquet file of the nested layout."""
    folder.mkdir(parents=True)
    path = folder / "part-00000.parquet"
    with pq.ParquetWriter(path, NESTED, compression="zstd") as writer:
        batch: list[dict] = []

        def flush() -> None:
            columns = {name: [row[name] for row in batch] for name in NESTED.names}
            writer.write_table(pa.table(columns, schema=NESTED), row_group_size=len(batch))
            batch.clear()

        for trace in traces:
            tree = trace.to_dict()
            batch.append({"trace_id": tree["trace_id"], "task_id": tree["task_id"],
                          "system": tree.get("system"), "topology": tree.get("topology"),
                          "events": [nested_event(e) for e in tree["events"]],
                          "edges": tree["edges"],
                          "rewards": orjson.dumps(tree["rewards"]).decode(),
                          "costs": orjson.dumps(tree["costs"]).decode(),
                          "metrics": orjson.dumps(tree["metrics"]).decode()
                          if "metrics" in tree else None, "_sha256": trace.sha256})
            if len(batch) >= row_group_rows:
                flush()
        if batch:
            flush()
    return path


def nested_trace(row: dict, label: str) -> Trace:
    """A row of the nested layout back as a validated trace."""
    tree = {key: row[key] for key in ("trace_id", "task_id", "system", "topology")
            if row[key] is not None}
    events = []
    for event in row["events"]:
        extra = event.pop("extra")
        item = {key: value for key, value in event.items() if value is not None}
        if extra:
            item.update(orjson.loads(extra))
        events.append(item)
    tree["events"] = events
    tree["edges"] = row["edges"]
    for key in ("rewards", "costs", "metrics"):
        if row[key] is not None:
            tree[key] = orjson.loads(row[key])
    trace = trace_from_dict(tree, label)
    trace._sha256 = row["_sha256"]
    return trace


def nested_read_one(path: Path, row: int) -> Trace:
    """One trace of the nested layout: the footer and its row group."""
    parquet = pq.ParquetFile(path)
    start = 0
    for group in range(parquet.num_row_groups):
        count = parquet.metadata.row_group(group).num_rows
        if row < start + count:
            table = parquet.read_row_group(group).slice(row - start, 1)
            return nested_trace(table.to_pylist()[0], str(path))
        start += count
    raise IndexError(row)


def nested_read_all(path: Path) -> int:
    """Every trace of the nested layout, validated; their count."""
    parquet = pq.ParquetFile(path)
    count = 0
    for group in range(parquet.num_row_groups):
        for row in parquet.read_row_group(group).to_pylist():
            nested_trace(row, str(path))
            count += 1
    return count


def pool_read_all(location: str) -> int:
    """Every trace of an orchviz pool, validated; their count."""
    errors: list = []
    count = sum(1 for shard in pool.shards(location) for _ in pool.read_shard(shard, errors.append))
    assert not errors, errors[:3]
    return count


def baseline_read_all(path: Path) -> int:
    """Every trace of the corpus JSON Lines file, validated; their count."""
    count = 0
    with gzip.open(path, "rb") as lines:
        for line in lines:
            trace_from_json(line.rstrip(b"\n"), str(path))
            count += 1
    return count


def opens(read_one, rows: list[int]) -> tuple[float, float]:
    """Median and 95th percentile seconds of opening each row."""
    times = []
    for row in rows:
        start = time.perf_counter()
        read_one(row)
        times.append(time.perf_counter() - start)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def size(folder: Path) -> int:
    """Bytes of the shards in a folder."""
    return sum(p.stat().st_size for p in folder.glob("part-*"))


def report(name: str, write_s: float, nbytes: int, one: tuple[float, float], all_s: float,
           count: int) -> None:
    print(f"{name:<28} write {write_s:6.1f} s  size {nbytes / 1e6:7.1f} MB  "
          f"open one: median {one[0] * 1e3:6.1f} ms, p95 {one[1] * 1e3:6.1f} ms  "
          f"read all {all_s:6.1f} s ({count / all_s:5.0f} traces/s)", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--opens", type=int, default=100, help="random traces opened alone")
    parser.add_argument("--row-groups", default="16,64,256",
                        help="row-group sizes to try for the JSON layout (the nested layout "
                        "uses the default, 64)")
    parser.add_argument("--corpus", default=os.path.join(tempfile.gettempdir(),
                                                         "orchviz-bench-pool"))
    args = parser.parse_args()
    print(machine())
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    source = corpus(Path(args.corpus), args.traces)
    rng = random.Random(1)
    rows = [rng.randrange(args.traces) for _ in range(args.opens)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        start = time.perf_counter()
        count = baseline_read_all(source)
        baseline = time.perf_counter() - start
        print(f"{args.traces} traces of about 100 events, {Timed(source).path.stat().st_size / 1e6:.1f}"
              f" MB gzipped JSON Lines; reading them all back validated: {baseline:.1f} s "
              f"({count / baseline:.0f} traces/s)", flush=True)
        for groups in [int(g) for g in args.row_groups.split(",")]:
            target = work / f"json-{groups}"
            traces = Timed(source)
            start = time.perf_counter()
            pool.write_pool(traces, str(target), row_group_rows=groups,
                            shard_rows=args.traces)
            write_s = time.perf_counter() - start - traces.seconds
            shard = pool.shards(str(target))[0]
            one = opens(lambda row: pool.read_trace(shard, row), rows)
            start = time.perf_counter()
            count = pool_read_all(str(target))
            report(f"events as JSON text, rg {groups}", write_s, size(target), one,
                   time.perf_counter() - start, count)
        target = work / "nested"
        traces = Timed(source)
        start = time.perf_counter()
        path = write_nested(traces, target, pool.ROW_GROUP_ROWS)
        write_s = time.perf_counter() - start - traces.seconds
        one = opens(lambda row: nested_read_one(path, row), rows)
        start = time.perf_counter()
        count = nested_read_all(path)
        report(f"events nested, rg {pool.ROW_GROUP_ROWS}", write_s, size(target), one,
               time.perf_counter() - start, count)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
