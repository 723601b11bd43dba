"""Integrity of labels: an imported label keeps its own source and origin and never becomes a
person's current answer by its date; a time in the future is set to the import's time, the
given one kept; the current label is one rule, the same in Python and in the store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from factories import PREMATURE_ID, make_workspace, premature
from viz_app.cli import main
from viz_app.errors import LabelError
from viz_app.labels.agreement import agreement
from viz_app.labels.label import Reviewer, current_labels, imported_time, label_from_record
from viz_app.labels.rubric import default_rubric

ANN = Reviewer(name="ann", via="self-declared")
FUTURE = "2099-01-01T00:00:00Z"


def forged(value: int = 1, **changes) -> dict:
    """An import record for reviewer ann on the aggregate e12, dated 2099."""
    return {"trace_id": PREMATURE_ID, "event_id": "e12", "question": "aggregation_quality",
            "value": value, "reviewer": "ann", "created_at": FUTURE, **changes}


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path, traces=[premature()])


@pytest.fixture
def trace(ws):
    return ws.library.trace(PREMATURE_ID)


def test_an_import_dated_2099_does_not_hide_what_ann_saves_in_the_app(ws, trace, tmp_path):
    ws.labelling.import_labels([forged(1)], {trace.trace_id: trace}, "forged.jsonl")
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 4}, ANN)
    mine = ws.labelling.answers(trace.trace_id, "ann")
    assert mine["e12"]["aggregation_quality"].value == 4
    current = {(x.source, x.value) for x in ws.labelling.current(trace.trace_id, "ann")}
    assert current == {("human", 4), ("import", 1)}
    result = ws.exports.write("jsonl", tmp_path / "labels.jsonl")
    exported = (tmp_path / "labels.jsonl").read_text()
    assert result.count == 2 and '"source":"human"' in exported and '"value":4' in exported


def test_a_later_save_by_ann_replaces_her_earlier_save_not_the_import(ws, trace):
    ws.labelling.import_labels([forged(1)], {trace.trace_id: trace}, "forged.jsonl")
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 2}, ANN)
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 5}, ANN)
    assert sorted((x.source, x.value) for x in ws.labelling.current(trace.trace_id)) == \
        [("human", 5), ("import", 1)]


def test_an_imported_label_keeps_source_import_and_its_origin_whatever_the_record_says(ws, trace):
    ws.labelling.import_labels([forged(3, source="human", origin="judge-v2", identified_by="oidc")],
                     {trace.trace_id: trace}, "forged.jsonl")
    [label] = ws.labelling.current(trace.trace_id)
    assert (label.source, label.origin, label.identified_by) == ("import", "judge-v2", "import")


def test_a_time_in_the_future_is_stored_as_the_import_s_time_and_the_given_one_kept(ws, trace):
    before = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    report = ws.labelling.import_labels([forged(1)], {trace.trace_id: trace}, "forged.jsonl")
    after = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    [label] = ws.labelling.current(trace.trace_id)
    assert before <= label.created_at <= after
    assert label.created_at_given == FUTURE
    assert (report.read, report.added, report.clamped) == (1, 1, 1)
    assert "1 dated in the future, stored at the import's time" in report.text


def test_a_time_in_the_past_is_stored_in_utc_with_the_given_text_kept_when_it_differs():
    at = "2030-01-01T00:00:00.000000Z"
    assert imported_time("2026-01-01T02:00:00+02:00", at) == \
        ("2026-01-01T00:00:00.000000Z", "2026-01-01T02:00:00+02:00")
    assert imported_time("2026-01-01T00:00:00.000000Z", at) == \
        ("2026-01-01T00:00:00.000000Z", None)
    assert imported_time("2026-01-01 00:00:00", at) == \
        ("2026-01-01T00:00:00.000000Z", "2026-01-01 00:00:00")  # no offset: UTC
    assert imported_time(None, at) == (at, None)
    assert imported_time("0999-01-01", at)[0] == "0999-01-01T00:00:00.000000Z"  # text order


@pytest.mark.parametrize("given", ["2099", "tomorrow", "9999-99-99", 4102444800, ["2026"]])
def test_a_created_at_that_is_no_time_is_refused(ws, trace, given):
    with pytest.raises(LabelError, match="record 1: created_at .* is not an ISO 8601 time"):
        ws.labelling.import_labels([forged(1, created_at=given)], {trace.trace_id: trace}, "bad.jsonl")
    assert ws.labelling.count() == 0


def test_a_record_with_a_field_of_the_wrong_type_is_one_sentence(ws, trace):
    with pytest.raises(LabelError, match="record 1: comment"):
        ws.labelling.import_labels([forged(1, comment={"x": 1})], {trace.trace_id: trace}, "bad.jsonl")


def test_importing_a_forged_file_twice_adds_nothing_although_its_time_was_changed(ws, trace):
    first = ws.labelling.import_labels([forged(1)], {trace.trace_id: trace}, "forged.jsonl")
    again = ws.labelling.import_labels([forged(1)], {trace.trace_id: trace}, "forged.jsonl")
    assert (first.added, again.added) == (1, 0)


def test_the_current_labels_in_python_and_in_the_store_agree(ws, trace):
    ws.labelling.import_labels([forged(1), forged(2, created_at="2026-01-01T00:00:00Z"),
                      forged(3, reviewer="bob", created_at="2026-01-02T00:00:00Z")],
                     {trace.trace_id: trace}, "forged.jsonl")
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 4}, ANN)
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 5}, Reviewer(name="bob", via="self-declared"))
    everything = list(ws.labelling.all())
    from_python = [x.label_id for x in current_labels(everything)]
    from_store = [r["label_id"] for r in ws.labelling.current_records()]
    assert sorted(from_python) == sorted(from_store) and len(from_store) == 4
    assert sorted((x.reviewer, x.source, x.value) for x in ws.labelling.current()) == \
        [("ann", "human", 4), ("ann", "import", 1), ("bob", "human", 5), ("bob", "import", 3)]


def test_agreement_counts_a_name_s_saves_and_its_imports_as_two_reviewers(ws, trace):
    ws.labelling.import_labels([forged(1)], {trace.trace_id: trace}, "forged.jsonl")
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 5}, ANN)
    [quality] = [q for q in agreement(ws.rubric, ws.labelling.current_records())
                 if q.question == "aggregation_quality"]
    assert quality.reviewers == 2
    assert quality.disagreements[0].answers == {"ann": 5, "ann (imported)": 1}


def test_label_from_record_is_pure_and_clamps_to_the_moment_given():
    trace = premature()
    at = "2030-01-01T00:00:00.000000Z"
    label = label_from_record(forged(2), default_rubric(), {trace.trace_id: trace}, "f", at)
    assert (label.created_at, label.created_at_given, label.source) == (at, FUTURE, "import")


def test_the_cli_says_how_many_times_were_in_the_future(ws, tmp_path, capsys):
    import json

    path = tmp_path / "forged.jsonl"
    path.write_text(json.dumps(forged(1)) + "\n" + json.dumps(forged(2, created_at=None)) + "\n")
    code = main(["labels", "import", str(path), "--db", ws.settings.db_url,
                 "--traces", str(ws.settings.traces[0])])
    out = capsys.readouterr().out
    assert code == 0
    assert "2 records, 2 new labels; 1 dated in the future, stored at the import's time " \
           "(their own time kept as created_at_given)" in out


# -- labelled traces whose ids make one file name -----------------------------------------------

CLASHING_IDS = ["x/y", "x:y", "x_y", "x y", "x?y"]
"""Five trace ids that `viz_app.text.file_name` makes into the one name `x_y`."""


def test_five_labelled_traces_whose_ids_make_one_file_name_give_five_files(tmp_path, capsys):
    from factories import example_trace
    from viz_app.io.native import load_trace, write_trace

    folder = tmp_path / "traces"
    for number, trace_id in enumerate(CLASHING_IDS):
        write_trace(example_trace(trace_id), folder / f"trace-{number}.json")
    ws = make_workspace(tmp_path, traces=[folder])
    for trace_id in CLASHING_IDS:
        ws.labelling.save(ws.library.trace(trace_id), "task_outcome", "success", "ann")
    code = main(["labels", "export", "--format", "traces", "--db", ws.settings.db_url,
                 "--traces", str(folder), "-o", str(tmp_path / "labelled")])
    assert code == 0
    assert "5 traces in" in capsys.readouterr().out
    written = sorted(p.name for p in (tmp_path / "labelled").iterdir())
    assert written == ["x_y-2.json", "x_y-3.json", "x_y-4.json", "x_y-5.json", "x_y.json"]
    back = {load_trace(tmp_path / "labelled" / name).trace_id for name in written}
    assert back == set(CLASHING_IDS)
