"""verl 0.9.1: the `verl` export goes through RLHFDataset (with its overlong-prompt filter on)
and, with a judge's answers as responses, through the naive reward manager scored by the
`compute_score` docs/trainers/verl.md gives, from the Parquet file and from the folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reading import file_rows

DOCS = Path(__file__).resolve().parents[2] / "docs" / "trainers" / "verl.md"
SOURCES = ("file", "folder")


def parquet_files(export, source) -> list[str]:
    """What `data.train_files=` names: the file, or the folder's shards."""
    if source == "file":
        return [str(export.file)]
    return sorted(str(p) for p in (export.folder / "data").glob("*.parquet"))


def docs_compute_score():
    """The `compute_score` of docs/trainers/verl.md's judge_reward.py, as a user copies it."""
    (code,) = [block for block in re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
               if "def compute_score" in block]
    found: dict = {}
    exec(compile(code, str(DOCS), "exec"), found)  # noqa: S102 - the docs' own snippet
    return found["compute_score"]


def rlhf_dataset(export, source, tiny, tmp_path):
    from omegaconf import OmegaConf
    from verl.utils.dataset.rl_dataset import RLHFDataset

    config = OmegaConf.create({"prompt_key": "prompt", "max_prompt_length": 32768,
                               "filter_overlong_prompts": True, "truncation": "error",
                               "cache_dir": str(tmp_path / "verl-cache"),
                               "filter_overlong_prompts_workers": 1})
    return RLHFDataset(parquet_files(export, source), tiny.tokenizer(), config)


@pytest.mark.parametrize("source", SOURCES)
def test_verl_rows_go_through_rlhf_dataset(shapes, tiny, tmp_path, source):
    export = shapes["verl"]
    expected = file_rows(export)
    data = rlhf_dataset(export, source, tiny, tmp_path)
    assert len(data) == len(expected)  # none filtered as overlong, none lost
    tok = tiny.tokenizer()
    for i, row in enumerate(expected):
        item = data[i]
        assert item["raw_prompt"] == row["prompt"]
        assert item["index"] == row["extra_info"]["index"]
        assert item["reward_model"]["ground_truth"] == row["reward_model"]["ground_truth"]
        tok.apply_chat_template(item["raw_prompt"], add_generation_prompt=True, tokenize=True)


@pytest.mark.parametrize("source", SOURCES)
def test_verl_reward_manager_scores_a_judge_against_the_reviewers(shapes, tiny, tmp_path,
                                                                  source):
    import numpy as np
    import torch
    from verl import DataProto
    from verl.utils.dataset.rl_dataset import collate_fn
    from verl.workers.reward_manager.naive import NaiveRewardManager

    export = shapes["verl"]
    data = rlhf_dataset(export, source, tiny, tmp_path)
    tok = tiny.tokenizer()
    items = [data[i] for i in range(len(data))]
    batch = collate_fn(items)
    prompts = [tok.apply_chat_template(it["raw_prompt"], add_generation_prompt=True,
                                       tokenize=False) for it in items]
    # a judge right on even rows, wrong on odd ones
    answers = [it["reward_model"]["ground_truth"] if i % 2 == 0 else "not an answer"
               for i, it in enumerate(items)]
    tok.padding_side = "left"
    p = tok(prompts, add_special_tokens=False, padding=True, return_tensors="pt")
    tok.padding_side = "right"
    r = tok(answers, add_special_tokens=False, padding=True, return_tensors="pt")
    tensors = {"prompts": p.input_ids, "responses": r.input_ids,
               "attention_mask": torch.cat([p.attention_mask, r.attention_mask], dim=1)}
    non_tensors = {k: v for k, v in batch.items() if isinstance(v, np.ndarray)}
    proto = DataProto.from_dict(tensors=tensors, non_tensors=non_tensors)
    manager = NaiveRewardManager(tok, num_examine=0, compute_score=docs_compute_score())
    scores = manager(proto).sum(dim=-1).tolist()
    assert scores == [1.0 if i % 2 == 0 else 0.0 for i in range(len(items))]
    assert set(non_tensors["data_source"]) == {r["data_source"] for r in file_rows(export)}
