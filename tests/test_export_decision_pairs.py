"""The decision-pairs exports (`--format decision-pairs`, `--format openrlhf-decision-pairs`): a
row per corrected decision (the correction chosen over what it did) and per decision judged
sound (what it did chosen over the alternative its corrections name), both sides in one form,
the deciding agent's context as prompt; and the labels behind each row read back (label -> pair
-> label)."""

from __future__ import annotations

import json

import orjson
import pytest

from factories import PREMATURE, make_workspace, premature
from viz_app.cli import main
from viz_app.export import FORMATS
from viz_app.export.consensus import ExportOptions
from viz_app.export.decision_pairs import DECISION_PAIR_FIELDS, decision_pair_rows
from viz_app.export.readers import read_export
from viz_app.labels.label import Reviewer

MERGE = "Root cause: migration 0193 dropped the coupon index; v2.3.0 only coincided."
FINAL = "Restore the index on coupon_redemptions."
ANN, BOB, LEE = (Reviewer(name=n, via="cli") for n in ("ann", "bob", "lee"))


@pytest.fixture
def trace():
    return premature()


@pytest.fixture
def ws(tmp_path, trace):
    """ann corrects the merge at e12 and says the stop at e13 was premature (it should have
    waited for e15, and answered FINAL)."""
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 1, "merge_correction": {
        "action": "merge", "text": MERGE}}, ANN)
    ws.labelling.save_answers(trace, "e13", {"stopping_correctness": "premature",
                                   "stop_should_have_been": "e15",
                                   "stop_correction": {"action": "stop", "text": FINAL}}, ANN)
    return ws


def rows_of(ws, trace, **options):
    return decision_pair_rows(ws.labelling.current_records(), {trace.trace_id: trace}, ws.rubric,
                              ExportOptions(**options))


def test_each_corrected_decision_is_a_row_at_its_node(ws, trace):
    rows = rows_of(ws, trace, confirmations="none")
    assert [(r["event_id"], r["origin"]) for r in rows] == [
        ("e12", "correction"), ("e13", "stop_at_stop"), ("e15", "stop_at_pointer")]
    assert all(tuple(r) == DECISION_PAIR_FIELDS for r in rows)


def test_a_merge_pair_is_the_reviewers_merge_against_the_aggregators_own_words(ws, trace):
    row = rows_of(ws, trace)[0]
    assert (row["chosen"], row["chosen_form"]) == (f"aggregate: {MERGE}", "reviewer_words")
    assert row["rejected"] == "aggregate: Root cause: the v2.3.0 deploy. Recommend rolling " \
        "back v2.3.0." and row["rejected_form"] == "own_words"
    assert json.loads(row["chosen_decision"])["action"] == "merge"


def test_the_prompt_is_what_the_deciding_agent_had_seen_before_it_decided(ws, trace):
    prompt = rows_of(ws, trace)[0]["prompt"]
    assert prompt.startswith("Task: Checkout p99 rose from 180 ms to 1.4 s on Tuesday.")
    assert prompt.endswith(
        "[t=8] log_analyst return -> orchestrator: Slowness is on POST /checkout/confirm (92% of "
        "slow requests).\n")
    assert "tool_call" not in prompt  # the analysts' own tool calls were never shown to it
    assert "aggregate" not in prompt  # not its own decision at this node


def test_a_premature_stop_is_going_on_rather_than_stopping_then_stopping_at_the_pointer(ws,
                                                                                        trace):
    at_stop, at_pointer = rows_of(ws, trace)[1:]
    assert at_stop["chosen"] == "continue: wait for db_analyst"  # who it was waiting for
    # the stop states its final answer: the merge it stopped with
    assert at_stop["rejected"] == "stop: Root cause: the v2.3.0 deploy. Recommend rolling " \
        "back v2.3.0."
    assert at_stop["chosen_form"] == "canonical" and at_stop["rejected_form"] == "own_words"
    assert (at_pointer["chosen"], at_pointer["rejected"]) == (
        f"stop: {FINAL}", "continue: wait for db_analyst")
    assert at_pointer["prompt"].endswith("Rolling back v2.3.0 will NOT fix it, since the "
                                         "migration is not reverted.\n")
    assert "orchestrator_decision (stop)" not in at_pointer["prompt"]  # it waited instead


def test_conversational_rows_are_the_agents_messages_and_one_assistant_turn(ws, trace):
    row = rows_of(ws, trace, conversational=True)[0]
    roles = [m["role"] for m in row["prompt"]]
    assert roles[0] == "user" and "assistant" in roles
    assert all(a != b for a, b in zip(roles, roles[1:]))  # turns alternate
    assert row["chosen"] == [{"role": "assistant", "content": f"aggregate: {MERGE}"}]
    at_stop = rows_of(ws, trace, conversational=True)[1]  # its own merge came right before
    assert at_stop["prompt"][-1]["role"] == "user"
    assert at_stop["chosen"][0]["content"].startswith("[t=24] orchestrator aggregate: Root")
    assert at_stop["chosen"][0]["content"].endswith("continue: wait for db_analyst")
    content = at_stop["chosen"][0]["content"]  # the spans index the assistant turn's text
    assert all(content[a:b] in "continue: wait for db_analyst" for a, b in at_stop["chosen_spans"])


def test_reviewers_who_chose_the_same_decision_in_their_own_words_each_make_a_row(ws, trace):
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 1, "merge_correction": {
        "action": "merge", "text": "The index drop in migration 0193 is the cause."}}, BOB)
    merges = [r for r in rows_of(ws, trace) if r["event_id"] == "e12"
              and r["pair_kind"] == "correction"]
    assert sorted(r["reviewers"][0] for r in merges) == ["ann", "bob"]
    assert not any(r["disputed"] for r in merges)


def test_reviewers_who_chose_different_decisions_dispute_it_until_a_lead_adjudicates(
        tmp_path, trace):
    ws = make_workspace(tmp_path, traces=[trace])
    trace = ws.library.trace(trace.trace_id)  # as the library holds it
    fixes = {"ann": {"action": "do_it_itself"},
             "bob": {"action": "reuse_agent", "agent": "log_analyst"}}
    for who, fix in fixes.items():
        ws.labelling.save_answers(trace, "e4", {"spawn_necessity": "redundant", "spawn_correction": fix},
                        Reviewer(name=who, via="cli"))
    records = ws.labelling.current_records()
    assert decision_pair_rows(records, {trace.trace_id: trace}, ws.rubric) == []  # disputed
    lead = [{**r, "label_id": "adj-" + r["label_id"], "reviewer": "lee", "source": "adjudication"}
            for r in records if r["reviewer"] == "bob"]
    (row,) = decision_pair_rows(records + lead, {trace.trace_id: trace}, ws.rubric,
                                ExportOptions(disputed="adjudicated"))
    assert row["chosen"].startswith("reuse log_analyst") and row["disputed"]
    assert row["resolution"] == "adjudicated" and row["reviewers"] == ["lee"]


def test_a_merge_left_as_it_was_makes_no_row_and_is_reported(tmp_path, trace):
    ws = make_workspace(tmp_path, traces=[trace])
    trace = ws.library.trace(trace.trace_id)  # as the library holds it
    own = trace.event("e12").text
    ws.labelling.save_answers(trace, "e12", {"aggregation_quality": 4, "merge_correction": {
        "action": "merge", "text": own}}, ANN)
    result = ws.exports.write("decision-pairs", tmp_path / "d.jsonl", traces={trace.trace_id: trace})
    assert result.count == 0
    assert any("one decision on both sides" in n for n in result.notes)


def test_min_reviewers_leaves_out_a_correction_one_reviewer_made(ws, trace, tmp_path):
    result = ws.exports.write("decision-pairs", tmp_path / "k2.jsonl", traces={trace.trace_id: trace},
                       options=ExportOptions(min_reviewers=2))
    assert result.count == 0 and any("fewer reviewers" in x for x in result.left_out)


def test_the_cli_writes_both_shapes_and_they_read_back_to_the_labels(ws, tmp_path):
    saved = sorted((r["label_id"], r["question"]) for r in ws.labelling.current_records()
                   if r["question"] != "aggregation_quality")  # a score is not a pair
    for format in ("decision-pairs", "openrlhf-decision-pairs"):
        out = tmp_path / f"{format}.jsonl"
        code = main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                     str(PREMATURE), "--format", format, "-o", str(out)])
        rows = [orjson.loads(x) for x in out.read_bytes().splitlines()]
        assert code == 0 and len(rows) == 3  # no sound decision: no confirmation
        back = sorted((r["label_id"], r["question"]) for r in read_export(format, out))
        assert back == saved  # label -> pair -> label: every label behind a row, exactly
    openrlhf = [orjson.loads(x) for x in
                (tmp_path / "openrlhf-decision-pairs.jsonl").read_bytes().splitlines()]
    assert "prompt" not in openrlhf[0] and openrlhf[0]["chosen"].startswith("Task: ")
    assert openrlhf[0]["chosen"].endswith(MERGE)
    first = openrlhf[0]  # the spans still mark the decision's words inside the whole text
    assert all(first["chosen"][a:b] in f"aggregate: {MERGE}" for a, b in first["chosen_spans"])
    assert first["chosen_spans"][0][0] > first["chosen"].index("aggregate: Root cause: migr")


def test_read_back_labels_import_into_a_new_workspace_and_make_the_same_pairs(ws, tmp_path,
                                                                              trace):
    out = tmp_path / "pairs.jsonl"
    ws.exports.write("decision-pairs", out, traces={trace.trace_id: trace})
    (tmp_path / "other").mkdir()
    fresh = make_workspace(tmp_path / "other", traces=[PREMATURE])
    fresh.labelling.import_labels(read_export("decision-pairs", out), {trace.trace_id: trace}, "pairs")
    again = decision_pair_rows(fresh.labelling.current_records(), {trace.trace_id: trace},
                               fresh.rubric)
    first = rows_of(ws, trace)
    strip = ("provenance", "reviewers", "resolution")
    assert [{k: v for k, v in r.items() if k not in strip} for r in again] == \
        [{k: v for k, v in r.items() if k not in strip} for r in first]


def test_the_formats_are_training_shapes_of_trl_and_openrlhf():
    assert FORMATS["decision-pairs"].framework == "TRL" and FORMATS["decision-pairs"].training
    assert FORMATS["openrlhf-decision-pairs"].framework == "OpenRLHF"
    assert "conversational" in FORMATS["decision-pairs"].accepts
