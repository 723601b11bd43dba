"""Lengths: every export that holds text measures its rows as its trainer reads them, prints
the distribution and how many rows the trainer's default limit would cut or drop, writes the
same in the dataset card, and leaves out (naming them) the rows past `--max-length`;
`--tokenizer DIR` counts tokens instead of characters."""

from __future__ import annotations

import json

import pytest
from test_export_hf import export_folder, ws  # noqa: F401  (the fixture)

from viz_app.cli import main
from viz_app.export import FORMATS, TRAINING
from viz_app.export.lengths import CHARS_PER_TOKEN, prompt_completion
from viz_app.export.readers import read_rows

TEXT_SHAPES = [f for f in TRAINING if FORMATS[f].texts is not None]


def run(tmp_path, format, *extra, out=None):
    out = out or tmp_path / FORMATS[format].file_name
    code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(tmp_path / "traces"), "--format", format, "-o", str(out), *extra])
    return code, out


def unpaired_length(row) -> int:
    return sum(map(len, prompt_completion(row)[0]))


@pytest.mark.parametrize("format", TEXT_SHAPES)
def test_every_text_shape_prints_its_length_distribution(ws, tmp_path, format, capsys):
    code, _ = run(tmp_path, format)
    assert code == 0
    err = capsys.readouterr().err
    assert "row lengths in characters: shortest " in err
    if FORMATS[format].limit is not None:
        assert FORMATS[format].limit.setting in err


def test_the_default_limit_counts_the_rows_it_would_drop(ws, tmp_path, capsys):
    code, out = run(tmp_path, "unpaired")
    lengths = [unpaired_length(r) for r in read_rows(out)]
    over = sum(1 for n in lengths if n > 1024 * CHARS_PER_TOKEN)
    err = capsys.readouterr().err
    assert f"shortest {min(lengths):,}" in err and f"longest {max(lengths):,}" in err
    if over:
        assert f"{over} of {len(lengths)} rows are longer than TRL 1.16 KTOTrainer's default " \
               "KTOConfig.max_length 1,024 tokens (estimated" in err
    else:
        assert "every row fits TRL 1.16 KTOTrainer's default KTOConfig.max_length" in err


def test_max_length_leaves_out_and_names_the_longer_rows(ws, tmp_path, capsys):
    _, whole = run(tmp_path, "unpaired", out=tmp_path / "whole.jsonl")
    rows = read_rows(whole)
    cut = min(unpaired_length(r) for r in rows)
    longer = [r for r in rows if unpaired_length(r) > cut]
    assert longer
    capsys.readouterr()
    code, out = run(tmp_path, "unpaired", "--max-length", str(cut))
    assert code == 0
    kept = read_rows(out)
    assert len(kept) == len(rows) - len(longer)
    assert all(unpaired_length(r) <= cut for r in kept)
    err = capsys.readouterr().err
    assert f"{len(longer)} rows longer than --max-length {cut} characters left out: " in err
    first = longer[0]
    assert f"left out: {first['trace_id']} {first['event_id']}" in err
    assert f"({unpaired_length(first)})" in err


def test_the_card_states_the_lengths_and_the_default_limit(ws, tmp_path):
    folder = export_folder(tmp_path, "openrlhf-rm")
    card = (folder / "README.md").read_text()
    facts = json.loads((folder / "orchviz_export.json").read_text())
    lengths = facts["lengths"]
    assert lengths["unit"] == "characters" and lengths["rows"] == facts["rows"]
    assert lengths["limit"]["setting"] == "--data.max_len" and lengths["limit"]["tokens"] == 512
    assert "## Lengths" in card and "| rows | shortest | median |" in card
    assert f"{lengths['limit']['over']} of {lengths['rows']} rows are longer than the default " \
           "`--data.max_len`" in card


def test_a_shape_without_text_takes_no_max_length(ws, tmp_path, capsys):
    code, _ = run(tmp_path, "agent-rewards", "--max-length", "100")
    assert code == 2
    assert "--max-length does not apply to --format agent-rewards" in capsys.readouterr().err


def test_a_tokenizer_that_cannot_be_read_is_one_sentence_and_nothing_is_written(ws, tmp_path,
                                                                              capsys):
    code, out = run(tmp_path, "unpaired", "--tokenizer", str(tmp_path / "no-such-tokenizer"))
    assert code == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("orchviz: --tokenizer ") and err.endswith("nothing was exported")
    assert len(err.splitlines()) == 1 and not out.exists()


def test_a_folder_without_a_tokenizer_or_transformers_is_one_sentence(ws, tmp_path, capsys):
    import importlib.util

    empty = tmp_path / "empty"
    empty.mkdir()
    code, out = run(tmp_path, "unpaired", "--tokenizer", str(empty))
    err = capsys.readouterr().err.strip()
    assert code == 1 and len(err.splitlines()) == 1 and not out.exists()
    if importlib.util.find_spec("transformers") is None:
        assert err == ("orchviz: --tokenizer needs the transformers package (pip install "
                       "transformers): nothing was exported")
    else:
        assert err.startswith(f"orchviz: --tokenizer {empty}: no tokenizer could be read there")


def test_a_tokenizer_counts_tokens(ws, tmp_path, capsys):
    transformers = pytest.importorskip("transformers", reason="--tokenizer reads transformers")
    tokenizers = pytest.importorskip("tokenizers")
    words = tokenizers.Tokenizer(tokenizers.models.WordLevel(unk_token="[UNK]"))
    words.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    _, whole = run(tmp_path, "unpaired", out=tmp_path / "whole.jsonl")
    texts = ["".join(prompt_completion(r)[0]) for r in read_rows(whole)]
    words.train_from_iterator(texts, tokenizers.trainers.WordLevelTrainer(
        special_tokens=["[UNK]"]))
    folder = tmp_path / "tokenizer"
    transformers.PreTrainedTokenizerFast(tokenizer_object=words,
                                         unk_token="[UNK]").save_pretrained(folder)
    capsys.readouterr()
    code, _ = run(tmp_path, "unpaired", "--tokenizer", str(folder))
    assert code == 0
    counts = sorted(len(words.encode(t).ids) for t in texts)
    err = capsys.readouterr().err
    assert f"row lengths in tokens: shortest {counts[0]:,}" in err
    assert f"longest {counts[-1]:,}" in err and "estimated" not in err
