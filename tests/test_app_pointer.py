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


def _at_the_stop(tmp_path, monkeypatch, trace):
    from factories import write_json

    folder = tmp_path / "library"
    folder.mkdir()
    write_json(folder, trace.to_dict(), "trace.json")
    workspace = app_env(monkeypatch, make_workspace(tmp_path, traces=[folder]))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"], at.session_state["reviewer"] = trace.trace_id, "ann"
    at.run()
    base = f"ann:{trace.trace_id}:{workspace.library.trace(trace.trace_id).sha256[:12]}"
    return at.button(key=f"{base}:next").click().run(), base


def test_a_premature_stop_offers_only_later_events_and_a_late_one_only_earlier(tmp_path,
                                                                             monkeypatch):
    """Issue 40, item 3: an earlier event sat in the pointer box beside a premature answer."""
    trace = premature()
    at, base = _at_the_stop(tmp_path, monkeypatch, trace)
    order = [e.id for e in analyze(trace).order]
    stop = order.index("e13")
    at = at.radio(key=f"{base}:e13:stopping_correctness").set_value("premature").run()
    offered = [o for o in at.selectbox(key=f"{base}:e13:pointer").options if o != "—"]
    assert offered and offered[-1] == "later than this run recorded"
    assert len(offered) == len(order) - stop - 1 + 1  # the events after the stop, and later
    at = at.radio(key=f"{base}:e13:stopping_correctness").set_value("late").run()
    offered = at.selectbox(key=f"{base}:e13:pointer").options
    assert "later than this run recorded" not in offered
    assert len([o for o in offered if o != "—"]) == stop


def test_a_premature_stop_that_ends_the_run_is_saved_as_later_than_recorded_and_says_so(
        tmp_path, monkeypatch):
    from factories import as_trace

    raw = premature().to_dict()
    order = [e.id for e in analyze(premature()).order]
    cut = set(order[order.index("e13") + 1:])
    raw["events"] = [e for e in raw["events"] if e["id"] not in cut]
    raw["edges"] = [e for e in raw.get("edges", []) if e.get("src") not in cut
                    and e.get("dst") not in cut]
    raw["trace_id"] = "premature-cut"
    at, base = _at_the_stop(tmp_path, monkeypatch, as_trace(raw))
    at = at.radio(key=f"{base}:e13:stopping_correctness").set_value("premature").run()
    assert not at.exception, at.exception
    assert at.selectbox(key=f"{base}:e13:pointer").value == "<later than this run recorded>"
    said = " ".join(c.value for c in at.caption)
    assert "No later event in this run: saved as *later than this run recorded*." in said
