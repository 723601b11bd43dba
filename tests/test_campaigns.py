"""Review campaigns: how targets are chosen (pure), and how claims, saves, skips, leases, gold
items, disagreements, adjudication and retraction behave on a real database (a SQLite file, and
PostgreSQL where the fixture gives one)."""

from __future__ import annotations

import time
import uuid

import orjson
import pytest

from factories import copy_demos, make_workspace
from viz_app.errors import ClaimError, LabelError
from viz_app.labels.agreement import agreement
from viz_app.labels.campaign import EXPIRED, CampaignSpec, Claim, Filter, Sample
from viz_app.labels.campaign_plan import (assign_agreement, campaign_questions,
                                          default_questions, filter_rows, gold_answers,
                                          plan_targets, row_targets, sample_rows, unindexed)
from viz_app.labels.disagreement import disputed
from viz_app.labels.label import Reviewer
from viz_app.labels.rubric import default_rubric
from viz_app.summary import LibraryRow

RUBRIC = default_rubric()
LEAD = Reviewer(name="lead", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
BOB = Reviewer(name="bob", via="self-declared")
CAT = Reviewer(name="cat", via="self-declared")


def row(trace_id: str, task: str = "t", system: str = "s", topology: str = "centralized",
        events: int = 10, path: str = "/lib/a.json", targets=None) -> LibraryRow:
    """An index row with a stop (e2), an aggregate (e1) and the trace as targets."""
    return LibraryRow(path=path, position=0, trace_id=trace_id, task_id=task, system=system,
                    topology=topology, source_format="orchviz", events=events, agents=2,
                    depth=1, makespan_s=1.0, parallelism=1.0, tokens=0.0, cost_usd=0.0,
                    sha256="h" + trace_id, warnings=0,
                    targets=targets if targets is not None else {
                        "e1": ["aggregation_quality"], "e2": ["stopping_correctness"],
                        "": ["task_outcome"]})


def rows(n: int, **fixed) -> list[LibraryRow]:
    return [row(f"r{i:03d}", task=f"task{i % 5}", system=f"sys{i % 3}", **fixed)
            for i in range(n)]


def name() -> str:
    return f"c-{uuid.uuid4().hex[:8]}"


# -- choosing targets (pure) ---------------------------------------------------------------------


def test_a_filter_keeps_the_rows_every_condition_holds_for():
    library = [row("a", system="x", events=5), row("b", system="x", events=50),
               row("c", system="y", events=50), row("d", topology="swarm", system="x",
                                                    events=50)]
    kept = filter_rows(library, Filter(systems=["x"], topologies=["centralized"],
                                       figures={"events": (10, None)}))
    assert [r.trace_id for r in kept] == ["b"]


def test_a_filter_by_folder_keeps_the_traces_under_it(tmp_path):
    inside, outside = tmp_path / "in", tmp_path / "out"
    library = [row("a", path=str(inside / "a.json")), row("b", path=str(outside / "b.json"))]
    assert [r.trace_id for r in filter_rows(library, Filter(folders=[str(inside)]))] == ["a"]


def test_a_random_sample_is_n_traces_and_the_same_for_the_same_seed():
    library = rows(50)
    first = sample_rows(library, Sample(kind="random", n=10, seed=4))
    assert len(first) == 10 and len({r.trace_id for r in first}) == 10
    assert first == sample_rows(library, Sample(kind="random", n=10, seed=4))
    assert first != sample_rows(library, Sample(kind="random", n=10, seed=5))


def test_a_stratified_sample_spreads_evenly_over_the_fields_values():
    library = [row(f"a{i}", task="big") for i in range(40)] + \
              [row(f"b{i}", task="small") for i in range(3)] + [row("c0", task="one")]
    taken = sample_rows(library, Sample(kind="stratified", n=9, field="task", seed=1))
    tasks = [r.task_id for r in taken]
    assert len(taken) == 9
    assert tasks.count("one") == 1 and tasks.count("small") == 3 and tasks.count("big") == 5


def test_a_groups_sample_takes_every_rollout_of_each_task_chosen():
    library = rows(50)  # 5 tasks of 10 rollouts
    taken = sample_rows(library, Sample(kind="groups", n=2, seed=3))
    tasks = {r.task_id for r in taken}
    assert len(tasks) == 2 and len(taken) == 20
    assert all(sum(1 for r in library if r.task_id == t) == 10 for t in tasks)


def test_a_question_subset_brings_its_follow_ups_and_an_unknown_one_is_refused():
    assert campaign_questions(RUBRIC, ["stopping_correctness"]) == [
        "stopping_correctness", "stop_should_have_been", "stop_correction"]
    with pytest.raises(LabelError, match="no question 'nope'"):
        campaign_questions(RUBRIC, ["nope"])


def test_a_campaign_naming_no_question_asks_the_required_ones_and_their_companions():
    assert campaign_questions(RUBRIC) == default_questions(RUBRIC) == [
        "aggregation_quality", "aggregation_issues", "stopping_correctness",
        "stop_should_have_been", "merge_correction", "stop_correction", "task_outcome"]


def test_an_optional_question_is_asked_when_named():
    assert campaign_questions(RUBRIC, ["spawn_necessity", "task_outcome"]) == [
        "task_outcome", "spawn_necessity", "spawn_correction"]


def test_only_the_targets_the_chosen_questions_apply_to_are_taken():
    questions = campaign_questions(RUBRIC, ["stopping_correctness"])
    assert row_targets(row("a"), RUBRIC, questions) == [
        ("e2", ["stopping_correctness", "stop_should_have_been", "stop_correction"])]


def test_the_agreement_share_gets_its_k_and_the_rest_keeps_the_campaigns():
    spec = CampaignSpec(name="x", per_target=1, agreement_share=0.1, agreement_k=3)
    planned = plan_targets(rows(100), RUBRIC, spec)
    assert len(planned) == 300
    assert sorted({t.required for t in planned}) == [1, 3]
    assert sum(t.required == 3 for t in planned) == 30
    again = plan_targets(rows(100), RUBRIC, spec)
    assert [t.required for t in planned] == [t.required for t in again]


def test_agreement_never_lowers_k():
    spec = CampaignSpec(name="x", per_target=4, agreement_share=1.0, agreement_k=2)
    planned = plan_targets(rows(3), RUBRIC, spec)
    assign_agreement(planned, spec)
    assert {t.required for t in planned} == {4}


def test_gold_answers_mark_sampled_targets_and_mix_in_the_others():
    library = rows(30)
    spec = CampaignSpec(name="x", questions=["stopping_correctness"],
                        sample=Sample(kind="random", n=5, seed=2))
    sampled = {r.trace_id for r in sample_rows(library, spec.sample)}
    outside = next(r.trace_id for r in library if r.trace_id not in sampled)
    inside = sorted(sampled)[0]
    gold = gold_answers([
        {"trace_id": inside, "event_id": "e2", "question": "stopping_correctness",
         "value": "premature"},
        {"trace_id": outside, "event_id": "e2", "question": "stopping_correctness",
         "value": "correct"},
        {"trace_id": outside, "event_id": "e1", "question": "aggregation_quality", "value": 2},
    ], campaign_questions(RUBRIC, spec.questions), RUBRIC)
    planned = plan_targets(library, RUBRIC, spec, gold)
    golden = {t.trace_id: t.gold_answers for t in planned if t.gold}
    assert golden == {inside: {"stopping_correctness": "premature"},
                      outside: {"stopping_correctness": "correct"}}
    assert len(planned) == 6


def test_gold_records_need_their_keys():
    with pytest.raises(LabelError, match="gold record 1 lacks"):
        gold_answers([{"trace_id": "a"}], ["task_outcome"], RUBRIC)


@pytest.mark.parametrize("question, value", [
    ("aggregation_quality", 99), ("aggregation_quality", "3"), ("stopping_correctness", "meh"),
    ("aggregation_issues", ["dropped_result", "no-such-tag"]), ("task_outcome", None)])
def test_gold_answers_the_rubric_does_not_take_are_refused_naming_the_record(question, value):
    records = [{"trace_id": "a", "event_id": "e1", "question": "aggregation_quality",
                "value": 4},
               {"trace_id": "b", "event_id": "e1", "question": question, "value": value}]
    with pytest.raises(LabelError, match=r"^gold record 2 \(b e1\): .*" + question):
        gold_answers(records, [question, "aggregation_quality"], RUBRIC)


def test_a_campaign_with_a_gold_answer_off_the_scale_is_not_created(lite, tmp_path):
    [first, *_] = lite.library.update_index().rows
    gold = tmp_path / "gold.jsonl"
    gold.write_text(orjson.dumps({"trace_id": first.trace_id, "event_id": None,
                                  "question": "task_outcome", "value": "great"}).decode())
    with pytest.raises(LabelError, match="gold record 1 .*'great' is not an answer"):
        create(lite, questions=["task_outcome"], gold=str(gold))
    assert lite.campaigns.all() == []


def test_a_scale_disagrees_above_the_spread_and_a_category_on_any_difference():
    scale = RUBRIC.question("aggregation_quality")
    category = RUBRIC.question("stopping_correctness")
    assert disputed(scale, [3, 4]) is None
    assert disputed(scale, [2, 4]) == 0.5
    assert disputed(scale, [3, 4], threshold=0.2) == 0.25
    assert disputed(category, ["correct", "late"]) == 1.0
    assert disputed(category, ["late", "late"]) is None


def test_the_queue_order_can_put_agreement_targets_first():
    spec = CampaignSpec(name="x", agreement_share=0.2, order="disagreement")
    planned = sorted(plan_targets(rows(10), RUBRIC, spec), key=lambda t: t.priority)
    firsts = [t.required for t in planned[:6]]
    assert firsts == [2] * 6 and all(t.required == 1 for t in planned[6:])


def test_the_suggestions_order_puts_the_targets_suggestions_point_at_first():
    spec = CampaignSpec(name="x", order="suggestions")
    planned = plan_targets(rows(5), RUBRIC, spec, flags={("r003", "e2"): 2, ("r001", ""): 1})
    first = sorted(planned, key=lambda t: t.priority)[:2]
    assert {(t.trace_id, t.event_id) for t in first} == {("r003", "e2"), ("r001", "")}


# -- on a database ---------------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", "postgresql"])
def ws(request, tmp_path):
    db = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return make_workspace(tmp_path, traces=[copy_demos(tmp_path / "lib")], db=db)


@pytest.fixture
def lite(tmp_path):
    return make_workspace(tmp_path, traces=[copy_demos(tmp_path / "lib")])


def create(ws, **spec):
    spec.setdefault("name", name())
    return ws.campaigns.create(CampaignSpec(**spec), LEAD)


def answers(ws, claim: Claim, **given) -> dict:
    """Answers to every required question of a claim: the first choice unless given."""
    found = {}
    for q in claim.questions:
        question = ws.rubric.question(q)
        if q in given:
            found[q] = given[q]
        elif not question.optional and question.ask_when is None:
            found[q] = question.choices[0].value if question.choices else "x"
    return found


def work(ws, campaign: str, reviewer: Reviewer, **given) -> int:
    saved = 0
    while (claim := ws.campaigns.claim_next(campaign, reviewer)) is not None:
        ws.campaigns.submit(claim, answers(ws, claim, **given))
        saved += 1
    return saved


def test_a_claim_names_a_target_and_its_questions(ws):
    campaign = create(ws, questions=["stopping_correctness"])
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    assert claim.campaign == campaign.name and claim.reviewer == ANN
    assert claim.event_id is not None
    assert claim.questions == ["stopping_correctness", "stop_should_have_been", "stop_correction"]
    assert claim.leased_until > time.time() + 590


def test_a_reviewer_who_asks_again_gets_the_target_they_hold(ws):
    campaign = create(ws)
    first = ws.campaigns.claim_next(campaign.name, ANN)
    again = ws.campaigns.claim_next(campaign.name, ANN)
    assert (again.slot_id, again.target_id) == (first.slot_id, first.target_id)
    assert again.leased_until >= first.leased_until


def test_two_reviewers_never_hold_the_same_slot(ws):
    campaign = create(ws)
    a, b = ws.campaigns.claim_next(campaign.name, ANN), ws.campaigns.claim_next(campaign.name, BOB)
    assert a.slot_id != b.slot_id and a.target_id != b.target_id


def test_a_target_of_k_two_goes_to_two_different_reviewers(ws):
    campaign = create(ws, per_target=2)
    a, b = ws.campaigns.claim_next(campaign.name, ANN), ws.campaigns.claim_next(campaign.name, BOB)
    assert a.target_id == b.target_id and a.slot_id != b.slot_id
    ws.campaigns.submit(a, answers(ws, a))
    after = ws.campaigns.claim_next(campaign.name, ANN)
    assert after.target_id != a.target_id


def test_a_submit_saves_labels_in_the_campaign_and_completes_the_slot(ws):
    campaign = create(ws, questions=["task_outcome"])
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    made = ws.campaigns.submit(claim, answers(ws, claim), comment="ok", suggestions_visible=True)
    assert {x.campaign for x in made} == {campaign.name}
    assert {x.reviewer for x in made} == {"ann"} and made[0].identified_by == "self-declared"
    assert made[0].suggestions_visible is True
    status = ws.campaigns.status(campaign.name)
    assert (status.complete, status.in_progress) == (1, 0)


def test_a_target_saved_is_not_saved_again(ws):
    campaign = create(ws)
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    ws.campaigns.submit(claim, answers(ws, claim))
    with pytest.raises(LabelError, match="already"):
        ws.campaigns.submit(claim, answers(ws, claim))
    assert len(ws.labelling.current_records(campaign=campaign.name)) == len(answers(ws, claim))


def test_a_submit_follows_the_rules_of_a_save(ws):
    campaign = create(ws, questions=["stopping_correctness"])
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    with pytest.raises(LabelError, match="pick an answer first"):
        ws.campaigns.submit(claim, {"stop_should_have_been": claim.event_id})  # not the stop's answer
    with pytest.raises(LabelError, match="pick an answer first"):
        ws.campaigns.submit(claim, {"stopping_correctness": "late"})  # late asks where
    assert ws.labelling.current_records(campaign=campaign.name) == []
    assert ws.campaigns.status(campaign.name).complete == 0


def test_a_campaign_never_gets_more_than_k_reviews(ws):
    campaign = create(ws, per_target=2, questions=["task_outcome"])
    assert work(ws, campaign.name, ANN) == campaign.targets
    assert work(ws, campaign.name, BOB) == campaign.targets
    assert ws.campaigns.claim_next(campaign.name, CAT) is None
    status = ws.campaigns.status(campaign.name)
    assert status.complete == status.targets == campaign.targets
    assert status.saved == status.slots == 2 * campaign.targets
    per_target = {}
    for label in ws.labelling.current_records(campaign=campaign.name):
        per_target.setdefault(label["trace_id"], set()).add(label["reviewer"])
    assert {len(v) for v in per_target.values()} == {2}


def test_a_skipped_target_goes_to_others_and_never_back_to_the_skipper(ws):
    campaign = create(ws, questions=["task_outcome"])
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    with pytest.raises(LabelError, match="say why"):
        ws.campaigns.skip(claim, " ")
    ws.campaigns.skip(claim, "the trace is cut off")
    assert ws.campaigns.claim_next(campaign.name, BOB).target_id == claim.target_id
    offered = set()
    while (mine := ws.campaigns.claim_next(campaign.name, ANN)) is not None:
        offered.add(mine.target_id)
        ws.campaigns.submit(mine, answers(ws, mine))
    assert claim.target_id not in offered
    assert ws.campaigns.status(campaign.name).reviewers[0].skipped == 1


def test_a_released_target_goes_back_to_the_queue_unskipped(ws):
    campaign = create(ws, questions=["task_outcome"])
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    assert ws.campaigns.release(claim) is True
    assert ws.campaigns.release(claim) is False  # no longer ann's
    assert ws.campaigns.claim_next(campaign.name, BOB).target_id == claim.target_id
    status = ws.campaigns.status(campaign.name)
    assert status.reviewers == [] or all(r.skipped == 0 for r in status.reviewers)
    with pytest.raises(LabelError):
        ws.campaigns.submit(claim, answers(ws, claim))


def test_an_expired_reservation_goes_to_someone_else_and_its_late_save_is_refused(ws):
    campaign = create(ws, questions=["task_outcome"], lease_seconds=1)
    late = ws.campaigns.claim_next(campaign.name, ANN)
    time.sleep(1.2)
    taken = ws.campaigns.claim_next(campaign.name, BOB)
    assert taken.target_id == late.target_id
    with pytest.raises(LabelError) as refused:
        ws.campaigns.submit(late, answers(ws, late))
    assert str(refused.value) == EXPIRED
    ws.campaigns.submit(taken, answers(ws, taken))
    reviewers = {r["reviewer"] for r in ws.labelling.current_records(campaign=campaign.name)}
    assert reviewers == {"bob"}


def test_an_expired_reservation_nobody_took_can_still_be_saved(ws):
    campaign = create(ws, questions=["task_outcome"], lease_seconds=1)
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    time.sleep(1.2)
    assert ws.campaigns.submit(claim, answers(ws, claim))
    assert ws.campaigns.status(campaign.name).complete == 1


def test_an_expired_reservation_is_handed_out_before_new_work(lite):
    campaign = create(lite, questions=["task_outcome"], lease_seconds=1)
    first = lite.campaigns.claim_next(campaign.name, ANN)
    lite.campaigns.claim_next(campaign.name, BOB)
    time.sleep(1.2)
    assert lite.campaigns.claim_next(campaign.name, CAT).target_id == first.target_id


def test_renewing_extends_the_reservation(lite):
    campaign = create(lite, lease_seconds=5)
    claim = lite.campaigns.claim_next(campaign.name, ANN)
    time.sleep(0.05)
    assert lite.campaigns.renew(claim).leased_until > claim.leased_until


def test_a_claim_never_tells_gold_nor_anyone_elses_answers(lite, tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(orjson.dumps({
        "trace_id": r.trace_id, "event_id": None, "question": "task_outcome",
        "value": "partial"}).decode() for r in lite.library.update_index().rows))
    campaign = create(lite, questions=["task_outcome"], per_target=2, gold=str(gold))
    first = lite.campaigns.claim_next(campaign.name, ANN)
    lite.campaigns.submit(first, answers(lite, first))
    seen = lite.campaigns.claim_next(campaign.name, BOB)
    assert seen.target_id == first.target_id
    assert set(Claim.model_fields) == {"campaign", "slot_id", "target_id", "trace_id",
                                       "event_id", "questions", "leased_until", "reviewer",
                                       "assisted", "token"}
    text = seen.model_dump_json()
    assert "partial" not in text and "gold" not in text
    assert "ann" not in text


# -- claims the store did not issue ---------------------------------------------------------------


def slots_and_labels(ws, campaign) -> tuple:
    return (ws.campaigns.slot_rows(campaign),
            sorted(x.label_id for x in ws.labelling.current(campaign=campaign.name)))


def test_a_claim_carries_a_secret_the_reviewers_other_session_shares(ws):
    campaign = create(ws, questions=["stopping_correctness"])
    first = ws.campaigns.claim_next(campaign.name, ANN)
    again = ws.campaigns.claim_next(campaign.name, ANN)  # her second tab
    assert len(first.token) >= 40 and again.token == first.token
    assert first.token not in repr(first)
    assert ws.campaigns.claim_next(campaign.name, BOB).token != first.token
    ws.campaigns.submit(again, answers(ws, again))


@pytest.mark.parametrize("forged", [
    {"token": "guessed"}, {"token": ""}, {"trace_id": "other"}, {"event_id": "e1"},
    {"questions": []}, {"questions": ["task_outcome"]}, {"target_id": -1},
    {"slot_id": 10 ** 9}])
def test_a_claim_changed_through_the_api_is_refused_in_one_sentence(ws, forged):
    campaign = create(ws, questions=["stopping_correctness"])
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    before = slots_and_labels(ws, campaign)
    changed = claim.model_copy(update=forged)
    for call in (lambda: ws.campaigns.submit(changed, answers(ws, claim)),
                 lambda: ws.campaigns.skip(changed, "unsure"), lambda: ws.campaigns.renew(changed)):
        with pytest.raises(ClaimError) as refused:
            call()
        assert str(refused.value).count(". ") == 0 and "nothing was saved" in str(refused.value)
    assert slots_and_labels(ws, campaign) == before
    ws.campaigns.submit(claim, answers(ws, claim))  # the claim as issued still saves


def test_a_claim_moved_onto_another_reviewers_target_does_not_add_a_reviewer(ws):
    campaign = create(ws, questions=["stopping_correctness"], per_target=1)
    ann = ws.campaigns.claim_next(campaign.name, ANN)
    bob = ws.campaigns.claim_next(campaign.name, BOB)
    onto = bob.model_copy(update={"target_id": ann.target_id, "trace_id": ann.trace_id,
                                  "event_id": ann.event_id})
    with pytest.raises(ClaimError):
        ws.campaigns.submit(onto, answers(ws, ann))
    taken = bob.model_copy(update={"slot_id": ann.slot_id, "target_id": ann.target_id,
                                   "trace_id": ann.trace_id, "event_id": ann.event_id})
    with pytest.raises(LabelError):  # her slot is not bob's
        ws.campaigns.submit(taken, answers(ws, ann))
    as_ann = taken.model_copy(update={"reviewer": ANN})
    with pytest.raises(ClaimError):  # her slot and name, but not her token
        ws.campaigns.submit(as_ann, answers(ws, ann))
    assert ws.labelling.current(campaign=campaign.name) == []


def test_a_claim_moved_into_another_campaign_saves_nothing_there(ws):
    first = create(ws, questions=["stopping_correctness"])
    second = create(ws, questions=["stopping_correctness"])
    claim = ws.campaigns.claim_next(first.name, ANN)
    with pytest.raises(ClaimError):
        ws.campaigns.submit(claim.model_copy(update={"campaign": second.name}), answers(ws, claim))
    assert ws.labelling.current(campaign=first.name) == ws.labelling.current(campaign=second.name) == []
    assert {r["state"] for r in ws.campaigns.slot_rows(second)} == {"open"}


def test_answers_to_questions_outside_the_claim_are_refused_not_dropped(ws):
    campaign = create(ws, questions=["stopping_correctness"])
    claim = ws.campaigns.claim_next(campaign.name, ANN)
    with pytest.raises(LabelError, match="task_outcome is not asked on this target"):
        ws.campaigns.submit(claim, answers(ws, claim) | {"task_outcome": "success"})
    assert ws.labelling.current(campaign=campaign.name) == []
    assert {r["state"] for r in ws.campaigns.slot_rows(campaign)} >= {"leased"}


def test_gold_accuracy_per_reviewer(lite, tmp_path):
    traces = [r.trace_id for r in lite.library.update_index().rows]
    gold = tmp_path / "gold.jsonl"
    gold.write_text("\n".join(orjson.dumps({
        "trace_id": t, "event_id": None, "question": "task_outcome",
        "value": "success"}).decode() for t in traces[:4]))
    campaign = create(lite, questions=["task_outcome"], per_target=2, gold=str(gold))
    work(lite, campaign.name, ANN, task_outcome="success")
    work(lite, campaign.name, BOB, task_outcome="failure")
    status = lite.campaigns.status(campaign.name)
    assert status.gold == 4
    by = {r.reviewer: r for r in status.reviewers}
    assert (by["ann"].gold_seen, by["ann"].gold_correct, by["ann"].accuracy) == (4, 4, 1.0)
    assert (by["bob"].gold_seen, by["bob"].gold_correct, by["bob"].accuracy) == (4, 0, 0.0)


def test_gold_from_an_earlier_campaigns_adjudication(lite):
    first = create(lite, questions=["task_outcome"])
    claim = lite.campaigns.claim_next(first.name, ANN)
    lite.campaigns.adjudicate(first.name, claim.trace_id, None, {"task_outcome": "partial"}, LEAD,
                    "checked the run")
    second = create(lite, questions=["task_outcome"], gold_campaign=first.name)
    assert lite.campaigns.status(second.name).gold == 1


def test_status_counts_complete_and_in_progress_and_alpha_per_question(ws):
    campaign = create(ws, questions=["task_outcome"], per_target=2)
    first = ws.campaigns.claim_next(campaign.name, ANN)
    ws.campaigns.submit(first, {"task_outcome": "success"})
    ws.campaigns.claim_next(campaign.name, ANN)
    status = ws.campaigns.status(campaign.name)
    assert (status.targets, status.complete, status.in_progress) == (campaign.targets, 0, 2)
    work(ws, campaign.name, ANN, task_outcome="success")
    work(ws, campaign.name, BOB, task_outcome="success")
    ws.campaigns.claim_next(campaign.name, BOB)
    status = ws.campaigns.status(campaign.name)
    assert status.complete == campaign.targets
    assert status.agreement[0].question == "task_outcome"
    assert status.agreement[0].shared_targets == campaign.targets


def test_disagreements_show_every_reviewers_answers_until_adjudicated(ws):
    campaign = create(ws, questions=["stopping_correctness"], per_target=2)
    work(ws, campaign.name, ANN, stopping_correctness="correct")
    claim = ws.campaigns.claim_next(campaign.name, BOB)
    ws.campaigns.submit(claim, {"stopping_correctness": "late",
                      "stop_should_have_been": ws.library.trace(claim.trace_id).events[0].id})
    work(ws, campaign.name, BOB, stopping_correctness="correct")
    found = ws.campaigns.disagreements(campaign.name)
    assert len(found) == 1
    dispute = found[0]
    assert (dispute.trace_id, dispute.event_id) == (claim.trace_id, claim.event_id)
    assert dispute.answers["ann"] == {"stopping_correctness": "correct"}
    assert dispute.answers["bob"]["stopping_correctness"] == "late"
    assert dispute.disputed == {"stopping_correctness": 1.0}
    assert len(ws.campaigns.status(campaign.name).unresolved) == 1
    made = ws.campaigns.adjudicate(campaign.name, claim.trace_id, claim.event_id,
                         {"stopping_correctness": "correct"}, LEAD, "the answer was ready")
    assert {(x.source, x.reviewer, x.comment, x.campaign) for x in made} == {
        ("adjudication", "lead", "the answer was ready", campaign.name)}
    assert ws.campaigns.status(campaign.name).unresolved == []
    assert ws.campaigns.disagreements(campaign.name)[0].resolved
    kept = {r["reviewer"] for r in ws.labelling.current_records(campaign=campaign.name)}
    assert kept == {"ann", "bob", "lead"}


def test_an_adjudication_needs_a_reason_and_a_target_of_the_campaign(lite):
    campaign = create(lite, questions=["task_outcome"])
    trace = lite.library.update_index().rows[0].trace_id
    with pytest.raises(LabelError, match="reason"):
        lite.campaigns.adjudicate(campaign.name, trace, None, {"task_outcome": "success"}, LEAD, "")
    with pytest.raises(LabelError, match="no target"):
        lite.campaigns.adjudicate(campaign.name, trace, "e1", {"task_outcome": "success"}, LEAD, "r")
    with pytest.raises(LabelError, match="not asked"):
        lite.campaigns.adjudicate(campaign.name, trace, None, {"aggregation_quality": 3}, LEAD, "r")


def test_a_retracted_label_leaves_current_labels_agreement_and_exports(ws, tmp_path):
    campaign = create(ws, questions=["task_outcome"], per_target=2)
    work(ws, campaign.name, ANN, task_outcome="success")
    work(ws, campaign.name, BOB, task_outcome="failure")
    bobs = [r["label_id"] for r in ws.labelling.current_records(campaign=campaign.name)
            if r["reviewer"] == "bob"]
    assert ws.campaigns.retract(bobs, LEAD, "read the rubric wrong", campaign=campaign.name) == len(bobs)
    assert ws.campaigns.retract(bobs, LEAD, "twice") == 0
    current = ws.labelling.current_records(campaign=campaign.name)
    assert {r["reviewer"] for r in current} == {"ann"}
    assert len(ws.labelling.current_records(campaign=campaign.name, include_retracted=True)) == \
        2 * len(current)
    outcome = {q.question: q for q in agreement(ws.rubric, current)}["task_outcome"]
    assert outcome.reviewers == 1
    assert ws.campaigns.disagreements(campaign.name) == []
    out = tmp_path / "out.jsonl"
    ws.exports.write("jsonl", out, campaign=campaign.name)
    exported = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert {r["reviewer"] for r in exported} == {"ann"}
    assert len(list(ws.labelling.history(exported[0]["trace_id"]))) >= 2  # the history stays


def test_retracting_needs_a_reason_and_known_labels(lite):
    with pytest.raises(LabelError, match="reason"):
        lite.campaigns.retract(["x"], LEAD, "")
    with pytest.raises(LabelError, match="no label 'x'"):
        lite.campaigns.retract(["x"], LEAD, "why")


def test_an_adjudicated_only_export_holds_only_adjudications(lite, tmp_path):
    campaign = create(lite, questions=["task_outcome"], per_target=2)
    work(lite, campaign.name, ANN, task_outcome="success")
    work(lite, campaign.name, BOB, task_outcome="failure")
    dispute = lite.campaigns.disagreements(campaign.name)[0]
    lite.campaigns.adjudicate(campaign.name, dispute.trace_id, dispute.event_id,
                    {"task_outcome": "partial"}, LEAD, "half done")
    out = tmp_path / "adj.jsonl"
    lite.exports.write("jsonl", out, campaign=campaign.name, adjudicated_only=True)
    exported = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert [(r["source"], r["trace_id"], r["value"]) for r in exported] == [
        ("adjudication", dispute.trace_id, "partial")]
    assert len(lite.campaigns.status(campaign.name).unresolved) == campaign.targets - 1


def test_a_campaign_without_targets_or_with_a_taken_name_is_refused(lite):
    with pytest.raises(LabelError, match="no target"):
        create(lite, filter=Filter(systems=["nobody"]))
    taken = create(lite)
    with pytest.raises(LabelError, match="already a campaign"):
        create(lite, name=taken.name)
    assert [c.name for c in lite.campaigns.all()] == [taken.name]


def test_a_campaign_pins_its_rubric(lite, tmp_path):
    campaign = create(lite, questions=["task_outcome"])
    claim = lite.campaigns.claim_next(campaign.name, ANN)
    changed = RUBRIC.model_copy(update={"version": "2.0", "sha256": "f" * 64})
    other = make_workspace(tmp_path, rubric=changed)
    with pytest.raises(LabelError, match="created under rubric 1.1"):
        other.campaigns.submit(claim, {"task_outcome": "success"})


def test_a_campaign_filters_and_samples_the_library(lite):
    campaign = create(lite, questions=["task_outcome"], filter=Filter(topologies=["centralized"]),
                      sample=Sample(kind="random", n=2, seed=1))
    assert campaign.targets == 2
    traces = {t.trace_id for t in lite.campaigns.targets(campaign)}
    centralized = {r.trace_id for r in lite.library.update_index().rows if r.topology == "centralized"}
    assert traces <= centralized


def test_a_campaign_takes_free_text_from_the_index_search(lite):
    campaign = create(lite, questions=["task_outcome"], filter=Filter(text="ebike"))
    assert [t.trace_id for t in lite.campaigns.targets(campaign)] == [
        "demo-05-hierarchical-ebikes"]


def test_members_and_roles(lite):
    lite.campaigns.add_member("Lead@Example.org", "lead", LEAD)
    lite.campaigns.add_member("rev@example.org", "reviewer", LEAD)
    assert lite.campaigns.role("lead@example.org") == "lead"
    assert lite.campaigns.role("rev@example.org") == "reviewer"
    assert lite.campaigns.role("nobody@example.org") is None
    assert [m.email for m in lite.campaigns.members()] == ["lead@example.org", "rev@example.org"]
    with pytest.raises(LabelError, match="no role"):
        lite.campaigns.add_member("x@example.org", "boss", LEAD)


def test_a_signed_in_reviewer_is_no_lead_unless_the_members_say_so(lite):
    signed = Reviewer(name="rev@example.org", via="oidc")
    with pytest.raises(LabelError, match="not a lead"):
        lite.campaigns.create(CampaignSpec(name=name()), signed)
    lite.campaigns.add_member("rev@example.org", "lead", LEAD)
    assert lite.campaigns.create(CampaignSpec(name=name()), signed).targets > 0
    assert lite.campaigns.may_lead(Reviewer(name="anyone", via="self-declared"))


def test_a_reviewers_progress_counts_without_telling_answers(lite):
    campaign = create(lite, questions=["task_outcome"], per_target=2)
    work(lite, campaign.name, ANN)
    claim = lite.campaigns.claim_next(campaign.name, BOB)
    lite.campaigns.skip(claim, "unsure")
    mine = lite.campaigns.progress(campaign.name, "bob")
    assert (mine.targets, mine.complete, mine.slots, mine.saved) == (12, 0, 24, 12)
    assert (mine.reviewer_saved, mine.reviewer_skipped, mine.fraction) == (0, 1, 0.5)
    assert set(type(mine).model_fields) == {"name", "targets", "complete", "slots", "saved",
                                            "reviewer", "reviewer_saved", "reviewer_skipped"}


def test_retracting_a_newer_answer_does_not_bring_back_the_older_one(lite):
    trace = lite.library.trace("demo-10-review-premature-stop")
    lite.labelling.save(trace, "task_outcome", "success", "ann")
    newer = lite.labelling.save(trace, "task_outcome", "failure", "ann")
    lite.campaigns.retract([newer.label_id], LEAD, "misread the rubric")
    assert lite.labelling.current_records(trace_id=trace.trace_id) == []
    assert len(lite.labelling.history(trace.trace_id)) == 2


# -- campaigns over optional questions, and closing ---------------------------------------------


OPTIONAL_ONLY = ["spawn_necessity", "delegation_fit", "message_necessity"]
CORRECTIONS_THERE = ["spawn_correction", "delegation_correction", "message_correction",
                     "missed_decision"]
"""The corrections asked on those targets (follow-ups, and the missed decisions)."""


def listed_targets(ws, questions: list[str]) -> set[tuple[str, str, tuple[str, ...]]]:
    """(trace, target, questions asked) of every target of the library where one of these
    questions is asked, as the trace page lists targets (`ws.library.targets`)."""
    found = set()
    questions = campaign_questions(ws.rubric, questions)  # with their follow-ups
    for row in ws.library.update_index().rows:
        for target in ws.library.targets(ws.library.trace(row.trace_id)):
            here = tuple(q for q in questions if q in target.questions)
            if here:
                found.add((row.trace_id, target.key, here))
    return found


def stored_targets(ws, campaign) -> set[tuple[str, str, tuple[str, ...]]]:
    return {(t.trace_id, t.event_id, tuple(t.questions))
            for t in ws.campaigns.targets(campaign)}


def test_the_questions_the_index_cannot_place_are_those_asked_only_where_nothing_must_be():
    assert sorted(unindexed(RUBRIC, [q.id for q in RUBRIC.questions])) == sorted(
        OPTIONAL_ONLY + CORRECTIONS_THERE)
    assert unindexed(RUBRIC, ["aggregation_issues", "stop_should_have_been"]) == []


@pytest.mark.parametrize("question", OPTIONAL_ONLY)
def test_a_campaign_of_one_optional_question_takes_every_target_the_trace_page_lists(
        lite, question):
    campaign = create(lite, questions=[question])
    expected = listed_targets(lite, [question])
    assert expected and stored_targets(lite, campaign) == expected


def test_optional_and_required_questions_together_take_the_targets_of_both(lite):
    questions = ["aggregation_quality", "aggregation_issues", "spawn_necessity"]
    campaign = create(lite, questions=questions)
    assert stored_targets(lite, campaign) == listed_targets(lite, questions)
    kinds = {t.questions[0] for t in lite.campaigns.targets(campaign)}
    assert kinds == {"aggregation_quality", "spawn_necessity"}


def test_every_question_left_unnamed_still_takes_the_targets_the_index_records(lite):
    campaign = create(lite)  # no trace is read: spawns, delegations, messages left out
    assert not any(set(t.questions) <= set(OPTIONAL_ONLY + CORRECTIONS_THERE)
                   for t in lite.campaigns.targets(campaign))


def test_a_spawn_campaign_is_reviewed_and_saved_end_to_end(lite, tmp_path):
    campaign = create(lite, questions=["spawn_necessity"], sample=Sample(kind="random", n=2))
    claim = lite.campaigns.claim_next(campaign.name, ANN)
    assert claim.questions == ["spawn_necessity", "spawn_correction"] and claim.event_id
    made = lite.campaigns.submit(claim, {"spawn_necessity": "redundant"})
    assert [(x.question, x.value, x.event_id) for x in made] == [
        ("spawn_necessity", "redundant", claim.event_id)]
    out = tmp_path / "spawns.jsonl"
    lite.exports.write("jsonl", out, campaign=campaign.name)
    assert [orjson.loads(x)["question"] for x in out.read_bytes().splitlines()] == [
        "spawn_necessity"]


def test_a_closed_campaign_hands_out_no_more_targets_and_says_so(ws):
    campaign = create(ws, questions=["task_outcome"])
    held = ws.campaigns.claim_next(campaign.name, ANN)
    closed = ws.campaigns.close(campaign.name, LEAD)
    assert closed.closed_at is not None
    assert ws.campaigns.claim_next(campaign.name, BOB) is None
    ws.campaigns.submit(held, answers(ws, held))  # a target held when it closed may still be saved
    assert ws.campaigns.status(campaign.name).closed_at == closed.closed_at
    assert ws.campaigns.close(campaign.name, LEAD).closed_at == closed.closed_at


def test_only_a_lead_closes_a_campaign(lite):
    campaign = create(lite, questions=["task_outcome"])
    with pytest.raises(LabelError, match="cannot close a campaign"):
        lite.campaigns.close(campaign.name, Reviewer(name="x@example.org", via="oidc"))
    with pytest.raises(LabelError, match="no campaign named 'nope'"):
        lite.campaigns.close("nope", LEAD)
    assert lite.campaigns.get(campaign.name).closed_at is None
