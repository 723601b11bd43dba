"""The label form's check of a 'should have stopped at' pointer: an event the stopping agent
never saw is said at once, with the first event at which it had it offered in its place."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, make_workspace, premature
from viz_app.analysis import analyze
from viz_app.labels.correction import pointer_advice


def test_the_advice_names_the_unseen_event_and_where_the_agent_had_it():
    analysis = analyze(premature())
    assert pointer_advice(analysis, "e13", "e15") is None  # a return to the orchestrator
    advice = pointer_advice(analysis, "e13", "e14")  # db_analyst's own tool result
    assert advice.had_at == "e15" and advice.text.startswith("orchestrator never saw e14")
    never = pointer_advice(analysis, "e13", "e7")  # a query no event carried on
    assert never.had_at is None and "later than this run recorded" in never.text


def test_the_form_says_so_at_once_and_points_at_the_event_it_had(tmp_path, monkeypatch):
    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"], at.session_state["reviewer"] = PREMATURE_ID, "ann"
    at.run()
    base = f"ann:{PREMATURE_ID}:{workspace.library.trace(PREMATURE_ID).sha256[:12]}"
    at = at.button(key=f"{base}:next").click().run()  # to the stop, e13
    at.radio(key=f"{base}:e13:stopping_correctness").set_value("premature").run()
    at = at.selectbox(key=f"{base}:e13:pointer").set_value("e14").run()
    assert not at.exception, at.exception
    (warning,) = [w.value for w in at.warning if "never saw" in w.value]
    assert "orchestrator never saw e14" in warning and "e15" in warning
    at = at.button(key=f"{base}:e13:pointer:had-at").click().run()
    assert at.selectbox(key=f"{base}:e13:pointer").value == "e15"
    assert not [w for w in at.warning if "never saw" in w.value]
