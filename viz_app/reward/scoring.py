"""Scoring with a reward model: the one place a rollout, a trace or a text becomes rewards,
whatever calls it (the server, `compute_score` for verl, the reward function for TRL, the
benchmark).

A `Scorer` is the default model (`SklearnScorer`, a `RewardModel` fitted from its training
set) or a sequence-classification model a team trained with TRL's RewardTrainer on orchviz's
export (`HFScorer`, a local folder read with transformers). Both score `Decision`s in batches.

- A **rollout** (a trace) is scored decision by decision (`decisions.trace_decisions`); its
  **team reward** is the mean of its decisions' rewards (0 for a rollout with none, which says
  so with `decisions: []`).
- A **text** (what a policy wrote) is read by `decisions.text_decisions`: its reward is the
  mean of the decisions it holds, or the pooled head's score of the whole text.

Every score carries the model's version: the first 16 hex digits of its training set's hash
(the default model) or of its folder's files (a transformers model)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import orjson
from pydantic import BaseModel, Field

from viz_app.labels import Rubric, default_rubric
from viz_app.model import Trace
from viz_app.reward.decisions import Decision, text_decisions, trace_decisions
from viz_app.reward.model import RewardError
from viz_app.reward.train import RewardModel

MODEL_FILE_KIND = "orchviz-reward-model"
"""What a model file written by `orchviz reward train -o FILE` says it is."""


class DecisionReward(BaseModel):
    event_id: str
    sub_decision: str
    agent: str = ""
    reward: float


class RolloutScore(BaseModel):
    """A rollout's rewards: one per orchestration decision, and the team's."""

    trace_id: str
    team_reward: float
    decisions: list[DecisionReward] = Field(default_factory=list)
    model_version: str


class Scorer:
    """What every reward model answers (see the module's docstring)."""

    version: str = ""
    kind: str = ""
    rubric: Rubric

    def score_decisions(self, decisions: Sequence[Decision]) -> np.ndarray:
        raise NotImplementedError

    def score_rollouts(self, traces: Sequence[Trace]) -> list[RolloutScore]:
        """Each trace's rewards, all their decisions scored in one batch."""
        per = [trace_decisions(t, self.rubric) for t in traces]
        flat = [d for found in per for d in found]
        scores = self.score_decisions(flat) if flat else np.zeros(0)
        made, at = [], 0
        for trace, found in zip(traces, per):
            mine = scores[at:at + len(found)]
            at += len(found)
            made.append(RolloutScore(
                trace_id=trace.trace_id,
                team_reward=float(mine.mean()) if len(mine) else 0.0,
                decisions=[DecisionReward(event_id=d.event_id, sub_decision=d.sub_decision,
                                          agent=d.agent, reward=float(s))
                           for d, s in zip(found, mine)],
                model_version=self.version))
        return made

    def score_texts(self, texts: Sequence[str], prompts: Sequence[str] | None = None
                    ) -> list[float]:
        """Each text's reward (see the module's docstring), all scored in one batch. Where
        `prompts` gives the prompt a text was written for, it is the decisions' context and
        never scored; a text that begins with its prompt (OpenRLHF's query is prompt and
        response together) is scored from where the prompt ends."""
        per = []
        for i, text in enumerate(texts):
            prompt = prompts[i] if prompts is not None and i < len(prompts) else ""
            prompt = prompt if isinstance(prompt, str) else ""
            if prompt and text.startswith(prompt):
                text = text[len(prompt):]
            per.append(text_decisions(text, prompt))
        flat = [d for found in per for d in found]
        scores = self.score_decisions(flat) if flat else np.zeros(0)
        made, at = [], 0
        for found in per:
            made.append(float(scores[at:at + len(found)].mean()))
            at += len(found)
        return made


class SklearnScorer(Scorer):
    """The default reward model."""

    kind = "sklearn"

    def __init__(self, model: RewardModel, rubric: Rubric | None = None):
        self.model = model
        self.version = model.version
        self.rubric = rubric or default_rubric()
        model.heads()  # fitted and checked now, not on the first request

    def score_decisions(self, decisions: Sequence[Decision]) -> np.ndarray:
        return self.model.score(decisions)


MAX_TOKENS = 2048
"""Tokens of a decision's text read by a transformers model (its context first cut)."""


class HFScorer(Scorer):
    """A sequence-classification reward model in a local folder (what TRL's RewardTrainer
    saves): each decision read as the export's prompt and completion, its context then the
    decision, the score head's first logit its reward. Read with local files only: nothing
    is fetched from a hub."""

    kind = "transformers"

    def __init__(self, folder: str | os.PathLike, rubric: Rubric | None = None,
                 batch: int = 16):
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError:
            raise RewardError("--hf needs transformers and torch: pip install 'orchviz[tokens]' "
                              "torch") from None
        path = Path(folder)
        if not (path / "config.json").is_file():
            raise RewardError(f"{path}: is not a transformers model folder (no config.json)")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            self.net = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True)
        except (OSError, ValueError) as err:
            raise RewardError(f"{path}: cannot be read as a sequence-classification model "
                              f"({str(err).splitlines()[0][:200]})") from None
        self.net.eval()
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.torch = torch
        self.batch = batch
        self.rubric = rubric or default_rubric()
        self.version = folder_version(path)
        self.max_length = min(MAX_TOKENS, int(getattr(self.tokenizer, "model_max_length",
                                                      MAX_TOKENS) or MAX_TOKENS))

    def score_decisions(self, decisions: Sequence[Decision]) -> np.ndarray:
        texts = [d.context + d.text for d in decisions]
        found: list[float] = []
        self.tokenizer.truncation_side = "left"  # keep the decision, cut the oldest context
        with self.torch.no_grad():
            for at in range(0, len(texts), self.batch):
                encoded = self.tokenizer(texts[at:at + self.batch], padding=True,
                                         truncation=True, max_length=self.max_length,
                                         return_tensors="pt")
                logits = self.net(**encoded).logits
                found += logits[:, 0].float().tolist()
        return np.array(found, dtype=float)


def folder_version(path: Path) -> str:
    """The first 16 hex digits of the SHA-256 of a model folder's files (names and bytes)."""
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(str(file.relative_to(path)).encode() + b"\0")
        with open(file, "rb") as stream:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()[:16]


# -- model files ---------------------------------------------------------------------------------


def write_model_file(model: RewardModel, path: str | os.PathLike) -> None:
    """A model as one JSON file (its training set, versions, weights' hash, report): what
    `orchviz reward serve --model FILE` and `compute_score(model=FILE)` read."""
    body = {"kind": MODEL_FILE_KIND, "model": model.model_dump(mode="json")}
    Path(path).write_bytes(orjson.dumps(body, option=orjson.OPT_NON_STR_KEYS))


def read_model_file(path: str | os.PathLike) -> RewardModel:
    """A model file written by `write_model_file`; RewardError naming the file otherwise."""
    try:
        body = orjson.loads(Path(path).read_bytes())
    except orjson.JSONDecodeError as err:
        raise RewardError(f"{path}: is not a reward model file ({err})") from None
    if not isinstance(body, dict) or body.get("kind") != MODEL_FILE_KIND:
        raise RewardError(f"{path}: is not a reward model file (written by `orchviz reward "
                          "train -o FILE`)")
    return RewardModel.model_validate(body["model"])


def load_scorer(model: str, *, db: str | None = None, hf: bool = False,
                rubric: Rubric | None = None) -> Scorer:
    """The scorer `--model` names: a transformers folder (`hf`, or a folder holding
    config.json), a model file, or a version (or `newest`) of the models stored in `db`."""
    path = Path(model)
    if hf or (path.is_dir() and (path / "config.json").is_file()):
        return HFScorer(path, rubric)
    if path.is_file():
        return SklearnScorer(read_model_file(path), rubric)
    if db is not None:
        from viz_app.settings import database_url
        from viz_app.reward.stored import stored_model
        from viz_app.store import RewardModelStore, connect

        store = RewardModelStore(connect(database_url(db)))
        found = store.newest() if model == "newest" else store.find(model)
        if found is None:
            raise RewardError(f"{db}: holds no reward model {model!r} (`orchviz reward models "
                              "--db` lists them)")
        return SklearnScorer(stored_model(found), rubric)
    raise RewardError(f"{model}: is no model file, transformers folder or stored version "
                      "(give --db to look it up in a store)")
