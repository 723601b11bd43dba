"""Benchmark of updating a pool's index while it is read: what the copy-and-swap costs.

Run: python bench/bench_pool_index_swap.py [--rows 1000000]

An update never writes the live DuckDB file: it copies it, writes the copy, and renames it over
the live file (docs/pools.md, "Indexing while the app runs"). This puts `--rows` summary rows
into an index (as bench_pool_index.py part 2 does), holds it open as the app would, and
measures: an update that finds nothing new (no copy), an update that adds one shard of 100
traces (copy + write + sync + swap + words), the copy alone, and the held reader's first query
after the swap (it opens the new file) against its next one.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

import duckdb

sys.path.insert(0, str(Path(__file__).parent))

from bench_pool_index import big_index, machine, timed, write_pool  # noqa: E402
from viz_app.io import pool  # noqa: E402
from viz_app.labels.rubric import default_rubric  # noqa: E402
from viz_app.store.pool_index import shard_stamp  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args()
    print(machine())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = Path(tempfile.mkdtemp(prefix="bench-swap-"))
    try:
        write_pool(work / "pool", 200, 100, True)
        location = str(work / "pool")
        shards = pool.shards(location)
        seconds, index = timed(lambda: big_index(work, args.rows, shards, 100))
        print(f"{args.rows:,} rows put into an index in {seconds:.0f} s; DuckDB file "
              f"{index.path.stat().st_size / 1e6:.0f} MB, words file "
              f"{index.text_path.stat().st_size / 1e6:.0f} MB")
        # the rows made here point at the pool's shards: say those were indexed under this
        # rubric as they stand, so the updates below read only what is new
        rubric = default_rubric()
        con = duckdb.connect(str(index.path))
        for shard in shards:
            con.execute("UPDATE shards SET stamp = ?, rubric_sha = ? WHERE url = ?",
                        [shard_stamp(shard), rubric.sha256, shard.url])
        con.close()
        index.location = location
        held = index.count()
        same = index.update(pool.shards(location), rubric=rubric, workers=1)
        print(f"an update that finds nothing new: {same.seconds * 1000:.0f} ms")
        copy, _ = timed(lambda: shutil.copyfile(index.path, work / "copy.duckdb"))
        print(f"copying the DuckDB file alone: {copy * 1000:.0f} ms")
        shutil.copy(shards[0].url, work / "pool" / "part-99999.parquet")
        added = index.update(pool.shards(location), rubric=rubric, workers=1)
        print(f"an update adding one shard of 100 traces: {added.seconds:.2f} s "
              f"({added.traces - held} rows added)")
        reopen, _ = timed(lambda: index.count())
        steady, _ = timed(lambda: index.count())
        print(f"the reader's first count after the swap (opens the new file): "
              f"{reopen * 1000:.1f} ms; the next: {steady * 1000:.1f} ms")
        index.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
