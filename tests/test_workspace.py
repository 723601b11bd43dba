"""The Workspace, the one front door: what a save must contain, which trace comes next for a
reviewer, how far a trace is labelled, pairwise judgements, and a trace's case study. The pages,
the CLI and these tests all call the same methods."""

from __future__ import annotations

import pytest

from factories import (DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, example_trace,
                       make_workspace, premature)
from viz_app.errors import LabelError, TraceError
from viz_app.labels.label import Reviewer
from viz_app.workspace import Workspace

ANN = Reviewer(name="ann", via="self-declared")


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    """Demo 10 (aggregate e12, stop e13) and demo 9 (the same targets) in a fresh workspace."""
    return make_workspace(tmp_path, traces=[PREMATURE, DROPPED])


def label_everything(workspace: Workspace, trace_id: str, reviewer: Reviewer = ANN) -> None:
    trace = workspace.library.trace(trace_id)
    workspace.labelling.save_answers(trace, "e12", {"aggregation_quality": 4}, reviewer)
    workspace.labelling.save_answers(trace, "e13", {"stopping_correctness": "correct"}, reviewer)
    workspace.labelling.save_answers(trace, None, {"task_outcome": "success"}, reviewer)


# -- the rules of a save ------------------------------------------------------------------------


def test_a_save_without_a_required_answer_is_refused_and_saves_nothing(workspace):
    with pytest.raises(LabelError, match="pick an answer first: .*"):
        workspace.labelling.save_answers(premature(), "e12", {"aggregation_issues": ["dropped_result"]}, ANN)
    assert workspace.labelling.count() == 0


def test_an_empty_answer_counts_as_none(workspace):
    with pytest.raises(LabelError, match="pick an answer first"):
        workspace.labelling.save_answers(premature(), None, {"task_outcome": ""}, ANN)


def test_answers_on_one_target_are_saved_together_with_who_gave_them(workspace):
    made = workspace.labelling.save_answers(premature(), "e12", {"aggregation_quality": 2,
                                                       "aggregation_issues": ["dropped_result"]},
                                  Reviewer(name="ann@example.org", via="oidc"), comment="lost one")
    assert {(x.question, x.event_id, x.reviewer, x.identified_by, x.comment) for x in made} == {
        ("aggregation_quality", "e12", "ann@example.org", "oidc", "lost one"),
        ("aggregation_issues", "e12", "ann@example.org", "oidc", "lost one")}


def test_tags_are_saved_even_when_none_is_picked(workspace):
    made = workspace.labelling.save_answers(premature(), "e12", {"aggregation_quality": 5,
                                                       "aggregation_issues": []}, ANN)
    assert {x.question: x.value for x in made} == {"aggregation_quality": 5,
                                                   "aggregation_issues": []}


def test_a_follow_up_is_kept_only_when_its_answer_asks_it(workspace):
    made = workspace.labelling.save_answers(premature(), "e13", {"stopping_correctness": "correct",
                                                       "stop_should_have_been": "e15"}, ANN)
    assert [x.question for x in made] == ["stopping_correctness"]


def test_a_follow_up_that_is_asked_must_be_answered(workspace):
    with pytest.raises(LabelError, match="pick an answer first: At which event"):
        workspace.labelling.save_answers(premature(), "e13", {"stopping_correctness": "premature"}, ANN)
    made = workspace.labelling.save_answers(premature(), "e13", {"stopping_correctness": "premature",
                                                       "stop_should_have_been": "e15"}, ANN)
    assert {x.question: x.value for x in made}["stop_should_have_been"] == "e15"


def test_a_target_the_trace_lacks_is_refused(workspace):
    with pytest.raises(LabelError, match="has no target 'e404'"):
        workspace.labelling.save_answers(premature(), "e404", {"aggregation_quality": 3}, ANN)


# -- progress and the next trace ----------------------------------------------------------------


def test_progress_and_the_library_text_count_targets_fully_answered(workspace):
    trace = workspace.library.trace(PREMATURE_ID)
    workspace.labelling.save_answers(trace, "e12", {"aggregation_quality": 3}, ANN)
    assert workspace.labelling.progress(trace, "ann").text == "1 of 3 targets labelled"
    assert workspace.labelling.progress(trace, "bob").labelled == 0
    row = next(r for r in workspace.library.update_index().rows if r.trace_id == PREMATURE_ID)
    assert workspace.labelling.labelled_text(row, workspace.labelling.answered("ann")) == "1 of 3"
    assert workspace.labelling.labelled_text(row, workspace.labelling.answered("bob")) == "0 of 3"


def test_the_next_trace_is_the_first_one_after_that_the_reviewer_has_not_finished(workspace):
    order = [r.trace_id for r in workspace.library.update_index().rows]
    assert sorted(order) == sorted([PREMATURE_ID, DROPPED_ID])
    first, second = order
    assert workspace.labelling.next_unlabelled("ann", None) == first
    assert workspace.labelling.next_unlabelled("ann", first) == second
    assert workspace.labelling.next_unlabelled("ann", second) == first  # wrapping round
    label_everything(workspace, first)
    assert workspace.labelling.next_unlabelled("ann", None) == second
    assert workspace.labelling.next_unlabelled("ann", first) == second
    assert workspace.labelling.next_unlabelled("ann", second) is None  # the only one left is the open one
    assert workspace.labelling.next_unlabelled("bob", second) == first  # another reviewer's own count
    label_everything(workspace, second)
    assert workspace.labelling.next_unlabelled("ann", None) is None


def test_a_trace_the_library_does_not_hold_is_a_trace_error(workspace):
    with pytest.raises(TraceError, match="no trace with this id"):
        workspace.library.trace("no-such-trace")


def test_a_trace_added_to_a_folder_is_found_without_listing_the_library_first(tmp_path):
    workspace = make_workspace(tmp_path, traces=[example_trace("first")])
    workspace.library.update_index()
    make_workspace(tmp_path, traces=[example_trace("added-later")])  # written into the folder
    assert workspace.library.trace("added-later").trace_id == "added-later"


# -- judgements and case studies ----------------------------------------------------------------


def test_a_pairwise_judgement_is_saved_and_read_back_in_either_order(workspace):
    a, b = workspace.library.trace(PREMATURE_ID), workspace.library.trace(DROPPED_ID)
    workspace.labelling.save_preference(a, b, PREMATURE_ID, ANN, "waits for the analysts", 2)
    found = workspace.labelling.judgement(PREMATURE_ID, DROPPED_ID, "ann")
    assert found == workspace.labelling.judgement(DROPPED_ID, PREMATURE_ID, "ann")
    assert (found.chosen, found.rejected, found.strength, found.reason) == (
        PREMATURE_ID, DROPPED_ID, 2, "waits for the analysts")
    assert workspace.labelling.judgement(PREMATURE_ID, DROPPED_ID, "bob") is None


def test_a_judgement_needs_a_reason(workspace):
    with pytest.raises(LabelError, match="say why"):
        workspace.labelling.save_preference(workspace.library.trace(PREMATURE_ID), workspace.library.trace(DROPPED_ID),
                                  None, ANN, "  ")


def test_a_case_study_holds_the_traces_labels_judgements_and_bookmarks(workspace):
    trace, other = workspace.library.trace(PREMATURE_ID), workspace.library.trace(DROPPED_ID)
    workspace.labelling.save_answers(trace, "e12", {"aggregation_quality": 2}, ANN)
    workspace.labelling.save_answers(other, "e12", {"aggregation_quality": 5}, ANN)
    workspace.labelling.save_preference(trace, other, None, ANN, "about the same")
    mark = workspace.bookmarks.add(trace, "ann", "the merge", event_id="e12")
    labels, bookmarks = workspace.bookmarks.case_study(trace)
    assert sorted((r["trace_id"], r["question"]) for r in labels) == [
        (DROPPED_ID, "pairwise_preference"), (PREMATURE_ID, "aggregation_quality")]
    assert bookmarks == [mark]
