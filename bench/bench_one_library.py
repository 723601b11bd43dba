"""Benchmark of the one library: what the one search and the one sampler cost over a folder of
trace files (the folder index in the label database, its rows queried in memory) and over a
pool of the same files (DuckDB and FTS5), measured in one run on the same files.

Run: python bench/bench_one_library.py [--traces 3000] [--files 30] [--words 2000]

It writes `--traces` small traces (the reference example under many ids, tasks and topologies)
into `--files` JSON Lines files, indexes them once as a folder and once as a pool, then times,
the first call and the best of `--turns` (each storage keeps its last searches' hits: a
pool until its index changes, the folders' listing for its life, one rerun of the app), CPU
seconds of this process: a plain search (`rollout`: the word index answers it alone, FTS5 in
the pool, the folder index's word table in the folders), a search with punctuation
(`rollout-01`: the word index, then the rule on each hit's kept words), a random and a
stratified sample, and checks that both storages give the same traces. The machine's load average is printed
beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from factories import example_trace  # noqa: E402
from viz_app.settings import Settings, database_url  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

TOPOLOGIES = ["centralized", "debate", "swarm", "tree"]


def best(turns: int, call) -> tuple[float, float, object]:
    """The CPU seconds of the first call (a pool keeps its last searches' hits: later calls
    find them), the least of `turns` calls, and what the last returned."""
    times, result = [], None
    for _ in range(turns):
        start = time.process_time()
        result = call()
        times.append(time.process_time() - start)
    return times[0], min(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=3000)
    parser.add_argument("--files", type=int, default=30)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--words", type=int, default=0,
                        help="words of inline content each trace's messages carry, drawn from "
                             "a vocabulary of 20,000 (0: the example's pointers alone, about "
                             "25 words a trace)")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="one-library-"))
    folder = root / "runs"
    folder.mkdir()
    per = -(-args.traces // args.files)
    template = example_trace().to_dict()
    rng = __import__("numpy").random.default_rng(0)
    for k in range(args.files):
        lines = []
        for i in range(k * per, min(args.traces, (k + 1) * per)):
            raw = dict(template, trace_id=f"rollout-{i:05d}", task_id=f"task-{i // 8}",
                       topology=TOPOLOGIES[i % 4], rewards={"team": (i % 7) / 7})
            if args.words:  # realistic text: a message of many words, most of them rare
                said = " ".join(f"w{int(rng.zipf(1.3)) % 20_000}" for _ in range(args.words))
                raw["events"] = [dict(e, content=said) if e["type"] == "message" else e
                                 for e in template["events"]]
            lines.append(json.dumps(raw))
        (folder / f"part-{k:03d}.jsonl").write_text("\n".join(lines) + "\n")
    as_folder = Workspace(Settings(traces=[folder], db_url=database_url(root / "a.db")))
    as_pool = Workspace(Settings(traces=[], pools=[str(folder)],
                                 db_url=database_url(root / "b.db")))
    start, cpu = time.perf_counter(), time.process_time()
    folders = as_folder.library.storage()
    folder_index, folder_cpu = time.perf_counter() - start, time.process_time() - cpu
    start, cpu = time.perf_counter(), time.process_time()
    as_pool.library.update_pool_index(workers=1)
    pool_index, pool_cpu = time.perf_counter() - start, time.process_time() - cpu
    pool = as_pool.library.storage(str(folder))
    print(f"{args.traces} traces in {args.files} files, {args.words} words of content each; "
          f"load {os.getloadavg()[0]:.1f}; "
          f"indexed as a folder in {folder_index:.1f} s ({folder_cpu:.1f} s CPU here), as a pool "
          f"in {pool_index:.1f} s ({pool_cpu:.1f} s CPU here)")
    print(f"{'query (CPU ms)':<38} {'folder: first, best':>20} {'pool: first, best':>18}"
          "  same traces")
    queries = {
        "search 'rollout' (plain)": lambda s: s.count(search="rollout"),
        "search 'rollout-001' (punctuated)": lambda s: s.count(search="rollout-001"),
        "search 'rollout-0' (punctuated, wide)": lambda s: s.count(search="rollout-0"),
        "sample 200 at random": lambda s: s.sample(200, seed=1),
        "sample 200 by topology": lambda s: s.sample(200, seed=1, stratify="topology"),
        "sample 200 by reward quartile": lambda s: s.sample(200, seed=1,
                                                            stratify="reward.team"),
    }
    same = True
    for name, query in queries.items():
        folder_first, folder_s, folder_found = best(args.turns, lambda: query(folders))
        first, pool_s, pool_found = best(args.turns, lambda: query(pool))
        same &= folder_found == pool_found
        print(f"{name:<38} {folder_first * 1000:>11.1f} {folder_s * 1000:>8.1f} "
              f"{first * 1000:>9.1f} {pool_s * 1000:>8.1f}  {folder_found == pool_found}")
    print(f"load {os.getloadavg()[0]:.1f} after")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
