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


def test_a_reward_model_trained_on_the_balanced_export_scores_held_out_sound_and_corrected(
        shapes, tiny, tmp_path):
    """The default export (confirmations balanced against corrections) trains TRL's
    RewardTrainer; the model then scores held-out pairs of both kinds, the decisions judged
    sound and the ones corrected, each kind apart (the mechanics: a tiny model on the CPU
    learns little; bench/bench_decision_signal.py states the figures)."""
    import datasets
    import torch
    from trl import RewardConfig, RewardTrainer

    rows = file_rows(shapes["decision-pairs"])
    assert {r["pair_kind"] for r in rows} == {"correction", "confirmation"}
    held, train = [], []
    for kind in ("correction", "confirmation"):
        mine = [r for r in rows if r["pair_kind"] == kind]
        held += mine[::3]
        train += [r for i, r in enumerate(mine) if i % 3]
    columns = ("prompt", "chosen", "rejected")
    data = datasets.Dataset.from_list([{k: r[k] for k in columns} for r in train])
    tokenizer = tiny.tokenizer()
    config = RewardConfig(output_dir=str(tmp_path / "out"), max_steps=3, report_to=[],
                          per_device_train_batch_size=2, save_strategy="no", use_cpu=True,
                          dataloader_num_workers=0, max_length=None, learning_rate=1e-3,
                          center_rewards_coefficient=None)
    trainer = RewardTrainer(model=tiny.reward_model(), args=config, processing_class=tokenizer,
                            train_dataset=data)
    trainer.train()
    assert trainer.state.global_step == 3
    model = trainer.model.eval()

    def score(prompt: str, answer: str) -> float:
        ids = tokenizer(prompt + answer, return_tensors="pt")
        with torch.no_grad():
            return float(model(**ids).logits[0, 0])

    for kind in ("correction", "confirmation"):
        pairs = [(score(r["prompt"], r["chosen"]), score(r["prompt"], r["rejected"]))
                 for r in held if r["pair_kind"] == kind]
        assert pairs, f"no held-out {kind}"
        assert all(math.isfinite(a) and math.isfinite(b) for a, b in pairs)
        accuracy = sum(a > b for a, b in pairs) / len(pairs)
        assert 0.0 <= accuracy <= 1.0
        print(f"held-out {kind}s: {len(pairs)} pairs, pairwise accuracy {accuracy:.2f}")


def test_the_campaigns_reruns_make_decision_groups(shapes):
    rows = file_rows(shapes["decision-groups"])
    assert {r["fork_event"] for r in rows} == {"e13", "e39"}
    assert all(len(r["completions"]) == len(r["rewards"]) >= 2 for r in rows)
