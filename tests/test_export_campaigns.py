"""Training exports and review campaigns: a lead's adjudication settles a dispute (source
`adjudication`), a retracted label reaches no export, every row's provenance names the campaign
a label was made in, and suggestions never become training rows."""

from __future__ import annotations

import json

import pytest

from factories import PREMATURE, make_workspace
from viz_app.export.consensus import ExportOptions
from viz_app.export.readers import read_export, read_rows
from viz_app.labels.label import Reviewer

LEAD = Reviewer(name="lee", via="cli")
TRACE = "demo-10-review-premature-stop"


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path, traces=[PREMATURE])


@pytest.fixture
def trace(ws):
    return ws.library.trace(TRACE)


def save(ws, trace, event_id, answers, reviewer, *, source="human", campaign="pilot"):
    """Labels saved as a campaign's submit (or a lead's adjudication) stores them."""
    made = ws.labelling.checked(trace, event_id, answers, reviewer, source=source,
                             campaign=campaign)
    ws.labelling.add(made)
    return made


def export(ws, tmp_path, format="unpaired", **options):
    out = tmp_path / f"{format}.jsonl"
    result = ws.exports.write(format, out, traces={TRACE: ws.library.trace(TRACE)},
                       options=ExportOptions(**options))
    return read_rows(out), result


def test_an_adjudication_settles_a_dispute_and_rows_name_its_campaign(ws, trace, tmp_path):
    save(ws, trace, "e13", {"stopping_correctness": "premature"}, "ann")
    save(ws, trace, "e13", {"stopping_correctness": "correct"}, "bob")
    rows, result = export(ws, tmp_path)
    assert rows == [] and "reviewers disagree" in result.left_out[0]
    save(ws, trace, "e13", {"stopping_correctness": "correct"}, "lee", source="adjudication")
    (row,) = export(ws, tmp_path, disputed="adjudicated")[0]
    (answer,) = row["answers"]
    assert (row["event_id"], json.loads(answer["value_json"]), answer["resolution"]) == \
        ("e13", "correct", "adjudicated")
    assert {(p["reviewer"], p["source"], p["campaign"]) for p in row["provenance"]} == {
        ("ann", "human", "pilot"), ("bob", "human", "pilot"), ("lee", "adjudication", "pilot")}
    only, _ = export(ws, tmp_path, adjudicated_only=True)
    assert [r["event_id"] for r in only] == ["e13"]


@pytest.mark.parametrize("format", ["stepwise", "unpaired", "rllm", "agent-lightning", "verl",
                                    "agent-rewards", "openrlhf-prm"])
def test_the_campaign_reads_back_from_every_step_shape(ws, trace, tmp_path, format):
    made = save(ws, trace, "e12", {"aggregation_quality": 2}, "ann", campaign="week-1")
    out = tmp_path / ("verl.parquet" if format == "verl" else f"{format}.jsonl")
    ws.exports.write(format, out, traces={TRACE: trace})
    (back,) = read_export(format, out)
    assert back["campaign"] == "week-1" and back["label_id"] == made[0].label_id


def test_a_retracted_label_is_in_no_export(ws, trace, tmp_path):
    save(ws, trace, "e12", {"aggregation_quality": 4}, "ann")
    (wrong,) = save(ws, trace, "e12", {"aggregation_quality": 1}, "bob")
    assert export(ws, tmp_path)[0] == []  # ann and bob disagree
    ws.campaigns.retract([wrong.label_id], LEAD, "bob misread the rubric")
    (row,) = export(ws, tmp_path)[0]
    assert [p["reviewer"] for p in row["provenance"]] == ["ann"]
    assert wrong.label_id not in {r["label_id"] for r in read_export("unpaired",
                                                                    tmp_path / "unpaired.jsonl")}


def test_suggestions_never_become_training_rows(ws, trace, tmp_path):
    report = ws.suggestions.run([trace])
    assert ws.suggestions.all() and report is not None
    rows, _ = export(ws, tmp_path)
    assert rows == []
    save(ws, trace, "e12", {"aggregation_quality": 4}, "ann")
    rows, _ = export(ws, tmp_path)
    assert {p["source"] for r in rows for p in r["provenance"]} == {"human"}
