"""Benchmark of the command's start-up: CPU time of `orchviz` calls that do little, the calls
users make in loops and from cron (`--help`, `pool follow --once` on a quiet run).

Run: python bench/bench_cli_startup.py [--repeats 5]
Each call runs in a fresh process (`python -m viz_app ...`); the figure is the median over the
repeats of the child's CPU time (user + system, from `resource.getrusage`), which a loaded
machine disturbs less than wall time. Printed beside them, measured in the same run: a bare
interpreter (`python -c pass`), and the eager parser the command built before verbs were imported
lazily (`viz_app.cli.build_parser()`: every verb module imported), so the saving reads as a ratio
within one run.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from timing import machine

EAGER = "from viz_app.cli import build_parser; build_parser().format_help()"


def cpu_of(args: list[str], repeats: int) -> float:
    """Median CPU seconds (user + system) of running `python *args` in a fresh process."""
    times = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, *args], check=True, stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="runs of each call (median)")
    repeats = parser.parse_args().repeats
    print(machine())
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    with tempfile.TemporaryDirectory() as tmp:
        run, pool = Path(tmp, "run"), Path(tmp, "pool")
        run.mkdir()
        calls = {
            "python -c pass (the interpreter)": ["-c", "pass"],
            "eager parser (every verb module)": ["-c", EAGER],
            "orchviz --help": ["-m", "viz_app", "--help"],
            "orchviz validate --help": ["-m", "viz_app", "validate", "--help"],
            "orchviz schema": ["-m", "viz_app", "schema"],
            "orchviz pool follow --once (quiet run)": [
                "-m", "viz_app", "pool", "follow", str(run), "-o", str(pool), "--once"],
        }
        figures = {name: cpu_of(args, repeats) for name, args in calls.items()}
    eager = figures["eager parser (every verb module)"]
    for name, cpu in figures.items():
        print(f"{name:42s} {cpu * 1000:7.0f} ms CPU  ({cpu / eager:.2f}x the eager parser)")


if __name__ == "__main__":
    main()
