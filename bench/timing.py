"""Timing shared by the benchmarks: the best of several runs, the least disturbed by a noisy
machine."""

from __future__ import annotations

import gc
import os
import platform
import time
from collections.abc import Callable


def machine() -> str:
    """What the figures were measured on, for the line a benchmark prints first."""
    return (f"machine: {platform.machine()}, {os.cpu_count()} cores, "
            f"{platform.python_implementation()} {platform.python_version()}, {platform.system()}")


def best_of(repeats: int, step: Callable[[], object]) -> float:
    """Fastest of `repeats` timings of `step()`, in seconds, each after a full collection."""
    times = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return min(times)
