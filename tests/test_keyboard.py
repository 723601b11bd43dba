"""The labels panel's keys and the state behind them, run in-process (AppTest): every key is a
Streamlit button shortcut (no script of ours in the page), so pressing a key is clicking its
button here; the browser side is in test_e2e_keyboard.py."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.form import tag_letters
from components.navigation import next_target_key, previous_target_key
from factories import APP, DROPPED, PREMATURE, PREMATURE_ID, app_env, make_workspace
from viz_app.workspace import Workspace


@pytest.fixture
def env(tmp_path, monkeypatch) -> Workspace:
    """The app on demo 10 (aggregate e12, stop e13, the whole trace) and demo 9."""
    return app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))


def trace_page(reviewer: str | None = None, **params) -> AppTest:
    """The trace page of demo 10, opened by its link (by a reviewer who typed their name
    before, when given)."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"] = PREMATURE_ID
    if reviewer:
        at.session_state["reviewer"] = reviewer  # typed before, kept for the session
    for name, value in params.items():
        at.query_params[name] = value
    return at.run()


def base(env: Workspace) -> str:
    return f"ann:{PREMATURE_ID}:{env.library.trace(PREMATURE_ID).sha256[:12]}"


def button(at: AppTest, key: str):
    return next(b for b in at.button if b.key == key)


def shortcut(at: AppTest, key: str) -> str:
    return button(at, key).proto.shortcut


def progress(at: AppTest) -> str:
    return next(p.proto.text for p in at.get("progress"))


def test_the_next_target_is_never_the_current_one_and_skipped_ones_come_last():
    keys = ["e12", "e13", ""]
    assert next_target_key(keys, set(), "e12", []) == "e13"
    assert next_target_key(keys, set(), "", []) == "e12"  # wraps
    assert next_target_key(keys, {"e13"}, "e12", []) == ""
    assert next_target_key(keys, set(), "e12", ["e13"]) == ""  # skipped: after the others
    assert next_target_key(keys, {""}, "e12", ["e13"]) == "e13"  # ... and then it comes back
    assert next_target_key(keys, {"e13", ""}, "e12", []) is None  # only the current is left
    assert previous_target_key(keys, "e13") == "e12"
    assert previous_target_key(keys, "e12") is None


def test_each_tag_gets_a_letter_of_its_own_and_never_a_reserved_one():
    letters = tag_letters(["dropped a result", "unfaithful merge", "conflict left unresolved",
                           "redundant inputs", "added unsupported content"])
    assert letters == ["D", "U", "O", "E", "A"]
    assert not set("CRNPSH") & set(letters)
    assert len(set(tag_letters(["aa", "aa", "aa"]))) == 3


def test_the_panel_binds_its_keys(env):
    at = trace_page("ann")
    b = base(env)
    assert not at.exception, at.exception
    assert shortcut(at, f"{b}:save:e12") == "ctrl+enter"
    assert shortcut(at, f"{b}:save-s:e12") == "ctrl+s"
    assert shortcut(at, f"{b}:next") == "n"
    assert shortcut(at, f"{b}:previous") == "p"
    assert shortcut(at, f"{b}:skip") == "s"
    assert shortcut(at, f"{b}:next_trace") == "shift+n"
    assert shortcut(at, f"{b}:keys") == "h"
    assert [shortcut(at, f"{b}:e12:aggregation_quality:key:{d}") for d in "12345"] == \
        list("12345")
    assert shortcut(at, f"{b}:e12:aggregation_issues:key:D") == "d"


def test_digits_pick_the_nth_answer_and_letters_toggle_tags_and_the_save_key_saves(env):
    at = trace_page("ann")
    b = base(env)
    button(at, f"{b}:e12:aggregation_quality:key:4").click().run()
    assert at.radio(key=f"{b}:e12:aggregation_quality").value == 4
    button(at, f"{b}:e12:aggregation_issues:key:D").click().run()
    button(at, f"{b}:e12:aggregation_issues:key:A").click().run()
    button(at, f"{b}:e12:aggregation_issues:key:D").click().run()  # D again: off
    tags = next(g for g in at.get("button_group") if g.key == f"{b}:e12:aggregation_issues")
    assert tags.value == ["unsupported_content"]
    button(at, f"{b}:save:e12").click().run()
    assert not at.exception, at.exception
    assert progress(at) == "1 of 3 targets labelled by ann"
    saved = {x.question: x.value for x in env.labelling.current(PREMATURE_ID)}
    assert saved == {"aggregation_quality": 4, "aggregation_issues": ["unsupported_content"]}


def test_a_category_question_takes_digits_too_and_shows_them_beside_its_answers(env):
    at = trace_page("ann")
    b = base(env)
    button(at, f"{b}:next").click().run()  # N: the stop
    radio = at.radio(key=f"{b}:e13:stopping_correctness")
    assert radio.options == ["1 · correct", "2 · premature", "3 · late"]
    button(at, f"{b}:e13:stopping_correctness:key:2").click().run()
    assert at.radio(key=f"{b}:e13:stopping_correctness").value == "premature"


def test_arrows_walk_around_the_stop_and_enter_picks_where_it_should_have_stopped(env):
    at = trace_page("ann")
    b = base(env)
    button(at, f"{b}:next").click().run()
    assert shortcut(at, f"{b}:walk-down:e13") == "down"
    assert shortcut(at, f"{b}:walk-up:e13") == "up"
    assert shortcut(at, f"{b}:walk-pick:e13") == "enter"
    button(at, f"{b}:e13:stopping_correctness:key:2").click().run()
    button(at, f"{b}:walk-down:e13").click().run()  # from e14 (just after the stop) to e15
    assert any("▶ **e15**" in c.value for c in at.caption)
    button(at, f"{b}:walk-pick:e13").click().run()
    assert at.selectbox(key=f"{b}:e13:pointer").value == "e15"
    button(at, f"{b}:save:e13").click().run()
    saved = {x.question: x.value for x in env.labelling.current(PREMATURE_ID)}
    assert saved == {"stopping_correctness": "premature", "stop_should_have_been": "e15"}


def test_next_leaves_an_unsaved_target_and_its_answer_is_there_when_the_reviewer_returns(env):
    at = trace_page("ann")
    b = base(env)
    button(at, f"{b}:e12:aggregation_quality:key:2").click().run()
    button(at, f"{b}:next").click().run()
    assert at.selectbox(key=f"{b}:target:e13").value == "e13"
    button(at, f"{b}:previous").click().run()
    assert at.radio(key=f"{b}:e12:aggregation_quality").value == 2  # kept, not saved
    assert env.labelling.current(PREMATURE_ID) == []


def test_skip_moves_on_and_the_skipped_target_comes_back_after_the_others(env):
    at = trace_page("ann")
    b = base(env)
    button(at, f"{b}:skip").click().run()  # skip e12
    assert at.selectbox(key=f"{b}:target:e13").value == "e13"
    button(at, f"{b}:skip").click().run()  # skip e13
    assert at.selectbox(key=f"{b}:target:").value == ""  # the whole trace
    button(at, f"{b}:next").click().run()
    assert at.selectbox(key=f"{b}:target:e12").value == "e12"  # the skipped, in order


def test_a_save_that_misses_an_answer_says_so_and_keeps_the_rest(env):
    at = trace_page("ann")
    b = base(env)
    at.text_area(key=f"{b}:e12:note").input("half done").run()
    button(at, f"{b}:save:e12").click().run()
    assert any("Answer first" in e.value or "answer" in e.value.lower() for e in at.error)
    assert at.text_area(key=f"{b}:e12:note").value == "half done"
    assert env.labelling.current(PREMATURE_ID) == []


def test_the_typed_reviewer_stays_for_the_session_and_never_goes_into_the_link(env):
    at = trace_page("ann")
    assert at.text_input(key="_reviewer_box").value == "ann"
    assert progress(at) == "0 of 3 targets labelled by ann"
    at.text_input(key="_reviewer_box").input("bob").run()  # switching is explicit
    assert "reviewer" not in at.query_params
    assert progress(at) == "0 of 3 targets labelled by bob"


def test_next_trace_keeps_the_reviewer_without_naming_them_in_the_link(env):
    at = trace_page("ann")
    button(at, f"{base(env)}:next_trace").click().run()
    assert not at.exception, at.exception
    assert at.query_params["trace"] in (["demo-09-review-dropped-finding"],
                                        "demo-09-review-dropped-finding")
    assert "reviewer" not in at.query_params
    assert at.text_input(key="_reviewer_box").value == "ann"
