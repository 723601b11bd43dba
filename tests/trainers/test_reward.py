"""The reward model in the trainers' own code: a reward model trained with TRL's RewardTrainer on
orchviz's decision-pairs export, served by `orchviz reward serve --hf` (a real uvicorn on
127.0.0.1, with a token), gives the rewards of

- a TRL GRPOTrainer step on the CPU with a tiny policy (`reward_funcs=[reward_function(url)]`);
- OpenRLHF's own remote reward client (`SingleTurnAgentExecutor`, what `--remote_rm_url`
  drives), whose extra logs go into tensors as its sample generator makes them;
- verl's reward manager (`NaiveRewardManager`) calling `viz_app.reward.compute_score`, loaded
  by verl's own `get_custom_reward_fn` from `pkg://viz_app.reward`, once through the server
  (`reward_kwargs: {url, token}`) and once in the process (`{model: DIR, hf: true}`), with the
  same rewards.

And the default model (scikit-learn), trained by `orchviz reward train` on the review campaign
and written with `-o`: served the same way to OpenRLHF's client, and scored in the process by
verl's reward manager (`reward_kwargs: {model: FILE}`).

docs/trainers/reward-server.md shows each wiring; these are its snippets' settings."""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from reading import dataset, file_rows
from released import module
from test_trl import one_step

REPO = Path(__file__).resolve().parents[2]
TOKEN = "trainers-token"


@pytest.fixture(scope="module")
def reward_model_dir(shapes, tiny, tmp_path_factory) -> Path:
    """A tiny reward model trained one RewardTrainer step on the decision pairs, saved as
    RewardTrainer saves it."""
    from trl import RewardConfig, RewardTrainer

    tmp = tmp_path_factory.mktemp("rm")
    trainer = one_step(RewardTrainer, RewardConfig, tmp, model=tiny.reward_model(),
                       processing_class=tiny.tokenizer(),
                       train_dataset=dataset(shapes["decision-pairs"], "file"),
                       config={"max_length": None, "center_rewards_coefficient": None})
    folder = tmp / "reward-model"
    trainer.save_model(str(folder))
    tiny.tokenizer().save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def default_model_file(shapes, tmp_path_factory) -> Path:
    """`orchviz reward train` on the review campaign's store, written as a model file."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from viz_app.cli import main

    out = tmp_path_factory.mktemp("default-rm") / "reward-model.json"
    said = io.StringIO()
    argv = ["reward", "train", "--db", str(shapes.campaign.db), "--traces",
            str(shapes.campaign.traces), "--resamples", "0", "-o", str(out)]
    with redirect_stdout(said), redirect_stderr(said):
        code = main(argv)
    assert code == 0, said.getvalue()
    assert "pairwise accuracy" in said.getvalue()
    return out


class Server:
    def __init__(self, url: str, process: subprocess.Popen):
        self.url, self.process = url, process

    def post(self, route: str, body: dict) -> dict:
        request = urllib.request.Request(f"{self.url}{route}?token={TOKEN}",
                                         data=json.dumps(body).encode(), method="POST")
        with urllib.request.urlopen(request, timeout=60) as answer:
            return json.loads(answer.read())


def start(model_args: list[str], folder: Path):
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = folder / "server.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "viz_app", "reward", "serve", *model_args, "--port", str(port),
         "--token-env", "RM_TOKEN"],
        stdout=log.open("wb"), stderr=subprocess.STDOUT,
        env=dict(os.environ, RM_TOKEN=TOKEN, PYTHONPATH=os.pathsep.join(
            p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)))
    found = Server(f"http://127.0.0.1:{port}", process)
    deadline = time.monotonic() + 180
    while True:
        if process.poll() is not None:
            pytest.fail(f"orchviz reward serve exited: {log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(found.url + "/health", timeout=2) as answer:
                if answer.status == 200:
                    break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            process.terminate()
            pytest.fail(f"orchviz reward serve did not answer: {log.read_text()[-3000:]}")
        time.sleep(0.5)
    return found


@pytest.fixture(scope="module")
def server(reward_model_dir, tmp_path_factory):
    found = start(["--hf", "--model", str(reward_model_dir)], tmp_path_factory.mktemp("serve"))
    yield found
    found.process.terminate()
    found.process.wait(timeout=30)


@pytest.fixture(scope="module")
def default_server(default_model_file, tmp_path_factory):
    found = start(["--model", str(default_model_file)], tmp_path_factory.mktemp("serve-sk"))
    yield found
    found.process.terminate()
    found.process.wait(timeout=30)


def prompts_of(shapes, n: int) -> list[str]:
    """The decision-pairs export's prompts (the deciding agent's context), their last lines."""
    rows = file_rows(shapes["decision-pairs"])
    return ["\n".join(r["prompt"].splitlines()[-4:]) + "\n" for r in rows[:n]]


def test_trl_grpo_takes_a_step_rewarded_by_the_server(shapes, tiny, server, tmp_path):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from viz_app.reward import reward_function

    remote = reward_function(url=server.url, token=TOKEN)
    seen: list[tuple[list, list, list[float]]] = []

    def orchviz_reward(prompts, completions, **kwargs):
        rewards = remote(prompts=prompts, completions=completions, **kwargs)
        seen.append((list(prompts), list(completions), rewards))
        return rewards

    orchviz_reward.__name__ = "orchviz_reward"
    train = Dataset.from_dict({"prompt": prompts_of(shapes, 4)})
    trainer = one_step(GRPOTrainer, GRPOConfig, tmp_path, model=tiny.causal_lm(),
                       reward_funcs=[orchviz_reward], processing_class=tiny.tokenizer(),
                       train_dataset=train,
                       config={"num_generations": 2, "max_completion_length": 8,
                               "generation_batch_size": 4, "beta": 0.0})
    assert seen, "the trainer never asked for a reward"
    prompts, completions, rewards = seen[0]
    assert len(rewards) == len(completions) == 4 and all(math.isfinite(r) for r in rewards)
    # the rewards the trainer got are the server's own for those completions
    again = server.post("/get_reward", {"query": [p + c for p, c in zip(prompts, completions)],
                                        "prompts": prompts})
    assert again["rewards"] == pytest.approx(rewards, abs=1e-5)
    logged = [h for h in trainer.state.log_history if "reward" in h]
    assert logged and logged[0]["reward"] == pytest.approx(sum(rewards) / len(rewards),
                                                            abs=1e-4)


@pytest.mark.parametrize("model", ["transformers", "default"])
def test_openrlhf_s_remote_reward_client_gets_the_server_s_rewards(shapes, request, model):
    import torch

    server = request.getfixturevalue("server" if model == "transformers" else "default_server")
    agent = module("openrlhf.utils.agent")
    prompts = prompts_of(shapes, 3)
    responses = ["[t=99] orchestrator orchestrator_decision (stop): stop.",
                 "[t=99] orchestrator aggregate: every result, merged.", "free text"]
    queries = [p + r for p, r in zip(prompts, responses)]
    executor = agent.SingleTurnAgentExecutor(remote_rm_url=f"{server.url}/get_reward"
                                             f"?token={TOKEN}")
    (answer,) = asyncio.run(executor._fetch_rewards_via_http(queries, prompts, ["", "", ""]))
    direct = server.post("/get_reward", {"query": queries, "prompts": prompts})
    assert answer["rewards"] == direct["rewards"] and len(answer["rewards"]) == 3
    assert answer["scores"] == answer["rewards"]
    # the sample generator makes a tensor of each extra log, as openrlhf/trainer/ppo_utils/
    # samples_generator.py does
    for value in answer["extra_logs"].values():
        assert torch.tensor([value]).numel() == 3


def _verl_batch(shapes, tiny, tmp_path, responses):
    import numpy as np
    import torch
    from verl import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn

    from test_verl import rlhf_dataset

    data = rlhf_dataset(shapes["verl"], "file", tiny, tmp_path)
    items = [data[i] for i in range(len(responses))]
    tok = tiny.tokenizer()
    prompts = [tok.apply_chat_template(it["raw_prompt"], add_generation_prompt=True,
                                       tokenize=False) for it in items]
    tok.padding_side = "left"
    p = tok(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    tok.padding_side = "right"
    r = tok(responses, add_special_tokens=False, padding=True, return_tensors="pt")
    batch = collate_fn(items)
    non_tensors = {k: v for k, v in batch.items() if isinstance(v, np.ndarray)}
    return DataProto.from_dict(
        tensors={"prompts": p.input_ids, "responses": r.input_ids,
                 "attention_mask": torch.cat([p.attention_mask, r.attention_mask], dim=1)},
        non_tensors=non_tensors), tok


@pytest.mark.parametrize("where", ["server", "process", "process-default"])
def test_verl_s_reward_manager_calls_compute_score(shapes, tiny, request, tmp_path, where):
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn
    from verl.workers.reward_manager.naive import NaiveRewardManager

    if where == "process-default":
        server = request.getfixturevalue("default_server")
        kwargs = {"model": str(request.getfixturevalue("default_model_file"))}
    else:
        server = request.getfixturevalue("server")
        kwargs = {"url": server.url, "token": TOKEN} if where == "server" else \
            {"model": str(request.getfixturevalue("reward_model_dir")), "hf": True}
    config = OmegaConf.create({"reward": {"custom_reward_function": {
        "path": "pkg://viz_app.reward", "name": "compute_score", "reward_kwargs": kwargs}}})
    compute_score = get_custom_reward_fn(config)
    responses = ["[t=99] orchestrator orchestrator_decision (stop): stop.",
                 "[t=99] orchestrator aggregate: every result, merged.", "free text",
                 "[t=99] orchestrator spawn -> helper: Spawn helper to check the figures."]
    proto, tok = _verl_batch(shapes, tiny, tmp_path, responses)
    manager = NaiveRewardManager(tok, num_examine=0, compute_score=compute_score)
    scores = manager(proto).sum(dim=-1).tolist()
    decoded = [tok.decode(tok(r, add_special_tokens=False).input_ids, skip_special_tokens=True)
               for r in responses]
    expected = server.post("/get_reward", {"query": decoded})["rewards"]
    assert scores == pytest.approx(expected, abs=1e-4)
    assert len(set(round(s, 6) for s in scores)) > 1  # the decisions are told apart
