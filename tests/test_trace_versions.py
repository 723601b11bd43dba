"""A trace that changes on disk under its labels (issue 39, item 2): every export says which
labels were made on another version of the trace than the library holds now, keeps or drops
them by `--other-versions` (never silently), and its rows name the version (`trace_sha256`)."""

from __future__ import annotations

import json

import pytest

from factories import PREMATURE, PREMATURE_ID, make_workspace
from viz_app.cli import main
from viz_app.export import FORMATS


@pytest.fixture
def changed(tmp_path):
    """Demo 10 labelled by ann (its outcome, its aggregate e12 and its stop e13), then its file
    rewritten without the stop's text the reviewer judged: (workspace, old sha, new sha)."""
    folder = tmp_path / "library"
    folder.mkdir()
    path = folder / "demo10.json"
    raw = json.loads(PREMATURE.read_text("utf-8"))
    path.write_text(json.dumps(raw), "utf-8")
    ws = make_workspace(tmp_path, traces=[folder])
    trace = ws.library.trace(PREMATURE_ID)
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    ws.labelling.save(trace, "stopping_correctness", "premature", "ann", "e13")
    for event in raw["events"]:
        if event["id"] == "e13":
            event["content"] = "Rewritten after it was judged."
    path.write_text(json.dumps(raw), "utf-8")
    return ws, trace.sha256, ws.library.trace(PREMATURE_ID).sha256


def export(tmp_path, fmt: str, *extra: str, capsys) -> tuple[str, str]:
    db, out = str(tmp_path / "orchviz.db"), str(tmp_path / f"out-{fmt}")
    assert main(["labels", "export", "--db", db, "--traces", str(tmp_path / "library"),
                 "--format", fmt, "-o", out, *extra]) == 0
    captured = capsys.readouterr()
    return out, captured.err


def test_the_rewards_export_drops_labels_of_another_version_and_says_so(changed, tmp_path,
                                                                        capsys):
    _, old, new = changed
    out, said = export(tmp_path, "rewards", "--other-versions", "drop", capsys=capsys)
    assert (f"2 labels on 1 trace were made on another version of the trace than the library "
            f"holds now: {PREMATURE_ID} (made on {old[:12]}, the library holds {new[:12]}); "
            "left out; --other-versions keep writes them") in said
    assert open(out).read().strip() == ""  # no row


def test_kept_rows_name_the_version_they_were_made_on(changed, tmp_path, capsys):
    _, old, _ = changed
    out, said = export(tmp_path, "rewards", capsys=capsys)  # kept by default, and said
    assert "kept, each row naming the version it was made on" in said
    rows = [json.loads(line) for line in open(out)]  # no .csv ending: JSON Lines
    assert {r["trace_sha256"] for r in rows} == {old} and len(rows) == 2


def test_the_label_records_keep_them_and_say_so(changed, tmp_path, capsys):
    _, old, _ = changed
    out, said = export(tmp_path, "jsonl", capsys=capsys)
    assert "were made on another version of the trace" in said and "kept" in said
    assert {json.loads(line)["trace_sha256"] for line in open(out)} == {old}


def test_a_training_shape_drops_them_for_the_right_reason(changed, tmp_path, capsys):
    out, said = export(tmp_path, "stepwise", "--other-versions", "drop", capsys=capsys)
    assert "were made on another version of the trace than the library holds now" in said
    assert "left out" in said


def test_every_label_format_says_it_and_none_is_silent(changed, tmp_path):
    ws, _, _ = changed
    traces = ws.library.read_traces().traces
    for name, found in FORMATS.items():
        if found.reads != "labels":
            continue
        out = tmp_path / "every" / (name if found.writes_folder else f"{name}.out")
        result = ws.exports.write(name, out, traces=traces if found.needs_traces else None)
        assert any("another version of the trace" in s
                   for s in [*result.left_out, *result.notes]), name


def test_labels_on_the_version_the_library_holds_are_not_named(tmp_path, capsys):
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    ws.labelling.save(ws.library.trace(PREMATURE_ID), "task_outcome", "failure", "ann")
    result = ws.exports.write("rewards", tmp_path / "r.csv")
    assert not any("another version" in s for s in [*result.left_out, *result.notes])


# -- a save names the version it judged ---------------------------------------------------------


def test_a_save_on_a_version_the_file_no_longer_holds_is_refused_and_nothing_is_saved(tmp_path):
    from viz_app.errors import LabelError
    from viz_app.labels import Reviewer

    folder = tmp_path / "library"
    folder.mkdir()
    path = folder / "demo10.json"
    raw = json.loads(PREMATURE.read_text("utf-8"))
    path.write_text(json.dumps(raw), "utf-8")
    ws = make_workspace(tmp_path, traces=[folder])
    shown = ws.library.trace(PREMATURE_ID)  # the page read it
    raw["events"] = [e for e in raw["events"] if e["id"] != "e15"]
    raw["edges"] = [e for e in raw["edges"] if "e15" not in (e["src"], e["dst"])]
    path.write_text(json.dumps(raw), "utf-8")  # rewritten under the reviewer's page
    with pytest.raises(LabelError) as refused:
        ws.labelling.save_answers(shown, "e13", {"stopping_correctness": "correct"}, Reviewer(name="ann", via="cli"))
    assert str(refused.value) == (
        f"the file of {PREMATURE_ID} changed since this page read it (you judged version "
        f"{shown.sha256[:12]}, the library now holds {ws.library.trace(PREMATURE_ID).sha256[:12]}): "
        "nothing was saved and your answers stay in the form; reload the trace to judge the "
        "version the library holds")
    assert ws.labelling.current_records() == []
    made = ws.labelling.save_answers(ws.library.trace(PREMATURE_ID), "e13", {"stopping_correctness": "correct"},
                           Reviewer(name="ann", via="cli"))  # after a reload, on the version it holds
    assert made[0].trace_sha256 == ws.library.trace(PREMATURE_ID).sha256


def test_a_campaign_save_on_a_version_the_file_no_longer_holds_is_refused(tmp_path):
    from viz_app.errors import LabelError
    from viz_app.labels import CampaignSpec, Reviewer

    folder = tmp_path / "library"
    folder.mkdir()
    path = folder / "demo10.json"
    raw = json.loads(PREMATURE.read_text("utf-8"))
    path.write_text(json.dumps(raw), "utf-8")
    ws = make_workspace(tmp_path, traces=[folder])
    ws.library.update_index()
    lead, ann = Reviewer(name="lee", via="cli"), Reviewer(name="ann", via="cli")
    ws.campaigns.create(CampaignSpec(name="c", questions=["task_outcome"]), lead)
    claim = ws.campaigns.claim_next("c", ann)
    judged = ws.library.trace(claim.trace_id).sha256
    raw["task_id"] = "another task"
    path.write_text(json.dumps(raw), "utf-8")
    with pytest.raises(LabelError, match="changed since this page read it"):
        ws.campaigns.submit(claim, {"task_outcome": "success"}, judged=judged)
    assert ws.labelling.current_records() == []
