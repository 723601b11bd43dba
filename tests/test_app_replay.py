"""The trace page's replay bar (AppTest): its step buttons walk the run event time by event time."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, make_workspace
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
