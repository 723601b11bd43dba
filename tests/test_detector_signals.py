"""`rules.signals`: the detectors' raw figures on one target, before any threshold, for a
learned producer: every name always there, numbers that move with the fault."""

from __future__ import annotations

import detector_cases as cases
from viz_app.analysis import analyze
from viz_app.labels.rubric import default_rubric, targets
from viz_app.suggest.rules import ABSENT, PRESENT, SIGNALS, signals


def test_every_target_gets_every_signal_as_a_number():
    trace = cases.late_return()
    analysis = analyze(trace)
    for target in targets(default_rubric(), analysis):
        got = signals(analysis, target)
        assert list(got) == list(SIGNALS)
        assert all(isinstance(v, float) for v in got.values())


def test_the_trace_itself_has_no_signal():
    assert not any(signals(cases.faithful(), "").values())


def test_a_dropped_result_has_a_part_absent_from_the_output_and_a_faithful_merge_has_none():
    dropped = cases.dropped_merge()
    kept = cases.faithful()
    at_dropped = signals(dropped, cases.event_at(dropped, 6.0, "aggregate").id)
    at_kept = signals(kept, cases.event_at(kept, 6.0, "aggregate").id)
    assert at_dropped["agg_min_presence"] < ABSENT and at_dropped["agg_lost_parts"] == 1
    assert at_kept["agg_min_presence"] >= PRESENT and at_kept["agg_lost_parts"] == 0


def test_a_stop_with_work_in_flight_counts_it_and_a_faithful_stop_counts_none():
    working = cases.stop_while_working()
    faithful = cases.faithful()
    assert signals(working, cases.event_at(working, 8.0, "orchestrator_decision").id)[
        "stop_pending_agents"] == 1
    clean = signals(faithful, cases.event_at(faithful, 8.0, "orchestrator_decision").id)
    assert clean["is_stop"] == 1 and clean["stop_pending_agents"] == 0
    assert clean["stop_returns_after"] == 0 and clean["stop_answer_ready"] == 0


def test_a_late_stop_counts_the_work_after_the_answer_was_ready():
    trace = cases.late_stop()
    got = signals(trace, cases.event_at(trace, 40.0, "orchestrator_decision").id)
    assert got["stop_answer_ready"] == 1 and got["stop_work_after_ready"] >= 2
    assert 0 < got["stop_time_after_ready"] <= 1


def test_a_duplicate_childs_task_is_as_alike_as_can_be_and_a_different_ones_is_not():
    dup = cases.duplicate_children()
    assert signals(dup, cases.event_at(dup, 1.2, "spawn").id)["spawn_task_similarity"] == 1
    faithful = cases.faithful()
    assert signals(faithful, cases.event_at(faithful, 1.2, "spawn").id)[
        "spawn_task_similarity"] < 0.5
