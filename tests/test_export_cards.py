"""Dataset cards: the card declares its rows' features as `datasets` writes them (so
`load_dataset(FOLDER)` reads the folder by them), and pairwise judgements get their agreement
row beside the rubric's questions."""

from __future__ import annotations

import json

import pytest
import yaml
from test_export_hf import export_folder, ws  # noqa: F401  (the fixture)

from viz_app.export import TRAINING
from viz_app.labels.agreement import pairwise_agreement

datasets = pytest.importorskip("datasets")


def front_matter(folder):
    text = (folder / "README.md").read_text()
    return yaml.safe_load(text.split("---\n")[1])


@pytest.mark.parametrize("format", TRAINING)
def test_the_card_declares_the_features_datasets_reads(ws, tmp_path, format):
    import pyarrow.parquet as pq

    folder = export_folder(tmp_path, format)
    declared = front_matter(folder)["dataset_info"]["features"]
    schema = pq.read_schema(next((folder / "data").glob("train-*.parquet")))
    assert declared == datasets.Features.from_arrow_schema(schema)._to_yaml_list()
    loaded = datasets.load_dataset(str(folder), split="train", cache_dir=str(tmp_path / "c"))
    assert loaded.features == datasets.Features._from_yaml_list(declared)


def test_pairwise_judgements_get_their_agreement_row(ws, tmp_path):
    folder = export_folder(tmp_path, "preference")
    facts = json.loads((folder / "orchviz_export.json").read_text())
    (row,) = [q for q in facts["agreement"] if q["question"] == "pairwise_preference"]
    assert row["shared_targets"] == 1  # ann and bob judged the one pair
    assert "| pairwise_preference |" in (folder / "README.md").read_text()
    found = pairwise_agreement(ws.labelling.current_records())
    assert found is not None and found.reviewers == 2 and found.targets == 1


def test_pairwise_alpha_falls_as_judges_disagree(ws):
    from viz_app.labels.label import Reviewer

    a, b = ws.library.trace("demo-10-review-premature-stop"), ws.library.trace("rerun")
    agreeing = pairwise_agreement(ws.labelling.current_records())
    assert agreeing.alpha is None and "same judgement" in agreeing.note
    ws.labelling.save_preference(a, b, a.trace_id, Reviewer(name="cy", via="cli"), "stops sooner", 3)
    split = pairwise_agreement(ws.labelling.current_records())
    assert split.alpha is not None and split.alpha < 0.5 and split.reviewers == 3


def test_a_folder_written_again_loads_its_new_rows_by_name(ws, tmp_path):
    """datasets caches a folder loaded by name under its card's config: the config is named by
    the rows, so a re-export (other options, more labels) never loads the cached old rows."""
    cache = str(tmp_path / "one-users-cache")
    folder = export_folder(tmp_path, "unpaired", "--min-reviewers", "2")
    first = datasets.load_dataset(str(folder), split="train", cache_dir=cache)
    assert front_matter(folder)["configs"][0]["config_name"].startswith("orchviz-")
    export_folder(tmp_path, "unpaired", "--disputed", "mean")  # and the disputed aggregate
    again = datasets.load_dataset(str(folder), split="train", cache_dir=cache)
    assert again.num_rows > first.num_rows
    facts = json.loads((folder / "orchviz_export.json").read_text())
    assert again.num_rows == facts["rows"]
    assert datasets.load_dataset(str(folder), split="train", cache_dir=cache)["label"] == \
        again["label"]  # the same export loads the same rows again
