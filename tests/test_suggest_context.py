"""The context of a target, as the labels panel shows it and a judge reads it: an aggregate's
inputs beside its output, the events around a stop, the whole trace's last event; text cut at
a limit, with what was cut counted."""

from __future__ import annotations

from factories import premature
from viz_app.analysis import analyze
from viz_app.labels.rubric import default_rubric, targets
from viz_app.suggest.context import target_context

RUBRIC = default_rubric()


def context_of(event_id: str | None, trace=None, **options):
    analysis = analyze(trace or premature())
    [target] = [t for t in targets(RUBRIC, analysis) if t.event_id == event_id]
    return target_context(analysis, target, **options)


def test_an_aggregate_shows_its_inputs_then_its_output():
    found = context_of("e12")
    assert [(e.event_id, e.role) for e in found.events] == \
        [("e10", "input"), ("e11", "input"), ("e12", "target")]
    assert found.events[0].sender == "deploy_analyst" and found.kinds == ["aggregate"]


def test_a_stop_shows_the_events_before_and_after_it_in_time_order():
    found = context_of("e13", around=2)
    assert [(e.event_id, e.role) for e in found.events] == \
        [("e11", "before"), ("e12", "before"), ("e13", "target"), ("e14", "after"),
         ("e15", "after")]


def test_the_whole_trace_shows_its_task_and_last_event():
    found = context_of(None)
    assert found.event_id == "" and [(e.event_id, e.role) for e in found.events] == \
        [("e15", "last")]
    assert found.task_id == premature().task_id


def test_text_is_cut_at_the_limit_and_the_cut_counted():
    whole = premature().event("e15").text
    [last] = context_of(None, text_limit=10).events
    assert last.text == whole[:10] and last.cut == len(whole) - 10


def test_inputs_beyond_the_limit_are_counted():
    found = context_of("e12", max_inputs=1)
    assert [e.role for e in found.events] == ["input", "target"]
    assert found.inputs_left_out == 1
