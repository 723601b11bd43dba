"""OpenRLHF 0.11.2 (installed with --no-deps: it pins flash-attn, deepspeed, an exact transformers
and vLLM-era ray, which a CPU machine cannot or need not install): `openrlhf-rm` is loaded by
OpenRLHF's own `blending_datasets` (the file, the folder, the folder's `arrow/`), goes through
its RewardDataset (plain, and with `--data.apply_chat_template` for the conversational variant)
and, with the margins, into its PairWiseLoss and an optimiser step on a tiny reward model."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from reading import file_rows
from released import module

SOURCES = ("file", "folder", "arrow")


def strategy(conversational: bool) -> SimpleNamespace:
    """What `openrlhf/cli/train_rm.py` hands the dataset, as docs/trainers/openrlhf.md runs it:
    the prompt inside chosen and rejected, so no prompt key."""
    data = SimpleNamespace(prompt_key=None, chosen_key="chosen", rejected_key="rejected",
                           apply_chat_template=conversational, tokenizer_chat_template=None)
    return SimpleNamespace(args=SimpleNamespace(data=data, use_ms=False),
                           print=lambda *a, **k: None, is_rank_0=lambda: True)


def path_of(export, source) -> str:
    return str({"file": export.file, "folder": export.folder,
                "arrow": export.folder / "arrow"}[source])


@pytest.mark.parametrize("variant", ["openrlhf-rm", "openrlhf-rm+conversational"])
@pytest.mark.parametrize("source", SOURCES)
def test_openrlhf_rm_trains_a_reward_model_step(shapes, tiny, tmp_path, monkeypatch, variant,
                                                source):
    import datasets
    import torch

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "cache"))
    blending_datasets = module("openrlhf.datasets.utils").blending_datasets
    RewardDataset = module("openrlhf.datasets.reward_dataset").RewardDataset
    PairWiseLoss = module("openrlhf.models.loss").PairWiseLoss

    export = shapes[variant]
    expected = file_rows(export)
    chat = variant.endswith("conversational")
    loaded = blending_datasets(path_of(export, source), strategy=strategy(chat))
    tok = tiny.tokenizer()
    data = RewardDataset(loaded, tok, max_length=32768, strategy=strategy(chat),
                         num_processors=1)
    assert len(data) == len(expected)
    chosen, c_mask, rejected, r_mask, margins = data.collate_fn(
        [data[i] for i in range(len(data))])
    assert margins == [r["margin"] for r in expected]
    model = tiny.reward_model()
    optimiser = torch.optim.AdamW(model.parameters(), lr=1e-3)
    chosen_reward = model(chosen, attention_mask=c_mask).logits.squeeze(-1)
    rejected_reward = model(rejected, attention_mask=r_mask).logits.squeeze(-1)
    loss = PairWiseLoss()(chosen_reward, rejected_reward, torch.tensor(margins))
    assert math.isfinite(loss.item())
    loss.backward()
    optimiser.step()
