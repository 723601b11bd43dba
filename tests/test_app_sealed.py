"""What reaches a browser before a reviewer's own save: on a target a campaign holds, nothing of
others' answers, adjudications (with their reasons) or gold, whatever the trace page's blind
toggle says (the Workspace decides, `labels_in_view`, not the page); the Agreement page and its
downloads, which hold everyone's answers, are for leads when sign-in is on. Pages run in
AppTest; the browser journey of a reviewer refused the Agreement page is in
tests/test_e2e_signin.py."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, make_workspace
from viz_app.labels.campaign import CampaignSpec
from viz_app.labels.label import Reviewer
from viz_app.workspace import Workspace

LEAD = Reviewer(name="lee", via="cli")
BOB = Reviewer(name="bob", via="self-declared")
ANN = Reviewer(name="ann", via="self-declared")
NAME = "stops"
AUTH = {"auth": {"redirect_uri": "http://127.0.0.1:8501/oauth2callback",
                 "cookie_secret": "a-cookie-secret-long-enough", "client_id": "orchviz",
                 "client_secret": "s3cret",
                 "server_metadata_url": "http://127.0.0.1:1/.well-known/openid-configuration"}}


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Workspace:
    """Demo 10's stop (e13) in a campaign of two reviewers per target: bob saved his answer
    with a note, and the lead adjudicated it with a reason."""
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    ws.library.update_index()
    ws.campaigns.create(CampaignSpec(name=NAME, questions=["stopping_correctness"],
                                    per_target=2), LEAD)
    claim = ws.campaigns.claim_next(NAME, BOB)
    assert (claim.trace_id, claim.event_id) == (PREMATURE_ID, "e13")
    ws.campaigns.submit(claim, {"stopping_correctness": "premature", "stop_should_have_been": "e15"},
              comment="BOBS-NOTE")
    ws.campaigns.adjudicate(NAME, PREMATURE_ID, "e13", {"stopping_correctness": "correct"}, LEAD,
                  "LEADS-REASON")
    return ws


def texts(at: AppTest) -> str:
    """Everything the page put in text elements, tables and options."""
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption]
    parts += [e.value for e in at.error] + [e.value for e in at.warning]
    parts += [e.value for e in at.info] + [e.value for e in at.success]
    parts += [str(list(r.options)) + str(r.value) for r in at.radio]
    parts += [d.value.to_csv() for d in at.dataframe]
    return "\n".join(parts).replace("\\", "").replace("\u2060", "")  # Markdown as read


def trace_page_at_the_stop(reviewer: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = reviewer
    at.query_params["trace"], at.query_params["event"] = PREMATURE_ID, "e13"
    return at.run()


def blind_off(at: AppTest) -> AppTest:
    toggle = next(t for t in at.toggle if t.label == "blind mode")
    return toggle.set_value(False).run()


def test_turning_blind_mode_off_shows_nothing_of_a_campaigns_answers_before_your_own(
        workspace):
    at = blind_off(trace_page_at_the_stop("ann"))
    assert not at.exception, at.exception
    said = texts(at)
    assert "BOBS-NOTE" not in said and "LEADS-REASON" not in said
    assert "bob" not in said and "lee" not in said
    assert "hidden until you save yours in its review campaign" in said


def test_a_save_outside_the_campaign_does_not_open_its_answers(workspace):
    workspace.labelling.save_answers(workspace.library.trace(PREMATURE_ID), "e13",
                           {"stopping_correctness": "correct"}, ANN)
    at = blind_off(trace_page_at_the_stop("ann"))
    assert "BOBS-NOTE" not in texts(at) and "LEADS-REASON" not in texts(at)


def test_a_save_outside_the_campaign_does_not_show_its_targets_suggestions(workspace):
    workspace.suggestions.run([workspace.library.trace(PREMATURE_ID)])
    assert [s.explanation for s in workspace.suggestions.all(PREMATURE_ID, "e13")] == [
        "premature: e15 from db_analyst returned after the stop e13, and the final answer e12 "
        "leaves out what it said"]
    why = "returned after the stop e13"
    workspace.labelling.save_answers(workspace.library.trace(PREMATURE_ID), "e13",
                           {"stopping_correctness": "correct"}, ANN)
    at = trace_page_at_the_stop("ann")
    assert why not in texts(at)
    assert "hidden until you save yours, so they do not steer" in texts(at)
    claim = workspace.campaigns.claim_next(NAME, ANN)
    workspace.campaigns.submit(claim, {"stopping_correctness": "correct"})
    assert why in texts(trace_page_at_the_stop("ann"))


def test_after_your_own_save_in_the_campaign_the_answers_are_yours_to_see(workspace):
    claim = workspace.campaigns.claim_next(NAME, ANN)
    workspace.campaigns.submit(claim, {"stopping_correctness": "correct"})
    at = trace_page_at_the_stop("ann")
    assert "BOBS-NOTE" in texts(at) and "LEADS-REASON" in texts(at)


def test_outside_campaigns_blind_mode_off_still_shows_others_at_once(workspace):
    trace = workspace.library.trace(PREMATURE_ID)
    workspace.labelling.save_answers(trace, "e12", {"aggregation_quality": 2}, BOB, comment="E12-NOTE")
    at = trace_page_at_the_stop("ann")
    labels = f"ann:{PREMATURE_ID}:{trace.sha256[:12]}"
    at.selectbox(key=f"{labels}:target:e13").set_value("e12").run()
    assert "E12-NOTE" not in texts(at)
    assert "E12-NOTE" in texts(blind_off(at))


def test_presentation_and_report_for_a_reviewer_leave_out_others_campaign_answers(workspace):
    trace = workspace.library.trace(PREMATURE_ID)
    seen, _ = workspace.bookmarks.case_study(trace, "ann", lead=False)
    assert seen == []
    everything, _ = workspace.bookmarks.case_study(trace)
    assert {r["comment"] for r in everything} == {"BOBS-NOTE", "LEADS-REASON"}


def agreement_page(user: dict) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.secrets = dict(AUTH)
    at.user = user
    at.switch_page("app_pages/agreement.py")
    return at.run()


def signed_in(email: str) -> dict:
    return {"is_logged_in": True, "email": email, "email_verified": True, "name": "x"}


@pytest.mark.parametrize("user", [{"is_logged_in": False}, signed_in("rev@example.org")])
def test_with_sign_in_the_agreement_page_and_its_downloads_are_refused_to_a_non_lead(
        workspace, user):
    workspace.campaigns.add_member("rev@example.org", "reviewer", LEAD)
    at = agreement_page(user)
    assert not at.exception, at.exception
    assert any("for this workspace's leads" in w.value for w in at.warning)
    assert not at.dataframe
    assert not at.get("download_button")
    assert "BOBS-NOTE" not in texts(at) and "bob" not in texts(at)


def test_with_sign_in_a_lead_sees_the_agreement_page(workspace):
    workspace.campaigns.add_member("lead@example.org", "lead", LEAD)
    at = agreement_page(signed_in("lead@example.org"))
    assert not at.exception, at.exception
    assert not at.warning
    assert at.dataframe and at.get("download_button")
