"""What an export says its trainer's default length limit does to its rows (counted with
`--tokenizer`, the tiny tokenizer's folder) is what that trainer then does with the same
tokenizer: the rows it drops, or the rows it cuts. This campaign's rows are far from the limits
checked by count (hundreds of tokens), so a count is exact here."""

from __future__ import annotations

import json

import pytest

from reading import dataset, file_rows
from review_campaign import export


def limit_of(shapes, tiny, tmp_path, format: str) -> tuple:
    """The shape exported again with `--tokenizer`, and its card's statement of the limit."""
    found = export(shapes.campaign, format, tmp_path, "--tokenizer", str(tiny.folder))
    facts = json.loads((found.folder / "orchviz_export.json").read_text())
    return found, facts["lengths"]["limit"]


@pytest.fixture(scope="module")
def kto_at_its_default(shapes, tiny, tmp_path_factory) -> tuple[int, int, dict]:
    """The rows KTOTrainer drops and cuts at KTOConfig's default max_length, and the card's
    statement of that limit."""
    from trl import KTOConfig, KTOTrainer

    tmp_path = tmp_path_factory.mktemp("kto-lengths")
    found, limit = limit_of(shapes, tiny, tmp_path, "unpaired")
    config = KTOConfig(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True,
                       per_device_train_batch_size=4)
    assert config.max_length == limit["tokens"]  # the default the card names
    trainer = KTOTrainer(model=tiny.causal_lm(), ref_model=tiny.causal_lm(), args=config,
                         processing_class=tiny.tokenizer(),
                         train_dataset=dataset(found, "file"))
    rows = len(file_rows(found))
    kept = trainer.train_dataset
    dropped = rows - len(kept)
    cut = sum(1 for r in kept if len(r["prompt_ids"]) + len(r["completion_ids"])
              > config.max_length)
    return dropped, cut, limit


def test_kto_cuts_or_drops_the_unpaired_rows_the_export_says_it_does(kto_at_its_default):
    """KTOTrainer cuts a row past its limit and drops one whose prompt alone fills it; the card
    says so and counts the rows it touches. (The count may differ by a row at the limit: the
    card counts prompt and completion as one text, the trainer tokenizes them apart.)"""
    dropped, cut, limit = kto_at_its_default
    assert limit["effect"].startswith("cuts") and "drops those whose prompt" in limit["effect"]
    assert dropped + cut > 0, "the campaign has rows past KTO's default limit"
    assert abs((dropped + cut) - limit["over"]) <= 1, (dropped, cut, limit["over"])


def test_reward_trainer_does_to_preference_rows_what_the_export_says(shapes, tiny, tmp_path):
    from trl import RewardConfig, RewardTrainer

    found, limit = limit_of(shapes, tiny, tmp_path, "preference")
    config = RewardConfig(output_dir=str(tmp_path / "out"), report_to=[], use_cpu=True)
    assert config.max_length == limit["tokens"]
    trainer = RewardTrainer(model=tiny.reward_model(), args=config,
                            processing_class=tiny.tokenizer(),
                            train_dataset=dataset(found, "file"))
    assert limit["effect"].startswith("drops")
    assert len(file_rows(found)) - len(trainer.train_dataset) == limit["over"]


def test_verl_does_to_verl_rows_what_the_export_says(shapes, tiny, tmp_path):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    found, limit = limit_of(shapes, tiny, tmp_path, "verl")
    config = OmegaConf.create({"max_prompt_length": limit["tokens"],
                               "filter_overlong_prompts": True,
                               "filter_overlong_prompts_workers": 1,
                               "cache_dir": str(tmp_path / "verl-cache")})
    data = RLHFDataset([str(found.file)], tiny.tokenizer(), config)
    assert "drops them" in limit["effect"]
    assert len(file_rows(found)) - len(data) == limit["over"]


@pytest.mark.parametrize("format", ["openrlhf-rm"])
def test_openrlhf_cuts_the_rows_the_export_says(shapes, tiny, tmp_path, format):
    from types import SimpleNamespace

    from released import module

    RewardDataset = module("openrlhf.datasets.reward_dataset").RewardDataset
    found, limit = limit_of(shapes, tiny, tmp_path, format)
    args = SimpleNamespace(data=SimpleNamespace(prompt_key=None, chosen_key="chosen",
                                                rejected_key="rejected",
                                                apply_chat_template=False))
    data = RewardDataset(dataset(found, "file"), tiny.tokenizer(), max_length=limit["tokens"],
                         strategy=SimpleNamespace(args=args), num_processors=1)
    cut = sum(1 for i in range(len(data))
              if max(data[i][0].shape[-1], data[i][2].shape[-1]) >= limit["tokens"])
    assert limit["effect"].startswith("cuts")
    assert cut == limit["over"]
