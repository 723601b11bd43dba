"""Reward models trained on the team's labels, and the scoring the trainers call.

- `train` fits the default model (`viz_app.reward.train`; `orchviz reward train`);
- `scoring` turns a rollout, a trace or a text into rewards with a model (the default one, or a
  transformers folder);
- `server` serves it over HTTP (`orchviz reward serve`: OpenRLHF's protocol, `/score`);
- `audit` logs what was scored, for reviewers;
- here, the same scoring as library calls with no server: `compute_score` for verl's
  `custom_reward_function`, `reward_function` for TRL's `GRPOTrainer(reward_funcs=...)`.

Both take the model as `model=` (a model file of `orchviz reward train -o`, a transformers
folder, or a stored version with `db=`), or the environment's ORCHVIZ_REWARD_MODEL; or a
running server as `url=` (ORCHVIZ_REWARD_URL) with its `token=` (ORCHVIZ_REWARD_TOKEN)."""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import orjson

_SCORERS: dict[tuple, Any] = {}
_LOCK = threading.Lock()

TIMEOUT = 60.0
"""Seconds a library call waits for a reward server."""


class RewardCallError(RuntimeError):
    """A reward that could not be had: one sentence naming the model or server."""


def scorer_for(model: str | None = None, db: str | None = None, hf: bool = False):
    """The scorer of a model (loaded once per process and kept)."""
    from viz_app.reward.scoring import load_scorer

    model = model or os.environ.get("ORCHVIZ_REWARD_MODEL")
    if not model:
        raise RewardCallError("no reward model named: give model= (a model file of `orchviz "
                              "reward train -o`, or a transformers folder), url= a reward "
                              "server, or set ORCHVIZ_REWARD_MODEL or ORCHVIZ_REWARD_URL")
    key = (model, db, hf)
    with _LOCK:
        found = _SCORERS.get(key)
        if found is None:
            found = _SCORERS[key] = load_scorer(model, db=db, hf=hf)
    return found


def post(url: str, body: bytes, token: str | None = None, timeout: float = TIMEOUT,
         content_type: str = "application/json") -> Any:
    """POST to a reward server; its JSON answer, or RewardCallError with its sentence."""
    token = token if token is not None else os.environ.get("ORCHVIZ_REWARD_TOKEN", "")
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": content_type})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return orjson.loads(answer.read())
    except urllib.error.HTTPError as err:
        try:
            said = orjson.loads(err.read()).get("error", "")
        except (orjson.JSONDecodeError, AttributeError):
            said = ""
        raise RewardCallError(f"the reward server {url} answered {err.code}: "
                              f"{said or err.reason}") from None
    except (urllib.error.URLError, TimeoutError, OSError) as err:
        raise RewardCallError(f"the reward server {url} cannot be reached "
                              f"({getattr(err, 'reason', err)})") from None


def _route(url: str, route: str) -> str:
    base = url.rstrip("/")
    for known in ("/get_reward", "/score"):
        if base.endswith(known):
            base = base[: -len(known)]
    return base + route


def score_texts(texts: Sequence[str], prompts: Sequence[str] | None = None, *,
                model: str | None = None, db: str | None = None, hf: bool = False,
                url: str | None = None, token: str | None = None,
                timeout: float = TIMEOUT) -> list[float]:
    """Rewards of texts a policy wrote (with the prompts they were written for), from a model
    in this process or a reward server."""
    url = url or (None if model else os.environ.get("ORCHVIZ_REWARD_URL"))
    if url:
        body = {"query": list(texts)}
        if prompts is not None:
            body["prompts"] = list(prompts)
        return list(post(_route(url, "/get_reward"), orjson.dumps(body), token,
                         timeout)["rewards"])
    return scorer_for(model, db, hf).score_texts(list(texts), prompts)


def score_rollout(trace: Any, *, model: str | None = None, db: str | None = None,
                  hf: bool = False, url: str | None = None, token: str | None = None,
                  timeout: float = TIMEOUT) -> dict[str, Any]:
    """A rollout's rewards (`RolloutScore` as a dict): `trace` is a `Trace`, a trace as a
    dict, or a file's bytes in any format `orchviz import` reads."""
    from viz_app.io.native import trace_from_dict
    from viz_app.model import Trace

    url = url or (None if model else os.environ.get("ORCHVIZ_REWARD_URL"))
    if url:
        if isinstance(trace, Trace):
            body = orjson.dumps(trace.to_dict())
        elif isinstance(trace, bytes):
            body = trace
        else:
            body = orjson.dumps(trace)
        return post(_route(url, "/score"), body, token, timeout)["rollouts"][0]
    if isinstance(trace, bytes):
        from viz_app.io.detect import read_any

        trace = read_any(trace, name="the rollout")[0]
    elif isinstance(trace, dict):
        trace = trace_from_dict(trace, "the rollout")
    return scorer_for(model, db, hf).score_rollouts([trace])[0].model_dump()


def compute_score(data_source: Any, solution_str: str, ground_truth: Any,
                  extra_info: dict[str, Any] | None = None, **kwargs: Any) -> float:
    """verl's reward function (`custom_reward_function.path` to this module's file and
    `custom_reward_function.name=compute_score`; the model in `reward_kwargs` or the
    environment). The reward of `solution_str`, the response, read with the prompt
    (`extra_info["prompt"]`, where the dataset keeps it) as context; where `extra_info` holds
    the whole rollout (`trace`: a trace as a dict; `trace_path`: its file), the rollout's team
    reward instead. `data_source` and `ground_truth` are not read: the model judges the
    decisions, not an answer key.

    kwargs: `model`, `db`, `hf`, `url`, `token`, `timeout` (see `score_texts`)."""
    extra_info = extra_info or {}
    options = {k: kwargs[k] for k in ("model", "db", "hf", "url", "token", "timeout")
               if k in kwargs}
    trace = extra_info.get("trace")
    if trace is None and extra_info.get("trace_path"):
        with open(extra_info["trace_path"], "rb") as stream:
            trace = stream.read()
    if trace is not None:
        return float(score_rollout(trace, **options)["team_reward"])
    prompt = extra_info.get("prompt")
    if isinstance(prompt, list):
        prompt = "\n".join(str(m.get("content", "")) for m in prompt if isinstance(m, dict))
    prompts = [prompt] if isinstance(prompt, str) else None
    return float(score_texts([solution_str], prompts, **options)[0])


def reward_function(*, model: str | None = None, db: str | None = None, hf: bool = False,
                    url: str | None = None, token: str | None = None,
                    timeout: float = TIMEOUT) -> Callable[..., list[float]]:
    """A reward function for TRL's `GRPOTrainer(reward_funcs=[...])`: called with the batch's
    `prompts` and `completions` (text, or conversational message lists), it returns one reward
    per completion, the prompt read as its context; from a model in this process or a reward
    server (`url`)."""

    def orchviz_reward(prompts: Sequence[Any], completions: Sequence[Any],
                       **_: Any) -> list[float]:
        return score_texts([_text(c) for c in completions], [_text(p) for p in prompts],
                           model=model, db=db, hf=hf, url=url, token=token, timeout=timeout)

    return orchviz_reward


def _text(value: Any) -> str:
    """A prompt or completion as text: a string, or a message list's contents, one a line."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(m.get("content", "")) for m in value if isinstance(m, dict))
    return str(value)
