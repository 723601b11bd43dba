"""Benchmark: `orchviz pool follow` joining a trainer's rollouts with their spans as a run writes
them (`viz_app.io.join_wait`).

A writer in this process plays a trainer and a span exporter: verl lines with a `request_id`
(`rollout_data/{step}.jsonl`, a step of STEP lines, a line flushed alone, RATE a second) and,
for each rollout, the OTLP spans of tests/fixtures/rollouts/joined/otlp_rollout_attribute
naming it, exported as an OpenTelemetry batch span processor does: every EXPORT_S seconds, one
file `spans/batch-N.json` holding the spans that ended since the last export. A follower
(`pool follow --interval 1`, default waits) runs beside it; this process reads the pool's
`_ids.parquet` every 0.1 s to see when each trace is in it.

- `nospans`: rollouts alone, as a run without spans writes them: line written -> in the pool.
- `after`: each rollout's spans end with it and go out with the next export, 0-5 s after its
  line (the order this benchmark is about): spans written -> joined trace in the pool, and how
  many rollouts are in the pool joined, alone, or not at all.
- `before`: spans exported first, the trainer's line SPANS_FIRST_S later (Agent Lightning's
  order): line written -> joined trace in the pool.
- `after0`: `after` with `--span-wait 0`, as `pool follow` was before rollouts waited: how
  many rollouts and their spans end up apart.
- `catchup`: in-process CPU of one look's `JoinWait.ready` over CATCHUP rollouts with ids and no
  spans (a follower catching up on a run), beside the `Follower.poll` that read them.

Run: `python bench/bench_join_follow.py [nospans] [after] [after0] [before] [catchup]` (all by default).
Each scenario prints the load average beside its figures.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.timing import machine  # noqa: E402

FIXTURE = REPO / "tests" / "fixtures" / "rollouts" / "joined" / "otlp_rollout_attribute"
RATE = 50
SECONDS = 20
STEP = 100
EXPORT_S = 5.0
SPANS_FIRST_S = 2.0
CATCHUP = 20_000


def load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def spans_id(request_id: str) -> str:
    return hashlib.sha256(request_id.encode()).hexdigest()[:32]


_TEMPLATE = json.loads((FIXTURE / "spans.json").read_text())


def resource_spans(request_id: str) -> list[dict]:
    text = json.dumps(_TEMPLATE["resourceSpans"]).replace("req-7f3a", request_id).replace(
        "0af7651916cd43dd8448eb211c80319c", spans_id(request_id))
    return json.loads(text)


def line(k: int) -> tuple[str, bytes]:
    request_id = f"req-{k:06d}"
    step, prompt = k // STEP + 1, (k % STEP) // 4
    right = k % 3 == 0
    return request_id, (json.dumps({
        "input": f"How many orders shipped late in month {prompt}?", "output": str(40 + k % 5),
        "gts": "42", "score": 1.0 if right else 0.0, "step": step, "request_id": request_id,
        "acc": 1.0 if right else 0.0}) + "\n").encode()


def write(path: Path, data: bytes, mode: str = "ab") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open(mode) as stream:
        stream.write(data)
        stream.flush()


class PoolWatch(threading.Thread):
    """When each trace id first shows in the pool's `_ids.parquet` (read every 0.1 s)."""

    def __init__(self, out: Path):
        super().__init__(daemon=True)
        self.ids = out / "_ids.parquet"
        self.seen: dict[str, float] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        import pyarrow.parquet as pq

        while not self.stop.is_set():
            try:
                found = pq.read_table(self.ids, columns=["trace_id"]).column(0).to_pylist()
            except (OSError, ValueError):
                found = []
            now = time.time()
            for trace_id in found:
                self.seen.setdefault(trace_id, now)
            time.sleep(0.1)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def figures(delays: list[float]) -> str:
    if not delays:
        return "none"
    delays = sorted(delays)
    return (f"median {statistics.median(delays):.2f} s, p95 "
            f"{delays[max(0, int(0.95 * len(delays)) - 1)]:.2f} s, max {delays[-1]:.2f} s")


def scenario(name: str, folder: Path) -> None:
    run, out = folder / name / "run", folder / name / "pool"
    run.mkdir(parents=True)
    if name != "nospans":  # the run has shown spans before the follower starts
        write(run / "spans" / "batch-0.json", json.dumps(
            {"resourceSpans": resource_spans("req-warmup")}).encode())
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    said = (folder / name / "stderr.txt").open("w+")  # a file, not a pipe no one reads yet
    follower = subprocess.Popen([sys.executable, "-m", "viz_app", "pool", "follow", str(run),
                                 "-o", str(out), "--interval", "1",
                                 *(["--span-wait", "0"] if name == "after0" else [])], env=env,
                                stdout=subprocess.DEVNULL, stderr=said)
    watch = PoolWatch(out)
    watch.start()
    time.sleep(3)
    lines_at: dict[str, float] = {}
    spans_at: dict[str, float] = {}
    pending: list[int] = []  # rollouts whose spans ended, for the next export
    due: list[tuple[float, int]] = []  # `before`: lines due after their spans
    batch, start = 1, time.time()
    next_export = start + EXPORT_S
    cpu_before, clock = cpu_seconds(follower.pid), time.monotonic()
    total = RATE * SECONDS

    def write_line(j: int) -> None:
        request_id, data = line(j)
        write(run / "rollout_data" / f"{j // STEP + 1}.jsonl", data)
        lines_at[request_id] = time.time()

    k = 0
    while k < total or pending or due:
        now = time.time()
        if k < total and now >= start + k / RATE:
            if name != "before":  # `after`, `after0`, `nospans`: the line first
                write_line(k)
            if name != "nospans":
                pending.append(k)
            k += 1
        while due and due[0][0] <= now:
            write_line(due.pop(0)[1])
        if pending and now >= next_export:
            spans = [s for j in pending for s in resource_spans(line(j)[0])]
            write(run / "spans" / f"batch-{batch}.json",
                  json.dumps({"resourceSpans": spans}).encode(), "wb")
            written = time.time()
            spans_at.update((line(j)[0], written) for j in pending)
            if name == "before":
                due += [(written + SPANS_FIRST_S, j) for j in pending]
            pending, batch = [], batch + 1
            next_export += EXPORT_S
        time.sleep(0.002)
    deadline = time.time() + 30
    want = {spans_id(r) for r in lines_at} if name != "nospans" else set(lines_at)
    while time.time() < deadline and not want <= set(watch.seen):
        time.sleep(0.2)
    busy = (cpu_seconds(follower.pid) - cpu_before) / (time.monotonic() - clock)
    time.sleep(3)
    idle_before, idle_clock = cpu_seconds(follower.pid), time.monotonic()
    time.sleep(10)
    idle = (cpu_seconds(follower.pid) - idle_before) / (time.monotonic() - idle_clock)
    watch.stop.set()
    follower.terminate()
    follower.wait(timeout=60)
    said.seek(0)
    err = said.read()
    said.close()
    print(f"{name}: {len(lines_at)} rollouts at {RATE}/s ({load()})", flush=True)
    if name == "nospans":
        print(f"  line written -> in the pool: "
              f"{figures([watch.seen[r] - t for r, t in lines_at.items() if r in watch.seen])};"
              f" {sum(r in watch.seen for r in lines_at)} of {len(lines_at)} in the pool",
              flush=True)
    else:
        from viz_app.io import pool
        from viz_app.io.rollouts import rollout_of

        traces = {t.trace_id: t for t in pool.read_pool(str(out), on_error=print)}
        joined = sum(1 for r in lines_at if (t := traces.get(spans_id(r))) is not None
                     and rollout_of(t) is not None)
        alone = sum(1 for r in lines_at if r in traces)
        joined_ids = {r for r in lines_at if (t := traces.get(spans_id(r))) is not None
                      and rollout_of(t) is not None and spans_id(r) in watch.seen}
        got = [watch.seen[spans_id(r)] - max(lines_at[r], spans_at[r]) for r in joined_ids]
        apart = sum(1 for t in traces.values() if any(
            w.code == "rollout_pooled_apart" for w in t.reader_warnings))
        print(f"  {joined} joined, {alone} rollouts alone, {apart} said apart, "
              f"{len(lines_at) - joined - alone} missing; the later of line and spans written ->"
              f" joined trace in the pool: {figures(got)}", flush=True)
        if name == "after":
            print("  line written -> joined trace in the pool: " + figures(
                [watch.seen[spans_id(r)] - lines_at[r] for r in joined_ids]), flush=True)
    size = (out / "_follow.json").stat().st_size if (out / "_follow.json").exists() else 0
    print(f"  follower CPU: {100 * busy:.1f}% of one core while written, {100 * idle:.1f}% idle;"
          f" _follow.json {size / 1024:.0f} KB", flush=True)
    if "Traceback" in err:
        print(err, file=sys.stderr)


def catchup(folder: Path) -> None:
    from viz_app.io.follow import Follower
    from viz_app.io.join_wait import JoinWait

    run = folder / "catchup"
    data = b"".join(line(k)[1] for k in range(CATCHUP))
    write(run / "rollout_data" / "1.jsonl", data)
    reads, judged = [], []
    for _ in range(3):  # the least of three: the first pays for warming up
        follower = Follower([run])
        start = time.process_time()
        fresh = follower.poll()
        reads.append(time.process_time() - start)
        waits = JoinWait()
        start = time.process_time()
        ready = waits.ready(fresh, time.time(), before=None, written=follower.written)
        judged.append(time.process_time() - start)
        assert len(ready) == len(fresh) == CATCHUP
    read, judged = min(reads), min(judged)
    print(f"catchup: {CATCHUP:,} rollouts with ids, no spans ({load()}): Follower.poll "
          f"{read:.2f} s of CPU, JoinWait.ready {judged:.2f} s ({100 * judged / read:.0f}% "
          "of the read)", flush=True)


def main() -> None:
    chosen = set(sys.argv[1:]) or {"nospans", "after", "after0", "before", "catchup"}
    print(machine(), flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for name in ("nospans", "after", "after0", "before"):
            if name in chosen:
                scenario(name, Path(folder))
        if "catchup" in chosen:
            catchup(Path(folder))


if __name__ == "__main__":
    main()
