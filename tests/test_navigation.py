"""The labels panel's navigation (components/navigation.py), pure: which target N, P and S lead
to, how an event selected elsewhere moves the panel, and the labels of its target list."""

from __future__ import annotations

import ast
import time
from pathlib import Path

from components.navigation import (follow, leave, next_target_key, previous_target_key, short,
                                   target_label)
from factories import demo_trace
from viz_app.analysis import analyze
from viz_app.labels import default_rubric, targets

KEYS = ["e12", "e13", ""]


def state(target: str | None = "e12", **more) -> dict:
    """The panel's state as `form.form_state` makes it."""
    return {"target": target, "seen": None, "opened": 0.0, "picking": False, "optional": False,
            "skipped": [], **more}


def test_navigation_needs_no_streamlit():
    source = Path(__file__).resolve().parent.parent / "components" / "navigation.py"
    imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(source.read_text()))
                if isinstance(node, ast.Import) for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(ast.parse(source.read_text()))
                 if isinstance(node, ast.ImportFrom) and node.module}
    assert "streamlit" not in imported


def test_n_goes_to_the_first_unlabelled_target_after_this_one_and_skipped_ones_last():
    assert next_target_key(KEYS, set(), "e12", []) == "e13"
    assert next_target_key(KEYS, {"e13"}, "e12", []) == ""
    assert next_target_key(KEYS, set(), "e12", ["e13"]) == ""
    assert next_target_key(KEYS, {"", "e13"}, "e12", []) is None
    assert next_target_key(KEYS, set(), None, []) == "e12"  # none open: the first


def test_p_goes_to_the_target_before_and_nowhere_from_the_first():
    assert previous_target_key(KEYS, "") == "e13"
    assert previous_target_key(KEYS, "e12") is None
    assert previous_target_key(KEYS, "gone") is None


def test_an_event_selected_elsewhere_becomes_the_target_when_it_is_one():
    now = state()
    assert follow(now, "e13", KEYS) is None
    assert (now["target"], now["seen"]) == ("e13", "e13") and now["opened"] > time.time() - 5
    assert follow(now, "e13", KEYS) is None and now["target"] == "e13"  # seen: nothing moves
    assert follow(now, "e99", KEYS) is None and now["target"] == "e13"  # not a target


def test_while_picking_the_selected_event_is_the_answer_and_the_target_stays():
    now = state("e13", picking=True)
    assert follow(now, "e20", KEYS) == "e20"
    assert now["target"] == "e13" and now["picking"] is False
    assert follow(now, None, KEYS) is None and now["seen"] is None


def test_leaving_opens_the_new_target_and_stops_picking():
    now = state("e12", picking=True, seen="e12")
    leave(now, "")
    assert (now["target"], now["seen"], now["picking"]) == ("", "e12", False)


def test_the_target_list_reads_each_target_in_one_plain_line():
    trace = demo_trace()
    analysis = analyze(trace)
    found = {t.key: t for t in targets(default_rubric(), analysis)}
    assert target_label(found[""], analysis, done=True) == "✓ the whole trace"
    stop = target_label(found["e13"], analysis, done=False)
    assert stop.startswith("○ e13 · ") and "stop" in stop and "\n" not in stop
    assert short("a\nb  c" + "x" * 100, 10) == "a b cxxxx…"
