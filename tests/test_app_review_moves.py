"""The review page (AppTest) beyond one target at a time (issue 40): Back (P) goes to the target
the reviewer saved before, its answer in the form, and saving changes it (a new label, the old
one in history); Forward (N) returns to the target held. On a fan-out, Shift+A gives the answer to
every other spawn of the trace open to the reviewer, each saved as its own label."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components import keys
from factories import APP, DEMO_DIR, DROPPED, PREMATURE, PREMATURE_ID, app_env, make_workspace
from viz_app.labels import CampaignSpec, Filter, Reviewer

LEAD = Reviewer(name="lee", via="cli")
SWARM = DEMO_DIR / "04_swarm_parallel_audit.json"
SWARM_ID = "demo-04-swarm-audit"


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED, SWARM]))
    ws.library.update_index()
    return ws


def review(campaign: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "ann"
    at.query_params["campaign"] = campaign
    at = at.run()
    return at.button(key="review:start").click().run()


def radio(at: AppTest, question: str):
    return next(r for r in at.radio if r.key.endswith(f":{question}"))


def save(at: AppTest) -> AppTest:
    return next(b for b in at.button if b.key.startswith("review:") and ":save:" in b.key) \
        .click().run()


def captions(at: AppTest) -> str:
    return "\n".join(c.value for c in at.caption).replace("\\", "")


def heading(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("#### "))


def test_back_brings_the_saved_answer_and_saving_changes_it_as_a_new_label(workspace):
    workspace.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"],
                                            filter=Filter(trace_ids=[
                                                "demo-10-review-premature-stop",
                                                "demo-09-review-dropped-finding"])), LEAD)
    at = review("stops")
    first = at.session_state["_review"]["claim"]
    radio(at, "stopping_correctness").set_value("correct").run()
    at = save(at)
    second = at.session_state["_review"]["claim"]
    assert second.trace_id != first.trace_id

    at = at.button(key="review:back").click().run()  # key P
    assert not at.exception, at.exception
    assert first.trace_id in captions(at)
    assert radio(at, "stopping_correctness").value == "correct"  # what she saved
    assert any("Back at a target you saved" in i.value for i in at.info)

    radio(at, "stopping_correctness").set_value("premature").run()
    pointer = next(s for s in at.selectbox if s.key.endswith(":e13:pointer"))
    pointer.set_value("e15").run()
    at = save(at)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    history = workspace.labelling.history(first.trace_id, "e13", "stopping_correctness",
                                          reviewer="ann")
    assert [x.value for x in history] == ["correct", "premature"]
    assert {x.campaign for x in history} == {"stops"}
    # the page is back at the target she holds, unsaved
    assert at.session_state["_review"]["claim"].slot_id == second.slot_id
    assert not at.session_state["_review"].get("back")
    assert second.trace_id in captions(at)
    assert workspace.campaigns.progress("stops", "ann").reviewer_saved == 1


def test_forward_returns_to_the_target_held_without_saving(workspace):
    workspace.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"],
                                            filter=Filter(trace_ids=[
                                                "demo-10-review-premature-stop",
                                                "demo-09-review-dropped-finding"])), LEAD)
    at = review("stops")
    radio(at, "stopping_correctness").set_value("correct").run()
    at = save(at)
    held = at.session_state["_review"]["claim"]
    at = at.button(key="review:back").click().run()
    at = at.button(key="review:forward").click().run()  # key N
    assert not at.exception, at.exception
    assert not at.session_state["_review"].get("back")
    assert held.trace_id in captions(at)
    assert len(workspace.labelling.current(reviewer="ann")) == 1


def test_one_answer_for_every_spawn_of_a_fan_out(workspace):
    workspace.campaigns.create(CampaignSpec(name="spawns", questions=["spawn_necessity"],
                                            filter=Filter(trace_ids=[SWARM_ID])), LEAD)
    at = review("spawns")
    claim = at.session_state["_review"]["claim"]
    assert "33 more of this trace are open to you" in "\n".join(m.value for m in at.markdown)
    radio(at, "spawn_necessity").set_value("redundant").run()
    at = at.button(key="review:many-all").click().run()  # key Shift+A
    assert keys.shortcut("many-all") == "Shift+A"
    many = at.multiselect(key=f"review:many:{claim.slot_id}")
    assert len(many.value) == 33
    assert any("Saving gives this answer to 34 targets" in c.value for c in at.caption)
    at = save(at)
    assert not at.exception, at.exception
    labels = workspace.labelling.current(SWARM_ID, "ann", campaign="spawns")
    assert len(labels) == 34 and {x.value for x in labels} == {"redundant"}
    assert workspace.campaigns.progress("spawns", "ann").reviewer_saved == 34
    assert at.session_state["_review"]["claim"] is None  # nothing left for her


def test_shift_a_chooses_this_trace_s_targets_and_never_those_of_traces_not_opened(workspace):
    ids = [r.trace_id for r in workspace.library.update_index().rows]
    workspace.campaigns.create(CampaignSpec(name="spawns", questions=["spawn_necessity"],
                                            filter=Filter(trace_ids=ids)), LEAD)
    at = review("spawns")
    claim = at.session_state["_review"]["claim"]
    assert "other trace" in "\n".join(m.value for m in at.markdown)  # others there to take
    radio(at, "spawn_necessity").set_value("necessary").run()
    at = at.button(key="review:many-all").click().run()  # key Shift+A
    chosen = at.multiselect(key=f"review:many:{claim.slot_id}").value
    alike = {t.target_id: t for t in at.session_state["_review"]["alike"][1]}
    assert chosen and {alike[i].trace_id for i in chosen} == {claim.trace_id}
    at = at.button(key="review:many-elsewhere").click().run()
    chosen = at.multiselect(key=f"review:many:{claim.slot_id}").value
    assert {alike[i].trace_id for i in chosen} - {claim.trace_id}  # now by the reviewer's hand


# -- the trace page's labels panel ---------------------------------------------------------------

def trace_page(event_id: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.session_state["reviewer"] = "ann"
    at.query_params["trace"], at.query_params["event"] = PREMATURE_ID, event_id
    return at.run()


def panel_button(at: AppTest, suffix: str):
    return next(b for b in at.button if b.key.startswith("ann:") and b.key.endswith(suffix))


def panel_save(at: AppTest) -> AppTest:
    at = next(b for b in at.button if b.key.startswith("ann:") and ":save:" in b.key).click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def test_back_on_the_trace_page_changes_an_answer_and_a_campaigns_one_stays_in_it(workspace):
    workspace.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"],
                                            filter=Filter(trace_ids=[PREMATURE_ID])), LEAD)
    claim = workspace.campaigns.claim_next("stops", Reviewer(name="ann", via="self-declared"))
    workspace.campaigns.submit(claim, {"stopping_correctness": "correct"})

    at = trace_page("e12")
    radio(at, "aggregation_quality").set_value(4).run()
    at = panel_save(at)
    at = panel_button(at, ":next").click().run()  # N: e13 is labelled (in the campaign): the trace
    at = panel_button(at, ":previous").click().run()  # P: back to the stop
    assert radio(at, "stopping_correctness").value == "correct"  # her campaign answer
    radio(at, "stopping_correctness").set_value("premature").run()
    next(s for s in at.selectbox if s.key.endswith(":e13:pointer")).set_value("e15").run()
    at = panel_save(at)
    at = panel_button(at, ":previous").click().run()  # P again: the aggregate
    assert radio(at, "aggregation_quality").value == 4
    radio(at, "aggregation_quality").set_value(2).run()
    at = panel_save(at)

    stop = workspace.labelling.history(PREMATURE_ID, "e13", "stopping_correctness", reviewer="ann")
    assert [(x.value, x.campaign) for x in stop] == [("correct", "stops"), ("premature", "stops")]
    merge = workspace.labelling.history(PREMATURE_ID, "e12", "aggregation_quality", reviewer="ann")
    assert [(x.value, x.campaign) for x in merge] == [(4, ""), (2, "")]
    in_campaign = workspace.labelling.current(PREMATURE_ID, "ann", campaign="stops")
    assert {x.question: x.value for x in in_campaign} == {"stopping_correctness": "premature",
                                                          "stop_should_have_been": "e15"}
    assert workspace.campaigns.status("stops").complete == 1


def test_one_answer_for_the_stops_of_other_traces_saves_the_rest_and_says_what_was_not(
        tmp_path, monkeypatch):
    late = DEMO_DIR / "11_review_late_stop.json"
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE, DROPPED, late]))
    ids = [r.trace_id for r in ws.library.update_index().rows]
    ws.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"],
                                     filter=Filter(trace_ids=ids)), LEAD)
    at = review("stops")
    claim = at.session_state["_review"]["claim"]
    box = "\n".join(m.value for m in at.markdown)
    assert "0 more of this trace and 2 on 2 other traces are open to you" in box
    radio(at, "stopping_correctness").set_value("correct").run()
    assert not [b for b in at.button if b.key == "review:many-all"]  # none more in this trace
    at = at.button(key="review:many-elsewhere").click().run()  # the other runs' stops, by hand
    assert any("Saving gives this answer to 3 targets** on 3 traces" in c.value
               for c in at.caption)
    bob = ws.campaigns.claim_next("stops", Reviewer(name="bob", via="self-declared"))
    assert bob.trace_id != claim.trace_id  # bob holds one of them meanwhile
    at = save(at)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    (said,) = [w.value.replace("\\", "") for w in at.warning]
    assert said == (f"Saved 2 of the 3 targets; not saved: e13 of {bob.trace_id} (taken by "
                    "another reviewer meanwhile, or answered or skipped by you already).")
    saved = {x.trace_id for x in ws.labelling.current(reviewer="ann", campaign="stops")}
    assert saved == set(ids) - {bob.trace_id}
