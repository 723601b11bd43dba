"""Agreement: Krippendorff's alpha per question at the right level, and the most disputed
targets first."""

from __future__ import annotations

import krippendorff
import pytest

from factories import APP_PAGES, app_env, make_workspace, premature
from viz_app.labels.agreement import agreement, question_agreement
from viz_app.labels.rubric import default_rubric

RUBRIC = default_rubric()


def label(reviewer: str, trace_id: str, event_id: str, question: str, value) -> dict:
    """A current label record, with only the fields agreement reads."""
    return {"trace_id": trace_id, "event_id": event_id, "question": question, "value": value,
            "reviewer": reviewer}


def scale_labels(answers: dict[str, list[int]]) -> list[dict]:
    return [label(r, f"t{i}", "e1", "aggregation_quality", v)
            for r, values in answers.items() for i, v in enumerate(values)]


def test_alpha_on_a_scale_is_krippendorffs_ordinal_alpha():
    answers = {"ann": [1, 2, 3, 4, 5], "bob": [1, 2, 4, 4, 5], "cy": [2, 2, 3, 5, 5]}
    found = question_agreement(RUBRIC.question("aggregation_quality"), scale_labels(answers))
    expected = krippendorff.alpha(reliability_data=list(answers.values()),
                                  value_domain=[1, 2, 3, 4, 5], level_of_measurement="ordinal")
    assert found.level == "ordinal" and found.alpha == pytest.approx(expected)
    assert (found.reviewers, found.shared_targets) == (3, 5)


def test_perfect_agreement_on_varied_answers_is_alpha_one():
    answers = {"ann": [1, 3, 5], "bob": [1, 3, 5]}
    found = question_agreement(RUBRIC.question("aggregation_quality"), scale_labels(answers))
    assert found.alpha == pytest.approx(1.0) and found.disagreements == []


def test_categories_are_compared_at_the_nominal_level():
    labels = [label(r, f"t{i}", "e9", "stopping_correctness", v)
              for r, values in {"ann": ["correct", "late", "premature"],
                                "bob": ["correct", "premature", "premature"]}.items()
              for i, v in enumerate(values)]
    found = question_agreement(RUBRIC.question("stopping_correctness"), labels)
    expected = krippendorff.alpha(reliability_data=[[0, 1, 2], [0, 2, 2]],
                                  level_of_measurement="nominal")
    assert found.level == "nominal" and found.alpha == pytest.approx(expected)


def test_targets_with_one_reviewer_do_not_count_as_shared():
    labels = scale_labels({"ann": [1, 2, 3], "bob": [1]})
    found = question_agreement(RUBRIC.question("aggregation_quality"), labels)
    assert (found.targets, found.shared_targets) == (3, 1)


def test_without_two_reviewers_on_any_target_alpha_is_missing_and_says_why():
    found = question_agreement(RUBRIC.question("aggregation_quality"),
                               scale_labels({"ann": [1, 2]}))
    assert found.alpha is None and "two reviewers" in found.note


def test_the_most_disputed_target_comes_first_and_close_answers_are_no_dispute():
    answers = {"ann": [1, 3, 5, 2], "bob": [2, 3, 1, 4]}
    found = question_agreement(RUBRIC.question("aggregation_quality"), scale_labels(answers))
    assert [(d.trace_id, d.spread) for d in found.disagreements] == [("t2", 1.0), ("t3", 0.5)]


def test_only_the_newest_answer_of_each_reviewer_counts(tmp_path):
    trace = premature()
    store = make_workspace(tmp_path).labelling
    store.save(trace, "aggregation_quality", 1, "ann", "e12")
    store.save(trace, "aggregation_quality", 1, "bob", "e12")
    store.save(trace, "aggregation_quality", 5, "ann", "e12")
    by_question = {q.question: q for q in agreement(RUBRIC, store.current_records())}
    [dispute] = by_question["aggregation_quality"].disagreements
    assert dispute.answers == {"ann": 5, "bob": 1}


def test_a_leads_adjudication_is_no_rater():
    # the final answer is made after reading the dispute: counting it would count a reviewer
    # twice (as "lee (imported)"), and its agreement with one side is no agreement at all
    labels = scale_labels({"ann": [1, 4], "bob": [5, 4]})
    labels += [label("lee", "t0", "e1", "aggregation_quality", 5) | {"source": "adjudication"},
               label("lee", "t1", "e1", "aggregation_quality", 2) | {"source": "adjudication"}]
    found = question_agreement(RUBRIC.question("aggregation_quality"), labels)
    alone = question_agreement(RUBRIC.question("aggregation_quality"),
                               scale_labels({"ann": [1, 4], "bob": [5, 4]}))
    assert found.reviewers == 2 and found.alpha == alone.alpha
    assert [d.answers for d in found.disagreements] == [{"ann": 1, "bob": 5}]


def test_an_imported_label_still_counts_as_its_own_rater():
    labels = scale_labels({"ann": [1, 4]}) + [
        label("ann", "t0", "e1", "aggregation_quality", 3) | {"source": "import"}]
    found = question_agreement(RUBRIC.question("aggregation_quality"), labels)
    assert found.disagreements[0].answers == {"ann": 1, "ann (imported)": 3}


def test_tags_get_no_alpha():
    labels = [label(r, "t0", "e1", "aggregation_issues", ["dropped_result"]) for r in "ab"]
    found = question_agreement(RUBRIC.question("aggregation_issues"), labels)
    assert found.alpha is None and "tags" in found.note


def test_the_agreement_page_shows_alpha_and_the_most_disputed_target(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    trace = premature()
    workspace = app_env(monkeypatch, make_workspace(tmp_path))
    for reviewer, point in (("ann", 1), ("bob", 5)):
        workspace.labelling.save(trace, "aggregation_quality", point, reviewer, "e12")
    page = AppTest.from_file(str(APP_PAGES / "agreement.py"), default_timeout=30).run()
    assert not page.exception
    summary, disputes = page.dataframe[0].value, page.dataframe[1].value
    row = summary[summary["question"] == "aggregation_quality"].iloc[0]
    expected = krippendorff.alpha(reliability_data=[[1], [5]], value_domain=[1, 2, 3, 4, 5],
                                  level_of_measurement="ordinal")
    assert row["targets with 2+ reviewers"] == 1 and row["alpha"] == pytest.approx(expected)
    assert disputes.iloc[0]["event"] == "e12" and disputes.iloc[0]["spread"] == 1.0
