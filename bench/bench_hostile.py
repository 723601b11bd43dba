"""Benchmark of hostile input: the peak memory of importing a zip bomb.

Run: python bench/bench_hostile.py [--inflated-gb 2.2]
Builds, from code, an Inspect `.eval` log (a zip) whose one sample inflates a thousandfold (a
2.2 MB file whose member inflates to 2.2 GB by default), then imports it in a fresh process as
`orchviz import` reads it (format detected, then read) and prints the file's size, the peak
resident memory of that process next to one that only imports orchviz, how long it took, and
the one sentence it was refused with. Target: the bomb costs no more memory than the limit
(ORCHVIZ_MAX_BYTES, 200 MB by default) allows, and is refused before it is inflated.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from timing import machine

PEAK = """
def peak():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmHWM:"))
"""
"""The high-water mark of a process's resident memory (Linux's VmHWM: a child's ru_maxrss
would count the parent it was forked from)."""
IMPORT = PEAK + """
import sys
from viz_app.io.detect import read_any
try:
    read_any(sys.argv[1])
    outcome = "imported"
except Exception as err:
    outcome = str(err)
print(peak())
print(outcome)
"""
BASELINE = PEAK + """
import viz_app.io.detect
print(peak())
"""


def build_bomb(path: Path, inflated: int) -> None:
    """An .eval zip: a header, and one sample of `inflated` bytes, nearly all one letter."""
    head = b'{"id": 1, "epoch": 1, "events": [], "pad": "'
    chunk = b"a" * (1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("header.json", b'{"eval": {"task": "bomb", "eval_id": "bomb"}}')
        with archive.open("samples/1_epoch_1.json", "w", force_zip64=True) as member:
            member.write(head)
            left = inflated - len(head) - 2
            while left > 0:
                member.write(chunk[:left])
                left -= len(chunk)
            member.write(b'"}')


def run(script: str, *args: str) -> tuple[list[str], float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          check=True)
    return done.stdout.splitlines(), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inflated-gb", type=float, default=2.2,
                        help="what the bomb's member inflates to, in GB")
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as tmp:
        bomb = Path(tmp) / "bomb.eval"
        build_bomb(bomb, int(args.inflated_gb * 1e9))
        size = bomb.stat().st_size
        (baseline, *_), _ = run(BASELINE)
        (peak, outcome), seconds = run(IMPORT, str(bomb))
    print(f"zip bomb: {size / 1e6:.1f} MB file, member inflating to {args.inflated_gb:.1f} GB")
    print(f"import:   peak RSS {int(peak) / 1e6:,.0f} MB (a process that only imports orchviz: "
          f"{int(baseline) / 1e6:,.0f} MB), {seconds:.1f} s")
    print(f"outcome:  {outcome}")


if __name__ == "__main__":
    main()
