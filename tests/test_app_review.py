"""The review page, run in-process with AppTest: a reviewer picks a campaign, starts, answers the
target the database reserved for them, saves and gets the next, skips with a reason, and is told
when nothing is left. Blind: another reviewer's answer, a gold answer and (in a campaign that is
not assisted) a producer's suggestion never reach the page before the reviewer's own save."""

from __future__ import annotations

import json
import time

import pytest
from streamlit.testing.v1 import AppTest

from factories import (APP, DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, app_env, charts_drawn,
                       make_workspace)
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer
from viz_app.labels.suggestion import Producer, Suggestion
from viz_app.store.suggestions import SuggestionStore
from viz_app.workspace import Workspace

LEAD = Reviewer(name="lee", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
BOB = Reviewer(name="bob", via="self-declared")
STOPS = "stops"


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Workspace:
    """The app on demo 10 (stop e13) and demo 9 (stop e13), with a campaign asking only
    whether each stop was right, one reviewer per target."""
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=STOPS, questions=["stopping_correctness"]), LEAD)
    return ws


def review(reviewer: str = "ann", campaign: str | None = STOPS) -> AppTest:
    """The review page, opened by the deep link `?campaign=NAME` by a reviewer who typed their
    name before."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = reviewer  # typed before, kept for the session
    if campaign:
        at.query_params["campaign"] = campaign
    return at.run()


def start(at: AppTest) -> AppTest:
    return at.button(key="review:start").click().run()


def texts(at: AppTest) -> str:
    """Everything the page says in text elements (Markdown, captions, alerts, tables, options)."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [e.value for e in at.warning]
    parts += [e.value for e in at.info] + [e.value for e in at.success]
    parts += [str(list(r.options)) + str(r.value) for r in at.radio]
    parts += [d.value.to_csv() for d in at.dataframe]
    parts += [t.value or "" for t in at.text_area]
    return "\n".join(parts)


def stop_radio(at: AppTest):
    return next(r for r in at.radio if r.key.endswith(":stopping_correctness"))


def save(at: AppTest) -> AppTest:
    return next(b for b in at.button if b.key.startswith("review:") and ":save:" in b.key) \
        .click().run()


def held(at: AppTest):
    """The claim the page holds for its reviewer."""
    return at.session_state["_review"]["claim"]


def heading(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("#### "))


def test_a_deep_link_opens_the_review_page_on_the_campaign(workspace):
    at = review()
    assert not at.exception, at.exception
    assert at.selectbox(key="review:campaign").value == STOPS
    assert at.button(key="review:start").label == "Start"


def test_start_shows_the_claimed_target_with_the_campaigns_questions_only(workspace):
    at = start(review())
    assert not at.exception, at.exception
    assert heading(at).startswith("#### e13 · stop")
    asked = {r.key.rsplit(":", 1)[-1] for r in at.radio}
    assert asked == {"stopping_correctness"}  # not the aggregate's questions of the rubric
    assert stop_radio(at).value is None
    assert charts_drawn(at) >= 2  # the trace's tree and timeline


def test_save_submits_into_the_campaign_and_shows_the_next_target(workspace):
    at = start(review())
    first = next(c.value for c in at.caption if c.value.startswith("trace **"))
    stop_radio(at).set_value("premature")
    at = at.run()  # the follow-up question appears
    next(s for s in at.selectbox if s.key.endswith(":e13:pointer")).set_value("e15")
    at = save(at)
    assert not at.exception, at.exception
    labels = workspace.labelling.current(reviewer="ann")
    assert {(x.question, x.value, x.campaign, x.identified_by) for x in labels} == {
        ("stopping_correctness", "premature", STOPS, "self-declared"),
        ("stop_should_have_been", "e15", STOPS, "self-declared")}
    assert {x.suggestions_visible for x in labels} == {False}
    second = next(c.value for c in at.caption if c.value.startswith("trace **"))
    assert second != first and heading(at).startswith("#### e13")
    assert stop_radio(at).value is None
    assert any("You: 1 saved" in p.text for p in at.get("progress"))


def test_a_save_without_an_answer_says_so_and_keeps_the_target(workspace):
    at = save(start(review()))
    assert any("pick an answer first" in e.value for e in at.error)
    assert not workspace.labelling.current()
    assert heading(at).startswith("#### e13")


def named(name: str) -> AppTest:
    """The review page on the campaign, the name typed into the sidebar's Reviewer box."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["campaign"] = STOPS
    return at.run().text_input(key="_reviewer_box").set_value(name).run()


def test_a_change_of_name_while_a_target_is_held_asks_and_keep_puts_the_name_back(workspace):
    at = start(named("ann"))
    claim = held(at)
    at = at.text_input(key="_reviewer_box").set_value("ann4").run()
    assert "gives that target back to the queue" in texts(at)
    assert not any(b.key and ":save:" in b.key for b in at.button)
    at = at.button(key="review:keep-name").click().run()
    assert at.text_input(key="_reviewer_box").value == "ann"
    assert held(at).slot_id == claim.slot_id and heading(at).startswith("#### e13")


def test_giving_the_target_back_starts_afresh_under_the_new_name(workspace):
    at = start(named("ann"))
    claim = held(at)
    at = at.text_input(key="_reviewer_box").set_value("bob").run()
    at = at.button(key="review:let-go").click().run()
    assert at.button(key="review:start") is not None and "_review" in at.session_state
    assert at.session_state["_review"].get("claim") is None
    assert workspace.campaigns.claim_next(STOPS, BOB).target_id == claim.target_id  # back in the queue


def test_skip_asks_a_reason_and_gives_the_target_to_another_reviewer(workspace):
    at = start(review())
    skipped = held(at)
    at = at.button(key="review:skip").click().run()
    assert any("Why skip this target" in m.value for m in at.markdown)
    assert not [r for r in at.radio if r.key.endswith(":stopping_correctness")]
    at = at.button(key="review:skip-reason:2").click().run()
    assert not at.exception, at.exception
    assert held(at).target_id != skipped.target_id
    assert workspace.campaigns.claim_next(STOPS, BOB).target_id == skipped.target_id


def test_a_typed_skip_reason_is_taken(workspace):
    at = start(review()).button(key="review:skip").click().run()
    at.text_input(key="review:skip-typed").input("two stops in one trace")
    at = next(b for b in at.button if b.label == "Skip with this reason").click().run()
    assert not at.exception, at.exception
    assert not any("Why skip this target" in m.value for m in at.markdown)


def test_when_nothing_is_left_the_page_says_done(workspace):
    at = start(review())
    for _ in range(2):
        stop_radio(at).set_value("correct")
        at = save(at)
    assert not at.exception, at.exception
    assert any("nothing is left for you" in s.value for s in at.success)
    assert len(workspace.labelling.current(reviewer="ann")) == 2


def test_the_page_never_shows_another_reviewers_answer_nor_a_gold_answer(
        tmp_path, monkeypatch):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"trace_id": DROPPED_ID, "event_id": "e13",
                                "question": "stopping_correctness", "value": "late"}) + "\n")
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name="blind", questions=["stopping_correctness"],
                                    per_target=2, gold=str(gold)), LEAD)
    for _ in range(2):  # bob answers every target first, with a note
        claim = ws.campaigns.claim_next("blind", BOB)
        ws.campaigns.submit(claim, {"stopping_correctness": "late", "stop_should_have_been": "e12"},
                  comment="BOBNOTE7f3")
    at = start(review(campaign="blind"))
    for _ in range(2):
        shown = texts(at)
        assert "BOBNOTE7f3" not in shown and "bob" not in shown
        assert "gold" not in shown.lower()
        assert stop_radio(at).value is None  # neither bob's answer nor the gold one prefilled
        stop_radio(at).set_value("correct")
        at = save(at)
    assert any("nothing is left for you" in s.value for s in at.success)
    assert "gold" not in texts(at).lower()  # nor the reviewer's accuracy on gold items


def suggest(ws: Workspace, trace_id: str = PREMATURE_ID) -> None:
    trace = ws.library.trace(trace_id)
    SuggestionStore(ws.engine).add([Suggestion(
        trace_id=trace_id, trace_sha256=trace.sha256, event_id="e13",
        question="stopping_correctness", value="premature", confidence=0.9,
        producer=Producer(name="rules", version="1"), evidence=("e15",),
        explanation="SUGGESTIONWHY e15 returned after the stop")])


def test_suggestions_stay_hidden_until_the_reviewer_has_saved(workspace):
    suggest(workspace)
    suggest(workspace, DROPPED_ID)
    at = start(review())
    assert "SUGGESTIONWHY" not in texts(at)
    assert any("hidden until you save yours" in c.value for c in at.caption)
    stop_radio(at).set_value("correct")
    at = save(at)
    assert "SUGGESTIONWHY" in texts(at)  # on the target just saved
    assert workspace.labelling.current()[0].suggestions_visible is False


def test_an_assisted_campaign_shows_suggestions_first_and_the_label_says_so(workspace):
    suggest(workspace)
    suggest(workspace, DROPPED_ID)
    workspace.campaigns.create(CampaignSpec(name="assisted", questions=["stopping_correctness"],
                                           assisted=True), LEAD)
    at = start(review(campaign="assisted"))
    assert "SUGGESTIONWHY" in texts(at)
    stop_radio(at).set_value("correct")
    save(at)
    [label] = workspace.labelling.current(campaign="assisted")
    assert label.suggestions_visible is True


def test_an_expired_reservation_is_one_sentence_and_the_answer_stays(tmp_path, monkeypatch):
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name="short", questions=["stopping_correctness"],
                                    lease_seconds=1), LEAD)
    at = start(review(campaign="short"))
    stop_radio(at).set_value("correct")
    time.sleep(1.5)
    assert ws.campaigns.claim_next("short", BOB) is not None  # the lease ran out: bob holds it now
    at = save(at)
    assert not at.exception, at.exception
    [error] = [e.value for e in at.error]
    assert "expired" in error and error.count(". ") == 0
    assert stop_radio(at).value == "correct"
    assert not ws.labelling.current(reviewer="ann")


@pytest.fixture
def library(tmp_path, monkeypatch) -> Workspace:
    """Demo 10 in no campaign (a campaign's target opens only on a save in the campaign:
    tests/test_app_sealed.py)."""
    return app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))


def test_the_labels_panel_shows_suggestions_only_after_the_reviewers_save(library):
    workspace = library
    suggest(workspace)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"], at.session_state["reviewer"] = PREMATURE_ID, "ann"
    at.run()
    base = f"ann:{PREMATURE_ID}:{workspace.library.trace(PREMATURE_ID).sha256[:12]}"
    at = at.button(key=f"{base}:next").click().run()  # to the stop, e13
    assert "SUGGESTIONWHY" not in texts(at)
    assert any("hidden until you save yours" in c.value for c in at.caption)
    at.radio(key=f"{base}:e13:stopping_correctness").set_value("correct")
    at = at.button(key=f"{base}:save:e13").click().run()
    assert "SUGGESTIONWHY" in texts(at)
    assert [x.suggestions_visible for x in workspace.labelling.current()] == [False]
    at.radio(key=f"{base}:e13:stopping_correctness").set_value("premature").run()
    at.selectbox(key=f"{base}:e13:pointer").set_value("e15")
    at = at.button(key=f"{base}:save:e13").click().run()
    assert not at.exception, at.exception
    assert {x.suggestions_visible for x in workspace.labelling.current()} == {True}
