"""`orchviz reward serve --ray`: the same application deployed on Ray Serve (a local Ray, as on
a machine with no cluster to join), answering over real HTTP as uvicorn's does, and a local Ray
it started ends with the command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from conftest import free_port, need
from factories import REPO
from reward_cases import small_model_file

pytest.importorskip("sklearn", reason="the reward model needs scikit-learn (the test extra)")

STOP = "[t=9] orchestrator orchestrator_decision (stop): All results are in; stop."


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ray_serve_answers_as_uvicorn_does_and_its_local_ray_ends_with_it(tmp_path):
    try:
        import ray.serve  # noqa: F401
    except ImportError:
        need("Ray Serve is not installed: pip install 'ray[serve]'")
    from viz_app.reward.scoring import SklearnScorer, read_model_file
    from viz_app.store.pool_index import _ray_local as ray_local

    model = small_model_file(tmp_path / "model.json")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env.update(PYTHONPATH=str(REPO), RM_TOKEN="ray-token")
    log = tmp_path / "serve.log"
    command = subprocess.Popen(
        [sys.executable, "-m", "viz_app", "reward", "serve", "--ray", "--workers", "1",
         "--model", str(model), "--port", str(port), "--token-env", "RM_TOKEN"],
        cwd=tmp_path, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    seen: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 300
        while True:
            assert command.poll() is None, log.read_text()[-3000:]
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            assert time.monotonic() < deadline, "Ray Serve did not answer in 300 s"
            time.sleep(1)
        request = urllib.request.Request(
            url + "/get_reward", data=json.dumps({"query": [STOP]}).encode(), method="POST",
            headers={"Authorization": "Bearer ray-token"})
        with urllib.request.urlopen(request, timeout=60) as answer:
            found = json.loads(answer.read())
        expected = SklearnScorer(read_model_file(model)).score_texts([STOP])
        assert found["rewards"] == pytest.approx(expected)
        refused = urllib.request.Request(url + "/get_reward", data=b"{bad", method="POST",
                                         headers={"Authorization": "Bearer ray-token"})
        with pytest.raises(urllib.error.HTTPError) as bad:
            urllib.request.urlopen(refused, timeout=60)
        assert bad.value.code == 400
        assert json.loads(bad.value.read())["error"].startswith("the body is not JSON")
        seen = ray_local.ray_descendants(command.pid)
        assert seen  # it started a local Ray
    finally:
        command.terminate()
        command.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
            (ray_local._stat(pid) or (0, -1))[1] == started for pid, started in seen.items()):
        time.sleep(0.5)
    assert not [pid for pid, started in seen.items()
                if (ray_local._stat(pid) or (0, -1))[1] == started]
