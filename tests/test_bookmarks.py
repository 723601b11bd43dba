"""Bookmarks: a reviewer points at an event or a time range with a Markdown note; edits and
removals add versions (the history is kept); current bookmarks come in the order of the run; the
export holds them with their notes."""

from __future__ import annotations

import json

import pytest

from factories import demo_trace, make_workspace, premature
from viz_app.errors import BookmarkError
from viz_app.labels.bookmark import bookmarks_at, current_bookmarks
from viz_app.store.bookmarks import BookmarkStore
from viz_app.workspace import Workspace


@pytest.fixture
def trace():
    return premature()  # aggregate e12, stop e13


@pytest.fixture
def workspace(tmp_path) -> Workspace:
    return make_workspace(tmp_path)


@pytest.fixture
def store(workspace) -> BookmarkStore:
    return workspace.bookmarks


def test_a_bookmark_on_an_event_records_its_time_note_reviewer_and_trace(store, trace):
    made = store.add(trace, "ann", "Here it **stops** before the profiler returns.",
                     event_id="e13")
    first = min(e.t for e in trace.events)
    assert (made.event_id, made.start_s, made.end_s) == ("e13", trace.event("e13").t - first,
                                                         trace.event("e13").t - first)
    assert made.reviewer == "ann" and made.trace_id == trace.trace_id
    assert made.trace_sha256 == trace.sha256 and made.created_at.endswith("Z")
    assert store.current(trace.trace_id) == [made]


def test_a_bookmark_on_a_time_range_has_no_event(store, trace):
    made = store.add(trace, "ann", "the fan-out", start_s=1.0, end_s=4.5)
    assert made.is_range and (made.start_s, made.end_s) == (1.0, 4.5)
    assert made.where == "1s to 4.5s"


@pytest.mark.parametrize("anchor", [dict(event_id="nope"), dict(start_s=5.0, end_s=1.0),
                                    dict(start_s=-1.0), dict(start_s=0.0, end_s=1e9), dict()])
def test_an_anchor_outside_the_trace_is_refused(store, trace, anchor):
    with pytest.raises(BookmarkError):
        store.add(trace, "ann", "x", **anchor)


def test_a_bookmark_needs_a_reviewer(store, trace):
    with pytest.raises(BookmarkError, match="reviewer"):
        store.add(trace, "  ", "x", event_id="e13")


def test_an_edit_adds_a_version_and_keeps_the_history(store, trace):
    made = store.add(trace, "ann", "first thought", event_id="e12")
    edited = store.edit(trace, made.bookmark_id, "bob", "second thought")
    assert store.current(trace.trace_id) == [edited]
    assert [v.note for v in store.history(made.bookmark_id)] == ["first thought",
                                                                  "second thought"]
    assert [v.reviewer for v in store.history(made.bookmark_id)] == ["ann", "bob"]
    assert edited.bookmark_id == made.bookmark_id and edited.event_id == "e12"


def test_a_removal_hides_the_bookmark_but_keeps_its_versions(store, trace):
    made = store.add(trace, "ann", "oops", event_id="e12")
    store.remove(made.bookmark_id, "ann")
    assert store.current(trace.trace_id) == []
    assert [v.removed for v in store.history(made.bookmark_id)] == [False, True]


def test_current_bookmarks_come_in_the_order_of_the_run_not_of_writing(store, trace):
    late = store.add(trace, "ann", "the stop", event_id="e13")
    early = store.add(trace, "ann", "the start", start_s=0.0)
    middle = store.add(trace, "bob", "the merge", event_id="e12")
    assert [b.bookmark_id for b in store.current(trace.trace_id)] == [
        early.bookmark_id, middle.bookmark_id, late.bookmark_id]


def test_bookmarks_of_other_traces_are_not_listed(store, trace, tmp_path):
    other = demo_trace("09_review_dropped_finding")
    store.add(trace, "ann", "mine", event_id="e13")
    store.add(other, "ann", "theirs", start_s=0.0)
    assert [b.note for b in store.current(trace.trace_id)] == ["mine"]
    assert len(store.current()) == 2


def test_bookmarks_at_an_event_picks_those_on_it(store, trace):
    on = store.add(trace, "ann", "on it", event_id="e13")
    store.add(trace, "ann", "elsewhere", event_id="e12")
    assert bookmarks_at(store.current(), "e13") == [on]


def test_the_newest_version_wins_even_when_versions_arrive_out_of_order(store, trace):
    made = store.add(trace, "ann", "v1", event_id="e12")
    newer = store.edit(trace, made.bookmark_id, "ann", "v2")
    assert current_bookmarks([newer, made]) == [newer]


def test_the_title_is_the_first_line_of_the_note_without_heading_marks(store, trace):
    made = store.add(trace, "ann", "\n## Premature stop\nmore text", event_id="e13")
    assert made.title == "Premature stop"


def test_the_bookmarks_export_holds_every_current_bookmark_with_its_note(store, trace, workspace,
                                                                       tmp_path):
    from viz_app.cli import main

    made = store.add(trace, "ann", "first", event_id="e13")
    store.edit(trace, made.bookmark_id, "bob", "<script>x</script> kept as written")
    store.add(trace, "ann", "range", start_s=0.0, end_s=1.0)
    out = tmp_path / "bookmarks.jsonl"
    assert main(["labels", "export", "--db", workspace.settings.db_url, "--format", "bookmarks",
                 "-o", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["note"] for r in rows] == ["range", "<script>x</script> kept as written"]
    assert rows[1]["versions"] == 2 and rows[1]["first_reviewer"] == "ann"
    assert rows[1]["reviewer"] == "bob" and rows[1]["event_id"] == "e13"


def test_the_bookmarks_export_can_keep_one_reviewer(store, trace, workspace, tmp_path):
    from viz_app.cli import main

    store.add(trace, "ann", "a", event_id="e13")
    store.add(trace, "bob", "b", event_id="e12")
    out = tmp_path / "bookmarks.jsonl"
    main(["labels", "export", "--db", workspace.settings.db_url, "--format", "bookmarks",
          "-o", str(out), "--reviewer", "bob"])
    assert [json.loads(x)["note"] for x in out.read_text().splitlines()] == ["b"]


def test_the_bookmarks_table_shares_the_database_with_the_labels(tmp_path, trace):
    workspace = make_workspace(tmp_path)
    workspace.bookmarks.add(trace, "ann", "n", event_id="e13")
    workspace.labelling.save(trace, "task_outcome", "failure", "ann")
    again = make_workspace(tmp_path)  # the same database, opened again
    assert again.labelling.count() == 1 and len(again.bookmarks.current()) == 1
