"""The adjudication page, run in-process with AppTest: a lead sees a disagreement with each
reviewer's answer beside the trace, saves the final answer with a reason (a new label, source
`adjudication`, the reviewers' labels kept), retracts a reviewer's label with a reason, and sees
the campaign's status with each reviewer's gold accuracy."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from factories import (APP, DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, app_env, charts_drawn,
                       make_workspace)
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer
from viz_app.text import markdown_literal
from viz_app.workspace import Workspace

LEAD = Reviewer(name="lee", via="cli")
ANN = Reviewer(name="ann", via="cli")
BOB = Reviewer(name="bob", via="cli")
NAME = "stops"


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Workspace:
    """Demo 10 and demo 9 in a campaign on their stops, two reviewers per target; ann and bob
    agree on demo 9 and disagree on demo 10 (premature against correct)."""
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness"],
                                    per_target=2), LEAD)
    for reviewer, on_demo_10 in ((ANN, "premature"), (BOB, "correct")):
        while (claim := ws.campaigns.claim_next(NAME, reviewer)) is not None:
            answer = on_demo_10 if claim.trace_id == PREMATURE_ID else "correct"
            where = {"stop_should_have_been": "e15"} if answer == "premature" else {}
            ws.campaigns.submit(claim, {"stopping_correctness": answer, **where},
                      comment=f"{reviewer.name} thinks {answer}")
    return ws


def adjudicate(lead: str = "lee") -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = lead  # typed before, kept for the session
    at.query_params["campaign"] = NAME
    at.switch_page("app_pages/adjudicate.py")
    return at.run()


def table(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def drawn_answers(at: AppTest) -> list[str]:
    """The side-by-side answers as drawn, in order: the reviewers' names, then each question
    and every reviewer's answer to it (Markdown escapes and break opportunities taken out)."""
    shown = [m.value.replace("\\", "").replace("\u200b", "") for m in at.markdown]
    start = shown.index("**What the reviewers answered**")
    return shown[start + 1:]


def test_a_disagreement_shows_each_reviewers_answer_beside_the_trace(workspace):
    at = adjudicate()
    assert not at.exception, at.exception
    assert any("Disagreement 1 of 1" in c.value and markdown_literal(PREMATURE_ID) in c.value
               for c in at.caption)
    drawn = drawn_answers(at)
    assert drawn[:5] == ["**ann**", "**bob**", "⚠ stopping_correctness", "premature", "correct"]
    assert any("ann thinks premature" in m.value for m in at.markdown)  # in the thread
    assert charts_drawn(at) >= 2  # the trace's tree and timeline
    assert any("names are not verified" in c.value for c in at.caption)


def test_the_final_answer_is_a_new_label_from_adjudication_and_the_reviewers_labels_stay(
        workspace):
    at = adjudicate()
    radio = next(r for r in at.radio if r.key.endswith(":stopping_correctness"))
    radio.set_value("correct")
    reason = next(t for t in at.text_area if t.label.startswith("Reason for the final answer"))
    reason.input("the workers had all returned")
    at = next(b for b in at.button if b.key.startswith("adj:") and ":save:" in b.key).click().run()
    assert not at.exception, at.exception
    labels = workspace.labelling.current(PREMATURE_ID, campaign=NAME)
    final = [x for x in labels if x.source == "adjudication"]
    assert [(x.reviewer, x.value, x.comment) for x in final] == [
        ("lee", "correct", "the workers had all returned")]
    assert {x.reviewer for x in labels if x.source == "human"} == {"ann", "bob"}
    assert any("No open disagreement" in s.value for s in at.success)
    said = next(s.value for s in at.success if "Saved the final answer" in s.value)
    assert "stopping_correctness = correct" in said.replace("\\", "")
    assert "the workers had all returned" in said


def test_a_final_answer_without_a_reason_is_refused_and_kept(workspace):
    at = adjudicate()
    radio = next(r for r in at.radio if r.key.endswith(":stopping_correctness"))
    radio.set_value("correct")
    at = next(b for b in at.button if b.key.startswith("adj:") and ":save:" in b.key).click().run()
    assert any("reason" in e.value for e in at.error)
    assert next(r for r in at.radio if r.key.endswith(":stopping_correctness")).value == "correct"
    assert not [x for x in workspace.labelling.current() if x.source == "adjudication"]


def test_a_lead_retracts_a_reviewers_label_with_a_reason(workspace):
    at = adjudicate()
    bob = next(x for x in workspace.labelling.current(PREMATURE_ID) if x.reviewer == "bob")
    at.multiselect[0].set_value([bob.label_id])
    at.text_input(key="adj:retract-reason").input("misread the rubric")
    at = next(b for b in at.button if b.label == "Retract").click().run()
    assert not at.exception, at.exception
    assert {x.reviewer for x in workspace.labelling.current(PREMATURE_ID)} == {"ann"}
    assert bob.label_id in {x.label_id for x in workspace.labelling.current(
        PREMATURE_ID, include_retracted=True)}  # the history stays


def test_the_status_shows_progress_gold_accuracy_and_alpha_to_a_lead(tmp_path, monkeypatch):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"trace_id": DROPPED_ID, "event_id": "e13",
                                "question": "stopping_correctness", "value": "late"}) + "\n")
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness"],
                                    per_target=2, gold=str(gold)), LEAD)
    for reviewer in (ANN, BOB):
        while (claim := ws.campaigns.claim_next(NAME, reviewer)) is not None:
            answer = "late" if reviewer is ANN else "correct"
            where = {"stop_should_have_been": "e12"} if answer == "late" else {}
            ws.campaigns.submit(claim, {"stopping_correctness": answer, **where})
    at = adjudicate()
    assert not at.exception, at.exception
    metrics = {m.label: m.value for m in at.metric if m.label in ("targets", "complete")}
    assert metrics == {"targets": "2", "complete": "2"}
    reviewers = table(at, "gold accuracy").set_index("reviewer")
    assert reviewers.loc["ann", "gold accuracy"] == 1.0
    assert reviewers.loc["bob", "gold accuracy"] == 0.0
    assert "stopping_correctness" in table(at, "alpha")["question"].tolist()


AUTH = {"auth": {"redirect_uri": "http://127.0.0.1:8501/oauth2callback",
                 "cookie_secret": "a-cookie-secret-long-enough", "client_id": "orchviz",
                 "client_secret": "s3cret",
                 "server_metadata_url": "http://127.0.0.1:1/.well-known/openid-configuration"}}


def signed_in(email: str) -> AppTest:
    """The adjudication page on a server with sign-in, as this signed-in user."""
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.secrets = dict(AUTH)
    at.user = {"is_logged_in": True, "email": email, "email_verified": True, "name": "x"}
    at.query_params["campaign"] = NAME
    at.switch_page("app_pages/adjudicate.py")
    return at.run()


def test_with_sign_in_only_a_lead_adjudicates(workspace):
    workspace.campaigns.add_member("lead@example.org", "lead", LEAD)
    workspace.campaigns.add_member("rev@example.org", "reviewer", LEAD)
    reviewer = signed_in("rev@example.org")
    assert any("Only a campaign's leads" in w.value for w in reviewer.warning)
    assert not reviewer.dataframe and not reviewer.radio  # no answers, no gold accuracy
    lead = signed_in("lead@example.org")
    assert not lead.exception, lead.exception
    assert any("Disagreement 1 of 1" in c.value for c in lead.caption)
    assert not any("not verified" in c.value for c in lead.caption)


def test_a_correction_shows_in_words_not_as_a_python_dict(tmp_path, monkeypatch):
    """Issue 39 (item 7) and 40 (item 1): "{'action': 'stop', 'text': ...}" was the cell."""
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness",
                                                         "stop_correction"],
                                    per_target=2), LEAD)
    answers = {ANN: {"stopping_correctness": "premature", "stop_should_have_been": "e15",
                     "stop_correction": {"action": "stop", "text": "Restore the coupon index."}},
               BOB: {"stopping_correctness": "correct"}}
    for reviewer, given in answers.items():
        while (claim := ws.campaigns.claim_next(NAME, reviewer)) is not None:
            ws.campaigns.submit(claim, given, comment="")
    at = adjudicate()
    assert not at.exception, at.exception
    cells = "\n".join(drawn_answers(at))
    assert "the final answer it should have given: Restore the coupon index." in cells
    assert "{'action'" not in cells and '{"action"' not in cells
    # and the correction's words beside what the orchestrator said when it stopped
    diff = next(c.value for c in at.caption if c.value.startswith("against what it did: "))
    assert ":green-background[" in diff and "Restore" in diff


def test_a_long_answer_leaves_every_reviewer_in_view(tmp_path, monkeypatch):
    """Issue 40, item 1: a long first cell pushed the second reviewer's column out of view."""
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness",
                                                         "stop_correction"],
                                    per_target=2), LEAD)
    long = "Restore the coupon index before stopping, then " + "check every shard " * 40
    given = {ANN: {"stopping_correctness": "premature", "stop_should_have_been": "e15",
                   "stop_correction": {"action": "stop", "text": long}},
             BOB: {"stopping_correctness": "correct"}}
    for reviewer, answer in given.items():
        while (claim := ws.campaigns.claim_next(NAME, reviewer)) is not None:
            ws.campaigns.submit(claim, answer, comment="")
    at = adjudicate()
    assert not at.dataframe or all("bob" not in d.value.columns for d in at.dataframe)
    drawn = drawn_answers(at)
    assert drawn[:2] == ["**ann**", "**bob**"]  # a column each, each cell wrapping its words
    row = drawn[drawn.index("stop_correction") + 1:][:2]
    assert row[0].startswith("the final answer it should have given: Restore") and row[1] == "—"


def test_a_lead_sees_when_each_reservation_ends_and_releases_one(workspace):
    workspace.campaigns.create(CampaignSpec(name="more", questions=["stopping_correctness"],
                                            per_target=1), LEAD)
    held = workspace.campaigns.claim_next("more", Reviewer(name="cat", via="cli"))
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "lee"
    at.query_params["campaign"] = "more"
    at.switch_page("app_pages/adjudicate.py")
    at = at.run()
    shown = [m.value.replace("\\", "") for m in at.markdown]
    assert "**Reservations now** (1)" in shown
    assert any(v.startswith("ends ") and "UTC (in " in v for v in shown)
    at = at.button(key=f"adj:release:{held.slot_id}").click().run()
    assert not at.exception, at.exception
    assert workspace.campaigns.reservations("more") == []
    assert any("Released cat's reservation" in t.value.replace("\\", "") for t in at.toast)
