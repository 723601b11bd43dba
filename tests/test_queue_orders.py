"""Queues that ask where it matters: the `uncertain` order hands out the learned producer's least
certain targets first, the `contested` order the targets where producers disagree with each
other or with a first reviewer; each refuses in one sentence when there is nothing to order by,
and neither lets the queue tell a reviewer what was suggested (docs/campaigns.md, Queue orders
and blind review)."""

from __future__ import annotations

import uuid

import pytest

from factories import copy_demos, make_workspace
from viz_app.cli import main
from viz_app.errors import LabelError
from viz_app.labels.attention import contests, first_answers, uncertainty
from viz_app.labels.campaign import CampaignSpec, Claim
from viz_app.labels.campaign_plan import PlannedTarget, plan_targets
from viz_app.labels.label import Reviewer
from viz_app.labels.rubric import default_rubric
from viz_app.labels.suggestion import Producer, Suggestion
from viz_app.suggest.rules import FINE
from viz_app.summary import LibraryRow

RUBRIC = default_rubric()
LEAD = Reviewer(name="lead", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
BOB = Reviewer(name="bob", via="self-declared")
OUTCOME = "task_outcome"


def learned(version: str = "v1") -> Producer:
    return Producer(name="learned", version=version)


def suggest(trace_id: str, value, confidence: float = 0.9, *, producer: Producer | None = None,
            event_id: str = "", question: str = OUTCOME, sha: str | None = None,
            at: str = "2026-01-01T00:00:00Z") -> Suggestion:
    return Suggestion(trace_id=trace_id, trace_sha256=sha if sha is not None else "h" + trace_id,
                      event_id=event_id, question=question, value=value,
                      confidence=confidence, producer=producer or learned(), created_at=at)


def row(trace_id: str) -> LibraryRow:
    return LibraryRow(path="/lib/a.json", position=0, trace_id=trace_id, task_id="t", system="s",
                    topology="centralized", source_format="orchviz", events=10, agents=2,
                    depth=1, makespan_s=1.0, parallelism=1.0, tokens=0.0, cost_usd=0.0,
                    sha256="h" + trace_id, warnings=0, targets={"": [OUTCOME]})


def queue(order: str, suggestions, first=None, **spec) -> list[str]:
    """The trace ids of five one-target traces r0..r4, in the order the queue hands them out."""
    made = CampaignSpec(name="x", questions=[OUTCOME], order=order, **spec)

    def urgency(planned):
        if order == "uncertain":
            return uncertainty(planned, suggestions)
        return contests(RUBRIC, planned, suggestions, first or {}, {"rules": FINE})

    planned = plan_targets([row(f"r{i}") for i in range(5)], RUBRIC, made, urgency=urgency)
    return [t.trace_id for t in sorted(planned, key=lambda t: t.priority)]


# -- uncertain (pure) ------------------------------------------------------------------------


def test_uncertain_hands_out_the_confidence_nearest_a_half_first_then_the_rest_in_sample_order():
    found = [suggest("r1", "success", 0.97), suggest("r3", "failure", 0.55),
             suggest("r4", "success", 0.7)]
    assert queue("uncertain", found) == ["r3", "r4", "r1", "r0", "r2"]


def test_uncertain_places_a_target_by_how_sure_not_by_what_is_suggested():
    # r1 and r2 are as sure (0.6) of opposite answers: the sample's order decides
    for first, second in (("success", "failure"), ("failure", "success")):
        found = [suggest("r1", first, 0.6), suggest("r2", second, 0.6),
                 suggest("r0", "success", 0.95)]
        assert queue("uncertain", found)[:3] == ["r1", "r2", "r0"]


def test_with_three_answers_a_confidence_below_a_half_is_the_least_certain():
    # the learned producer's confidence is the probability of its most probable answer: with
    # three answers 0.4 is less sure than 0.5 (a distance from 0.5 would put it after)
    found = [suggest("r1", "success", 0.5), suggest("r2", "partial", 0.4),
             suggest("r3", "failure", 0.62)]
    assert queue("uncertain", found)[:3] == ["r2", "r1", "r3"]


def test_uncertain_reads_only_the_learned_producers_latest_version():
    found = [suggest("r2", "success", 0.5, producer=learned("old"), at="2026-01-01T00:00:00Z"),
             suggest("r2", "success", 0.99, producer=learned("new"), at="2026-02-01T00:00:00Z"),
             suggest("r4", "success", 0.6, producer=learned("new"), at="2026-02-01T00:00:00Z"),
             suggest("r0", "success", 0.5, producer=Producer(name="rules", version="1"))]
    assert queue("uncertain", found) == ["r4", "r2", "r0", "r1", "r3"]


def test_uncertain_ignores_a_suggestion_made_on_another_version_of_the_trace():
    found = [suggest("r3", "success", 0.5, sha="another"), suggest("r1", "success", 0.9)]
    assert queue("uncertain", found)[0] == "r1"


def test_a_target_with_several_questions_is_as_uncertain_as_its_least_certain_one():
    target = PlannedTarget(trace_id="r0", trace_sha256="hr0", event_id="e2",
                           questions=["stopping_correctness", "aggregation_quality"])
    found = [suggest("r0", "late", 0.95, event_id="e2", question="stopping_correctness"),
             suggest("r0", 3, 0.6, event_id="e2", question="aggregation_quality")]
    assert uncertainty([target], found) == {("r0", "e2"): pytest.approx(0.4)}


def test_each_questions_latest_model_counts_though_another_question_was_trained_later():
    # one learned model per question, each its own version (its training set's hash)
    target = PlannedTarget(trace_id="r0", trace_sha256="hr0", event_id="e2",
                           questions=["stopping_correctness", "aggregation_quality"])
    found = [suggest("r0", "late", 0.55, event_id="e2", question="stopping_correctness",
                     producer=learned("stops"), at="2026-01-01T00:00:00Z"),
             suggest("r0", 3, 0.9, event_id="e2", question="aggregation_quality",
                     producer=learned("merges"), at="2026-03-01T00:00:00Z")]
    assert uncertainty([target], found) == {("r0", "e2"): pytest.approx(0.45)}


# -- contested (pure) --------------------------------------------------------------------------


def judge(model: str = "m") -> Producer:
    return Producer(name="judge", version="1", model=model, prompt_sha256="p")


def test_contested_hands_out_where_producers_disagree_first():
    found = [suggest("r2", "success", producer=judge()), suggest("r2", "failure"),
             suggest("r4", "success", producer=judge()), suggest("r4", "success")]
    assert queue("contested", found) == ["r2", "r0", "r1", "r3", "r4"]


def test_contested_counts_a_producer_against_the_first_reviewer():
    labels = [{"trace_id": "r3", "trace_sha256": "hr3", "event_id": None, "question": OUTCOME,
               "value": "failure", "source": "human", "reviewer": "ann",
               "created_at": "2026-01-02T00:00:00Z"},
              {"trace_id": "r3", "trace_sha256": "hr3", "event_id": None, "question": OUTCOME,
               "value": "success", "source": "human", "reviewer": "bob",
               "created_at": "2026-01-03T00:00:00Z"},
              {"trace_id": "r1", "trace_sha256": "hr1", "event_id": None, "question": OUTCOME,
               "value": "success", "source": "human", "reviewer": "ann",
               "created_at": "2026-01-02T00:00:00Z"}]
    first = first_answers(labels)
    assert first[("r3", "hr3", "", OUTCOME)] == "failure"  # ann's, the earlier
    found = [suggest("r3", "success"), suggest("r1", "success")]
    assert queue("contested", found, first)[0] == "r3"
    assert queue("contested", found, first)[1:] == ["r0", "r1", "r2", "r4"]


def test_the_rules_silence_on_a_trace_they_ran_on_reads_as_fine():
    target = PlannedTarget(trace_id="r0", trace_sha256="hr0", event_id="e2",
                           questions=["stopping_correctness"])
    rules = Producer(name="rules", version="1")
    elsewhere = suggest("r0", 2, producer=rules, event_id="e1", question="aggregation_quality")
    learned_late = suggest("r0", "late", event_id="e2", question="stopping_correctness")
    assert contests(RUBRIC, [target], [elsewhere, learned_late], {}, {"rules": FINE}) == \
        {("r0", "e2"): 1.0}
    # where the rules made no suggestion on the trace, nothing says they ran: no opinion
    assert contests(RUBRIC, [target], [learned_late], {}, {"rules": FINE}) == {}


def test_the_rules_known_to_have_run_on_a_trace_for_another_question_count_as_silent():
    target = PlannedTarget(trace_id="r0", trace_sha256="hr0", event_id="e2",
                           questions=["stopping_correctness"])
    learned_late = suggest("r0", "late", event_id="e2", question="stopping_correctness")
    assert contests(RUBRIC, [target], [learned_late], {}, {"rules": FINE},
                    ran_on={("rules", "r0", "hr0")}) == {("r0", "e2"): 1.0}
    assert contests(RUBRIC, [target], [learned_late], {}, {"rules": FINE},
                    ran_on={("rules", "r0", "another version")}) == {}


def test_a_scale_is_contested_only_when_the_answers_are_more_than_one_point_apart():
    target = PlannedTarget(trace_id="r0", trace_sha256="hr0", event_id="e1",
                           questions=["aggregation_quality"])

    def on(a, b):
        return contests(RUBRIC, [target], [
            suggest("r0", a, event_id="e1", question="aggregation_quality"),
            suggest("r0", b, event_id="e1", question="aggregation_quality",
                    producer=judge())], {})

    assert on(4, 5) == {} and on(2, 5) == {("r0", "e1"): 0.75}


# -- on a database -----------------------------------------------------------------------------


@pytest.fixture
def ws(tmp_path):
    return make_workspace(tmp_path, traces=[copy_demos(tmp_path / "lib")])


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db(request, tmp_path):
    """The workspace on a SQLite file, and on PostgreSQL where the fixture gives one (a claim
    there is one statement of its own, `PG_CLAIM`)."""
    db = request.getfixturevalue("postgres_url") if request.param == "postgresql" else None
    return make_workspace(tmp_path, traces=[copy_demos(tmp_path / "lib")], db=db)


def traces(ws) -> list:
    return sorted((ws.library.trace(r.trace_id) for r in ws.library.update_index().rows),
                  key=lambda t: t.trace_id)


def on_trace(trace, value, confidence=0.9, producer=None, **changes) -> Suggestion:
    return suggest(trace.trace_id, value, confidence, producer=producer,
                   sha=trace.sha256, **changes)


def create(ws, order: str, **spec):
    return ws.campaigns.create(CampaignSpec(name=f"c-{uuid.uuid4().hex[:8]}",
                                           questions=[OUTCOME], order=order, **spec), LEAD)


def claimed(ws, campaign, reviewer) -> list[str]:
    """The trace ids a reviewer is handed, saving 'success' on each."""
    seen = []
    while (claim := ws.campaigns.claim_next(campaign.name, reviewer)) is not None:
        seen.append(claim.trace_id)
        ws.campaigns.submit(claim, {OUTCOME: "success"})
    return seen


def test_an_uncertain_campaign_without_learned_suggestions_says_what_to_run(ws):
    ws.suggestions.add([on_trace(traces(ws)[0], "failure",
                                      producer=Producer(name="rules", version="1"))])
    with pytest.raises(LabelError) as refused:
        create(ws, "uncertain")
    said = str(refused.value)
    assert "orchviz suggest train --question task_outcome" in said
    assert "orchviz suggest --producer learned" in said and "\n" not in said
    assert ws.campaigns.all() == []


def test_an_uncertain_campaign_whose_traces_the_learned_producer_never_saw_is_refused(ws):
    ws.suggestions.add([suggest("elsewhere", "success", 0.5)])
    with pytest.raises(LabelError, match="suggested nothing on this campaign's 12 targets"):
        create(ws, "uncertain")
    assert ws.campaigns.all() == []


def test_an_uncertain_campaign_hands_out_the_least_certain_targets_first(ws):
    found = traces(ws)
    ws.suggestions.add([on_trace(found[7], "success", 0.52),
                             on_trace(found[2], "failure", 0.35),
                             on_trace(found[5], "partial", 0.9)])
    campaign = create(ws, "uncertain")
    handed = claimed(ws, campaign, ANN)
    assert handed[:3] == [found[2].trace_id, found[7].trace_id, found[5].trace_id]
    assert len(handed) == 12


def test_a_claim_carries_nothing_of_the_order():
    assert not {"priority", "urgency", "flags", "confidence"} & set(Claim.model_fields)


def test_a_contested_campaign_without_any_suggestion_is_refused(ws):
    with pytest.raises(LabelError, match="no producer has suggested an answer to task_outcome"):
        create(ws, "contested", per_target=2)
    assert ws.campaigns.all() == []


def test_a_contested_campaign_with_nothing_contested_and_one_reviewer_a_target_is_refused(ws):
    ws.suggestions.add([on_trace(traces(ws)[0], "success")])
    with pytest.raises(LabelError, match="give --per-target 2"):
        create(ws, "contested")


def test_the_rules_silence_counts_though_they_flagged_only_another_question_there(ws):
    trace = ws.library.trace("demo-10-review-premature-stop")  # a stop at e13, an aggregate at e12
    rules = Producer(name="rules", version="3")
    ws.suggestions.add([
        on_trace(trace, 2, producer=rules, event_id="e12", question="aggregation_quality"),
        on_trace(trace, "late", event_id="e13", question="stopping_correctness")])
    campaign = ws.campaigns.create(CampaignSpec(name="stops", questions=["stopping_correctness"],
                                               order="contested"), LEAD)
    # the rules ran on the trace and said nothing of its stop: `correct`, against `late`
    first = ws.campaigns.claim_next(campaign.name, ANN)
    assert (first.trace_id, first.event_id) == (trace.trace_id, "e13")


def test_a_contested_campaign_hands_out_where_producers_disagree_first(ws):
    found = traces(ws)
    ws.suggestions.add([on_trace(found[9], "success"),
                             on_trace(found[9], "failure", producer=judge())])
    campaign = create(ws, "contested")
    assert claimed(ws, campaign, ANN)[0] == found[9].trace_id


def test_a_contested_target_is_never_offered_to_a_reviewer_who_answered_it_before(ws):
    found = traces(ws)
    ws.labelling.save_answers(found[3], None, {OUTCOME: "success"}, ANN, suggestions_visible=False)
    ws.suggestions.add([on_trace(found[3], "failure")])
    campaign = create(ws, "contested", per_target=2)
    assert ws.campaigns.claim_next(campaign.name, BOB).trace_id == found[3].trace_id  # first in the queue
    handed = claimed(ws, campaign, ANN)
    assert found[3].trace_id not in handed and len(handed) == 11
    assert ws.campaigns.progress(campaign.name, "ann").reviewer_skipped == 0


def test_a_first_reviewer_at_odds_with_a_producer_brings_the_second_review_forward(ws):
    found = traces(ws)
    ws.suggestions.add([on_trace(found[6], "failure")])
    campaign = create(ws, "contested", per_target=2)
    # ann reviews in queue order; on found[6] she answers against the producer
    while (claim := ws.campaigns.claim_next(campaign.name, ANN)) is not None:
        answer = "success"
        ws.campaigns.submit(claim, {OUTCOME: answer})
        if claim.trace_id == found[6].trace_id:
            break
    assert claim.trace_id == found[6].trace_id
    assert ws.campaigns.claim_next(campaign.name, BOB).trace_id == found[6].trace_id


def test_the_second_slot_moves_ahead_in_the_saves_own_transaction(any_db):
    ws = any_db  # on PostgreSQL the database is shared with other tests: read this campaign's
    found = traces(ws)
    ws.suggestions.add([on_trace(found[6], "failure")])
    campaign = create(ws, "contested", per_target=2)
    before = {r["slot_id"]: r["priority"] for r in ws.campaigns.slot_rows(campaign)}
    # a reviewer of this test's own: another test's "ann" may have answered these demos in the
    # shared database, and a contested target is never offered to who answered it before
    first = Reviewer(name=f"ann-{uuid.uuid4().hex[:8]}", via="self-declared")
    while (claim := ws.campaigns.claim_next(campaign.name, first)) is not None:
        ws.campaigns.submit(claim, {OUTCOME: "success"})
        if claim.trace_id == found[6].trace_id:
            break
    after = {r["slot_id"]: (r["priority"], r["target_id"], r["state"])
             for r in ws.campaigns.slot_rows(campaign)}
    [moved] = [sid for sid, (p, target, state) in after.items()
               if target == claim.target_id and state == "open"]
    assert after[moved][0] == -2.0 and before[moved] >= 0
    assert after[moved][0] < min(before.values())


def test_a_first_reviewer_who_agrees_with_the_producers_changes_nothing(ws):
    found = traces(ws)
    ws.suggestions.add([on_trace(found[6], "success")])
    campaign = create(ws, "contested", per_target=2)
    first = ws.campaigns.claim_next(campaign.name, BOB)
    while (claim := ws.campaigns.claim_next(campaign.name, ANN)) is not None:
        ws.campaigns.submit(claim, {OUTCOME: "success"})
        if claim.trace_id == found[6].trace_id:
            break
    ws.campaigns.release(first)
    assert ws.campaigns.claim_next(campaign.name, BOB).trace_id == first.trace_id


def test_orchviz_campaign_create_refuses_an_uncertain_order_in_one_line(capsys, tmp_path):
    lib = copy_demos(tmp_path / "lib")
    code = main(["campaign", "create", "u", "--traces", str(lib), "--db",
                 str(tmp_path / "o.db"), "--questions", OUTCOME, "--order", "uncertain"])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "orchviz suggest train --question task_outcome" in err


def test_with_the_learned_producer_trained_and_run_the_queue_asks_its_least_sure_first(tmp_path):
    pytest.importorskip("sklearn", reason="the learned producer is the `agreement` extra")
    from test_learned import SPAWN, learnable

    ws, _ = learnable(tmp_path)
    ws.suggestions.train(SPAWN, resamples=20)
    ws.suggestions.run(ws.library.read_traces().traces, producer="learned")
    campaign = ws.campaigns.create(CampaignSpec(name="unsure", questions=[SPAWN],
                                               order="uncertain"), LEAD)
    sure = {(s.trace_id, s.event_id): s.confidence for s in ws.suggestions.all()
            if s.producer.name == "learned"}
    handed = []
    while (claim := ws.campaigns.claim_next(campaign.name, ANN)) is not None and len(handed) < 12:
        handed.append(sure[(claim.trace_id, claim.event_id)])
        ws.campaigns.skip(claim, "only the order is checked here")
    assert handed == sorted(handed) and handed[0] == min(sure.values())
    assert len(set(sure.values())) > 1  # the model is not equally sure everywhere
