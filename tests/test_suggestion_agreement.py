"""Agreement of producers with blind human labels: Krippendorff's alpha and Cohen's kappa with a
seeded bootstrap 95 % interval over targets, a confusion matrix, the reviewers among themselves
for comparison, and only labels made without suggestions in view."""

from __future__ import annotations

import random

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from viz_app.labels.agreement import (REVIEWERS, _alpha_of, _kappa_of, blind_labels,
                                      question_agreement, suggestion_agreement)
from viz_app.labels.rubric import default_rubric
from viz_app.labels.suggestion import Producer, Suggestion

RUBRIC = default_rubric()
STOP = "stopping_correctness"
STOPS = ["correct", "premature", "late"]
RULES = Producer(name="rules", version="1")
BEFORE, SUGGESTED, AFTER = ("2026-01-01T00:00:00.000000+00:00",
                            "2026-01-02T00:00:00.000000+00:00",
                            "2026-01-03T00:00:00.000000+00:00")


def label(reviewer: str, target: int, value, question: str = STOP, visible=False,
          created_at: str = AFTER, source: str = "human") -> dict:
    """A current label record with the fields agreement reads."""
    return {"trace_id": f"t{target}", "event_id": "e1", "question": question, "value": value,
            "reviewer": reviewer, "source": source, "suggestions_visible": visible,
            "created_at": created_at, "trace_sha256": "sha"}


def suggestion(target: int, value, question: str = STOP, producer: Producer = RULES,
               created_at: str = SUGGESTED) -> Suggestion:
    return Suggestion(trace_id=f"t{target}", trace_sha256="sha", event_id="e1",
                      question=question, value=value, confidence=0.5, producer=producer,
                      created_at=created_at)


def row(report, rater: str):
    return next(r for r in report.rows if r.rater == rater)


def truths(n: int, values=STOPS, seed: int = 1) -> list:
    rng = random.Random(seed)
    return [rng.choice(values) for _ in range(n)]


def test_a_producer_that_always_agrees_has_alpha_and_kappa_one():
    answers = truths(40)
    labels = [label(r, i, v) for i, v in enumerate(answers) for r in ("ann", "bob")]
    found = row(suggestion_agreement(RUBRIC, labels, [suggestion(i, v) for i, v in
                                                      enumerate(answers)], question=STOP),
                "rules")
    assert found.alpha.value == pytest.approx(1.0) and found.kappa.value == pytest.approx(1.0)
    assert (found.targets, found.pairs) == (40, 80)
    assert found.alpha.low == pytest.approx(1.0) and found.kappa.high == pytest.approx(1.0)


def test_a_producer_that_answers_at_random_is_near_zero():
    answers = truths(400)
    noise = truths(400, seed=2)
    labels = [label("ann", i, v) for i, v in enumerate(answers)]
    found = row(suggestion_agreement(RUBRIC, labels, [suggestion(i, v) for i, v in
                                                      enumerate(noise)], question=STOP),
                "rules")
    assert abs(found.alpha.value) < 0.1 and abs(found.kappa.value) < 0.1
    assert found.alpha.low < 0 < found.alpha.high and found.kappa.low < 0 < found.kappa.high


def test_labels_made_with_suggestions_in_view_are_left_out():
    answers = truths(30)
    blind = [label("ann", i, v) for i, v in enumerate(answers)]
    anchored = [label("bob", i, "late") for i in range(30)]  # made looking at suggestions
    report = suggestion_agreement(RUBRIC, blind + [{**x, "suggestions_visible": True}
                                                   for x in anchored],
                                  [suggestion(i, v) for i, v in enumerate(answers)],
                                  question=STOP)
    assert row(report, "rules").pairs == 30 and row(report, "rules").kappa.value == 1.0
    assert report.left_out_visible == 30 and report.blind_labels == 30


def test_a_label_of_unknown_visibility_counts_only_if_made_before_the_targets_suggestions():
    labels = [label("ann", 0, "late", visible=None, created_at=BEFORE),
              label("ann", 1, "late", visible=None, created_at=AFTER),
              label("ann", 2, "late", visible=None, created_at=AFTER)]
    kept, left = blind_labels(labels, [suggestion(0, "late"), suggestion(1, "late")])
    assert [x["trace_id"] for x in kept] == ["t0", "t2"]  # t2 has no suggestion at all
    assert left["unknown"] == 1


def test_imported_labels_count_as_blind_and_adjudications_never():
    labels = [label("who&when", 0, "late", visible=None, source="import"),
              label("lead", 0, "late", visible=None, source="adjudication")]
    kept, left = blind_labels(labels, [suggestion(0, "late")])
    assert [x["source"] for x in kept] == ["import"] and left["adjudication"] == 1


def test_the_confusion_matrix_has_reviewers_in_rows_and_the_producer_in_columns():
    labels = [label("ann", 0, "correct"), label("ann", 1, "premature"),
              label("ann", 2, "premature")]
    sugs = [suggestion(0, "correct"), suggestion(1, "late"), suggestion(2, "premature")]
    found = row(suggestion_agreement(RUBRIC, labels, sugs, question=STOP), "rules")
    assert found.labels == STOPS
    assert found.confusion == [[1, 0, 0], [0, 1, 1], [0, 0, 0]]


def test_the_reviewers_row_is_the_reviewers_alpha_on_the_same_blind_labels():
    scale = "aggregation_quality"
    rng = random.Random(3)
    labels = [label(r, i, rng.randint(1, 5), question=scale) for i in range(25)
              for r in ("ann", "bob", "cy")]
    report = suggestion_agreement(RUBRIC, labels, [suggestion(i, 3, question=scale)
                                                   for i in range(25)], question=scale)
    humans = row(report, REVIEWERS)
    expected = question_agreement(RUBRIC.question(scale), labels).alpha
    assert humans.level == "ordinal" and humans.alpha.value == pytest.approx(expected)
    assert humans.pairs == 75 and sum(map(sum, humans.confusion)) == 150  # each pair both ways


def test_kappa_on_a_scale_is_linearly_weighted():
    scale = "aggregation_quality"
    human, produced = [1, 2, 3, 4, 5, 5, 2, 1], [1, 3, 3, 5, 5, 4, 1, 1]
    labels = [label("ann", i, v, question=scale) for i, v in enumerate(human)]
    found = row(suggestion_agreement(RUBRIC, labels,
                                     [suggestion(i, v, question=scale)
                                      for i, v in enumerate(produced)], question=scale), "rules")
    assert found.kappa.value == pytest.approx(cohen_kappa_score(human, produced,
                                                                weights="linear"))
    assert found.alpha.value == pytest.approx(krippendorff.alpha(
        reliability_data=[human, produced], value_domain=[1, 2, 3, 4, 5],
        level_of_measurement="ordinal"))


def test_the_interval_is_seeded():
    answers, noise = truths(50), truths(50, seed=9)
    labels = [label("ann", i, v) for i, v in enumerate(answers)]
    sugs = [suggestion(i, v) for i, v in enumerate(noise)]
    first = row(suggestion_agreement(RUBRIC, labels, sugs, question=STOP, seed=4), "rules")
    again = row(suggestion_agreement(RUBRIC, labels, sugs, question=STOP, seed=4), "rules")
    other = row(suggestion_agreement(RUBRIC, labels, sugs, question=STOP, seed=5), "rules")
    assert first.alpha == again.alpha and first.alpha.low != other.alpha.low
    assert first.alpha.low <= first.alpha.value <= first.alpha.high


@pytest.mark.parametrize("ordinal", [False, True], ids=["nominal", "ordinal"])
def test_resamples_use_the_libraries_formulas(ordinal):
    rng = np.random.default_rng(0)
    units = [rng.integers(0, 5, rng.integers(2, 5)) for _ in range(60)]
    counts = np.array([np.bincount(u, minlength=5) for u in units], dtype=float)
    coincidence = sum((np.outer(c, c) - np.diag(c)) / (c.sum() - 1) for c in counts)
    level = "ordinal" if ordinal else "nominal"
    assert _alpha_of(coincidence[None], ordinal)[0] == pytest.approx(krippendorff.alpha(
        value_counts=counts, value_domain=np.arange(5.0), level_of_measurement=level))
    a = rng.integers(0, 5, 80)
    b = np.where(rng.random(80) < 0.6, a, rng.integers(0, 5, 80))
    confusion = np.zeros((5, 5))
    np.add.at(confusion, (a, b), 1)
    assert _kappa_of(confusion[None], ordinal)[0] == pytest.approx(cohen_kappa_score(
        a, b, labels=list(range(5)), weights="linear" if ordinal else None))


def test_a_producers_newest_suggestion_on_a_target_counts():
    labels = [label("ann", 0, "late"), label("ann", 1, "correct")]
    sugs = [suggestion(0, "correct", created_at=BEFORE), suggestion(0, "late"),
            suggestion(1, "correct")]
    found = row(suggestion_agreement(RUBRIC, labels, sugs, question=STOP), "rules")
    assert found.pairs == 2 and found.kappa.value == pytest.approx(1.0)


def test_judges_are_told_apart_by_model():
    labels = [label("ann", i, v) for i, v in enumerate(STOPS)]
    sugs = [suggestion(i, v, producer=Producer(name="judge", version="1", model=m))
            for m in ("small", "large") for i, v in enumerate(STOPS)]
    report = suggestion_agreement(RUBRIC, labels, sugs, question=STOP)
    assert [r.rater for r in report.rows] == ["judge (large)", "judge (small)", REVIEWERS]


def test_with_no_blind_label_the_row_says_why():
    report = suggestion_agreement(RUBRIC, [label("ann", 0, "late", visible=True)],
                                  [suggestion(0, "late")], question=STOP)
    found = row(report, "rules")
    assert found.alpha.value is None and "no target" in found.note


def test_the_agreement_page_shows_each_producer_against_blind_labels(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from factories import APP_PAGES, app_env, make_workspace, premature
    from viz_app.labels.label import Reviewer

    trace = premature()
    workspace = app_env(monkeypatch, make_workspace(tmp_path, [trace]))
    workspace.suggestions.run([trace])
    for name, answers in (("ann", {STOP: "premature", "stop_should_have_been": "e15"}),
                          ("bob", {STOP: "correct"})):
        workspace.labelling.save_answers(trace, "e13", answers, Reviewer(name=name, via="self-declared"),
                               suggestions_visible=False)
    page = AppTest.from_file(str(APP_PAGES / "agreement.py"), default_timeout=60).run()
    assert not page.exception
    [table] = [d.value for d in page.dataframe if "compared" in d.value.columns]
    rules = table[(table["question"] == STOP) & (table["compared"] == "rules vs reviewers")]
    assert rules.iloc[0]["pairs"] == 2
    confusion = page.dataframe[-1].value
    assert list(confusion.columns) == [f"suggested: {v}" for v in STOPS]
    assert confusion.loc["reviewer: correct", "suggested: premature"] == 1


def test_the_agreement_page_says_how_to_make_suggestions_when_there_are_none(tmp_path,
                                                                             monkeypatch):
    from streamlit.testing.v1 import AppTest

    from factories import APP_PAGES, app_env, make_workspace

    app_env(monkeypatch, make_workspace(tmp_path))
    page = AppTest.from_file(str(APP_PAGES / "agreement.py"), default_timeout=60).run()
    assert not page.exception
    assert any("No suggestions are stored yet" in c.value for c in page.caption)


def test_silence_on_a_trace_the_rules_ran_on_reads_as_the_fine_answer():
    labels = [label("ann", 0, "premature"), label("ann", 1, "correct"),
              label("ann", 2, "correct")]
    other_trace = {**label("ann", 3, "correct"), "trace_sha256": "another version"}
    sugs = [suggestion(0, "premature"), suggestion(1, "late", question="message_necessity"),
            suggestion(2, "premature", question="message_necessity")]
    found = row(suggestion_agreement(RUBRIC, labels + [other_trace], sugs, question=STOP,
                                     silence={"rules": {STOP: "correct"}}), "rules")
    assert found.pairs == 3 and found.kappa.value == pytest.approx(1.0)  # t3: never ran there
    assert "silent on 2 targets" in found.note


def test_without_scikit_learn_alpha_stays_and_kappa_says_what_to_install(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sklearn.metrics", None)  # as if not installed
    answers = truths(20)
    labels = [label("ann", i, v) for i, v in enumerate(answers)]
    found = row(suggestion_agreement(RUBRIC, labels, [suggestion(i, v) for i, v in
                                                      enumerate(answers)], question=STOP),
                "rules")
    assert found.alpha.value == pytest.approx(1.0) and found.kappa.value is None
    assert "orchviz[agreement]" in found.note
