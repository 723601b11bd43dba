"""The planted-fault generator (viz_app.planted) and the fault detectors on it: every fault
kind in every shape is found in every topology, its faithful controls are left alone, and the
rules' precision and recall on the held-out split (on which no threshold was fitted) stay
where docs/suggestions.md says they are."""

from __future__ import annotations

import pytest

from factories import reference_validator
from viz_app import planted
from viz_app.io.native import trace_from_dict
from viz_app.suggest.rules import findings

TOPOLOGIES = planted.TOPOLOGY_NAMES
SEED = 7


def fired(case: planted.Case, kind: str) -> set[str]:
    """The targets the detector of one kind fired on in a case's trace."""
    trace = trace_from_dict(case.trace, f"<{case.name}>")
    return {f.event_id for f in findings(trace) if f.rule in planted.RULES[kind]}


def planted_case(kind: str, shape: str, topology: str, control: bool = False) -> planted.Case:
    return planted.case(kind, shape, control, topology, "medium", SEED)


# -- the generator --------------------------------------------------------------------------


@pytest.mark.parametrize("split", list(planted.SPLITS))
def test_every_planted_trace_validates_against_the_reference_schema(split):
    validator = reference_validator()
    for case in planted.cases(split):
        errors = list(validator.iter_errors(case.trace))
        assert not errors, f"{case.name}: {errors[0].message}"


def test_the_same_arguments_plant_the_same_trace():
    a = planted.case("late_stop", "stated-in-message", False, "debate", "large", 3)
    b = planted.case("late_stop", "stated-in-message", False, "debate", "large", 3)
    assert a.trace == b.trace and a.faults == b.faults


def test_the_held_out_split_shares_no_trace_with_the_tuning_split():
    tuning = {c.name for c in planted.cases("tuning")}
    held_out = planted.cases("held-out")
    assert not tuning & {c.name for c in held_out}
    assert {c.seed for c in held_out}.isdisjoint(c.seed for c in planted.cases("tuning"))
    unseen = {d.name for d in planted.DOMAINS[planted.SPLITS["tuning"][1]:]}
    assert any(c.trace["task_id"].removeprefix("planted-") in unseen for c in held_out)


def test_a_fault_names_an_event_of_its_trace_and_a_control_names_none():
    for case in planted.cases("tuning"):
        ids = {e["id"] for e in case.trace["events"]}
        if case.control:
            assert case.faults == [], case.name
        else:
            assert any(f.kind == case.kind for f in case.faults), case.name
            assert {f.event_id for f in case.faults} <= ids


# -- each fault shape is found --------------------------------------------------------------


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("shape", planted.SHAPES["late_stop"])
def test_a_late_stop_is_found_however_the_answer_was_first_stated(shape, topology):
    case = planted_case("late_stop", shape, topology)
    [stop] = [f.event_id for f in case.faults if f.kind == "late_stop"]
    assert stop in fired(case, "late_stop")


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("shape", planted.SHAPES["premature_stop"])
def test_a_stop_with_results_in_flight_at_any_depth_is_premature(shape, topology):
    case = planted_case("premature_stop", shape, topology)
    [stop] = [f.event_id for f in case.faults]
    assert stop in fired(case, "premature_stop")


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("shape", planted.SHAPES["dropped_result"])
def test_a_dropped_result_is_found_however_it_was_written(shape, topology):
    case = planted_case("dropped_result", shape, topology)
    [merge] = [f.event_id for f in case.faults]
    assert merge in fired(case, "dropped_result")


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("shape", planted.SHAPES["over_spawning"])
def test_every_copy_of_a_sub_task_is_redundant_and_the_first_is_not(shape, topology):
    case = planted_case("over_spawning", shape, topology)
    copies = {f.event_id for f in case.faults}
    said = fired(case, "over_spawning")
    assert copies <= said
    assert said <= copies


# -- the controls are left alone ------------------------------------------------------------


@pytest.mark.parametrize("topology", TOPOLOGIES)
@pytest.mark.parametrize("kind, shape", [(k, s) for k in planted.KINDS
                                         for s in planted.CONTROLS[k]])
def test_a_faithful_control_gets_no_suggestion_of_its_kind(kind, shape, topology):
    case = planted_case(kind, shape, topology, control=True)
    assert fired(case, kind) == set()


def test_a_faithful_merge_that_paraphrases_every_result_is_not_a_drop():
    case = planted_case("dropped_result", "paraphrased", "centralized", control=True)
    assert fired(case, "dropped_result") == set()


def test_a_merge_that_names_a_result_but_not_what_it_found_is_a_drop():
    case = planted_case("dropped_result", "named", "swarm")
    assert {f.event_id for f in case.faults} <= fired(case, "dropped_result")


def test_a_second_round_that_corrects_a_figure_is_not_a_late_stop():
    case = planted_case("late_stop", "revision", "centralized", control=True)
    assert fired(case, "late_stop") == set()


# -- the figures docs/suggestions.md quotes ---------------------------------------------------


def test_each_detector_keeps_its_precision_and_recall_on_the_held_out_split():
    made = planted.cases("held-out")

    def flagged(case):
        trace = trace_from_dict(case.trace, f"<{case.name}>")
        return [(f.rule, f.event_id) for f in findings(trace)]

    for kind, score in planted.score(made, flagged).items():
        assert score.precision >= 0.95, (kind, score.precision, score.wrong)
        assert score.recall >= 0.95, (kind, score.recall, score.missed)
