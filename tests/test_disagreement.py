"""One rule for "these answers disagree" (`viz_app.labels.disagreement`), read alike by a
campaign's Adjudicate queue, the Agreement page and every training export: a lead who settles
every dispute the queue lists leaves no target that `labels export --disputed adjudicated`
refuses, and a scale answered one point apart is a dispute for none of them."""

from __future__ import annotations

import hashlib
import json

import pytest

from factories import copy_demos, make_workspace
from viz_app.cli import main
from viz_app.export.consensus import CLOSE, ExportOptions, select
from viz_app.labels.agreement import question_agreement
from viz_app.labels.campaign import CampaignSpec, Claim
from viz_app.labels.disagreement import close, disputed, same_answer
from viz_app.labels.label import Reviewer
from viz_app.labels.rubric import default_rubric

RUBRIC = default_rubric()
LEAD = Reviewer(name="lead", via="cli")
ANN = Reviewer(name="ann", via="self-declared")
BOB = Reviewer(name="bob", via="self-declared")
QUESTIONS = ["aggregation_quality", "aggregation_issues", "merge_correction", "task_outcome"]


# -- the rule, by kind of question -------------------------------------------------------------


def test_a_scale_disputes_two_points_apart_not_one():
    scale = RUBRIC.question("aggregation_quality")
    assert disputed(scale, [3, 4]) is None and close(scale, [3, 4])
    assert disputed(scale, [2, 4]) == 0.5 and not close(scale, [2, 4])
    assert disputed(scale, [3, 4], threshold=0.2) == 0.25
    assert disputed(scale, [4, 4]) is None and not close(scale, [4, 4])


def test_a_category_a_pointer_and_tags_dispute_on_any_difference():
    category = RUBRIC.question("stopping_correctness")
    assert disputed(category, ["correct", "late"]) == 1.0
    assert disputed(category, ["late", "late"]) is None
    assert disputed(RUBRIC.question("stop_should_have_been"), ["e14", "e15"]) == 1.0
    tags = RUBRIC.question("aggregation_issues")
    assert disputed(tags, [[], ["dropped_result"]]) == 1.0
    assert disputed(tags, [["dropped_result", "unfaithful_merge"],
                           ["unfaithful_merge", "dropped_result"]]) is None


def test_corrections_dispute_on_the_decision_not_the_words():
    merge = RUBRIC.question("merge_correction")
    assert disputed(merge, [{"action": "merge", "text": "Keep the 0193 finding."},
                            {"action": "merge", "text": "Migration 0193 is the cause."}]) is None
    spawn = RUBRIC.question("spawn_correction")
    assert disputed(spawn, [{"action": "do_it_itself"},
                            {"action": "reuse_agent", "agent": "log_analyst"}]) == 1.0


def test_free_text_never_disputes_and_one_and_true_are_two_answers():
    note = RUBRIC.question("task_outcome").model_copy(update={"kind": "text"})
    assert disputed(note, ["yes", "no"]) is None
    assert not same_answer(None, 1, True) and same_answer(None, [1, 2], [2, 1])


def test_the_agreement_page_lists_the_targets_the_rule_calls_disputed():
    labels = [{"trace_id": f"t{i}", "event_id": "e1", "question": "aggregation_quality",
               "reviewer": who, "value": value, "source": "human"}
              for who, values in {"ann": [1, 3, 5], "bob": [2, 3, 1]}.items()
              for i, value in enumerate(values)]
    found = question_agreement(RUBRIC.question("aggregation_quality"), labels)
    assert [(d.trace_id, d.spread) for d in found.disagreements] == [("t2", 1.0)]


# -- the queue and the export agree on every target ----------------------------------------------


def pattern(claim: Claim) -> int:
    """Which of five answer patterns the second reviewer gives on a target (the same in every
    run: the target's ids hashed)."""
    return hashlib.sha256(f"{claim.trace_id}/{claim.event_id}".encode()).digest()[0] % 5


def given(claim: Claim, reviewer: Reviewer) -> dict:
    """Ann answers alike everywhere; Bob agrees, answers a point apart, two points apart, with
    other tags, or the same correction in other words, by target."""
    k = pattern(claim) if reviewer == BOB else -1
    found: dict = {}
    if "aggregation_quality" in claim.questions:
        found["aggregation_quality"] = {0: 4, 1: 5, 2: 1}.get(k, 3)
        found["aggregation_issues"] = ["dropped_result"] if k == 3 else []
        found["merge_correction"] = {"action": "merge", "text": (
            "Keep the finding the analyst returned." if k == 4 else "Merge every result.")}
    if "task_outcome" in claim.questions:
        found["task_outcome"] = "partial" if k == 2 else "success"
    return found


def worked(tmp_path):
    """A K=2 campaign over the demo traces, answered by Ann and Bob."""
    library = copy_demos(tmp_path / "lib")
    ws = make_workspace(tmp_path, traces=[library])
    campaign = ws.campaigns.create(CampaignSpec(name="both", questions=QUESTIONS, per_target=2),
                                   LEAD)
    for reviewer in (ANN, BOB):
        while (claim := ws.campaigns.claim_next(campaign.name, reviewer)) is not None:
            ws.campaigns.submit(claim, given(claim, reviewer))
    return ws, library


def queue(ws) -> set[tuple[str, str, str]]:
    """(trace, event, question) of every open dispute the Adjudicate page lists."""
    return {(d.trace_id, d.event_id or "", q) for d in ws.campaigns.disagreements("both")
            if not d.resolved for q in d.disputed}


def export_refuses(ws) -> set[tuple[str, str, str]]:
    """(trace, event, question) a `--disputed adjudicated` export leaves out, from the records
    it reads."""
    records = ws.labelling.current_records(campaign="both")
    return set(select(records, ws.rubric, ExportOptions(disputed="adjudicated")).dropped)


def cli_export(capsys, ws, library, tmp_path) -> tuple[list[dict], str]:
    """`orchviz labels export --format stepwise --disputed adjudicated` (every label of this
    database is the campaign's): its rows and what it said on stderr."""
    out = tmp_path / "steps.jsonl"
    code = main(["labels", "export", "--db", ws.settings.db_url, "--traces", str(library),
                 "--format", "stepwise", "--disputed", "adjudicated",
                 "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    return [json.loads(line) for line in out.read_text().splitlines()], err


def test_the_adjudicate_queue_and_the_export_agree_on_every_target(tmp_path, capsys):
    ws, library = worked(tmp_path)
    listed = queue(ws)
    kinds = {q for _, _, q in listed}
    assert {"aggregation_quality", "aggregation_issues", "task_outcome"} <= kinds
    assert "merge_correction" not in kinds  # the same decision in other words
    assert export_refuses(ws) == listed
    _, said = cli_export(capsys, ws, library, tmp_path)
    assert f"{len(listed)} targets left out: their reviewers disagree and no adjudicated " \
        "label settles them" in said

    for trace_id, event_id, question in sorted(listed):
        ann = next(r for r in ws.labelling.current_records(trace_id, "ann", campaign="both")
                   if (r["event_id"] or "") == event_id and r["question"] == question)
        ws.campaigns.adjudicate("both", trace_id, event_id or None, {question: ann["value"]},
                                LEAD, "ann read the merge right")
    assert queue(ws) == set() and export_refuses(ws) == set()
    rows, said = cli_export(capsys, ws, library, tmp_path)
    assert "disagree" not in said and rows


def test_a_scale_answered_one_point_apart_is_kept_with_the_mean_reward(tmp_path):
    ws, _ = worked(tmp_path)
    records = ws.labelling.current_records(campaign="both")
    chosen = select(records, ws.rubric, ExportOptions())
    near = [a for a in chosen.answers if a.resolution == CLOSE]
    assert near and all(a.question == "aggregation_quality" and a.value is None
                        and not a.disputed and a.reward_std > 0 for a in near)
    assert not any(a.key in {(d.trace_id, d.event_id or "", "aggregation_quality")
                             for d in ws.campaigns.disagreements("both")} for a in near)
    assert any("close" in note for note in chosen.notes)


@pytest.mark.parametrize("answers, verdict", [([3, 4], None), ([3, 5], 0.5), ([1, 5], 1.0)])
def test_the_campaign_and_the_export_read_a_scale_alike(answers, verdict):
    scale = RUBRIC.question("aggregation_quality")
    labels = [{"trace_id": "t", "event_id": "e1", "question": scale.id, "reviewer": who,
               "value": value, "reward": (value - 3) / 2, "source": "human", "label_id": who,
               "created_at": "2026-01-01"} for who, value in zip("ab", answers)]
    dropped = select(labels, RUBRIC, ExportOptions()).dropped
    assert disputed(scale, answers) == verdict
    assert (dropped == [("t", "e1", scale.id)]) == (verdict is not None)
