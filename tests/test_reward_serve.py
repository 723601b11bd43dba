"""`orchviz reward serve`: a real uvicorn on 127.0.0.1, spoken to over real HTTP as OpenRLHF's
client and a rollout worker speak to it: rewards in OpenRLHF's shape, a whole rollout scored
on /score, a refusal in one sentence for every bad request (and the server still serving), the
limits, the token, concurrent requests batched without mixing their answers, two workers, and
the audit log a campaign samples from."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import free_port, need
from factories import demo_paths
from reward_cases import small_model_file

pytest.importorskip("sklearn", reason="the reward model needs scikit-learn (the test extra)")
if any(__import__("importlib").util.find_spec(m) is None for m in ("fastapi", "uvicorn")):
    need("the reward server needs FastAPI and uvicorn: pip install 'orchviz[reward]'")

REPO = Path(__file__).resolve().parent.parent
TOKEN = "s3cret-token"
STOP = "[t=9] orchestrator orchestrator_decision (stop): All results are in; stop."


class Server:
    def __init__(self, url: str, process: subprocess.Popen, log: Path):
        self.url, self.process, self.log = url, process, log

    def request(self, path: str, body: bytes | None = None, *, token: str | None = TOKEN,
                headers: dict | None = None, method: str | None = None,
                timeout: float = 60) -> tuple[int, dict]:
        request = urllib.request.Request(self.url + path, data=body, method=method or (
            "POST" if body is not None else "GET"), headers=dict(headers or {}))
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    def rewards(self, queries: list[str], **options) -> list[float]:
        status, answer = self.request("/get_reward", json.dumps({"query": queries}).encode(),
                                      **options)
        assert status == 200, answer
        return answer["rewards"]


def start(tmp: Path, model: Path, *extra: str) -> Server:
    port = free_port()
    log = tmp / f"server-{port}.log"
    env = dict(os.environ, PYTHONPATH=str(REPO), ORCHVIZ_TEST_REWARD_TOKEN=TOKEN)
    process = subprocess.Popen(
        [sys.executable, "-m", "viz_app", "reward", "serve", "--model", str(model), "--port",
         str(port), "--token-env", "ORCHVIZ_TEST_REWARD_TOKEN", *extra],
        stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env, cwd=tmp)
    server = Server(f"http://127.0.0.1:{port}", process, log)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if server.request("/health", token=None, timeout=2)[0] == 200:
                return server
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.25)
    process.terminate()
    pytest.fail(f"the server did not answer within 120 s: {log.read_text()[-2000:]}")


def stop(server: Server) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.process.kill()


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return small_model_file(tmp_path_factory.mktemp("reward-model") / "model.json")


@pytest.fixture(scope="module")
def server(model, tmp_path_factory):
    folder = tmp_path_factory.mktemp("reward-serve")
    found = start(folder, model, "--max-body-bytes", "200000", "--max-queries", "64",
                  "--max-query-chars", "20000", "--audit", str(folder / "audit"))
    found.audit = folder / "audit"
    yield found
    stop(found)


def test_it_answers_openrlhf_s_protocol_as_serve_rm_does(server, model):
    from viz_app.reward.scoring import SklearnScorer, read_model_file

    status, answer = server.request("/get_reward", json.dumps(
        {"query": [STOP, "words a policy wrote"], "prompts": ["", ""],
         "labels": ["", ""]}).encode())
    assert status == 200
    local = SklearnScorer(read_model_file(model)).score_texts([STOP, "words a policy wrote"])
    assert answer["rewards"] == pytest.approx(local)
    assert answer["scores"] == answer["rewards"]
    assert answer["model_version"] == read_model_file(model).version
    # OpenRLHF makes a tensor of every extra_logs value: numbers only
    assert answer["extra_logs"] == {"orchviz_decisions": [1, 0]}
    # `POST /` is the same route, for a --remote_rm_url given without a path
    assert server.request("/", json.dumps({"query": [STOP]}).encode())[1]["rewards"] == \
        pytest.approx(local[:1])


def test_a_whole_rollout_is_scored_decision_by_decision(server):
    premature = next(p for p in demo_paths() if "premature" in p.name)
    status, answer = server.request("/score", premature.read_bytes())
    assert status == 200, answer
    (rollout,) = answer["rollouts"]
    assert rollout["trace_id"] == "demo-10-review-premature-stop"
    subs = {d["sub_decision"] for d in rollout["decisions"]}
    assert {"O1", "O4", "O5"} <= subs
    rewards = [d["reward"] for d in rollout["decisions"]]
    assert rollout["team_reward"] == pytest.approx(sum(rewards) / len(rewards))
    assert rollout["model_version"] == answer["model_version"]


def test_any_file_orchviz_import_reads_is_a_rollout(server):
    from viz_app.io.pool import write_pool  # noqa: F401 - a pool's JSON Lines, as a trainer logs
    from viz_app.io.detect import read_any

    traces = [read_any(p)[0] for p in demo_paths()[:3]]
    lines = b"".join(json.dumps(t.to_dict()).encode() + b"\n" for t in traces)
    status, answer = server.request("/score", lines)
    assert status == 200, answer
    assert [r["trace_id"] for r in answer["rollouts"]] == [t.trace_id for t in traces]


@pytest.mark.parametrize("path, body, status, says", [
    ("/get_reward", b"{not json", 400, "the body is not JSON"),
    ("/get_reward", b'{"query": "one text"}', 422, '"query" is a list of texts'),
    ("/get_reward", b'{"query": [1, 2]}', 422, '"query" is a list of texts'),
    ("/score", b"", 422, "the body is empty"),
    ("/score", b"plain words, no trace", 422, "is in no format orchviz reads"),
    ("/score", b'{"trace_id": "t", "events": "no"}', 422, "request.json"),
    ("/nowhere", b"{}", 404, "no route /nowhere"),
])
def test_a_bad_request_is_one_sentence_and_the_server_keeps_serving(server, path, body,
                                                                    status, says):
    found, answer = server.request(path, body)
    assert found == status
    assert set(answer) == {"error"} and says in answer["error"]
    assert "Traceback" not in answer["error"] and "\n" not in answer["error"]
    assert server.rewards([STOP])  # still serving


def test_a_body_over_the_limit_is_refused_declared_or_streamed(server):
    status, answer = server.request("/score", b"x" * 300_000)
    assert status == 413 and "over this server's limit of 200,000" in answer["error"]
    # a chunked body with no length declared is stopped at the limit while it is read
    def chunks():
        for _ in range(40):
            yield b"y" * 10_000

    request = urllib.request.Request(server.url + "/score", data=chunks(), method="POST",
                                     headers={"Authorization": f"Bearer {TOKEN}",
                                              "Transfer-Encoding": "chunked"})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=60)
    assert refused.value.code == 413
    assert "over this server's limit" in json.loads(refused.value.read())["error"]
    assert server.rewards([STOP])


def test_too_many_or_too_long_queries_are_refused(server):
    status, answer = server.request("/get_reward", json.dumps({"query": ["a"] * 65}).encode())
    assert status == 413 and "65 queries" in answer["error"] and "--max-queries" in \
        answer["error"]
    status, answer = server.request("/get_reward",
                                    json.dumps({"query": ["a" * 20_001]}).encode())
    assert status == 413 and "query 0 is 20,001 characters" in answer["error"]


def test_the_token_is_asked_for_in_a_header_or_the_url(server):
    status, answer = server.request("/get_reward", b'{"query": ["x"]}', token=None)
    assert status == 401 and "asks for its token" in answer["error"]
    assert server.request("/get_reward", b'{"query": ["x"]}', token="wrong")[0] == 401
    assert server.request(f"/get_reward?token={TOKEN}", b'{"query": ["x"]}', token=None)[0] \
        == 200  # OpenRLHF's client sends no headers: the token rides in --remote_rm_url
    assert server.request("/health", token=None)[0] == 200


def test_concurrent_requests_are_batched_and_each_gets_its_own_rewards(server):
    texts = [f"[t={i}] orchestrator spawn -> worker_{i}: Spawn worker_{i} for part {i}."
             for i in range(24)] + [STOP, "free text"]
    alone = {t: server.rewards([t])[0] for t in texts}
    with ThreadPoolExecutor(max_workers=12) as pool:
        together = list(pool.map(lambda t: server.rewards([t, STOP]), texts * 2))
    for text, found in zip(texts * 2, together):
        assert found == pytest.approx([alone[text], alone[STOP]])


def test_scored_rollouts_are_logged_to_a_pool_a_campaign_samples_from(server, tmp_path):
    from viz_app.io.pool import is_pool, read_pool
    from viz_app.reward.audit import least_sure, read_scores

    paths = demo_paths()[3:6]
    answers = [server.request("/score", p.read_bytes())[1] for p in paths]
    stop(server)  # the log is written on shutdown (and every --audit-every rollouts)
    assert is_pool(str(server.audit))
    logged = {t.trace_id: t for t in read_pool(str(server.audit), lambda e: None)}
    wanted = {a["rollouts"][0]["trace_id"] for a in answers}
    assert wanted <= set(logged)
    scores = {s["trace_id"]: s for s in read_scores(str(server.audit))}
    for answer in answers:
        rollout = answer["rollouts"][0]
        kept = scores[rollout["trace_id"]]
        assert kept["model_version"] == answer["model_version"]
        assert kept["team_reward"] == pytest.approx(rollout["team_reward"])
        assert kept["trace_sha256"] == logged[rollout["trace_id"]].sha256
    order = least_sure(str(server.audit))
    assert set(order) >= wanted
    assert [abs(scores[t]["team_reward"]) for t in order] == sorted(
        abs(scores[t]["team_reward"]) for t in order)
    # a campaign is drawn from the log as from any pool
    from factories import make_workspace
    from viz_app.labels.campaign import CampaignSpec
    from viz_app.labels.label import Reviewer

    ws = make_workspace(tmp_path, traces=[server.audit])
    assert ws.library.pools == [str(server.audit)]
    ws.library.update_pool_index(str(server.audit))
    ws.campaigns.create(CampaignSpec(name="rewarded", per_target=1, pool=str(server.audit)),
                       Reviewer(name="lee", via="cli"))
    assert ws.campaigns.status("rewarded").targets > 0
    # ordered by the model: what it doubts (or disagrees with a first reviewer on) comes first
    from viz_app.labels import first_answers
    from viz_app.reward.audit import urgencies

    lee = Reviewer(name="lee", via="cli")
    ws.campaigns.create(CampaignSpec(name="doubted", per_target=1, pool=str(server.audit),
                                     order="reward"), lee)
    claim = ws.campaigns.claim_next("doubted", Reviewer(name="ann", via="cli"))
    found = {(t, e): u for (t, _, e), u in urgencies(
        str(server.audit), ws.rubric, first_answers(ws.labelling.current_records())).items()}
    asked = {(t, e) for (t, e) in found if e}  # the campaign's targets are decisions
    assert found[(claim.trace_id, claim.event_id or "")] == pytest.approx(
        max(found[k] for k in asked))


def test_a_request_over_the_deadline_is_503_and_the_server_goes_on(model, tmp_path):
    slow = start(tmp_path, model, "--deadline", "0.05", "--max-queries", "4096")
    try:
        many = [f"[t={i}] orchestrator aggregate: " + " ".join(f"w{j}" for j in range(300))
                for i in range(3000)]
        status, answer = slow.request("/get_reward", json.dumps({"query": many}).encode())
        assert status == 503 and "deadline of 0.05 s" in answer["error"]
        assert slow.request("/health", token=None)[0] == 200
    finally:
        stop(slow)


def test_two_workers_share_the_port(model, tmp_path):
    two = start(tmp_path, model, "--workers", "2")
    try:
        with ThreadPoolExecutor(max_workers=8) as pool:
            found = list(pool.map(lambda _: two.rewards([STOP])[0], range(32)))
        assert len(set(round(x, 9) for x in found)) == 1  # every worker has the same model
        children = _children(two.process.pid)
        assert len(children) >= 2, children  # uvicorn's supervisor and its two workers
        with ThreadPoolExecutor(max_workers=8) as pool:
            answered = set(pool.map(lambda _: two.request("/health", token=None)[1]["worker"],
                                    range(32)))
        assert answered and answered <= children, (answered, children)
    finally:
        stop(two)


def _children(pid: int) -> set[int]:
    """The processes a process started (Linux's /proc), the ones serving: uvicorn's workers,
    not the resource tracker multiprocessing may start beside them."""
    found = Path(f"/proc/{pid}/task/{pid}/children")
    if not found.exists():
        pytest.skip("this system does not list a process's children in /proc")
    kids = {int(x) for x in found.read_text().split()}
    return {k for k in kids if b"resource_tracker" not in
            Path(f"/proc/{k}/cmdline").read_bytes()}
