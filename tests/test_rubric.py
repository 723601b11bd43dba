"""The rubric: loading with clear errors, targets resolved on a trace, answers checked, rewards."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from conftest import need
from factories import REFERENCE
from viz_app.analysis import analyze
from viz_app.io.native import load_trace
from viz_app.labels.rubric import (CREDIT_UNITS, REWARD_FAMILIES, LabelError, RubricError,
                                   check_answer, default_rubric, load_rubric, reward_of,
                                   rubric_from_dict, rubric_from_yaml, targets)

DEMO = Path(__file__).resolve().parent.parent / "demo_traces"
PREMATURE = DEMO / "10_review_premature_stop.json"  # aggregate e12 <- e10, e11; stop e13
NO_STOP = DEMO / "08_unknown_no_explicit_stop.json"  # no stop decision: e8 is inferred


def analysis_of(path: Path):
    return analyze(load_trace(path))


def minimal(**question) -> dict:
    base = {"id": "q", "prompt": "?", "target": {"kind": "trace"}, "kind": "categorical",
            "choices": [{"value": "a", "label": "a", "reward": 1}]}
    return {"name": "t", "version": "1", "questions": [{**base, **question}]}


def test_the_default_rubric_asks_the_issue_questions_with_their_taxonomy():
    rubric = default_rubric()
    q = rubric.questions_by_id
    assert (q["aggregation_quality"].family, q["aggregation_quality"].credit_unit,
            q["aggregation_quality"].sub_decision) == ("R7", "orchestrator", "O4")
    assert [c.value for c in q["aggregation_quality"].choices] == [1, 2, 3, 4, 5]
    assert (q["stopping_correctness"].sub_decision, q["task_outcome"].family,
            q["task_outcome"].credit_unit) == ("O5", "R1", "team")
    assert q["message_necessity"].optional and q["message_necessity"].family == "R6"
    assert {c.value for c in q["aggregation_issues"].choices} >= {"dropped_result",
                                                                 "unfaithful_merge"}


def test_every_reward_in_the_default_rubric_lies_in_minus_one_to_one():
    rewards = [c.reward for q in default_rubric().questions for c in q.choices
               if c.reward is not None]
    assert rewards and all(-1 <= r <= 1 for r in rewards)


def test_the_rubric_hash_changes_with_its_content_and_not_with_formatting():
    raw = minimal()
    same = rubric_from_yaml(yaml.safe_dump(raw, indent=4))
    assert rubric_from_dict(raw).sha256 == same.sha256
    raw["questions"][0]["choices"][0]["reward"] = 0.5
    assert rubric_from_dict(raw).sha256 != same.sha256


def test_a_reward_outside_minus_one_to_one_is_refused_naming_its_place():
    raw = minimal(choices=[{"value": "a", "label": "a", "reward": 2}])
    with pytest.raises(RubricError, match=r"questions\[0\] \(q\)\.choices\[0\]\.reward"):
        rubric_from_dict(raw, "r.yaml")


def test_an_unknown_reward_family_is_refused():
    with pytest.raises(RubricError, match="R9"):
        rubric_from_dict(minimal(family="R9"))


def test_broken_yaml_is_refused_with_its_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nquestions: [\n  - id: q\n")
    with pytest.raises(RubricError, match=r"bad.yaml: line \d+"):
        load_rubric(path)


def test_a_follow_up_on_an_unknown_question_is_refused():
    with pytest.raises(RubricError, match="unknown question 'nope'"):
        rubric_from_dict(minimal(ask_when={"question": "nope", "values": ["a"]}))


def test_targets_are_events_in_time_order_then_the_trace():
    found = targets(default_rubric(), analysis_of(PREMATURE))
    counted = [(t.event_id, t.kinds) for t in found if t.required]
    assert counted == [("e12", ["aggregate"]), ("e13", ["stop"]), (None, ["trace"])]


def test_an_aggregate_target_carries_the_inputs_it_merged():
    found = {t.event_id: t for t in targets(default_rubric(), analysis_of(PREMATURE))}
    assert found["e12"].inputs == ["e10", "e11"]


def test_a_trace_without_a_stop_decision_gets_the_inferred_stop_as_target():
    found = {t.event_id: t for t in targets(default_rubric(), analysis_of(NO_STOP))}
    assert found["e8"].inferred and "stopping_correctness" in found["e8"].questions


def test_an_events_target_picks_events_by_type_and_condition():
    raw = minimal(target={"kind": "events", "types": ["orchestrator_decision"],
                          "where": {"decision": "spawn"}})
    found = targets(rubric_from_dict(raw), analysis_of(PREMATURE))
    assert [t.event_id for t in found] == ["e1"]


def test_an_answer_outside_the_rubric_is_refused_with_the_allowed_answers():
    with pytest.raises(LabelError, match=r"6 is not an answer .*\(allowed: 1, 2, 3, 4, 5\)"):
        check_answer(default_rubric(), analysis_of(PREMATURE), "aggregation_quality", "e12", 6)


def test_a_boolean_true_is_not_the_scale_point_one():
    with pytest.raises(LabelError):
        check_answer(default_rubric(), analysis_of(PREMATURE), "aggregation_quality", "e12", True)


def test_an_event_the_trace_does_not_have_is_refused():
    with pytest.raises(LabelError, match="has no event 'e999'"):
        check_answer(default_rubric(), analysis_of(PREMATURE), "aggregation_quality", "e999", 3)


def test_a_question_asked_about_the_wrong_target_is_refused():
    with pytest.raises(LabelError, match="not asked about event e13"):
        check_answer(default_rubric(), analysis_of(PREMATURE), "aggregation_quality", "e13", 3)


def test_a_premature_stop_must_point_at_a_later_event():
    rubric, analysis = default_rubric(), analysis_of(PREMATURE)
    answers = {"stopping_correctness": "premature"}
    check_answer(rubric, analysis, "stop_should_have_been", "e13", "e15", answers)
    with pytest.raises(LabelError, match="should have stopped later"):
        check_answer(rubric, analysis, "stop_should_have_been", "e13", "e2", answers)


def test_scale_points_map_to_their_rewards():
    question = default_rubric().question("aggregation_quality")
    assert [reward_of(question, v) for v in (1, 3, 5)] == [-1.0, 0.0, 1.0]


def test_tags_without_rewards_carry_no_reward():
    question = default_rubric().question("aggregation_issues")
    assert reward_of(question, ["dropped_result"]) is None


def test_the_taxonomy_names_are_those_of_the_taxonomy_file():
    taxonomy = REFERENCE / "TAXONOMY.md"
    if not taxonomy.exists():
        need(f"{taxonomy} is not here: the shared reference folder is not beside this checkout")
    text = taxonomy.read_text()
    assert all(f"| {family} |" in text for family in REWARD_FAMILIES)
    assert "team, orchestrator, role, agent, turn, message, tool call, token" in text
    assert ", ".join(CREDIT_UNITS) in text
