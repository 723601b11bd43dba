"""A local Ray started by indexing a pool (`--ray auto` with no cluster to join) ends with the
process that started it, however it ends: nothing of it is left running on the machine."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from conftest import need
from factories import REPO
from viz_app.store.pool_index import _ray_local as ray_local

STARTS_RAY = """
import time
from viz_app.store.pool_index._executors import _ray_init
_ray_init("auto")
print("ready", flush=True)
time.sleep(300)
"""


def alive(seen: dict[int, int]) -> list[int]:
    """The processes seen that still run (the same processes: start times checked)."""
    return [pid for pid, started in seen.items()
            if (ray_local._stat(pid) or (0, -1))[1] == started]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_local_ray_ends_within_seconds_when_the_command_that_started_it_is_killed():
    try:
        import ray  # noqa: F401
    except ImportError:
        need("Ray is not installed: pip install 'orchviz[ray]'")
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONPATH"] = str(REPO)
    command = subprocess.Popen([sys.executable, "-c", STARTS_RAY], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert command.stdout.readline().strip() == "ready"
        assert ray_local.started_a_cluster(command.pid)
        time.sleep(2 * ray_local.SCAN_SECONDS)  # the watcher has noted them
        seen = ray_local.ray_descendants(command.pid)
        agents = [pid for pid in seen if ray_local._stat(pid)[0] != command.pid]
        assert len(seen) >= 4 and agents  # GCS, raylet, ... and the raylet's agents
    finally:
        command.kill()
        command.wait()
    deadline = time.monotonic() + 15  # left alone, the agents took 60 s
    while alive(seen) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert alive(seen) == []


def test_the_watcher_ends_only_ray_processes_of_its_parent(tmp_path):
    """A Ray process of the parent is ended once the parent ends; another child is not."""
    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")
    fake_ray = tmp_path / "ray" / "worker.py"  # any process run from a folder named ray
    fake_ray.parent.mkdir()
    fake_ray.write_text("import time\ntime.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", f"""
import subprocess, sys, time
from viz_app.store.pool_index import _ray_local as ray_local
ray_local.watch_local_ray()
ray_ = subprocess.Popen([sys.executable, {str(fake_ray)!r}])
other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(ray_.pid, other.pid, flush=True)
time.sleep(300)
"""], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE,
        text=True)
    ray_pid, other_pid = map(int, parent.stdout.readline().split())
    seen = {pid: ray_local._stat(pid)[1] for pid in (ray_pid, other_pid)}
    time.sleep(2 * ray_local.SCAN_SECONDS)
    parent.kill()
    parent.wait()
    try:
        deadline = time.monotonic() + 10
        while ray_pid in alive(seen) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert alive(seen) == [other_pid]
    finally:
        os.kill(other_pid, 9)
