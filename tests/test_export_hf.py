"""Every training shape as a Hugging Face `datasets` folder (--hf-dataset): Parquet shards that
`load_dataset("parquet", ...)` and `load_dataset(FOLDER)` read, `save_to_disk`'s files (in
`arrow/`) that `load_from_disk` reads, and a dataset card naming the rubric, its hash, the
counts, agreement and the reviewers' provenance."""

from __future__ import annotations

import json

import pytest

from factories import PREMATURE, make_workspace, premature
from viz_app.cli import main
from viz_app.export import FORMATS, TRAINING
from viz_app.export.readers import read_export

datasets = pytest.importorskip("datasets")


@pytest.fixture
def ws(tmp_path):
    """Two runs of demo 10 judged against each other, and labels on the first; the second is
    replayed from the first's stop (a branch forked at e13: decision-groups' group)."""
    first, second = premature().to_dict(), premature().to_dict()
    second["trace_id"] = "rerun"
    second["events"][0]["content"] = "A rerun that waits for every analyst."
    fork = next(e for e in second["events"] if e["id"] == "e13")
    fork.update(forked_from=first["trace_id"], fork_event="e13", content="Wait for db_analyst.",
                decision="continue")
    ws = make_workspace(tmp_path, traces=[first, second])
    trace, rerun = ws.library.trace(first["trace_id"]), ws.library.trace("rerun")
    from viz_app.labels.label import Reviewer

    for reviewer in ("ann", "bob"):
        ws.labelling.save(trace, "aggregation_quality", 2, reviewer, "e12")
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                             "stop_should_have_been": "e15"}, reviewer)
        ws.labelling.save_preference(trace, rerun, "rerun", Reviewer(name=reviewer, via="cli"), "waits", 2)
    ws.labelling.save(trace, "aggregation_quality", 4, "cy", "e12")  # a dispute: left out
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    ws.labelling.save(rerun, "task_outcome", "success", "ann")
    return ws


def export_folder(tmp_path, format, *extra):
    out = tmp_path / f"hf-{format}"
    code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(tmp_path / "traces"), "--format", format, "--hf-dataset", "-o", str(out),
                 *extra])
    assert code == 0
    return out


@pytest.mark.parametrize("format", TRAINING)
def test_every_training_shape_loads_with_datasets_three_ways(ws, tmp_path, format):
    folder = export_folder(tmp_path, format)
    facts = json.loads((folder / "orchviz_export.json").read_text())
    by_parquet = datasets.load_dataset("parquet", data_dir=str(folder / "data"), split="train")
    # a cache of its own: datasets caches a folder's dataset by the folder's name
    by_card = datasets.load_dataset(str(folder), split="train", cache_dir=str(tmp_path / "c"))
    from_disk = datasets.load_from_disk(str(folder / "arrow"))
    assert by_parquet.num_rows == by_card.num_rows == from_disk.num_rows == facts["rows"] > 0
    assert by_parquet.column_names == from_disk.column_names
    labels = read_export(None, folder)
    assert labels and all(r["reviewer"] in ("ann", "bob") for r in labels)


def test_the_card_names_rubric_counts_agreement_and_reviewers(ws, tmp_path):
    folder = export_folder(tmp_path, "unpaired", "--min-reviewers", "2")
    card = (folder / "README.md").read_text()
    rubric = ws.rubric
    assert card.startswith("---\nconfigs:\n")
    assert f"{rubric.name}, version {rubric.version}, SHA-256 `{rubric.sha256}`" in card
    assert "rows made from" in card and "current labels on 1 traces" in card
    assert "| aggregation_quality |" in card and "Krippendorff" in card
    assert "| ann | " in card and "| cli " in card and "human" in card
    assert "1 target left out because their reviewers disagree" in card
    assert '- `min_reviewers`: 2' in card
    facts = json.loads((folder / "orchviz_export.json").read_text())
    assert facts["rubric"]["sha256"] == rubric.sha256 and facts["format"] == "unpaired"
    assert {r["reviewer"] for r in facts["reviewers"]} == {"ann", "bob"}  # cy's is left out


def test_a_folder_written_twice_holds_only_the_second(ws, tmp_path):
    folder = export_folder(tmp_path, "stepwise")
    export_folder(tmp_path, "stepwise")
    assert len(list((folder / "data").glob("*.parquet"))) == 1


def test_rows_read_back_from_the_folder_match_the_file(ws, tmp_path):
    folder = export_folder(tmp_path, "rllm")
    out = tmp_path / "rllm.jsonl"
    assert main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(tmp_path / "traces"), "--format", "rllm", "-o", str(out)]) == 0
    assert read_export(None, folder) == read_export("rllm", out)
    assert FORMATS["rllm"].training


def test_an_export_with_no_rows_is_still_a_dataset(tmp_path):
    make_workspace(tmp_path, traces=[premature()])
    folder = export_folder(tmp_path, "unpaired")
    assert json.loads((folder / "orchviz_export.json").read_text())["rows"] == 0
    assert "no rows" in (folder / "README.md").read_text()
    assert read_export(None, folder) == []
    assert datasets.load_from_disk(str(folder / "arrow")).num_rows == 0


def test_an_empty_export_of_a_fixed_shape_loads_with_its_features(tmp_path):
    make_workspace(tmp_path, traces=[premature()])
    folder = export_folder(tmp_path, "verl")
    empty = datasets.load_from_disk(str(folder / "arrow"))
    assert empty.num_rows == 0
    assert list(empty.features) == ["data_source", "prompt", "ability", "reward_model",
                                     "extra_info"]


def _folder_files(folder):
    return {str(p.relative_to(folder)): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("changes_at", [None, 1, 3])
def test_a_folder_written_straight_holds_what_a_spool_settles(tmp_path, changes_at):
    """Rows go straight into the folder while each batch has the first's types; where a later
    batch's types differ (a key null until then, an object gaining a key, a column that turns
    to JSON text), the folder is still byte for byte what spooling every batch writes; and so
    it is where a batch has fewer keys, or keys in another order."""
    from viz_app.export.hf import Spool, write_hf_dataset, write_hf_inferred

    def rows():
        for i in range(10):
            late = changes_at is not None and i // 2 >= changes_at
            yield {"prompt": f"row {i}", "note": 7 if late else None,
                   "extra": {"a": i, **({"b": "x"} if late else {})},
                   "mixed": [1] if late else "text", "steps": [] if i % 2 else [{"r": 0.5}],
                   "fewer": {"a": 1, "b": None if i else 2.5} if i < 2 else {"a": 1},
                   "order": {"x": 1, "y": 2} if i // 2 % 2 else {"y": 2, "x": 1}}

    def facts(count):
        return {"format": "unpaired", "framework": "TRL", "rows": count, "labels_read": 0,
                "labels_used": 0, "traces": 0, "rubric": None, "rubric_versions": [],
                "options": {}, "left_out": [], "notes": [], "agreement": [], "reviewers": []}

    straight, count = write_hf_inferred(rows(), tmp_path / "straight", facts, batch_rows=2)
    with Spool(rows(), batch_rows=2) as spool:
        spooled = write_hf_dataset(spool, tmp_path / "spooled", facts(spool.num_rows))
    assert count == 10
    assert [p.name for p in straight] == [p.name for p in spooled]
    assert _folder_files(tmp_path / "straight") == _folder_files(tmp_path / "spooled")
    assert not list((tmp_path / "straight" / "data").glob(".*"))


@pytest.mark.parametrize("changes_at", [None, 1])
def test_rows_that_fail_part_way_leave_no_partial_files(tmp_path, changes_at):
    from viz_app.export.hf import write_hf_inferred

    def rows():
        for i in range(7):
            if i == 5:
                raise ValueError("a row could not be made")
            yield {"prompt": f"row {i}", "note": 1 if changes_at and i >= 2 else None}

    with pytest.raises(ValueError, match="could not be made"):
        write_hf_inferred(rows(), tmp_path / "out", lambda count: {}, batch_rows=2)
    assert [p for p in (tmp_path / "out").rglob("*") if p.is_file()] == []
