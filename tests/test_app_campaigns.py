"""The Campaigns page (AppTest): a lead makes a campaign in the app from the Library's current
filter or from traces picked by hand, with questions, K, gold and Markdown instructions; closes,
reopens and adds traces; the CLI's verbs and the page call the same Workspace facet, and the
Review page shows the instructions beside the first target, rendered safely (issue 40)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from factories import (APP, DROPPED, DROPPED_ID, PREMATURE, PREMATURE_ID, app_env,
                       make_workspace)
from viz_app.cli import main
from viz_app.errors import LabelError
from viz_app.labels import CampaignSpec, Filter, Reviewer
from viz_app.workspace import Workspace

LEAD = Reviewer(name="lee", via="cli")
INSTRUCTIONS = ("## How to judge\n\nA merge that **drops a result** is *major gaps*. "
                "<script>window.__pwned=1</script> ![x](http://example.org/x.png) "
                "[guide](javascript:alert(1))")


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Workspace:
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED]))
    ws.library.update_index()
    return ws


def campaigns_page(name: str = "lee", **state) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = name
    for key, value in state.items():
        at.session_state[key] = value
    at.switch_page("app_pages/campaigns.py")
    return at.run()


def test_a_lead_makes_a_campaign_of_traces_picked_by_hand_with_instructions(workspace):
    at = campaigns_page()
    assert not at.exception, at.exception
    at.radio(key="camp:source").set_value("pick").run()
    at.multiselect(key="camp:picked").set_value([PREMATURE_ID]).run()
    at.text_input(key="camp:name").input("week")
    at.multiselect(key="camp:questions").set_value(["stopping_correctness"])
    at.number_input(key="camp:k").set_value(2)
    at.text_area(key="camp:instructions").input(INSTRUCTIONS)
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    found = workspace.campaigns.get("week")
    assert found.per_target == 2 and found.spec.filter.trace_ids == [PREMATURE_ID]
    assert found.targets == 1
    assert found.spec.instructions == INSTRUCTIONS
    assert any("Made the campaign week: 1 targets, K = 2" in s.value.replace("\\", "") for s in at.success)


def test_the_librarys_current_search_makes_the_campaign(workspace):
    at = campaigns_page(_library_filter={"query": Filter(text="premature").model_dump_json()})
    assert "the search “premature”" in at.radio(key="camp:source").options[0]
    assert ": 1 traces)" in at.radio(key="camp:source").options[0]  # counted by the storage
    at.text_input(key="camp:name").input("searched")
    at.multiselect(key="camp:questions").set_value(["stopping_correctness"])
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    found = workspace.campaigns.get("searched")
    assert found.spec.filter.text == "premature" and found.targets == 1


def test_the_rows_ticked_in_the_librarys_table_make_the_campaign(workspace):
    """Rows ticked by hand come first, over the filter they were ticked in (which lists both)."""
    at = campaigns_page(_library_filter={"query": Filter().model_dump_json(),
                                         "picked": [DROPPED_ID]})
    assert at.radio(key="camp:source").value == "ticked"
    assert "the 1 traces ticked in the Library's table" in at.radio(key="camp:source").options[0]
    at.text_input(key="camp:name").input("ticked")
    at.multiselect(key="camp:questions").set_value(["stopping_correctness"])
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert not at.exception, at.exception
    found = workspace.campaigns.get("ticked")
    assert found.spec.filter.trace_ids == [DROPPED_ID]
    assert {t.trace_id for t in workspace.campaigns.targets(found)} == {DROPPED_ID}


def test_a_refused_campaign_says_why_and_nothing_is_saved(workspace):
    at = campaigns_page()
    at.radio(key="camp:source").set_value("pick").run()
    at.text_input(key="camp:name").input("empty")
    at = at.button[[b.label for b in at.button].index("Make the campaign")].click().run()
    assert any("Pick at least one trace. Nothing was saved." in e.value.replace("\\", "") for e in at.error)
    assert not workspace.campaigns.all()


def test_close_reopen_and_add_traces_from_the_page(workspace):
    workspace.campaigns.create(CampaignSpec(name="week", questions=["stopping_correctness"],
                                            filter=Filter(trace_ids=[PREMATURE_ID])), LEAD)
    at = campaigns_page()
    at = at.button(key="camp:close:week").click().run()
    assert workspace.campaigns.get("week").closed_at is not None
    at = at.button(key="camp:reopen:week").click().run()
    assert workspace.campaigns.get("week").closed_at is None
    at.multiselect(key="camp:more:week").set_value([DROPPED_ID]).run()
    at = at.button(key="camp:add:week").click().run()
    assert not at.exception, at.exception
    assert workspace.campaigns.get("week").targets == 2
    assert any("Added 1 targets to week." in s.value.replace("\\", "") for s in at.success)


def test_the_cli_reopens_and_adds_through_the_same_facet(workspace, capsys):
    workspace.campaigns.create(CampaignSpec(name="week", questions=["stopping_correctness"],
                                            filter=Filter(trace_ids=[PREMATURE_ID])), LEAD)
    workspace.campaigns.close("week", LEAD)
    url = workspace.settings.db_url
    assert main(["campaign", "reopen", "week", "--db", url, "--lead", "lee"]) == 0
    assert main(["campaign", "add", "week", DROPPED_ID, "--traces", str(DROPPED), "--db", url,
                 "--lead", "lee"]) == 0
    said = capsys.readouterr().out
    assert "campaign week is open again (1 targets)" in said and "1 targets added" in said
    with pytest.raises(LabelError, match="not a trace of the library"):
        workspace.campaigns.add_traces("week", ["no-such-trace"], LEAD)


def test_the_review_page_shows_the_instructions_beside_the_first_target_safely(workspace):
    workspace.campaigns.create(CampaignSpec(name="week", questions=["stopping_correctness"],
                                            filter=Filter(trace_ids=[PREMATURE_ID]),
                                            instructions=INSTRUCTIONS), LEAD)
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "ann"
    at.query_params["campaign"] = "week"
    at.switch_page("app_pages/review.py")
    at = at.run()
    at = at.button(key="review:start").click().run()
    assert not at.exception, at.exception
    shown = next(e for e in at.expander if e.label == "Instructions from the lead")
    body = "\n".join(m.value for m in shown.markdown)
    assert "**drops a result**" in body
    assert "&lt;script>" in body and "javascript:" not in body  # raw HTML inert, no bad link
    assert "\\![x](" in body  # the image is text, never fetched
    assert all(not m.proto.allow_html for m in shown.markdown)
