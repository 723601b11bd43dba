"""Decision pairs that teach the decision, not a prior: a decision judged sound makes pairs too
(the decision made chosen over the alternative its corrections name), `--confirmations` and the
weight column balance them against corrections, both sides share one form and carry the spans
where they differ, a pointer's pair sits where the stopping agent had what it points at, and
the prompt's Task line holds the task's words."""

from __future__ import annotations

import orjson
import pytest

from factories import PREMATURE, as_trace, event_edited, make_workspace, premature
from viz_app import planted
from viz_app.analysis import ONLY_TASK_ID, analyze, task_text
from viz_app.cli import main
from viz_app.export.consensus import ExportOptions
from viz_app.export.decision_pairs import decision_pair_export, decision_pair_rows
from viz_app.labels.confirmation import without_one_result
from viz_app.labels.correction import diff_spans, word_diff
from viz_app.labels.knowledge import first_had, saw
from viz_app.labels.label import Reviewer

ANN, BOB, LEE = (Reviewer(name=n, via="cli") for n in ("ann", "bob", "lee"))


def rows_of(ws, traces, **options):
    return decision_pair_rows(ws.labelling.current_records(), {t.trace_id: t for t in traces},
                              ws.rubric, ExportOptions(**options))


def planted_trace(kind, shape, control=False, topology="centralized", size="small", seed=1):
    return as_trace(planted.case(kind, shape, control, topology, size, seed).trace)


@pytest.fixture
def sound(tmp_path):
    """A faithful run (planted, all results in) whose stop, merge and spawns ann judged sound."""
    planted_one = planted_trace("premature_stop", "all-in", control=True)
    ws = make_workspace(tmp_path, traces=[planted_one])
    trace = ws.library.trace(planted_one.trace_id)  # as the library holds it (its file's version)
    analysis = analyze(trace)
    stop = analysis.stops[0].event_id
    merge = analysis.aggregates[-1].event_id
    spawns = [e.id for e in analysis.order if e.type == "spawn"]
    ws.labelling.save_answers(trace, stop, {"stopping_correctness": "correct"}, ANN)
    ws.labelling.save_answers(trace, merge, {"aggregation_quality": 5}, ANN)
    for spawn in spawns:
        ws.labelling.save_answers(trace, spawn, {"spawn_necessity": "necessary"}, ANN)
    return ws, trace, stop, merge, spawns


def test_a_stop_judged_correct_is_stopping_over_going_on_and_going_on_before_its_last_result(
        sound):
    ws, trace, stop, _, _ = sound
    rows = [r for r in rows_of(ws, [trace], confirmations="all") if r["sub_decision"] == "O5"]
    by_origin = {r["origin"]: r for r in rows}
    at_stop, before = by_origin["confirm_stop"], by_origin["confirm_continue"]
    assert at_stop["pair_kind"] == before["pair_kind"] == "confirmation"
    final = " ".join(trace.event(analyze(trace).aggregates[-1].event_id).text.split())
    assert at_stop["chosen"] == f"stop: {final}" == before["rejected"]  # its answer: its merge
    assert at_stop["rejected"].startswith("continue: wait for ")
    waited = at_stop["rejected"].removeprefix("continue: wait for ")
    assert f"{waited} return -> " in at_stop["prompt"]  # it had answered: waiting is wrong
    assert before["chosen"].startswith("continue: wait for ")
    late = before["chosen"].removeprefix("continue: wait for ")
    assert f"{late} return -> " not in before["prompt"]  # its result had not come: go on
    assert before["event_id"] != stop and before["corrected_at"] == stop


def test_a_sound_merge_is_chosen_over_the_same_merge_with_one_result_dropped(sound):
    ws, trace, _, merge, _ = sound
    row, claim = [r for r in rows_of(ws, [trace], confirmations="all")
                  if r["origin"] == "confirm_merge"]
    assert row["chosen"] == claim["chosen"] == "aggregate: " + " ".join(
        trace.event(merge).text.split())
    assert row["rejected_form"] == "own_words_edited" and row["rejected"].startswith(
        "aggregate: Answer: ")
    assert len(row["rejected"]) < len(row["chosen"])
    dropped = row["chosen"][slice(*row["chosen_spans"][0])]
    assert dropped and dropped not in row["rejected"]  # one result's sentence, gone
    assert without_one_result(analyze(trace), merge) == row["rejected"].removeprefix(
        "aggregate: ")
    # and over the same merge with a sentence no result supports: longer, and worse
    assert claim["rejected"].startswith(row["chosen"]) and len(claim["rejected"]) > len(
        row["chosen"])
    (added,) = claim["rejected_spans"]
    assert claim["rejected"][added[0]:added[1]].split(" is ")[1].split()[0] not in \
        claim["prompt"]  # its figure is none of the results


def test_a_needed_spawn_is_chosen_over_doing_it_itself_and_over_reusing_the_last_sibling(sound):
    ws, trace, _, _, spawns = sound
    rows = [r for r in rows_of(ws, [trace], confirmations="all")
            if r["origin"] == "confirm_spawn"]
    first = [r for r in rows if r["event_id"] == spawns[0]]
    assert [r["rejected"].split(":")[0] for r in first] == ["do it itself"]  # no sibling yet
    second = [r for r in rows if r["event_id"] == spawns[1]]
    assert sorted(r["rejected"].split(":")[0] for r in second) == [
        "do it itself", f"reuse {trace.event(spawns[0]).to}"]
    task = second[0]["chosen"].split(": ", 1)[1]
    assert task.startswith("Find the ") and all(r["rejected"].endswith(task) for r in second)


def test_confirmations_none_all_or_as_many_as_corrections_per_sub_decision_with_weights(
        tmp_path):
    fault = planted_trace("premature_stop", "late-return")
    fine = [planted_trace("premature_stop", "all-in", control=True, seed=s) for s in (1, 2, 3)]
    ws = make_workspace(tmp_path, traces=[fault, *fine])
    fault, fine = ws.library.trace(fault.trace_id), [ws.library.trace(t.trace_id) for t in fine]
    stop = analyze(fault).stops[0].event_id
    ws.labelling.save_answers(fault, stop, {"stopping_correctness": "premature",
                                  "stop_should_have_been": analyze(fault).order[-1].id}, ANN)
    for trace in fine:
        ws.labelling.save_answers(trace, analyze(trace).stops[0].event_id,
                        {"stopping_correctness": "correct"}, ANN)
    traces = [fault, *fine]
    kinds = {how: [r["pair_kind"] for r in rows_of(ws, traces, confirmations=how)]
             for how in ("none", "balanced", "all")}
    assert kinds["none"] == ["correction", "correction"]  # at the stop, at the pointer
    assert sorted(kinds["balanced"]) == ["confirmation"] * 2 + ["correction"] * 2
    assert kinds["all"].count("confirmation") == 6 and kinds["all"].count("correction") == 2
    weights = {r["pair_kind"]: r["weight"] for r in rows_of(ws, traces, confirmations="all")}
    assert weights == {"correction": 2.0, "confirmation": pytest.approx(8 / 12, abs=1e-4)}
    picked = [rows_of(ws, traces)[i]["trace_id"] for i in range(2)]
    assert picked == [rows_of(ws, traces)[i]["trace_id"] for i in range(2)]  # a fixed pick


def test_a_disputed_sound_answer_makes_no_confirmation_until_adjudicated(sound):
    ws, trace, _, merge, _ = sound
    ws.labelling.save_answers(trace, merge, {"aggregation_quality": 2}, BOB)
    records = [r for r in ws.labelling.current_records() if r["event_id"] == merge]
    assert decision_pair_rows(records, {trace.trace_id: trace}, ws.rubric) == []
    lead = [{**r, "label_id": "adj-" + r["label_id"], "reviewer": "lee",
             "source": "adjudication"} for r in records if r["reviewer"] == "ann"]
    rows = decision_pair_rows(records + lead, {trace.trace_id: trace}, ws.rubric,
                              ExportOptions(disputed="adjudicated", confirmations="all"))
    assert {(r["origin"], r["resolution"], tuple(r["reviewers"])) for r in rows} == {
        ("confirm_merge", "adjudicated", ("lee",))}


def test_decisions_are_compared_as_decisions_so_a_stop_with_a_merges_words_is_a_pair(tmp_path):
    trace = premature()
    ws = make_workspace(tmp_path, traces=[PREMATURE])
    said = trace.event("e12").text  # late: it should have stopped with the merge's words
    ws.labelling.save_answers(trace, "e13", {"stopping_correctness": "late",
                                   "stop_should_have_been": "e11",
                                   "stop_correction": {"action": "stop", "text": said}}, ANN)
    (row,) = rows_of(ws, [trace])
    assert row["chosen"] == f"stop: {said}" and row["rejected"] == f"aggregate: {said}"
    assert row["chosen_spans"] == [[0, 5]] and row["rejected_spans"] == [[0, 10]]


def test_the_spans_are_the_word_diff_the_panel_draws():
    before, after = "stop: all three results are in.", "stop: two results are in; wait."
    removed, added = diff_spans(before, after)
    runs = word_diff(before, after)
    assert [before[a:b] for a, b in removed] == [t.strip() for op, t in runs if op == "-"]
    assert [after[a:b] for a, b in added] == [t.strip() for op, t in runs if op == "+"]


def test_a_pointer_at_a_workers_return_to_its_lead_moves_to_the_leads_return_to_the_root(
        tmp_path):
    trace = planted_trace("premature_stop", "late-return", topology="hierarchical")
    analysis = analyze(trace)
    assert not saw(analysis, "orchestrator", "e20")  # researcher_2 -> lead_1
    assert first_had(analysis, "e20", "orchestrator") == "e22"  # lead_1 -> orchestrator
    ws = make_workspace(tmp_path, traces=[trace])
    trace = ws.library.trace(trace.trace_id)  # as the library holds it
    ws.labelling.save_answers(trace, "e18", {"stopping_correctness": "premature",
                                   "stop_should_have_been": "e20"}, ANN)
    found = decision_pair_export(ws.labelling.current_records(), {trace.trace_id: trace},
                                 ws.rubric)
    rows = list(found.rows)
    at_stop, at_pointer = rows
    assert at_stop["chosen"] == "continue: wait for lead_1"  # who brings it to the root
    assert (at_pointer["event_id"], at_pointer["pointed_at"]) == ("e22", "e20")
    assert at_pointer["prompt"].endswith("lead_1 return -> orchestrator: LTO energy density "
                                         "is 133 Wh/kg, according to the manufacturer's "
                                         "whitepaper.\n")
    assert "orchestrator_decision (stop)" not in at_pointer["prompt"]
    assert any("first event at which it had it" in n for n in found.notes)


def test_a_pointer_the_stopping_agent_never_had_makes_no_pair_there_and_is_reported(tmp_path):
    trace = planted_trace("premature_stop", "still-working", topology="hierarchical")
    ws = make_workspace(tmp_path, traces=[trace])
    trace = ws.library.trace(trace.trace_id)  # as the library holds it
    ws.labelling.save_answers(trace, "e22", {"stopping_correctness": "premature",
                                   "stop_should_have_been": "e25"}, ANN)
    found = decision_pair_export(ws.labelling.current_records(), {trace.trace_id: trace},
                                 ws.rubric)
    assert [r["origin"] for r in found.rows] == ["stop_at_stop"]
    assert any("never had" in n and "e25" in n for n in found.notes)


def test_the_task_line_holds_the_tasks_words_or_says_it_has_only_an_id():
    assert task_text(premature()).startswith("Checkout p99 rose from 180 ms to 1.4 s")
    assert task_text(planted_trace("premature_stop", "all-in", control=True)).startswith("Task: report the ")
    silent = event_edited(premature(), "e1", content="")
    assert task_text(silent) == f"checkout-latency-regression {ONLY_TASK_ID}"


def test_the_cli_takes_confirmations_and_refuses_it_where_it_does_not_apply(sound, tmp_path,
                                                                            capsys):
    out = tmp_path / "pairs.jsonl"
    base = ["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
            str(tmp_path / "traces"), "-o", str(out)]
    assert main([*base, "--format", "decision-pairs", "--confirmations", "all"]) == 0
    rows = [orjson.loads(x) for x in out.read_bytes().splitlines()]
    assert {r["pair_kind"] for r in rows} == {"confirmation"}
    assert {r["origin"] for r in rows} >= {"confirm_stop", "confirm_merge", "confirm_spawn"}
    assert main([*base, "--format", "decision-pairs", "--confirmations", "none"]) == 0
    assert out.read_bytes() == b""
    assert main([*base, "--format", "unpaired", "--confirmations", "all"]) == 2
    assert "--confirmations does not apply" in capsys.readouterr().err
