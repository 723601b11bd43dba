"""TRL (current release): `preference` trains a RewardTrainer step and a DPOTrainer step,
`unpaired` a KTOTrainer step, each from the exported file and from its folder, as loaded,
plain text and conversational (through a chat template as strict as the common ones)."""

from __future__ import annotations

import math

import pytest

from reading import dataset, file_rows

TRL_VERSION = "1.16.0"
SOURCES = ("file", "folder")


def test_this_is_the_trl_the_docs_name():
    import trl

    assert trl.__version__ == TRL_VERSION


def one_step(trainer_cls, config_cls, tmp_path, **given):
    """Train one optimiser step on the CPU and return the trainer; no length limit, so every
    row trains whole (tests/trainers/test_lengths.py checks what the default limits would cut)."""
    config = config_cls(output_dir=str(tmp_path / "out"), max_steps=1, report_to=[],
                        per_device_train_batch_size=given.pop("batch", 2), save_strategy="no",
                        logging_steps=1, use_cpu=True, dataloader_num_workers=0,
                        **given.pop("config", {}))
    trainer = trainer_cls(args=config, **given)
    result = trainer.train()
    assert trainer.state.global_step == 1
    assert math.isfinite(result.training_loss)
    return trainer


@pytest.mark.parametrize("variant", ["preference", "preference+conversational"])
@pytest.mark.parametrize("source", SOURCES)
def test_preference_trains_a_reward_model(shapes, tiny, tmp_path, variant, source):
    from trl import RewardConfig, RewardTrainer

    export = shapes[variant]
    train = dataset(export, source)
    trainer = one_step(RewardTrainer, RewardConfig, tmp_path, model=tiny.reward_model(),
                       processing_class=tiny.tokenizer(), train_dataset=train,
                       config={"max_length": None, "center_rewards_coefficient": None})
    assert len(trainer.train_dataset) == len(file_rows(export))  # no row filtered out
    assert "margin" in trainer.train_dataset.column_names  # the margin reaches the loss


@pytest.mark.parametrize("variant", ["preference", "preference+conversational"])
@pytest.mark.parametrize("source", SOURCES)
def test_preference_trains_dpo(shapes, tiny, tmp_path, variant, source):
    from trl import DPOConfig, DPOTrainer

    export = shapes[variant]
    trainer = one_step(DPOTrainer, DPOConfig, tmp_path, model=tiny.causal_lm(),
                       ref_model=tiny.causal_lm(),
                       processing_class=tiny.tokenizer(), train_dataset=dataset(export, source),
                       config={"max_length": None})
    assert len(trainer.train_dataset) == len(file_rows(export))


@pytest.mark.parametrize("variant", ["unpaired", "unpaired+conversational"])
@pytest.mark.parametrize("source", SOURCES)
def test_unpaired_trains_kto(shapes, tiny, tmp_path, variant, source):
    from trl import KTOConfig, KTOTrainer

    export = shapes[variant]
    expected = file_rows(export)
    assert {r["label"] for r in expected} == {True, False}  # desirable and undesirable steps
    trainer = one_step(KTOTrainer, KTOConfig, tmp_path, model=tiny.causal_lm(),
                       ref_model=tiny.causal_lm(),
                       processing_class=tiny.tokenizer(), train_dataset=dataset(export, source),
                       batch=4, config={"max_length": None})
    assert len(trainer.train_dataset) == len(expected)
