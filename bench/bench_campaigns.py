"""Review campaigns at scale: creating a campaign of 100,000 targets, and the time to claim the
next target with 32 reviewers claiming and saving at once, on SQLite and on PostgreSQL.

    python bench/bench_campaigns.py [--targets 100000] [--reviewers 32] [--processes 4]
                                    [--claims 40] [--postgres URL | --no-postgres]

PostgreSQL: ORCHVIZ_BENCH_POSTGRES_URL (or --postgres URL), else a throwaway server started
from /usr/lib/postgresql/*/bin when there is one (as user postgres when run as root).
Reviewers are threads spread over `--processes` OS processes; each claims (`Workspace.
claim_next`), then completes the slot, `--claims` times: once back to back (the worst case:
32 writers taking turns), once pausing between targets (`--pause`). Target: claim_next under
50 ms at the median.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import multiprocessing
import os
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import machine  # noqa: E402
from viz_app.labels.campaign import CampaignSpec  # noqa: E402
from viz_app.labels.campaign_plan import PlannedTarget  # noqa: E402
from viz_app.labels.label import Reviewer  # noqa: E402
from viz_app.store.campaigns import CampaignStore  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

TARGET_MS = 50.0


def planned(count: int) -> list[PlannedTarget]:
    """`count` targets on synthetic traces (three a trace: an aggregate, a stop, the trace),
    a tenth of them kept for two reviewers."""
    found = []
    for i in range(count):
        trace, kind = divmod(i, 3)
        found.append(PlannedTarget(
            trace_id=f"bench-{trace:06d}", trace_sha256="0" * 64,
            event_id=("e1", "e2", "")[kind],
            questions=[("aggregation_quality", "stopping_correctness", "task_outcome")[kind]],
            required=2 if i % 10 == 0 else 1, priority=float(i)))
    return found


def create(db: str, name: str, count: int) -> float:
    """Store a campaign of `count` targets (planned beforehand); seconds the store took."""
    ws = Workspace.open(db)
    rubric = ws.rubric
    plan = planned(count)
    start = time.perf_counter()
    # the store itself: the bench times the queue on a plan it makes, not a library's sampling
    CampaignStore(ws.engine).create(CampaignSpec(name=name), rubric_version=rubric.version,
                                    rubric_sha256=rubric.sha256,
                                    questions=[q.id for q in rubric.questions],
                                    created_by="bench", planned=plan)
    return time.perf_counter() - start


def _reviewer(ws: Workspace, name: str, who: str, claims: int, pause: float,
              times: list[float], lock: threading.Lock) -> None:
    me = Reviewer(name=who, via="cli")
    mine = []
    rng = random.Random(who)
    for _ in range(claims):
        if pause:
            time.sleep(rng.random() * 2 * pause)
        start = time.perf_counter()
        claim = ws.campaigns.claim_next(name, me)
        mine.append(time.perf_counter() - start)
        if claim is None:
            break
        CampaignStore(ws.engine).submit(claim, [])  # the slot done, no labels: the queue moves on
    with lock:
        times.extend(mine)


def worker(db: str, name: str, reviewers: list[str], claims: int, pause: float,
           start_at: float, out) -> None:
    """One process's reviewers, as threads; sends their claim times (seconds) back."""
    ws = Workspace.open(db)
    ws.campaigns.get(name)  # connect before the clock starts
    times: list[float] = []
    lock = threading.Lock()
    time.sleep(max(0.0, start_at - time.time()))
    threads = [threading.Thread(target=_reviewer, args=(ws, name, r, claims, pause, times,
                                                        lock)) for r in reviewers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.send(times)
    out.close()


def claim_times(db: str, name: str, reviewers: int, processes: int,
                claims: int, pause: float) -> list[float]:
    """Claim latencies (seconds) of `reviewers` reviewers over `processes` processes."""
    ctx = multiprocessing.get_context("spawn")
    names = [f"reviewer-{i:02d}" for i in range(reviewers)]
    start_at = time.time() + 5
    pipes, procs = [], []
    for p in range(processes):
        mine, theirs = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=worker, args=(db, name, names[p::processes], claims,
                                                pause, start_at, theirs))
        proc.start()
        pipes.append(mine)
        procs.append(proc)
    times: list[float] = []
    for pipe in pipes:
        times.extend(pipe.recv())
    for proc in procs:
        proc.join()
    return times


def report(kind: str, db: str, args: argparse.Namespace) -> bool:
    name = f"bench-{secrets.token_hex(4)}"
    made = create(db, name, args.targets)
    print(f"{kind}: created {args.targets:,} targets ({int(args.targets * 1.1):,} slots) in "
          f"{made:.1f} s")
    ok = True
    for pause in (0.0, args.pause):
        wall = time.perf_counter()
        times = claim_times(db, name, args.reviewers, args.processes, args.claims, pause)
        wall = time.perf_counter() - wall - 5  # the processes start together 5 s in
        ms = sorted(t * 1000 for t in times)
        median = statistics.median(ms)
        p95 = ms[int(0.95 * (len(ms) - 1))]
        said = ("back to back (no pause)" if not pause else
                f"pausing 0-{2 * pause:g} s between targets")
        print(f"{kind}: {len(ms)} claims by {args.reviewers} reviewers in {args.processes} "
              f"processes, {said}, {wall:.1f} s: claim_next median {median:.1f} ms, "
              f"p95 {p95:.1f} ms, max {ms[-1]:.1f} ms (target median < {TARGET_MS:.0f} ms: "
              f"{'ok' if median < TARGET_MS else 'MISSED'})")
        ok &= median < TARGET_MS
    return ok


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str | None]:
    """A PostgreSQL server in a temporary folder (None when none can be started)."""
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    if not bins:
        yield None
        return
    bindir = Path(bins[-1])
    user = "postgres" if os.geteuid() == 0 else None
    tmp = Path(tempfile.mkdtemp(prefix="orchviz-bench-pg-"))
    password = secrets.token_hex(12)
    (tmp / "pw").write_text(password + "\n")
    if user:
        shutil.chown(tmp, user=user)
        shutil.chown(tmp / "pw", user=user)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    def run(argv: list[str]) -> subprocess.CompletedProcess:
        argv = ["runuser", "-u", user, "--", *argv] if user else argv
        return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp)

    data = tmp / "data"
    try:
        if run([str(bindir / "initdb"), "-D", str(data), "-U", "orchviz", "--pwfile",
                str(tmp / "pw"), "-A", "scram-sha-256", "-E", "UTF8", "--no-locale"]
               ).returncode != 0:
            yield None
            return
        opts = (f"-h 127.0.0.1 -p {port} -k {tmp} -c fsync=off -c full_page_writes=off "
                "-c max_connections=200")
        if run([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(tmp / "log"), "-o", opts,
                "-w", "-t", "60", "start"]).returncode != 0:
            yield None
            return
        subprocess.run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U",
                        "orchviz", "bench"], env={**os.environ, "PGPASSWORD": password},
                       capture_output=True, timeout=60, check=True)
        yield f"postgresql+psycopg://orchviz:{password}@127.0.0.1:{port}/bench"
    finally:
        run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"])
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=100_000)
    parser.add_argument("--reviewers", type=int, default=32)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--claims", type=int, default=40, help="claims per reviewer")
    parser.add_argument("--pause", type=float, default=0.5, help="mean seconds a reviewer "
                        "pauses between targets in the second run (a person takes far longer)")
    parser.add_argument("--postgres", default=os.environ.get("ORCHVIZ_BENCH_POSTGRES_URL"))
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args()
    print(machine())
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    ok = True
    with tempfile.TemporaryDirectory() as folder:
        ok &= report("SQLite", str(Path(folder) / "bench.db"), args)
    if not args.no_postgres:
        with contextlib.ExitStack() as stack:
            url = args.postgres or stack.enter_context(throwaway_postgres())
            if url is None:
                print("PostgreSQL: skipped (no server: set ORCHVIZ_BENCH_POSTGRES_URL)")
            else:
                ok &= report("PostgreSQL", url, args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
