"""Benchmark: `suggestion_agreement` on generated labels, with its bootstrap intervals.

Targets of `stopping_correctness` (three categories) and `aggregation_quality` (a five-point
scale), each answered blind by two or three reviewers and suggested by two producers (one that
mostly agrees with the reviewers, one at random), at 1,000 and 10,000 targets per question,
with 1,000 resamples. Prints the CPU seconds of one report (best of three, after a first run
that imports scikit-learn) and, for comparison, of 100 resamples done by calling
`krippendorff.alpha` and `cohen_kappa_score` once per resample.

Run: `python bench/bench_suggestion_agreement.py`.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from timing import best_of, machine  # noqa: E402
from viz_app.labels.agreement import suggestion_agreement  # noqa: E402
from viz_app.labels.rubric import default_rubric  # noqa: E402
from viz_app.labels.suggestion import Producer, Suggestion  # noqa: E402

RUBRIC = default_rubric()
QUESTIONS = {"stopping_correctness": ["correct", "premature", "late"],
             "aggregation_quality": [1, 2, 3, 4, 5]}
STAMP, LATER = "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"


def generated(targets: int, seed: int = 0) -> tuple[list[dict], list[Suggestion]]:
    """Blind labels of two or three reviewers and two producers' suggestions per target."""
    rng = random.Random(seed)
    labels, suggestions = [], []
    producers = (Producer(name="rules", version="1"),
                 Producer(name="judge", version="1", model="random"))
    for question, values in QUESTIONS.items():
        for i in range(targets):
            truth = rng.choice(values)
            for reviewer in ("ann", "bob", "cy")[: rng.choice((2, 3))]:
                labels.append({"trace_id": f"t{i}", "event_id": "e1", "question": question,
                               "value": truth if rng.random() < 0.8 else rng.choice(values),
                               "reviewer": reviewer, "source": "human",
                               "suggestions_visible": False, "created_at": STAMP,
                               "trace_sha256": "sha"})
            for producer, value in zip(producers, (truth if rng.random() < 0.7
                                                   else rng.choice(values),
                                                   rng.choice(values))):
                suggestions.append(Suggestion(
                    trace_id=f"t{i}", trace_sha256="sha", event_id="e1", question=question,
                    value=value, confidence=0.5, producer=producer, created_at=LATER))
    return labels, suggestions


def library_resamples(targets: int, resamples: int = 100) -> float:
    """CPU seconds of `resamples` resamples of one producer's pairs, calling the libraries."""
    import krippendorff
    import numpy as np
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(0)
    human = rng.integers(0, 3, targets)
    produced = np.where(rng.random(targets) < 0.7, human, rng.integers(0, 3, targets))
    start = time.process_time()
    for _ in range(resamples):
        rows = rng.integers(0, targets, targets)
        krippendorff.alpha(reliability_data=np.vstack([human[rows], produced[rows]]),
                           level_of_measurement="nominal")
        cohen_kappa_score(human[rows], produced[rows])
    return time.process_time() - start


def main() -> None:
    print(machine())
    for targets in (1_000, 10_000):
        labels, suggestions = generated(targets)
        suggestion_agreement(RUBRIC, labels, suggestions, resamples=10)  # imports, warm-up

        def report() -> None:
            start = time.process_time()
            suggestion_agreement(RUBRIC, labels, suggestions, resamples=1000)
            report.cpu = time.process_time() - start

        wall = best_of(3, report)
        print(f"{targets:>6} targets x 2 questions, {len(labels):,} labels, "
              f"{len(suggestions):,} suggestions, 1000 resamples: {wall:.2f} s wall, "
              f"{report.cpu:.2f} s CPU (last run)")
        print(f"{'':>6} calling the libraries per resample: "
              f"{library_resamples(targets):.2f} s CPU for 100 resamples of one producer's "
              "pairs on one question")


if __name__ == "__main__":
    main()
