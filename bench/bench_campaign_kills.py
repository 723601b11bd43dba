"""kill -9 during a review campaign: reviewer processes claiming and saving are killed with
SIGKILL at random moments while another process exports again and again, on SQLite (a file)
and on PostgreSQL; then the campaign's invariants are checked.

    python bench/bench_campaign_kills.py [--kills 50] [--reviewers 3] [--k 2]
                                         [--seconds 600] [--postgres URL | --no-postgres]

Each reviewer process (`--role reviewer`) claims (`ws.campaigns.claim_next`) and saves
(`ws.campaigns.submit`) in a loop, printing and flushing the ids of each save's labels once the
store acknowledged them. The controller kills one at a random moment (0.1-1.5 s apart) and
starts a new one under a new name, `--kills` times per backend; when a campaign is complete a
new one is created over the same demo traces. Meanwhile one process (`--role exporter`) writes
`ws.exports.write("jsonl")` over and over and checks each file: every row parses, no label id
twice, no target with more than K distinct reviewers. At the end: no target over K (in the
slots and in the labels), every acknowledged label in the store, no slot done without its
reviewer's labels, and the store opens and exports cleanly. Exits 1 on any violation.
PostgreSQL as in bench_campaigns.py (a throwaway server, 127.0.0.1 only).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_campaigns import throwaway_postgres  # noqa: E402
from timing import machine  # noqa: E402
from viz_app.errors import LabelError, OrchvizError  # noqa: E402
from viz_app.labels.campaign import CampaignSpec  # noqa: E402
from viz_app.labels.label import Reviewer  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()


def answers_for(ws: Workspace, claim, rng: random.Random) -> dict:
    """Random answers to a claim's required questions (as tests/campaign_reviewers.py)."""
    found = {}
    for q in claim.questions:
        question = ws.rubric.question(q)
        if question.optional or question.ask_when is not None:
            continue
        if question.choices:
            found[q] = rng.choice([c.value for c in question.choices if c.pointer is None])
        else:
            found[q] = "ok"
    return found


def reviewer(args: argparse.Namespace) -> int:
    """Claim and save until nothing is left; one line of label ids per acknowledged save."""
    ws = Workspace.open(args.db, traces=[args.traces])
    me = Reviewer(name=args.name, via="self-declared")
    rng = random.Random(args.name)
    idle = 0
    while idle < 30:
        try:
            claim = ws.campaigns.claim_next(args.campaign, me)
        except OrchvizError:
            time.sleep(0.05)
            continue
        if claim is None:
            idle += 1
            time.sleep(0.1)
            continue
        idle = 0
        try:
            made = ws.campaigns.submit(claim, answers_for(ws, claim, rng))
        except (LabelError, OrchvizError):
            continue  # refused as a whole (e.g. the lease went to someone else): nothing acked
        print("ACK " + " ".join(x.label_id for x in made), flush=True)
    return 0


def check_export(path: Path, ks: dict[str, int]) -> str | None:
    """What is wrong with one jsonl export (None when it is consistent)."""
    ids: set[str] = set()
    reviewers: dict[tuple, set[str]] = defaultdict(set)
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            row = json.loads(line)
        except ValueError:
            return f"line {n} does not parse"
        if row["label_id"] in ids:
            return f"label {row['label_id']} twice"
        ids.add(row["label_id"])
        if row.get("campaign") in ks and row.get("source", "human") == "human":
            key = (row["campaign"], row["trace_id"], row.get("event_id") or "")
            reviewers[key].add(row["reviewer"])
            if len(reviewers[key]) > ks[row["campaign"]]:
                return f"{key} has {len(reviewers[key])} reviewers, over K"
    return None


def exporter(args: argparse.Namespace) -> int:
    """Export and check until the stop file appears; one JSON line of counts."""
    ws = Workspace.open(args.db, traces=[args.traces])
    out = Path(args.out)
    made = consistent = 0
    problems: list[str] = []
    while True:  # at least one export after the stop file, when every writer is gone
        stopping = Path(args.stop).exists()
        try:
            ws.exports.write("jsonl", out)
        except OrchvizError as err:
            problems.append(f"export failed: {err}")
            continue
        made += 1
        ks = {c.name: c.per_target for c in ws.campaigns.all()}
        wrong = check_export(out, ks)
        if wrong is None:
            consistent += 1
        else:
            problems.append(wrong)
        if stopping:
            break
    print(json.dumps({"exports": made, "consistent": consistent, "problems": problems[:5]}),
          flush=True)
    return 0


def spawn(role: str, db: str, traces: Path, folder: Path, **extra: str) -> subprocess.Popen:
    argv = [sys.executable, str(SCRIPT), "--role", role, "--db", db, "--traces", str(traces)]
    for key, value in extra.items():
        argv += [f"--{key}", str(value)]
    name = extra.get("name", role)
    return subprocess.Popen(argv, cwd=REPO, stdout=open(folder / f"{name}.out", "w"),
                            stderr=open(folder / f"{name}.err", "w"))


def new_campaign(ws: Workspace, k: int) -> str:
    name = f"kills-{uuid.uuid4().hex[:8]}"
    ws.campaigns.create(CampaignSpec(name=name, per_target=k, lease_seconds=2),
                       Reviewer(name="lead", via="cli"))
    return name


def final_checks(db: str, traces: Path, folder: Path, acked: set[str],
                 campaigns: list[str], k: int) -> dict[str, int]:
    ws = Workspace.open(db, traces=[traces])
    labels = [x for x in ws.labelling.all() if x.campaign in campaigns]
    stored = {x.label_id for x in ws.labelling.all()}
    over = done_without = 0
    for name in campaigns:
        campaign = ws.campaigns.get(name)
        targets = {t.target_id: t for t in ws.campaigns.targets(campaign)}
        slots = ws.campaigns.slot_rows(campaign)
        by_target: dict[int, set[str]] = defaultdict(set)
        for s in slots:
            if s["state"] == "done":
                by_target[s["target_id"]].add(s["reviewer"])
        answered: dict[tuple, set[str]] = defaultdict(set)
        for x in labels:
            if x.campaign == name and x.source == "human":
                answered[(x.trace_id, x.event_id or "")].add(x.reviewer)
        over += sum(len(r) > k for r in answered.values())
        for target_id, done in by_target.items():
            t = targets[target_id]
            over += len(done) > t.required
            have = answered[(t.trace_id, t.event_id or "")]
            done_without += sum(r not in have for r in done)
    out = folder / "final.jsonl"
    ws.exports.write("jsonl", out)
    wrong = check_export(out, {name: k for name in campaigns})
    return {"labels acknowledged": len(acked), "acknowledged found": len(acked & stored),
            "targets over K": over, "slots done without labels": done_without,
            "final export consistent": int(wrong is None)}


def run(kind: str, db: str, args: argparse.Namespace) -> bool:
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="orchviz-kills-") as tmp:
        folder = Path(tmp)
        traces = folder / "traces"
        shutil.copytree(REPO / "demo_traces", traces)
        ws = Workspace.open(db, traces=[traces])
        campaigns = [new_campaign(ws, args.k)]
        stop = folder / "stop"
        exp = spawn("exporter", db, traces, folder, out=folder / "export.jsonl", stop=stop,
                    k=args.k)
        serial = 0
        live: list[tuple[subprocess.Popen, str]] = []

        def start() -> None:
            nonlocal serial
            serial += 1
            name = f"r{serial:04d}"
            live.append((spawn("reviewer", db, traces, folder, campaign=campaigns[-1],
                               name=name), name))

        for _ in range(args.reviewers):
            start()
        kills, deadline = 0, time.time() + args.seconds
        while kills < args.kills and time.time() < deadline:
            time.sleep(rng.uniform(0.1, 1.5))
            status = ws.campaigns.status(campaigns[-1])
            if status.complete == status.targets:
                campaigns.append(new_campaign(ws, args.k))
            running = [(p, n) for p, n in live if p.poll() is None]
            if running:
                proc, name = rng.choice(running)
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
            live[:] = [(p, n) for p, n in live if p.poll() is None]
            while len(live) < args.reviewers:
                start()
        for proc, _ in live:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        stop.touch()
        exp.wait(timeout=600)
        exported = json.loads((folder / "exporter.out").read_text().strip().splitlines()[-1])
        acked: set[str] = set()
        for out in folder.glob("r*.out"):
            for line in out.read_text().splitlines():
                if line.startswith("ACK ") and line.endswith(tuple("0123456789abcdef")):
                    acked.update(line.split()[1:])
        errors = [p.name for p in folder.glob("r*.err") if "Traceback" in p.read_text()]
        counts = {"kills": kills, "campaigns": len(campaigns),
                  **final_checks(db, traces, folder, acked, campaigns, args.k),
                  "exports made": exported["exports"],
                  "exports consistent": exported["consistent"],
                  "reviewer processes with a traceback": len(errors)}
        print(f"{kind}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
        for problem in exported["problems"]:
            print(f"  export problem: {problem}")
        for name in errors[:3]:
            print(f"  {name}: {(folder / name).read_text()[-600:]}")
        return (counts["acknowledged found"] == counts["labels acknowledged"]
                and counts["targets over K"] == 0 and counts["slots done without labels"] == 0
                and counts["final export consistent"] == 1
                and exported["exports"] == exported["consistent"] and not errors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=50, help="SIGKILLs per backend")
    parser.add_argument("--reviewers", type=int, default=3, help="reviewer processes at once")
    parser.add_argument("--k", type=int, default=2, help="reviewers per target")
    parser.add_argument("--seconds", type=float, default=600, help="cap per backend")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--postgres", default=os.environ.get("ORCHVIZ_BENCH_POSTGRES_URL"))
    parser.add_argument("--no-postgres", action="store_true")
    parser.add_argument("--no-sqlite", action="store_true")
    parser.add_argument("--role", choices=["reviewer", "exporter"], help=argparse.SUPPRESS)
    for hidden in ("db", "traces", "campaign", "name", "out", "stop"):
        parser.add_argument(f"--{hidden}", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role == "reviewer":
        return reviewer(args)
    if args.role == "exporter":
        return exporter(args)
    print(machine())
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    ok = True
    if not args.no_sqlite:
        with tempfile.TemporaryDirectory() as folder:
            ok &= run("SQLite", str(Path(folder) / "kills.db"), args)
    if not args.no_postgres:
        with contextlib.ExitStack() as stack:
            url = args.postgres or stack.enter_context(throwaway_postgres())
            if url is None:
                print("PostgreSQL: skipped (no server: set ORCHVIZ_BENCH_POSTGRES_URL)")
            else:
                ok &= run("PostgreSQL", url, args)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
