"""Process reward models, at the last releases that train them: `stepwise` trains a step of TRL
1.13's PRMTrainer, and `openrlhf-prm` goes through OpenRLHF 0.9.5's ProcessRewardDataset into
its PRMLoss and an optimiser step, from the file and from the folder."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from reading import dataset, file_rows
from released import module
from tiny import PLACEHOLDER

SOURCES = ("file", "folder")


@pytest.mark.parametrize("source", SOURCES)
def test_stepwise_trains_trl_1_13_prm(shapes, tiny, tmp_path, source):
    from trl.experimental.prm import PRMConfig, PRMTrainer

    export = shapes["stepwise"]
    expected = file_rows(export)
    config = PRMConfig(output_dir=str(tmp_path / "out"), max_steps=1, report_to=[],
                       per_device_train_batch_size=2, save_strategy="no", use_cpu=True,
                       max_length=None, logging_steps=1)
    trainer = PRMTrainer(model=tiny.token_classifier(), args=config,
                         processing_class=tiny.tokenizer(),
                         train_dataset=dataset(export, source))
    result = trainer.train()
    assert trainer.state.global_step == 1 and math.isfinite(result.training_loss)
    tokenized = trainer.train_dataset
    assert len(tokenized) == len(expected)
    labelled = [sum(1 for t in row["labels"] if t != -100) for row in tokenized]
    assert labelled == [len(r["labels"]) for r in expected]  # every step keeps its label
    assert [sum(row["labels"][i] for i in range(len(row["labels"])) if row["labels"][i] != -100)
            for row in tokenized] == [sum(r["labels"]) for r in expected]


def prm_strategy() -> SimpleNamespace:
    """The arguments `openrlhf/cli/train_prm.py` passes, as examples/scripts/train_prm_mistral.sh
    sets them and docs/trainers/openrlhf.md recommends."""
    return SimpleNamespace(args=SimpleNamespace(input_key="input", label_key="label",
                                                placeholder_token=PLACEHOLDER,
                                                reward_tokens=["+", "-"]))



def test_openrlhf_prm_offers_only_labels_openrlhf_trains_on(shapes):
    """OpenRLHF 0.9.5 puts float labels into an integer tensor (`torch.full_like(input_ids,
    -100)`), so a soft-label column could not train: the export writes none."""
    assert all("soft_label" not in row for row in file_rows(shapes["openrlhf-prm"]))


@pytest.mark.parametrize("source", SOURCES)
def test_openrlhf_prm_trains_openrlhf_0_9_5(shapes, tiny, source):
    import torch

    export = shapes["openrlhf-prm"]
    expected = file_rows(export)
    ProcessRewardDataset = module(
        "openrlhf.datasets.process_reward_dataset").ProcessRewardDataset
    PRMLoss = module("openrlhf.models.loss").PRMLoss
    tok = tiny.tokenizer()
    data = ProcessRewardDataset(dataset(export, source), tok, max_length=32768,
                                strategy=prm_strategy())
    assert len(data) == len(expected)
    inputs, masks, labels = data.collate_fn([data[i] for i in range(len(data))])
    placeholder = data.placeholder_token_id
    assert [int((row == placeholder).sum()) for row in inputs] == \
        [len(r["label"]) for r in expected]  # one placeholder per step, none cut
    plus, minus = (tok.convert_tokens_to_ids(t) for t in ("+", "-"))
    want = [plus if v == "+" else minus for r in expected for v in r["label"]]
    assert labels[inputs == placeholder].tolist() == want
    model = tiny.causal_lm()
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    logits = model(inputs, attention_mask=masks).logits
    loss = PRMLoss(placeholder, [plus, minus])(inputs, logits, labels)
    assert math.isfinite(loss.item())
    loss.backward()
    optimiser.step()
