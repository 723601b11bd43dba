"""Each producer version's agreement with blind labels over time: every version measured alone
(alpha and kappa with bootstrap 95 % intervals), placed at the time its first suggestion was
stored, and a warning when a new version's alpha falls outside the previous version's interval."""

from __future__ import annotations

import random

import pytest

from factories import make_workspace, premature
from viz_app.labels.agreement import agreement_history, version_shifts
from viz_app.labels.label import Reviewer
from viz_app.labels.rubric import default_rubric
from viz_app.labels.suggestion import Producer, Suggestion

RUBRIC = default_rubric()
STOP = "stopping_correctness"
STOPS = ["correct", "premature", "late"]
JANUARY, FEBRUARY, MARCH = ("2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00",
                            "2026-03-01T00:00:00+00:00")


def label(reviewer: str, target: int, value) -> dict:
    return {"trace_id": f"t{target}", "event_id": "e1", "question": STOP, "value": value,
            "reviewer": reviewer, "source": "human", "suggestions_visible": False,
            "created_at": JANUARY, "trace_sha256": "sha"}


def suggestion(target: int, value, producer: Producer, created_at: str) -> Suggestion:
    return Suggestion(trace_id=f"t{target}", trace_sha256="sha", event_id="e1", question=STOP,
                      value=value, confidence=0.7, producer=producer, created_at=created_at)


def truths(n: int = 40) -> list[str]:
    rng = random.Random(3)
    return [rng.choice(STOPS) for _ in range(n)]


def wrong(value: str) -> str:
    return STOPS[(STOPS.index(value) + 1) % 3]


def learned(version: str) -> Producer:
    return Producer(name="learned", version=version)


def history(suggestions, labels=None, **options):
    answers = truths()
    labels = labels if labels is not None else [label(r, i, v) for i, v in enumerate(answers)
                                                for r in ("ann", "bob")]
    return agreement_history(RUBRIC, labels, suggestions, question=STOP, resamples=200,
                             **options)


def versions(agree: dict[str, tuple[str, float]]) -> list[Suggestion]:
    """Per version (name -> (time, share of targets it gets right)) its suggestions."""
    made = []
    for name, (when, share) in agree.items():
        for i, v in enumerate(truths()):
            made.append(suggestion(i, v if i < share * 40 else wrong(v), learned(name), when))
    return made


def test_each_version_is_a_point_at_the_time_its_first_suggestion_was_stored():
    found = history(versions({"b2": (FEBRUARY, 0.9), "a1": (JANUARY, 1.0)}))
    assert [(p.version, p.created_at) for p in found.points] == [("a1", JANUARY),
                                                                  ("b2", FEBRUARY)]
    first, second = found.points
    assert first.alpha.value == pytest.approx(1.0) and (first.targets, first.pairs) == (40, 80)
    assert second.alpha.value < first.alpha.value
    assert second.alpha.low <= second.alpha.value <= second.alpha.high


def test_each_version_is_measured_alone_not_as_the_newest_answer_on_each_target():
    # b2 answers only the first 10 targets: it is measured on those 10, a1 on all 40
    made = versions({"a1": (JANUARY, 1.0)}) + [
        s.model_copy(update={"producer": learned("b2"), "created_at": FEBRUARY,
                             "value": wrong(s.value)})
        for s in versions({"x": (JANUARY, 1.0)})[:10]]
    found = {p.version: p for p in history(made).points}
    assert found["a1"].targets == 40 and found["a1"].alpha.value == pytest.approx(1.0)
    assert found["b2"].targets == 10 and found["b2"].alpha.value < 0


def test_a_version_below_the_previous_ones_interval_is_a_warning():
    found = history(versions({"a1": (JANUARY, 0.95), "b2": (FEBRUARY, 0.4)}))
    [shift] = found.shifts
    assert (shift.version, shift.previous, shift.direction) == ("b2", "a1", "below")
    assert shift.alpha < shift.interval.low
    assert shift.text.startswith("learned b2 on stopping_correctness: alpha ")
    assert "is below the previous version's (a1) 95 % interval [" in shift.text


def test_a_version_within_the_previous_ones_interval_is_no_warning():
    found = history(versions({"a1": (JANUARY, 0.8), "b2": (FEBRUARY, 0.8)}))
    assert len(found.points) == 2 and found.shifts == []


def test_a_version_above_the_interval_is_named_as_above():
    found = history(versions({"a1": (JANUARY, 0.4), "b2": (FEBRUARY, 0.95)}))
    assert [s.direction for s in found.shifts] == ["above"]


def test_versions_are_compared_only_within_one_producer():
    made = versions({"a1": (JANUARY, 0.95)}) + [
        s.model_copy(update={"producer": Producer(name="rules", version="3"),
                             "created_at": FEBRUARY, "value": wrong(s.value)})
        for s in versions({"x": (JANUARY, 1.0)})]
    found = history(made)
    assert {p.rater for p in found.points} == {"learned", "rules"} and found.shifts == []


def test_a_judges_prompt_hash_makes_a_version():
    def judge(prompt: str) -> Producer:
        return Producer(name="judge", version="1", model="m", prompt_sha256=prompt * 64)

    made = [s.model_copy(update={"producer": judge("a")}) for s in
            versions({"x": (JANUARY, 1.0)})] + \
        [s.model_copy(update={"producer": judge("b"), "created_at": FEBRUARY}) for s in
         versions({"x": (JANUARY, 0.3)})]
    found = history(made)
    assert [p.version for p in found.points] == ["1 · " + "a" * 64, "1 · " + "b" * 64]
    assert {p.rater for p in found.points} == {"judge (m)"}
    assert "judge (m) 1 · bbbbbbbbbbbb on stopping_correctness" in found.shifts[0].text


def test_a_version_without_an_interval_is_skipped_as_the_reference():
    made = versions({"a1": (JANUARY, 0.95)}) + \
        [suggestion(0, truths()[0], learned("b2"), FEBRUARY)] + \
        versions({"c3": (MARCH, 0.4)})
    found = history(made)
    assert [p.version for p in found.points] == ["a1", "b2", "c3"]
    assert found.points[1].alpha.low is None  # one target: no interval
    assert [(s.version, s.previous) for s in found.shifts] == [("c3", "a1")]
    assert version_shifts(found.points) == found.shifts


def test_labels_made_with_suggestions_in_view_are_left_out():
    answers = truths()
    seen = [dict(label("ann", i, v), suggestions_visible=True) for i, v in enumerate(answers)]
    found = history(versions({"a1": (JANUARY, 1.0)}), labels=seen)
    assert found.points == [] and found.blind_labels == 0


def test_the_workspace_measures_the_stored_versions(tmp_path):
    trace = premature()
    ws = make_workspace(tmp_path, [trace])
    ws.labelling.save_answers(trace, "e13", {STOP: "premature", "stop_should_have_been": "e15"},
                    Reviewer(name="ann", via="cli"), suggestions_visible=False)
    ws.suggestions.add([Suggestion(trace_id=trace.trace_id, trace_sha256=trace.sha256,
                                        event_id="e13", question=STOP, value="premature",
                                        confidence=0.8, producer=learned("v1"))])
    [point] = ws.suggestions.agreement_history(STOP, resamples=50).points
    assert (point.rater, point.version, point.pairs) == ("learned", "v1", 1)
    assert point.created_at


def test_orchviz_suggest_agreement_versions_prints_each_version_and_warns(tmp_path, capsys):
    from test_app_agreement_history import workspace_with_versions
    from viz_app.cli import main

    workspace_with_versions(tmp_path)
    code = main(["suggest", "agreement", "--versions", "--db", str(tmp_path / "orchviz.db"),
                 "--question", "task_outcome", "--resamples", "200"])
    out, err = capsys.readouterr()
    block = out.split("task_outcome · learned\n")[1].split("\n\n")[0]
    lines = [x for x in block.splitlines() if x.startswith("  ")]
    assert code == 0 and "task_outcome · judge (qwen3-32b)" in out
    assert [x.split()[0] for x in lines] == ["3f0c9a1e77d2", "8b41d07c2a90", "c7e2f5aa1b34"]
    assert lines[2].endswith("<- moved") and not lines[1].endswith("<- moved")
    assert err.startswith("warning: learned c7e2f5aa1b34 on task_outcome: alpha ")


def test_the_figures_are_kept_until_a_label_or_a_suggestion_is_added(tmp_path):
    trace = premature()
    ws = make_workspace(tmp_path, [trace])
    ann = Reviewer(name="ann", via="cli")
    ws.labelling.save_answers(trace, "e13", {STOP: "premature", "stop_should_have_been": "e15"}, ann,
                    suggestions_visible=False)
    ws.suggestions.add([Suggestion(trace_id=trace.trace_id, trace_sha256=trace.sha256,
                                        event_id="e13", question=STOP, value="premature",
                                        confidence=0.8, producer=learned("v1"))])
    first = ws.suggestions.agreement_history(STOP, resamples=50)
    assert ws.suggestions.agreement_history(STOP, resamples=50) is first  # the page reruns on each click
    ws.labelling.save_answers(trace, "e13", {STOP: "correct"}, Reviewer(name="bob", via="cli"),
                    suggestions_visible=False)
    again = ws.suggestions.agreement_history(STOP, resamples=50)
    assert again is not first and again.points[0].pairs == 2
    ws.suggestions.add([Suggestion(trace_id=trace.trace_id, trace_sha256=trace.sha256,
                                        event_id="e13", question=STOP, value="late",
                                        confidence=0.8, producer=learned("v2"))])
    assert len(ws.suggestions.agreement_history(STOP, resamples=50).points) == 2
