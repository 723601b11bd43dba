"""Decision pairs in the trainers' released code: `decision-pairs` trains a TRL RewardTrainer step
and a DPOTrainer step (plain text and conversational, file and folder), and
`openrlhf-decision-pairs` goes through OpenRLHF's own `blending_datasets` and RewardDataset into
its PairWiseLoss and an optimiser step. The campaign's corrected decisions are its stops
answered premature and late (the pairs they imply at the stop and at the pointer)."""

from __future__ import annotations

import math

import pytest

from reading import dataset, file_rows
from released import module
from test_openrlhf import path_of, strategy
from test_trl import SOURCES, one_step


def test_the_campaign_has_decision_pairs_at_stops_and_pointers(shapes):
    rows = file_rows(shapes["decision-pairs"])
    assert {r["origin"] for r in rows} >= {"stop_at_stop", "stop_at_pointer"}
    assert all(r["chosen"] != r["rejected"] for r in rows)


@pytest.mark.parametrize("variant", ["decision-pairs", "decision-pairs+conversational"])
@pytest.mark.parametrize("source", SOURCES)
def test_decision_pairs_train_a_reward_model(shapes, tiny, tmp_path, variant, source):
    from trl import RewardConfig, RewardTrainer

    export = shapes[variant]
    trainer = one_step(RewardTrainer, RewardConfig, tmp_path, model=tiny.reward_model(),
                       processing_class=tiny.tokenizer(), train_dataset=dataset(export, source),
                       config={"max_length": None, "center_rewards_coefficient": None})
    assert len(trainer.train_dataset) == len(file_rows(export))  # no row filtered out


@pytest.mark.parametrize("variant", ["decision-pairs", "decision-pairs+conversational"])
@pytest.mark.parametrize("source", SOURCES)
def test_decision_pairs_train_dpo(shapes, tiny, tmp_path, variant, source):
    from trl import DPOConfig, DPOTrainer

    export = shapes[variant]
    trainer = one_step(DPOTrainer, DPOConfig, tmp_path, model=tiny.causal_lm(),
                       ref_model=tiny.causal_lm(), processing_class=tiny.tokenizer(),
                       train_dataset=dataset(export, source), config={"max_length": None})
    assert len(trainer.train_dataset) == len(file_rows(export))


@pytest.mark.parametrize("variant", ["openrlhf-decision-pairs",
                                     "openrlhf-decision-pairs+conversational"])
def test_openrlhf_decision_pairs_train_a_reward_model_step(shapes, tiny, tmp_path, monkeypatch,
                                                           variant):
    import datasets
    import torch

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    blending_datasets = module("openrlhf.datasets.utils").blending_datasets
    RewardDataset = module("openrlhf.datasets.reward_dataset").RewardDataset
    PairWiseLoss = module("openrlhf.models.loss").PairWiseLoss

    export = shapes[variant]
    chat = variant.endswith("conversational")
    loaded = blending_datasets(path_of(export, "file"), strategy=strategy(chat))
    data = RewardDataset(loaded, tiny.tokenizer(), max_length=32768, strategy=strategy(chat),
                         num_processors=1)
    assert len(data) == len(file_rows(export))
    chosen, c_mask, rejected, r_mask, margins = data.collate_fn(
        [data[i] for i in range(len(data))])
    model = tiny.reward_model()
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss = PairWiseLoss()(model(chosen, attention_mask=c_mask).logits.squeeze(-1),
                          model(rejected, attention_mask=r_mask).logits.squeeze(-1),
                          torch.tensor([m or 0.0 for m in margins]))
    assert math.isfinite(loss.item())
    loss.backward()
    optimiser.step()
