"""A `--hf-dataset` folder holds the data of its file: for every training shape, over generated
campaigns (several reviewers, disputes, adjudications, pointers, pairwise judgements), the rows
read back from the folder equal the rows of the file, key for key, with no key a row did not
have and no null it did not hold; the dataset card names the trainer each shape serves, lists
the columns written as JSON text, and counts the reviewers of the labels behind the rows."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from test_export_roundtrip import RUBRIC, build, judgements, scenario

from viz_app.export import FORMATS, TRAINING, ExportInput, write_export
from viz_app.export.hf import read_hf_rows
from viz_app.export.readers import read_rows


def _campaign(case):
    traces, labels, options = build(case)
    return ExportInput(labels=[*labels, *judgements(traces, case["seed"])], traces=traces,
                       rubric=RUBRIC, options=options, from_scores=True)


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(case=scenario)
def test_every_folder_reads_back_equal_to_its_file(case, tmp_path_factory):
    given_ = _campaign(case)
    for format in TRAINING:
        where = tmp_path_factory.mktemp(format.replace("-", "_"))
        file = where / FORMATS[format].file_name
        write_export(format, given_, file)
        write_export(format, given_, where / "hf", hf_dataset=True)
        named, rows = read_hf_rows(where / "hf")
        assert named == format
        assert rows == read_rows(file), f"{format}: the folder's rows differ from the file's"


def test_json_text_columns_are_those_whose_keys_vary_and_the_card_lists_them(tmp_path):
    given_ = _campaign({"seed": 3, "traces": 3, "agents": 5, "events": 60,
                        "topology": "hierarchical", "calls": True, "agree": 0.6,
                        "adjudicate": 0.3, "disputed": "adjudicated", "min_reviewers": 1,
                        "threshold": 0.0})
    for format in ("rllm", "agent-lightning"):
        write_export(format, given_, tmp_path / format, hf_dataset=True)
        facts = json.loads((tmp_path / format / "orchviz_export.json").read_text())
        assert set(FORMATS[format].json_columns) <= set(facts["json_columns"])
        card = (tmp_path / format / "README.md").read_text()
        assert all(f"`{c}`" in card for c in FORMATS[format].json_columns)


def test_every_training_shape_names_the_released_trainer_it_serves(tmp_path):
    assert all(FORMATS[f].trainer for f in TRAINING)
    assert "1.13" in FORMATS["stepwise"].trainer and "1.14.0" in FORMATS["stepwise"].trainer
    assert "0.9.5" in FORMATS["openrlhf-prm"].trainer
    given_ = _campaign({"seed": 5, "traces": 2, "agents": 3, "events": 30,
                        "topology": "hierarchical", "calls": False, "agree": 1.0,
                        "adjudicate": 0.0, "disputed": "drop", "min_reviewers": 1,
                        "threshold": 0.0})
    write_export("stepwise", given_, tmp_path / "s", hf_dataset=True)
    card = (tmp_path / "s" / "README.md").read_text()
    assert f"Trainer it serves today: {FORMATS['stepwise'].trainer}." in card
