"""Which labels the training shapes use: agreed answers; a disputed target left out and reported
by default, averaged with --disputed mean, settled by an adjudicator with --disputed
adjudicated; --min-reviewers; --adjudicated-only (which today exports nothing and says why);
the follow-up of a disputed stop; and the CLI refusing an option a format does not take."""

from __future__ import annotations

import pytest

from factories import PREMATURE, make_workspace, premature
from viz_app.cli import main
from viz_app.export.consensus import ExportOptions, records_of, provenance, select


@pytest.fixture
def trace():
    return premature()


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path, traces=[PREMATURE])


def answers(ws, **options):
    found = select(ws.labelling.current_records(), ws.rubric, ExportOptions(**options))
    return {(a.event_id, a.question): a for a in found.answers}, found


def adjudicate(ws, trace, event_id, question, value):
    """An adjudication as a review campaign stores it: a new label by the lead, source
    `adjudication`, in the campaign."""
    label = ws.labelling.save(trace, question, value, "adjudicator", event_id)
    record = {**label.to_record(), "source": "adjudication", "campaign": "c1",
              "label_id": label.label_id + "-adj"}
    return [*ws.labelling.current_records(), record]


def test_reviewers_who_agree_make_one_answer_with_their_reward(ws, trace):
    ws.labelling.save(trace, "aggregation_quality", 4, "ann", "e12")
    ws.labelling.save(trace, "aggregation_quality", 4, "bob", "e12")
    found, selection = answers(ws)
    answer = found[("e12", "aggregation_quality")]
    assert (answer.value, answer.reward, answer.reviewers, answer.disputed,
            answer.resolution) == (4, 0.5, 2, False, "agreed")
    assert selection.left_out == [] and {r["reviewer"] for r in answer.labels} == {"ann", "bob"}


def test_a_disputed_target_is_left_out_and_named_by_default(ws, trace):
    ws.labelling.save(trace, "stopping_correctness", "premature", "ann", "e13")
    ws.labelling.save(trace, "stopping_correctness", "correct", "bob", "e13")
    found, selection = answers(ws)
    assert ("e13", "stopping_correctness") not in found
    (sentence,) = selection.left_out
    assert sentence.startswith("1 target left out because their reviewers disagree")
    assert 'e13 stopping_correctness (ann: "premature", bob: "correct")' in sentence
    assert selection.dropped == [(trace.trace_id, "e13", "stopping_correctness")]


def test_disputed_mean_keeps_the_mean_marked_disputed_without_a_value(ws, trace):
    ws.labelling.save(trace, "stopping_correctness", "premature", "ann", "e13")
    ws.labelling.save(trace, "stopping_correctness", "correct", "bob", "e13")
    found, selection = answers(ws, disputed="mean")
    answer = found[("e13", "stopping_correctness")]
    assert (answer.value, answer.reward, answer.reward_std, answer.disputed) == \
        (None, 0.0, 1.0, True)
    assert "1 disputed targets averaged" in selection.notes[0]


def test_disputed_adjudicated_takes_the_adjudicators_answer(ws, trace):
    ws.labelling.save(trace, "stopping_correctness", "premature", "ann", "e13")
    ws.labelling.save(trace, "stopping_correctness", "correct", "bob", "e13")
    labels = adjudicate(ws, trace, "e13", "stopping_correctness", "correct")
    found = select(labels, ws.rubric, ExportOptions(disputed="adjudicated"))
    (answer,) = [a for a in found.answers if a.question == "stopping_correctness"]
    assert (answer.value, answer.reward, answer.reviewers, answer.resolution) == \
        ("correct", 1.0, 3, "adjudicated")
    without = select(ws.labelling.current_records(), ws.rubric,
                     ExportOptions(disputed="adjudicated"))
    assert "no adjudicated label settles them" in without.left_out[0]


def test_adjudicated_only_says_when_no_label_is_an_adjudication(ws, trace):
    ws.labelling.save(trace, "aggregation_quality", 4, "ann", "e12")
    found, selection = answers(ws, adjudicated_only=True)
    assert found == {}
    assert selection.left_out == ["no label has source adjudication (a lead adjudicates "
                                  "disputed targets in a review campaign), so --adjudicated-only "
                                  "exports nothing"]


def test_adjudicated_only_keeps_the_adjudicated_targets(ws, trace):
    ws.labelling.save(trace, "aggregation_quality", 4, "ann", "e12")
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    labels = adjudicate(ws, trace, "e12", "aggregation_quality", 2)
    found = select(labels, ws.rubric, ExportOptions(adjudicated_only=True))
    assert [(a.event_id, a.value, a.resolution) for a in found.answers] == \
        [("e12", 2, "adjudicated")]
    assert "without an adjudicated label" in found.left_out[0]


def test_min_reviewers_leaves_out_targets_answered_by_fewer(ws, trace):
    ws.labelling.save(trace, "aggregation_quality", 4, "ann", "e12")
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    ws.labelling.save(trace, "task_outcome", "failure", "bob")
    found, selection = answers(ws, min_reviewers=2)
    assert list(found) == [("", "task_outcome")]
    assert "fewer reviewers than --min-reviewers 2" in selection.left_out[0]


def test_the_pointer_of_a_disputed_stop_is_left_out(ws, trace):
    ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                         "stop_should_have_been": "e15"}, "ann")
    ws.labelling.save(trace, "stopping_correctness", "correct", "bob", "e13")
    found, selection = answers(ws, disputed="mean")
    assert ("e13", "stop_should_have_been") not in found
    assert any("follow-up answers left out" in s for s in selection.left_out)


def test_tags_in_another_order_agree_and_free_text_is_never_disputed(ws, trace):
    ws.labelling.save(trace, "aggregation_issues", ["dropped_result", "unfaithful_merge"], "ann",
                   "e12")
    ws.labelling.save(trace, "aggregation_issues", ["unfaithful_merge", "dropped_result"], "bob",
                   "e12")
    found, selection = answers(ws)
    assert found[("e12", "aggregation_issues")].resolution == "agreed"
    assert selection.left_out == []


def test_provenance_entries_give_the_records_back(ws, trace):
    ws.labelling.save(trace, "aggregation_issues", ["dropped_result"], "ann", "e12")
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    records = ws.labelling.current_records()
    assert records_of(provenance(records)) == records
    assert all(entry["campaign"] == "" for entry in provenance(records))


@pytest.mark.parametrize("argv, said", [
    (["--format", "stepwise", "--conversational"],
     "no conversational variant because TRL defines none (huggingface/trl f2cd577"),
    (["--format", "openrlhf-prm", "--conversational"],
     "no conversational variant because OpenRLHF's process reward dataset"),
    (["--format", "verl", "--from-scores"], "--from-scores does not apply"),
    (["--format", "jsonl", "--disputed", "mean"], "--disputed does not apply"),
    (["--format", "unpaired", "--threshold", "2"], "--threshold"),
    (["--format", "unpaired", "--min-reviewers", "0"], "--min-reviewers"),
    (["--format", "rewards", "--hf-dataset"], "--hf-dataset writes the training shapes"),
])
def test_the_cli_refuses_an_option_the_format_does_not_take(ws, tmp_path, capsys, argv, said):
    code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(PREMATURE), "-o", str(tmp_path / "out"), *argv])
    assert code == 2 and said in capsys.readouterr().err


def test_the_cli_reports_disputed_targets_and_writes_the_rest(ws, trace, tmp_path, capsys):
    ws.labelling.save(trace, "stopping_correctness", "premature", "ann", "e13")
    ws.labelling.save(trace, "stopping_correctness", "correct", "bob", "e13")
    ws.labelling.save(trace, "aggregation_quality", 4, "ann", "e12")
    out = tmp_path / "u.jsonl"
    code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(PREMATURE), "--format", "unpaired", "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 0 and f"1 rows -> {out}" in printed.out
    assert "1 target left out because their reviewers disagree" in printed.err
