"""Simulated reviewers working one campaign from one OS process, a thread each: what the
concurrency test runs twice at once on one database (see test_campaign_concurrency.py), and
what bench/bench_campaigns.py runs to time claims.

    python tests/campaign_reviewers.py --db URL --campaign NAME --reviewers a,b,c \\
        --start-at EPOCH [--traces DIR] [--slow 0.2] [--crash a] [--seed 1]

Each reviewer claims and saves until the campaign is complete (or the deadline passes). A
share of their claims (`--slow`) takes longer than the campaign's lease before saving, so some
leases expire and go to others; a `--crash` reviewer claims one target and walks away. Prints
one JSON line: claims, saves, refused (late saves refused), errors.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from viz_app.errors import LabelError, StoreError  # noqa: E402
from viz_app.labels.campaign import EXPIRED  # noqa: E402
from viz_app.labels.label import Reviewer  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402


def answers_for(ws: Workspace, claim, rng: random.Random) -> dict:
    """Random answers to a claim's required questions (its follow-ups when they are asked)."""
    found = {}
    for q in claim.questions:
        question = ws.rubric.question(q)
        if question.optional or question.ask_when is not None:
            continue
        if question.choices:
            plain = [c.value for c in question.choices if c.pointer is None]
            found[q] = rng.choice(plain)
        else:
            found[q] = "ok"
    return found


def review(ws: Workspace, campaign: str, name: str, deadline: float, slow: float,
           lease: float, crash: bool, seed: int, tally: Counter, lock: threading.Lock) -> None:
    """One reviewer's day: claim, (sometimes dawdle past the lease), save, until done."""
    rng = random.Random(f"{seed}:{name}")
    me = Reviewer(name=name, via="self-declared")
    seen: Counter = Counter()
    while time.time() < deadline:
        try:
            claim = ws.campaigns.claim_next(campaign, me)
        except StoreError:
            seen["errors"] += 1
            continue
        if claim is None:
            if ws.campaigns.status(campaign).complete == ws.campaigns.get(campaign).targets:
                break
            time.sleep(0.1)  # slots held by others may still expire
            continue
        seen["claims"] += 1
        if crash:
            break  # walks away holding it: the lease must bring it back
        time.sleep(lease * 1.3 if rng.random() < slow else rng.random() * 0.02)
        try:
            ws.campaigns.submit(claim, answers_for(ws, claim, rng))
            seen["saves"] += 1
        except LabelError as err:
            if str(err) != EXPIRED:
                raise
            seen["refused"] += 1
        except StoreError:
            seen["errors"] += 1
    with lock:
        tally.update(seen)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--db", required=True)
    p.add_argument("--campaign", required=True)
    p.add_argument("--reviewers", required=True)
    p.add_argument("--traces", action="append", default=[])
    p.add_argument("--start-at", type=float, default=0.0)
    p.add_argument("--slow", type=float, default=0.0)
    p.add_argument("--crash", default="")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seconds", type=float, default=240.0)
    args = p.parse_args(argv)
    ws = Workspace.open(args.db, traces=args.traces)
    lease = ws.campaigns.get(args.campaign).lease_seconds
    tally: Counter = Counter()
    lock = threading.Lock()
    names = [n for n in args.reviewers.split(",") if n]
    time.sleep(max(0.0, args.start_at - time.time()))
    deadline = time.time() + args.seconds
    threads = [threading.Thread(target=review, args=(
        ws, args.campaign, n, deadline, args.slow, lease, n == args.crash, args.seed, tally,
        lock)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({k: tally[k] for k in ("claims", "saves", "refused", "errors")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
