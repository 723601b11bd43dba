"""Corrections: the decision the orchestrator should have made, saved as labels of kind
`correction` (viz_app.labels.correction), and the premature stop at a run's last event."""

from __future__ import annotations

import pytest

from factories import DROPPED, PREMATURE_ID, demo_trace, make_workspace, premature
from viz_app.errors import LabelError
from viz_app.labels.correction import (LATER_THAN_RECORDED, corrected_decision, decision_pairs,
                                       word_diff)
from viz_app.labels.label import Reviewer
from viz_app.labels.rubric import RubricError, default_rubric, rubric_from_dict

ANN = Reviewer(name="ann", via="cli")
RUBRIC = default_rubric()
MERGE = "Root cause: migration 0193 dropped the coupon index; v2.3.0 only coincided."


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path, traces=[premature(), demo_trace(DROPPED.stem),
                                            demo_trace("01_centralized_research_faithful"),
                                            demo_trace("11_review_late_stop")])


def test_the_default_rubric_has_a_correction_for_each_kind_of_decision():
    corrections = {q.id: (q.target.kind, q.sub_decision) for q in RUBRIC.questions
                   if q.kind == "correction"}
    assert corrections == {
        "merge_correction": ("aggregate", "O4"), "stop_correction": ("stop", "O5"),
        "spawn_correction": ("spawn", "O1"), "delegation_correction": ("delegate", "O2"),
        "message_correction": ("message", "O3"), "missed_decision": ("decision", None)}
    assert all(q.optional for q in RUBRIC.questions if q.kind == "correction")


def test_a_correction_question_without_actions_is_refused_naming_it():
    raw = {"name": "r", "version": "1", "questions": [
        {"id": "fix", "prompt": "?", "target": {"kind": "aggregate"}, "kind": "correction"}]}
    with pytest.raises(RubricError, match=r"questions\[0\] \(fix\).*actions"):
        rubric_from_dict(raw)


def test_a_merge_correction_is_saved_on_the_aggregate_with_its_score(ws):
    trace = ws.library.trace(PREMATURE_ID)
    made = ws.labelling.save_answers(trace, "e12", {
        "aggregation_quality": 1, "merge_correction": {"action": "merge", "text": MERGE}}, ANN)
    saved = {x.question: x for x in made}
    assert saved["merge_correction"].value == {"action": "merge", "text": MERGE}
    assert saved["merge_correction"].reward is None and saved["aggregation_quality"].reward == -1


def test_a_correction_the_question_does_not_take_is_refused_and_nothing_is_saved(ws):
    trace = ws.library.trace(PREMATURE_ID)
    with pytest.raises(LabelError, match="'send' is not a correction this question takes"):
        ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 1, "merge_correction": {
            "action": "send", "to": "x", "text": "y"}}, ANN)
    with pytest.raises(LabelError, match="write the merge it should have made"):
        ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 1,
                                       "merge_correction": {"action": "merge", "text": "  "}}, ANN)
    assert ws.labelling.current_records() == []


def test_a_delegation_goes_to_an_agent_of_the_trace_or_a_new_role(ws):
    trace = ws.library.trace("demo-01-centralized-faithful")
    with pytest.raises(LabelError, match="'nobody' is not an agent of this trace"):
        ws.labelling.save_answers(trace, "e2", {"delegation_fit": "wrong_agent", "delegation_correction":
                                      {"action": "delegate", "agent": "nobody"}}, ANN)
    made = ws.labelling.save_answers(trace, "e2", {"delegation_fit": "wrong_agent", "delegation_correction":
                                         {"action": "delegate", "role": "battery chemist"}}, ANN)
    assert {x.question for x in made} == {"delegation_fit", "delegation_correction"}


def test_a_correction_is_dropped_when_the_answer_it_follows_does_not_ask_it(ws):
    trace = ws.library.trace("demo-01-centralized-faithful")
    made = ws.labelling.save_answers(trace, "e2", {"delegation_fit": "right_agent", "delegation_correction":
                                         {"action": "delegate", "agent": "researcher_cost"}}, ANN)
    assert [x.question for x in made] == ["delegation_fit"]


def test_a_premature_stop_at_the_runs_last_event_saves_on_its_own(ws):
    trace = ws.library.trace("demo-09-review-dropped-finding")  # the stop e13 is its last event
    made = ws.labelling.save_answers(trace, "e13", {"stopping_correctness": "premature"}, ANN)
    assert [(x.question, x.value) for x in made] == [("stopping_correctness", "premature")]


def test_a_premature_stop_with_later_events_still_asks_where(ws):
    with pytest.raises(LabelError, match="pick an answer first: At which event"):
        ws.labelling.save_answers(ws.library.trace(PREMATURE_ID), "e13", {"stopping_correctness": "premature"}, ANN)


def test_later_than_this_run_recorded_answers_a_premature_stop_and_no_late_one(ws):
    trace = ws.library.trace("demo-09-review-dropped-finding")
    made = ws.labelling.save_answers(trace, "e13", {"stopping_correctness": "premature",
                                          "stop_should_have_been": LATER_THAN_RECORDED}, ANN)
    assert {x.question: x.value for x in made}["stop_should_have_been"] == LATER_THAN_RECORDED
    with pytest.raises(LabelError, match="only a stop that came too early"):
        ws.labelling.save_answers(trace, "e13", {"stopping_correctness": "late",
                                       "stop_should_have_been": LATER_THAN_RECORDED}, ANN)


def test_a_premature_stop_implies_going_on_at_the_stop_and_stopping_at_the_pointer():
    trace = premature()
    pairs = decision_pairs(RUBRIC, trace, "e13", {
        "stopping_correctness": "premature", "stop_should_have_been": "e15",
        "stop_correction": {"action": "stop", "text": "Restore the coupon index."}})
    at_stop, at_pointer = pairs
    assert (at_stop.chosen.event_id, at_stop.chosen.action, at_stop.chosen.wait_for) == \
        ("e13", "continue", "e15")
    assert at_stop.chosen.canonical == "continue: wait for db_analyst"  # who brings e15
    assert at_stop.rejected.action == "stop" and at_stop.rejected_own_words
    assert at_stop.rejected.text == trace.event("e12").text  # its final answer: its merge
    assert (at_pointer.chosen.event_id, at_pointer.chosen.canonical) == \
        ("e15", "stop: Restore the coupon index.")
    assert at_pointer.rejected.canonical == "continue: wait for db_analyst"
    assert at_pointer.after_node and at_pointer.corrected_stop == "e13"


def test_a_premature_stop_without_a_pointer_still_makes_the_pair_at_the_stop():
    trace = demo_trace(DROPPED.stem)
    pairs = decision_pairs(RUBRIC, trace, "e13", {"stopping_correctness": "premature"})
    assert [(p.chosen.event_id, p.chosen.canonical, p.origin) for p in pairs] == [
        ("e13", "continue", "stop_at_stop")]


def test_a_late_stop_makes_the_pair_at_the_pointer_against_what_it_did_next():
    trace = demo_trace("11_review_late_stop")
    pairs = decision_pairs(RUBRIC, trace, "e39", {"stopping_correctness": "late",
                                                  "stop_should_have_been": "e7"})
    assert len(pairs) == 1
    pair = pairs[0]
    assert (pair.chosen.event_id, pair.chosen.action) == ("e7", "stop")
    assert pair.rejected.canonical.startswith("continue: Round 2")
    assert pair.rejected_own_words


def test_the_corrected_decision_of_a_merge_is_the_reviewers_text():
    decision = corrected_decision(RUBRIC, premature(), "e12", {
        "aggregation_quality": 1, "merge_correction": {"action": "merge", "text": MERGE}})
    assert (decision.event_id, decision.agent, decision.sub_decision) == \
        ("e12", "orchestrator", "O4")
    assert decision.canonical == f"aggregate: {MERGE}"


def test_the_corrected_decision_of_a_delegation_keeps_the_task_and_changes_the_agent():
    trace = demo_trace("01_centralized_research_faithful")
    decision = corrected_decision(RUBRIC, trace, "e2", {
        "delegation_fit": "wrong_agent",
        "delegation_correction": {"action": "delegate", "agent": "researcher_cost"}})
    assert decision.canonical.startswith("delegate -> researcher_cost: Delegate: Compare cycle")


def test_no_correction_gives_no_corrected_decision():
    assert corrected_decision(RUBRIC, premature(), "e12", {"aggregation_quality": 4}) is None


def test_the_word_diff_names_what_was_kept_removed_and_added():
    assert word_diff("roll back v2.3.0 now", "restore the index now") == [
        ("-", "roll back v2.3.0 "), ("+", "restore the index "), ("=", "now")]


# -- agreement on corrections -------------------------------------------------------------------

from viz_app.labels import correction_agreements, correction_similarity  # noqa: E402


def test_two_corrections_of_another_decision_are_not_alike_and_close_words_are():
    assert correction_similarity({"action": "not_sent"}, {"action": "send", "to": "a",
                                                          "text": "x"}) == 0.0
    assert correction_similarity({"action": "delegate", "agent": "a"},
                                 {"action": "delegate", "agent": "b"}) == 0.0
    close = correction_similarity({"action": "merge", "text": "Migration 0193 is the cause."},
                                  {"action": "merge", "text": "Migration 0193 is the cause"})
    assert 0.9 < close < 1.0


def test_agreement_on_a_correction_is_who_corrected_and_how_alike_with_intervals(ws):
    trace = ws.library.trace(PREMATURE_ID)
    people = [Reviewer(name=n, via="cli") for n in ("ann", "bob", "cat")]
    texts = [MERGE, MERGE.replace("coincided", "happened at the same time"), None]
    for who, text in zip(people, texts):
        fix = {"merge_correction": {"action": "merge", "text": text}} if text else {}
        ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 1, **fix}, who)
    merge = next(a for a in correction_agreements(RUBRIC, ws.labelling.current_records(),
                                                  resamples=200)
                 if a.question == "merge_correction")
    assert (merge.reviewers, merge.targets, merge.compared_targets) == (3, 1, 1)
    assert merge.corrected.value == pytest.approx(2 / 3)
    assert 0.6 < merge.similarity.value < 1.0


def test_the_agreement_page_shows_who_corrected_and_how_alike(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from factories import APP, PREMATURE, app_env

    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    trace = ws.library.trace(PREMATURE_ID)
    for who in ("ann", "bob"):
        ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 1, "merge_correction": {
            "action": "merge", "text": MERGE}}, Reviewer(name=who, via="cli"))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.switch_page("app_pages/agreement.py")
    at.run()
    assert not at.exception, at.exception
    assert any(s.value == "Corrections" for s in at.subheader)
    table = next(d.value for d in at.dataframe if "corrected (share)" in d.value.columns)
    row = table[table["question"] == "merge_correction"].iloc[0]
    assert row["corrected (share)"].startswith("1.00") and row["similarity"].startswith("1.00")


def test_a_lead_writes_the_final_correction_of_a_disputed_target_and_the_export_takes_it(
        tmp_path):
    from viz_app.export.consensus import ExportOptions
    from viz_app.labels.campaign import CampaignSpec

    ws = make_workspace(tmp_path, traces=[premature()])
    ws.library.update_index()
    lead = Reviewer(name="lee", via="cli")
    ws.campaigns.create(CampaignSpec(name="merges", questions=[
        "aggregation_quality", "merge_correction"], per_target=2), lead)
    words = {"ann": "Migration 0193 dropped the index.", "bob": None}
    for who, text in words.items():
        person = Reviewer(name=who, via="cli")
        claim = ws.campaigns.claim_next("merges", person)
        while claim.event_id != "e12":
            ws.campaigns.submit(claim, {"task_outcome": "failure"} if claim.event_id is None
                      else {"stopping_correctness": "correct"})
            claim = ws.campaigns.claim_next("merges", person)
        fix = {"merge_correction": {"action": "merge", "text": text}} if text else {}
        ws.campaigns.submit(claim, {"aggregation_quality": 1, **fix})
    final = "Migration 0193 dropped the coupon index; restore it."
    ws.campaigns.adjudicate("merges", PREMATURE_ID, "e12", {"merge_correction": {
        "action": "merge", "text": final}}, lead, "ann saw the index; the fix is to restore it")
    out = tmp_path / "final.jsonl"
    result = ws.exports.write("decision-pairs", out, traces={PREMATURE_ID: ws.library.trace(PREMATURE_ID)},
                       options=ExportOptions(adjudicated_only=True))
    rows = [__import__("orjson").loads(x) for x in out.read_bytes().splitlines()]
    assert result.count == 1 and rows[0]["chosen"] == f"aggregate: {final}"
    assert rows[0]["reviewers"] == ["lee"] and rows[0]["resolution"] == "adjudicated"
