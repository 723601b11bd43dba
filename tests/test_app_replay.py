"""The trace page's replay bar (AppTest): its step buttons walk the run event time by event time;
it keeps its time when the page leaves the trace and comes back, and a revisited target is never
hidden by where the replay was left."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from factories import APP, DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, app_env, make_workspace
from viz_app.analysis import analyze


def test_the_replay_steps_forward_and_back_through_the_events_times(tmp_path, monkeypatch):
    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    a = analyze(workspace.library.trace(PREMATURE_ID))
    times = sorted({e.t - a.order[0].t for e in a.order})
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"] = PREMATURE_ID
    at.run()
    key = next(b.key for b in at.button if b.key and b.key.endswith(":first"))
    bar = key.removesuffix(":first")  # the bar's key names the trace's file and hash
    at.button(key=f"{bar}:first").click().run()
    at.button(key=f"{bar}:forward").click().run()
    at.button(key=f"{bar}:forward").click().run()
    assert at.session_state[f"{bar}:t"] == times[2]  # from 0, the first event's time
    at.button(key=f"{bar}:back").click().run()
    assert at.session_state[f"{bar}:t"] == times[1]


def _bar(at: AppTest, trace_id: str) -> str:
    """The replay bar's key of a trace on the page (it names the trace's file and hash)."""
    return next(b.key for b in at.button if b.key and b.key.endswith(":first")
                and trace_id.split("-")[1] in b.key).removesuffix(":first")


def test_a_revisited_target_shows_the_replay_at_its_event_not_where_it_was_left(
        tmp_path, monkeypatch):
    """Left at 0.0 s (the start), then another trace, then back at the stop e13: the replay
    stands at e13's time, so the event the page is about is drawn, not hidden at 0.0 s."""
    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    a = analyze(workspace.library.trace(PREMATURE_ID))
    e13 = a.trace.events_by_id["e13"].t - a.order[0].t
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"], at.query_params["event"] = PREMATURE_ID, "e13"
    at.run()
    bar = _bar(at, PREMATURE_ID)
    assert at.session_state[f"{bar}:t"] == a.makespan  # the whole run at first
    at.button(key=f"{bar}:first").click().run()
    assert at.session_state[f"{bar}:t"] == 0.0

    at.query_params["trace"] = DROPPED_ID
    del at.query_params["event"]
    at.run()
    assert not at.exception, at.exception
    assert _bar(at, DROPPED_ID) != bar

    at.query_params["trace"], at.query_params["event"] = PREMATURE_ID, "e13"
    at.run()
    assert not at.exception, at.exception
    assert next(s for s in at.slider if s.key == f"{bar}:t").value == e13


def test_a_revisited_trace_keeps_the_replay_where_it_was_left(tmp_path, monkeypatch):
    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    a = analyze(workspace.library.trace(PREMATURE_ID))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"] = PREMATURE_ID
    at.run()
    bar = _bar(at, PREMATURE_ID)
    at.button(key=f"{bar}:back").click().run()
    left = at.session_state[f"{bar}:t"]
    assert 0 < left < a.makespan
    at.query_params["trace"] = DROPPED_ID
    at.run()
    at.query_params["trace"] = PREMATURE_ID
    at.run()
    assert next(s for s in at.slider if s.key == f"{bar}:t").value == left
