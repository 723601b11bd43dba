"""A local Ray that ends with the process that started it.

`ray.init()` with no cluster to join starts one on this machine: its GCS and raylet are the
caller's children (they end with it), but the raylet's own children, the dashboard and runtime
environment agents, are not: when the caller is killed (`kill -9`, the OOM killer), they notice
at once, then try for a minute to tell the dead GCS, and task workers linger for a while too
(seen with Ray 2.60: the agents outlived a killed `orchviz pool index --ray auto` by 60 s).

`watch_local_ray()` starts a small watcher (this file run as a script, the standard library
only) that notes every Ray process descended from the caller while it lives, and when the
caller ends ends those still running. It is run by the index only when `ray.init` started the
cluster in this process; a cluster joined by address is never touched.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

SCAN_SECONDS = 1.0
"""How often the watcher notes the caller's Ray processes (a /proc scan of a few ms)."""
START_SECONDS = 15.0
"""For this long after it starts (while Ray starts its daemons, agents and first workers), the
watcher looks five times as often."""
GRACE_SECONDS = 2.0
"""How long the watcher waits after SIGTERM before SIGKILL."""


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time) of a process from /proc; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[1]), int(fields[19])  # ppid (field 4), starttime (field 22)


def _is_ray(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    return cmdline.startswith(b"ray::") or b"/ray/" in cmdline


def ray_descendants(root: int) -> dict[int, int]:
    """Ray's processes descended from `root`, each pid with its start time."""
    parents: dict[int, list[tuple[int, int]]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            found = _stat(int(name))
            if found is not None:
                parents.setdefault(found[0], []).append((int(name), found[1]))
    out: dict[int, int] = {}
    todo = [root]
    while todo:
        for pid, started in parents.get(todo.pop(), []):
            if pid not in out:
                out[pid] = started
                todo.append(pid)
    return {pid: started for pid, started in out.items() if _is_ray(pid)}


def started_a_cluster(pid: int | None = None) -> bool:
    """Whether a process (default: this one) has a Ray GCS server of its own as a child: the
    head of a local cluster it started, not one it joined."""
    pid = pid or os.getpid()
    for child in ray_descendants(pid):
        if (_stat(child) or (0, 0))[0] == pid:
            try:
                with open(f"/proc/{child}/cmdline", "rb") as f:
                    if b"gcs_server" in f.read().split(b"\0", 1)[0]:
                        return True
            except OSError:
                continue
    return False


def _end(seen: dict[int, int]) -> None:
    """SIGTERM, then after GRACE_SECONDS SIGKILL, the processes seen that still run (the
    same process: its start time checked, so a reused pid is never hit)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        alive = [pid for pid, started in seen.items() if (_stat(pid) or (0, -1))[1] == started]
        for pid in alive:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        if not alive:
            return
        if sig == signal.SIGTERM:
            deadline = time.monotonic() + GRACE_SECONDS
            while time.monotonic() < deadline and any(
                    (_stat(pid) or (0, -1))[1] == seen[pid] for pid in alive):
                time.sleep(0.1)


def watch(parent: int) -> None:
    """The watcher's loop: note the parent's Ray processes while it lives, then end them."""
    seen: dict[int, int] = {}
    started = last = time.monotonic()
    while os.getppid() == parent:
        now = time.monotonic()
        if now - last >= (SCAN_SECONDS / 5 if now - started < START_SECONDS else SCAN_SECONDS):
            seen.update(ray_descendants(parent))
            last = now
        time.sleep(0.2)
    _end(seen)


def watch_local_ray() -> subprocess.Popen | None:
    """Start the watcher of this process's local Ray (Linux: it reads /proc); None elsewhere."""
    if not sys.platform.startswith("linux"):
        return None
    return subprocess.Popen([sys.executable, "-I", "-S", os.path.abspath(__file__),
                             str(os.getpid())], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)


if __name__ == "__main__":
    watch(int(sys.argv[1]))
