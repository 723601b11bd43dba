"""The `uncertain` and `contested` queue orders at scale: ranking the targets of a campaign of
100,000 targets by the learned producer's doubt, and by how contested they are (three producers'
suggestions on each target and a first reviewer's answer on a tenth of them), and reading those
suggestions back from a SQLite store, as `ws.campaigns.create` does.

    python bench/bench_queue_orders.py [--targets 100000] [--repeats 3]

Targets: ranking under 2 s of CPU for 100,000 targets; the store read is measured beside it
(it is what a campaign over a library that large waits for).
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from timing import best_of, machine  # noqa: E402
from viz_app.labels.attention import contests, first_answers, uncertainty  # noqa: E402
from viz_app.labels.campaign_plan import PlannedTarget, prioritise  # noqa: E402
from viz_app.labels.rubric import default_rubric  # noqa: E402
from viz_app.labels.suggestion import Producer, Suggestion  # noqa: E402
from viz_app.suggest.rules import FINE  # noqa: E402
from viz_app.workspace import Workspace  # noqa: E402

STOPS = ["correct", "premature", "late"]
PRODUCERS = [Producer(name="learned", version="a" * 64),
             Producer(name="rules", version="3"),
             Producer(name="judge", version="1", model="m", prompt_sha256="b" * 64)]


def planned(count: int) -> list[PlannedTarget]:
    """`count` stop targets, one per synthetic trace."""
    return [PlannedTarget(trace_id=f"bench-{i:06d}", trace_sha256="0" * 64, event_id="e2",
                          questions=["stopping_correctness", "stop_should_have_been"],
                          required=2 if i % 10 == 0 else 1) for i in range(count)]


def suggestions(targets: list[PlannedTarget]) -> list[Suggestion]:
    rng = random.Random(1)
    return [Suggestion(trace_id=t.trace_id, trace_sha256=t.trace_sha256, event_id=t.event_id,
                       question="stopping_correctness", value=rng.choice(STOPS),
                       confidence=round(rng.uniform(0.34, 1.0), 4), producer=p,
                       created_at="2026-12-01T00:00:00.000000Z")
            for t in targets for p in PRODUCERS]


def labels(targets: list[PlannedTarget]) -> list[dict]:
    rng = random.Random(2)
    return [{"trace_id": t.trace_id, "trace_sha256": t.trace_sha256, "event_id": t.event_id,
             "question": "stopping_correctness", "value": rng.choice(STOPS), "source": "human",
             "reviewer": "ann", "created_at": "2026-11-01T00:00:00.000000Z"}
            for t in targets[::10]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(machine())
    rubric = default_rubric()
    targets = planned(args.targets)
    made = suggestions(targets)
    first = first_answers(labels(targets))

    def rank(order: str) -> None:
        found = uncertainty(targets, made) if order == "uncertain" else \
            contests(rubric, targets, made, first, {"rules": FINE})
        for t in targets:
            t.urgency = found.get((t.trace_id, t.event_id))
        prioritise(targets, order)

    for order in ("uncertain", "contested"):
        cpu = time.process_time()
        wall = best_of(args.repeats, lambda: rank(order))
        print(f"{order:<10} {args.targets:,} targets, {len(made):,} suggestions: "
              f"{wall:.2f} s (best of {args.repeats}; "
              f"{(time.process_time() - cpu) / args.repeats:.2f} s CPU each)")
    with tempfile.TemporaryDirectory() as folder:
        ws = Workspace.open(Path(folder) / "bench.db")
        start = time.perf_counter()
        ws.suggestions.add(made)
        stored = time.perf_counter() - start
        asked = ["stopping_correctness", "stop_should_have_been", "stop_correction"]
        store = ws.suggestions
        learned = best_of(args.repeats, lambda: store.all(producer="learned", questions=asked))
        every = best_of(args.repeats, lambda: (store.all(questions=asked),
                                               store.ran_on("rules")))
        print(f"store      {len(made):,} suggestions written in {stored:.1f} s; read as a "
              f"campaign is created (SQLite, best of {args.repeats}): uncertain (the learned "
              f"producer's) {learned:.2f} s, contested (every producer's, and where the rules "
              f"ran) {every:.2f} s")


if __name__ == "__main__":
    main()
