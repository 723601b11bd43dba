"""Timing shared by the benchmarks: the best of several runs, the least disturbed by a noisy
machine."""

from __future__ import annotations

import gc
import time
from collections.abc import Callable


def best_of(repeats: int, step: Callable[[], object]) -> float:
    """Fastest of `repeats` timings of `step()`, in seconds, each after a full collection."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times)
