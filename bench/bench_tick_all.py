"""Benchmark of the Library's "Tick all N that match" over a large pool: what the click costs,
what the ticked selection weighs in the session, and what a campaign's draw of it costs, when
the selection is the list of the matching trace ids (as it was) and when it is the query
itself (a `Filter` of the search and the filter line, as it is now), both in one run.

Run: python bench/bench_tick_all.py [--rows 200000] [--folder-traces 20000] [--turns 3]
An index of `--rows` summary rows is made straight in DuckDB (`bench_pool_index.big_index`, each
row pointing at a row of a small real pool), then, with a filter line selecting about 40% of
the rows (`topology in` three of six, `reward.team>=0.2`), each step is timed, best of
`--turns`, in CPU seconds of this process (wall time beside): the click (as it was: the page of
every match, their ids kept; now: the count the page shows anyway), the selection's size as the
session keeps it (pickled), and the campaign's draw of all of them (`draw_rows`, `all`): from
the ids (`trace_id in [...]`) and from the held query.

Then, over a folder of `--folder-traces` traces (JSON Lines files, the folder index), what each
run of the Library page costs, beyond the count and the page it shows anyway, to hand the
Campaigns page its current filter (`reward.team>=0.5`): as it was, a second count and the ids of
every trace the filter selects, listed at every run; now, the query as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path

from bench_pool_index import big_index, write_pool
from timing import machine
from viz_app.analysis import analyze  # noqa: F401 - loaded before timing, as the app has it
from viz_app.io import pool
from viz_app.labels import Filter, Sample, draw_rows, storage_conditions
from viz_app.query import Condition, parse_conditions


def timed(turns: int, step) -> tuple[float, float, object]:
    """Best CPU and wall seconds of `turns` calls of `step`, and its last value."""
    cpu = wall = float("inf")
    value = None
    for _ in range(turns):
        started, cpu_started = time.perf_counter(), time.process_time()
        value = step()
        cpu = min(cpu, time.process_time() - cpu_started)
        wall = min(wall, time.perf_counter() - started)
    return cpu, wall, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--folder-traces", type=int, default=20_000)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    work = Path(tempfile.mkdtemp(prefix="bench-tick-all-"))
    try:
        write_pool(work / "pool", 2_000, 1_000)
        index = big_index(work, args.rows, pool.shards(str(work / "pool")), 1_000)
        filters = [Condition(field="topology", op="in", value=["centralized", "debate", "swarm"]),
                   *parse_conditions("reward.team>=0.2")]
        selected = index.count(filters)
        print(f"index: {args.rows:,} rows; the filter line selects {selected:,}")
        held = Filter(conditions=filters)

        def tick_ids() -> list[str]:
            return [r.trace_id for r in index.page(filters, limit=selected)]

        ids_cpu, ids_wall, ids = timed(args.turns, tick_ids)
        count_cpu, count_wall, _ = timed(args.turns, lambda: index.count(filters))
        ids_bytes = len(pickle.dumps({"picked": ids}))
        held_bytes = len(pickle.dumps({"matching": held.model_dump_json()}))
        draw_ids = timed(args.turns, lambda: draw_rows(
            index, *storage_conditions(Filter(trace_ids=ids), "pool"), Sample(kind="all")))
        draw_held = timed(args.turns, lambda: draw_rows(
            index, *storage_conditions(held, "pool"), Sample(kind="all")))
        assert [r.trace_id for r in draw_ids[2]] == [r.trace_id for r in draw_held[2]] == ids
        print(f"{'step':44s} {'as it was (ids)':>22s} {'now (the query)':>22s}")
        print(f"{'the click: ticking all':44s} {ids_cpu:8.2f} CPU s {ids_wall:6.2f} s "
              f"{count_cpu:8.3f} CPU s {count_wall:6.3f} s")
        print(f"{'the selection kept in the session':44s} {ids_bytes / 1e6:17.1f} MB "
              f"{held_bytes:19,d} B")
        print(f"{'a campaign draws all of them':44s} {draw_ids[0]:8.2f} CPU s {draw_ids[1]:6.2f} s "
              f"{draw_held[0]:8.2f} CPU s {draw_held[1]:6.2f} s")
        if args.folder_traces:
            folders(work, args.folder_traces, args.turns)
        print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def folders(work: Path, traces: int, turns: int) -> None:
    """The Library's run over a folder: the current filter handed as ids, and as the query."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from factories import example_trace
    from viz_app.settings import Settings, database_url
    from viz_app.workspace import Workspace

    folder = work / "runs"
    folder.mkdir()
    template = example_trace().to_dict()
    for start in range(0, traces, 1000):
        (folder / f"part-{start // 1000:04d}.jsonl").write_text("".join(
            json.dumps(dict(template, trace_id=f"rollout-{i:06d}", task_id=f"task-{i // 8}",
                            rewards={"team": (i % 7) / 7})) + "\n"
            for i in range(start, min(traces, start + 1000))))
    workspace = Workspace(Settings(traces=[folder], db_url=database_url(work / "a.db")))
    storage = workspace.library.storage()
    filters = parse_conditions("reward.team>=0.5")

    def as_ids() -> list[str]:
        return [r.trace_id for r in storage.page(filters, limit=storage.count(filters))]

    ids_cpu, ids_wall, ids = timed(turns, as_ids)
    query_cpu, query_wall, _ = timed(turns, lambda: Filter(conditions=filters).model_dump_json())
    print(f"{'folders, ' + f'{traces:,} traces, extra per Library run:':44s} {ids_cpu:8.3f} CPU s "
          f"{ids_wall:6.3f} s {query_cpu:8.3f} CPU s {query_wall:6.3f} s  "
          f"({len(ids):,} selected)")


if __name__ == "__main__":
    main()
