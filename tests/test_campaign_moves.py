"""A reviewer in a campaign goes back and changes their answer, and gives one answer to many
targets of one kind (issue 40): every change a new label beside the old one, the newest counted
wherever the campaign's labels are read; every target of a shared answer its own label with its
own provenance, its slot completed in the same transaction, never past K."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from factories import DEMO_DIR, PREMATURE, PREMATURE_ID, make_workspace
from viz_app.errors import LabelError
from viz_app.labels import CampaignSpec, Filter, Reviewer

SWARM = DEMO_DIR / "04_swarm_parallel_audit.json"
SWARM_ID = "demo-04-swarm-audit"  # a fan-out of 34 spawns, e2 ... e59
LEE = Reviewer(name="lee", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
BOB = Reviewer(name="bob", via="self-declared")


@pytest.fixture
def ws(tmp_path):
    found = make_workspace(tmp_path, traces=[PREMATURE, SWARM])
    found.library.update_index()
    return found


def stops(ws, k: int = 1):
    return ws.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"],
                                            filter=Filter(trace_ids=[PREMATURE_ID]),
                                            per_target=k), LEE)


def spawns(ws, k: int = 1):
    return ws.campaigns.create(CampaignSpec(name="spawns", questions=["spawn_necessity"],
                                            filter=Filter(trace_ids=[SWARM_ID]),
                                            per_target=k), LEE)


def values(labels, question: str) -> dict[str, object]:
    return {x.event_id: x.value for x in labels if x.question == question}


# -- going back --------------------------------------------------------------------------------

def test_a_changed_answer_is_a_new_label_the_old_one_in_history_the_new_one_counted(ws):
    stops(ws, k=2)
    claim = ws.campaigns.claim_next("stops", ANN)
    ws.campaigns.submit(claim, {"stopping_correctness": "correct"})
    saved = ws.campaigns.saved("stops", "ann")
    assert [(s.trace_id, s.event_id) for s in saved] == [(PREMATURE_ID, "e13")]

    ws.campaigns.change("stops", saved[0].slot_id, ANN,
                        {"stopping_correctness": "premature", "stop_should_have_been": "e15"},
                        comment="db_analyst's return was still to come")
    history = ws.labelling.history(PREMATURE_ID, "e13", "stopping_correctness", reviewer="ann")
    assert [x.value for x in history] == ["correct", "premature"]  # append-only
    assert all(x.campaign == "stops" for x in history)
    current = ws.labelling.current(PREMATURE_ID, "ann", campaign="stops")
    assert values(current, "stopping_correctness") == {"e13": "premature"}
    assert values(current, "stop_should_have_been") == {"e13": "e15"}

    # every reader of the campaign's labels takes the newest: bob's answer now agrees
    bob = ws.campaigns.claim_next("stops", BOB)
    ws.campaigns.submit(bob, {"stopping_correctness": "premature",
                              "stop_should_have_been": "e15"})
    assert ws.campaigns.disagreements("stops") == []
    assert ws.campaigns.status("stops").complete == 1
    assert ws.campaigns.progress("stops", "ann").reviewer_saved == 1  # a change is no new slot


def test_only_ones_own_saved_target_can_be_changed_and_answers_are_checked(ws):
    stops(ws, k=2)
    claim = ws.campaigns.claim_next("stops", ANN)
    ws.campaigns.submit(claim, {"stopping_correctness": "correct"})
    slot = ws.campaigns.saved("stops", "ann")[0].slot_id
    with pytest.raises(LabelError, match="bob saved no target of campaign 'stops'"):
        ws.campaigns.change("stops", slot, BOB, {"stopping_correctness": "late"})
    with pytest.raises(LabelError, match="aggregation_quality is not asked"):
        ws.campaigns.change("stops", slot, ANN, {"aggregation_quality": 3})
    held = ws.campaigns.claim_next("stops", BOB)  # bob holds the other slot, unsaved
    with pytest.raises(LabelError):
        ws.campaigns.change("stops", held.slot_id, BOB, {"stopping_correctness": "late"})
    assert len(ws.labelling.history(PREMATURE_ID, "e13")) == 1  # nothing was saved


def test_a_change_made_on_the_trace_page_counts_in_the_campaign_it_was_saved_in(ws):
    stops(ws)
    claim = ws.campaigns.claim_next("stops", ANN)
    ws.campaigns.submit(claim, {"stopping_correctness": "correct"})
    trace = ws.library.trace(PREMATURE_ID)
    made = ws.labelling.save_answers(trace, "e13", {"stopping_correctness": "late",
                                                   "stop_should_have_been": "e12"}, ANN)
    assert {x.campaign for x in made} == {"stops"}
    current = ws.labelling.current(PREMATURE_ID, "ann", campaign="stops")
    assert values(current, "stopping_correctness") == {"e13": "late"}
    # a target no campaign holds of hers is saved outside any, as before
    other = ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 4}, ANN)
    assert {x.campaign for x in other} == {""}


# -- one answer for many -----------------------------------------------------------------------

def test_one_answer_given_to_every_spawn_of_a_fan_out_is_a_label_each(ws):
    campaign = spawns(ws, k=2)
    assert campaign.targets == 34
    claim = ws.campaigns.claim_next("spawns", ANN)
    alike = ws.campaigns.alike(claim)
    assert len(alike) == 33 and claim.event_id not in {t.event_id for t in alike}
    assert {t.trace_id for t in alike} == {SWARM_ID}

    done = ws.campaigns.submit_alike(claim, alike, {"spawn_necessity": "redundant"},
                                     comment="34 workers for 34 files: one would do",
                                     seconds_spent=68.0)
    made = done.labels
    assert (done.saved, done.refused, done.sentence()) == (34, [], "")
    assert len(made) == 34
    assert len({x.label_id for x in made}) == 34
    assert {x.event_id for x in made} == {claim.event_id, *(t.event_id for t in alike)}
    assert {(x.reviewer, x.campaign, x.source, x.identified_by, x.origin, x.seconds_spent)
            for x in made} == {("ann", "spawns", "human", "self-declared",
                                "one answer given to 34 targets at once", 2.0)}
    current = ws.labelling.current(SWARM_ID, "ann", campaign="spawns")
    assert set(values(current, "spawn_necessity").values()) == {"redundant"}
    assert len(current) == 34
    assert ws.campaigns.progress("spawns", "ann").reviewer_saved == 34
    assert ws.campaigns.alike(ws.campaigns.claim_next("spawns", BOB))  # K=2: bob still has his
    assert ws.campaigns.claim_next("spawns", ANN) is None  # ann has answered every one


def test_a_target_taken_meanwhile_is_left_out_the_rest_saved_and_said_in_one_sentence(ws):
    spawns(ws, k=1)
    ann = ws.campaigns.claim_next("spawns", ANN)
    alike = ws.campaigns.alike(ann)
    bob = ws.campaigns.claim_next("spawns", BOB)  # bob took the next spawn meanwhile
    assert bob.event_id in {t.event_id for t in alike}
    done = ws.campaigns.submit_alike(ann, alike, {"spawn_necessity": "redundant"})
    assert done.saved == 33 and [r.target.event_id for r in done.refused] == [bob.event_id]
    assert done.sentence(SWARM_ID) == (
        f"Saved 33 of the 34 targets; not saved: {bob.event_id} (taken by another reviewer "
        "meanwhile, or answered or skipped by you already).")
    saved = values(ws.labelling.current(SWARM_ID, "ann"), "spawn_necessity")
    assert len(saved) == 33 and bob.event_id not in saved
    assert ws.labelling.current(SWARM_ID, "bob") == []  # bob's reservation untouched
    ws.campaigns.submit(bob, {"spawn_necessity": "necessary"})  # and still his to save


def test_a_claim_no_longer_held_saves_nothing_of_many(ws):
    spawns(ws, k=1)
    ann = ws.campaigns.claim_next("spawns", ANN)
    alike = ws.campaigns.alike(ann)
    assert ws.campaigns.release(ann)  # her reservation is gone
    with pytest.raises(LabelError, match="nothing was saved"):
        ws.campaigns.submit_alike(ann, alike[:3], {"spawn_necessity": "redundant"})
    assert ws.labelling.current(SWARM_ID) == []


# -- one answer across the campaign's traces ----------------------------------------------------

def test_one_answer_goes_to_the_stops_of_the_campaigns_other_traces(tmp_path):
    """The runs' stops of a campaign over four traces: one answer to the stop held and the other
    three; bob holds one meanwhile and one trace's file is broken: the other one is saved, and
    one sentence names the two left out, with their traces, and why."""
    runs = tmp_path / "runs"  # copies: one of them is broken below
    runs.mkdir()
    for source in [PREMATURE, *sorted(DEMO_DIR.glob("0[5-7]_*.json"))]:
        shutil.copy(source, runs / source.name)
    ws = make_workspace(tmp_path, traces=[runs])
    rows = ws.library.update_index().rows
    ids, files = [r.trace_id for r in rows], {r.trace_id: Path(r.path) for r in rows}
    ws.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"],
                                     filter=Filter(trace_ids=ids)), LEE)
    ann = ws.campaigns.claim_next("stops", ANN)
    alike = ws.campaigns.alike(ann)
    assert ann.trace_id not in {t.trace_id for t in alike}
    assert len({t.trace_id for t in alike}) == len(alike) == len(ids) - 1  # a stop a run
    bob = ws.campaigns.claim_next("stops", BOB)
    broken = next(t for t in alike if t.trace_id != bob.trace_id)
    files[broken.trace_id].write_text("{ cut short")

    done = ws.campaigns.submit_alike(ann, alike, {"stopping_correctness": "correct"})
    assert done.saved == len(ids) - 2
    assert {r.target.trace_id for r in done.refused} == {bob.trace_id, broken.trace_id}
    sentence = done.sentence(ann.trace_id)
    assert sentence.startswith(f"Saved {len(ids) - 2} of the {len(ids)} targets; not saved: ")
    assert f"of {bob.trace_id} (taken by another reviewer meanwhile" in sentence
    assert f"of {broken.trace_id} (" in sentence and sentence.count(".") >= 1
    saved = {x.trace_id for x in ws.labelling.current(reviewer="ann", campaign="stops")}
    assert saved == set(ids) - {bob.trace_id, broken.trace_id}
    assert {x.origin for x in ws.labelling.current(reviewer="ann")} == {
        f"one answer given to {len(ids)} targets at once"}


def test_an_answer_that_is_one_targets_own_is_never_given_to_many(ws):
    ws.campaigns.create(CampaignSpec(name="spawns", questions=["spawn_necessity",
                                                               "spawn_correction"],
                                     filter=Filter(trace_ids=[SWARM_ID])), LEE)
    claim = ws.campaigns.claim_next("spawns", ANN)
    alike = ws.campaigns.alike(claim)
    correction = {"action": "skip", "text": "one worker reads all 34 files"}
    with pytest.raises(LabelError, match="spawn_correction is this target's own answer"):
        ws.campaigns.submit_alike(claim, alike[:2], {"spawn_necessity": "redundant",
                                                     "spawn_correction": correction})
    assert ws.labelling.current(SWARM_ID) == []
