"""The suggestion rules (viz_app.suggest.rules): each detector fires on a trace built to show its
fault, with its answer on the question's own scale, its evidence and a sentence naming it, and
stays silent on faithful traces; `ws.suggestions.run` stores a producer's suggestions once;
`orchviz suggest` runs them; `--format suggestions` exports them apart from the labels."""

from __future__ import annotations

import json
import uuid

import pytest

import detector_cases as cases
from factories import DEMO_DIR, as_trace, copy_demos, demo_paths, demo_trace, make_workspace
from viz_app.analysis import analyze
from viz_app.cli import main
from viz_app.labels.rubric import default_rubric, rubric_from_dict, targets
from viz_app.suggest import SuggestError, produce
from viz_app.suggest.rules import FINE, PRODUCER, suggest

RUBRIC = default_rubric()


def found(trace, question=None):
    """The rules' suggestions on a trace, by (event id, question)."""
    return {(s.event_id, s.question): s for s in suggest(trace, RUBRIC)
            if question is None or s.question == question}


# -- each detector fires on its fault ---------------------------------------------------------


@pytest.mark.parametrize("make, at, type, question, value, evidence_at", [
    (cases.stop_while_working, 8.0, "orchestrator_decision", "stopping_correctness",
     "premature", [9.0]),
    (cases.late_return, 8.0, "orchestrator_decision", "stopping_correctness", "premature",
     [12.0, 6.0]),
    (cases.late_stop, 40.0, "orchestrator_decision", "stopping_correctness", "late", [4.0, 36.0]),
    (cases.conflicting_merge, 6.0, "aggregate", "aggregation_quality", 1, [4.0, 4.5]),
    (cases.conflicting_merge, 6.0, "aggregate", "aggregation_issues",
     ["dropped_result", "conflict_unresolved"], [4.0, 4.5]),
    (cases.dropped_merge, 6.0, "aggregate", "aggregation_quality", 2, [4.5]),
    (cases.dropped_merge, 6.0, "aggregate", "aggregation_issues", ["dropped_result"], [4.5]),
    (cases.caveat_dropped, 6.0, "aggregate", "aggregation_quality", 2, [4.0]),
    (cases.caveat_dropped, 6.0, "aggregate", "aggregation_issues", ["unfaithful_merge"], [4.0]),
    (cases.duplicate_children, 1.2, "spawn", "spawn_necessity", "redundant", [1.1]),
    (cases.duplicate_children, 1.3, "spawn", "spawn_necessity", "redundant", [1.1]),
    (cases.late_stop, 11.0, "spawn", "spawn_necessity", "redundant", [4.0]),
    (cases.unused_child, 1.3, "spawn", "spawn_necessity", "redundant", [5.0]),
    (cases.repeated_message, 5.0, "message", "message_necessity", "redundant", [2.0]),
    (cases.ignored_message, 9.0, "message", "message_necessity", "redundant", []),
    (cases.redelegated_task, 1.0, "orchestrator_decision", "delegation_fit", "wrong_agent",
     [2.5, 4.0]),
])
def test_a_detector_fires_on_the_fault_it_looks_for(make, at, type, question, value,
                                                     evidence_at):
    trace = make()
    target = cases.event_at(trace, at, type)
    suggestion = found(trace).get((target.id, question))
    assert suggestion is not None, f"no {question} suggestion on {target.id}"
    assert suggestion.value == value
    assert 0 < suggestion.confidence <= 1
    wanted = [target.id, *(e.id for t in evidence_at for e in trace.events if e.t == t)]
    assert set(wanted) <= set(suggestion.evidence)
    assert target.id in suggestion.explanation or any(
        e in suggestion.explanation for e in suggestion.evidence)


def test_the_first_of_duplicate_children_is_not_called_redundant():
    trace = cases.duplicate_children()
    first = cases.event_at(trace, 1.1, "spawn")
    assert (first.id, "spawn_necessity") not in found(trace)


def test_the_premature_stop_that_drops_a_late_finding_is_surer_than_one_that_only_waits():
    dropped = found(cases.late_return(), "stopping_correctness")
    waiting = found(cases.stop_while_working(), "stopping_correctness")
    assert next(iter(dropped.values())).confidence > next(iter(waiting.values())).confidence


def test_a_merge_that_says_its_sources_disagree_is_not_called_unfaithful():
    raw = cases.conflicting_merge().to_dict()
    for e in raw["events"]:
        if e["type"] == "aggregate":
            e["content"] = ("Sources disagree: the census says 15.4 million and a news article "
                            "21.0 million for the population of Lagos.")
    assert found(as_trace(raw), "aggregation_quality") == {}


def test_a_merge_that_keeps_a_results_caveat_is_not_called_unfaithful():
    assert found(cases.caveat_dropped(keep_caveat=True), "aggregation_quality") == {}


def test_the_same_figure_rounded_is_no_conflict():
    raw = cases.conflicting_merge().to_dict()
    for e in raw["events"]:
        if e["type"] == "return" and "15.4" in e["content"]:
            e["content"] = e["content"].replace("15.4", "21")
    assert found(as_trace(raw), "aggregation_quality") == {}


# -- silence on faithful traces ---------------------------------------------------------------


def test_the_rules_are_silent_on_a_faithful_trace():
    assert suggest(cases.faithful(), RUBRIC) == []


@pytest.mark.parametrize("path", [p for p in demo_paths() if int(p.name[:2]) <= 8],
                         ids=lambda p: p.stem)
def test_the_rules_are_silent_on_the_faithful_demos(path):
    assert suggest(demo_trace(path.stem), RUBRIC) == []


@pytest.mark.parametrize("stem, event_id, question, value", [
    ("09_review_dropped_finding", "e12", "aggregation_quality", 1),
    ("10_review_premature_stop", "e13", "stopping_correctness", "premature"),
    ("10_review_premature_stop", "e12", "aggregation_quality", 2),
    ("11_review_late_stop", "e39", "stopping_correctness", "late"),
    ("11_review_late_stop", "e9", "spawn_necessity", "redundant"),
    ("12_review_over_spawning", "e7", "spawn_necessity", "redundant"),
])
def test_the_rules_find_the_demo_review_cases(stem, event_id, question, value):
    assert found(demo_trace(stem))[(event_id, question)].value == value


def _imported():
    """Every trace the importer fixtures hold (files that are not traces left out)."""
    from viz_app.errors import TraceError
    from viz_app.io.detect import read_any

    found = []
    for path in sorted((DEMO_DIR.parent / "tests" / "fixtures" / "importers").rglob("*")):
        try:
            found += [(path.name, t) for t in read_any(path, on_error=lambda err: None)] \
                if path.is_file() else []
        except TraceError:  # a truncated file, a trail companion file
            continue
    return found


@pytest.mark.parametrize("name, trace", _imported(), ids=lambda x: x if isinstance(x, str) else "")
def test_the_rules_run_on_every_imported_format(name, trace):
    for s in suggest(trace, RUBRIC):
        assert s.event_id in trace.events_by_id and set(s.evidence) <= set(trace.events_by_id)


def test_the_rules_run_on_the_hostile_trace():
    from viz_app.synth import hostile_trace

    assert suggest(as_trace(hostile_trace()), RUBRIC) == []


def test_fine_names_an_answer_of_every_question_the_rules_answer():
    for question, value in FINE.items():
        q = RUBRIC.question(question)
        assert all(q.choice(v) is not None for v in (value if q.kind == "tags" else [value]))


# -- what a suggestion is -------------------------------------------------------------------


def test_a_suggestion_names_its_producer_and_the_trace_version():
    trace = demo_trace("10_review_premature_stop")
    s = found(trace)[("e13", "stopping_correctness")]
    assert s.producer == PRODUCER and s.producer.name == "rules" and s.producer.version
    assert s.trace_sha256 == trace.sha256 and s.trace_id == trace.trace_id
    assert s.explanation.startswith("premature: e15")


def test_a_rubric_without_the_question_gets_no_suggestion_on_it():
    raw = RUBRIC.model_dump(mode="json", exclude={"sha256"})
    raw["questions"] = [q for q in raw["questions"]
                        if q["id"] in ("aggregation_quality", "task_outcome")]
    rubric = rubric_from_dict(raw)
    made, failed = produce(demo_trace("10_review_premature_stop"), rubric, "rules")
    assert [(s.event_id, s.question) for s in made] == [("e12", "aggregation_quality")]
    assert failed == []


def test_an_unknown_producer_is_refused_in_one_sentence():
    with pytest.raises(SuggestError, match="unknown producer"):
        produce(cases.faithful(), RUBRIC, "oracle")


# -- the rubric's new questions ---------------------------------------------------------------


def test_spawns_and_delegations_are_optional_targets():
    spawn_trace, delegate_trace = cases.duplicate_children(), cases.redelegated_task()
    spawns = [t for t in targets(RUBRIC, analyze(spawn_trace)) if "spawn" in t.kinds]
    delegations = [t for t in targets(RUBRIC, analyze(delegate_trace)) if "delegate" in t.kinds]
    assert len(spawns) == 3 and all(t.questions == ["spawn_necessity", "spawn_correction"]
                                    and not t.required for t in spawns)
    assert len(delegations) == 2 and all(
        t.questions == ["delegation_fit", "delegation_correction", "missed_decision"]
        for t in delegations)
    for question in ("spawn_necessity", "delegation_fit"):
        q = RUBRIC.question(question)
        assert q.optional and q.credit_unit == "agent" and q.family == "R7" and q.rewarded
    assert RUBRIC.question("spawn_necessity").sub_decision == "O1"
    assert RUBRIC.question("delegation_fit").sub_decision == "O2"


def test_a_spawn_label_is_exported_with_its_reward(tmp_path):
    trace = cases.duplicate_children()
    ws = make_workspace(tmp_path, traces=[trace])
    spawn = cases.event_at(trace, 1.2, "spawn")
    ws.labelling.save(trace, "spawn_necessity", "redundant", "ann", spawn.id)
    out = ws.exports.write("jsonl", tmp_path / "labels.jsonl")
    [row] = [json.loads(line) for line in out.written[0].read_text().splitlines()]
    assert (row["question"], row["event_id"], row["reward"]) == ("spawn_necessity", spawn.id, -0.5)


# -- the workspace stores suggestions once ----------------------------------------------------


def test_running_the_rules_twice_adds_nothing(tmp_path):
    ws = make_workspace(tmp_path)
    traces = [cases.late_stop(), cases.faithful()]
    first = ws.suggestions.run(traces)
    again = ws.suggestions.run(traces)
    assert (first.traces, first.suggestions, first.added) == (2, 3, 3)
    assert (again.suggestions, again.added, again.failures) == (3, 0, [])
    assert len(ws.suggestions.all("case-late-stop")) == 3


def test_suggestions_are_read_by_event_and_question(tmp_path):
    ws = make_workspace(tmp_path)
    trace = cases.late_stop()
    ws.suggestions.run([trace])
    stop = cases.event_at(trace, 40.0)
    [late] = ws.suggestions.all(trace.trace_id, event_id=stop.id)
    assert late.value == "late" and late.evidence[0] == stop.id and late.created_at
    assert len(ws.suggestions.all(trace.trace_id, question="spawn_necessity")) == 2
    assert ws.suggestions.all("no-such-trace") == []


def test_a_producer_that_trips_on_a_trace_is_recorded_and_the_run_goes_on(tmp_path):
    class Tripping:
        producer = PRODUCER.model_copy(update={"name": "judge", "model": "m"})

        def produce(self, trace, rubric):
            if trace.trace_id == "case-faithful":
                raise RuntimeError("boom")
            return suggest(trace, rubric), []

    ws = make_workspace(tmp_path)
    report = ws.suggestions.run([cases.faithful(), cases.late_stop()], producer="judge",
                        judge=Tripping())
    assert report.traces == 2 and report.added == 3
    [failure] = report.failures
    assert failure.trace_id == "case-faithful" and "boom" in failure.error
    assert ws.suggestions.failures("case-faithful")[0].error == failure.error


def test_the_judge_producer_needs_a_judge(tmp_path):
    with pytest.raises(SuggestError, match="needs a judge"):
        make_workspace(tmp_path).suggestions.run([cases.faithful()], producer="judge")


@pytest.mark.postgres
def test_suggestions_are_stored_once_in_postgresql(tmp_path, postgres_url):
    raw = cases.late_stop().to_dict()
    raw["trace_id"] = f"case-late-stop-{uuid.uuid4().hex[:8]}"
    trace = as_trace(raw)
    ws = make_workspace(tmp_path, db=postgres_url)
    assert ws.suggestions.run([trace]).added == 3 and ws.suggestions.run([trace]).added == 0
    assert {s.question for s in ws.suggestions.all(trace.trace_id)} == {"stopping_correctness",
                                                                    "spawn_necessity"}


# -- the command line and the export ------------------------------------------------------------


def test_orchviz_suggest_runs_the_rules_with_and_without_the_run_verb(tmp_path, capsys):
    folder = copy_demos(tmp_path / "demos")
    db = str(tmp_path / "s.db")
    assert main(["suggest", "--traces", str(folder), "--db", db]) == 0
    assert "rules: 12 traces, 20 suggestions (20 new), 0 failures" in capsys.readouterr().out
    assert main(["suggest", "run", "--traces", str(folder), "--db", db]) == 0
    assert "20 suggestions (0 new)" in capsys.readouterr().out


@pytest.mark.parametrize("args, said", [
    (["--producer", "judge"], "--producer judge needs --judge-url and --judge-model"),
    ([], None),
])
def test_orchviz_suggest_says_what_is_missing_in_one_line(tmp_path, capsys, args, said):
    traces = [] if said is None else ["--traces", str(DEMO_DIR)]
    assert main(["suggest", "--db", str(tmp_path / "s.db"), *traces, *args]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("orchviz: ")
    assert (said or "--traces") in err


def test_suggestions_export_on_their_own_and_never_with_the_labels(tmp_path, capsys):
    folder = copy_demos(tmp_path / "demos", ["10_review_premature_stop", "11_review_late_stop"])
    db = str(tmp_path / "s.db")
    ws = make_workspace(tmp_path, traces=[folder], db=db)
    ws.labelling.save(ws.library.trace("demo-10-review-premature-stop"), "stopping_correctness", "correct",
                   "ann", "e13")
    assert main(["suggest", "--traces", str(folder), "--db", db]) == 0
    out, labels = tmp_path / "s.jsonl", tmp_path / "l.jsonl"
    assert main(["labels", "export", "--db", db, "--format", "suggestions", "-o", str(out)]) == 0
    assert main(["labels", "export", "--db", db, "--format", "jsonl", "-o", str(labels)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 11 and "11 suggestions -> " in capsys.readouterr().out
    premature = next(r for r in rows if r["question"] == "stopping_correctness"
                     and r["trace_id"] == "demo-10-review-premature-stop")
    assert premature["event_id"] == "e13" and premature["value"] == "premature"
    assert premature["producer"] == {"name": "rules", "version": PRODUCER.version, "model": "",
                                     "prompt_sha256": ""}
    assert premature["evidence"] == ["e13", "e15", "e12"] and 0 < premature["confidence"] <= 1
    assert {"question", "explanation", "trace_sha256", "created_at"} <= set(premature)
    [label] = [json.loads(line) for line in labels.read_text().splitlines()]
    assert label["value"] == "correct" and label["reviewer"] == "ann"


def test_orchviz_suggest_asks_a_judge_and_says_what_failed(tmp_path, capsys):
    from openai_stub import OpenAIStub, Reply

    from factories import PREMATURE

    table = {("stopping_correctness", "e13"): Reply.answer("premature", 0.8, ("e15",),
                                                           "e15 came after the stop")}
    db = str(tmp_path / "s.db")
    with OpenAIStub(table) as stub:
        code = main(["suggest", "--traces", str(PREMATURE), "--db", db, "--producer", "judge",
                     "--judge-url", stub.url, "--judge-model", "stub-model",
                     "--judge-key-env", "ORCHVIZ_TEST_NO_SUCH_KEY"])
    said = capsys.readouterr()
    assert code == 0 and "judge: 1 traces, 1 suggestions (1 new)" in said.out
    assert "failed: demo-10-review-premature-stop e12 aggregation_quality" in said.err
    [kept] = make_workspace(tmp_path, db=db).suggestions.all("demo-10-review-premature-stop")
    assert (kept.producer.name, kept.producer.model, kept.value) == ("judge", "stub-model",
                                                                    "premature")
