"""Who&When tasks become traces with the published annotation on the blamed step, and the
annotation goes into the label store as imported labels."""

import pytest
from importing import (FIXTURES, assert_reference_valid, delegations, spawns, stop_agents,
                       warning_codes)

from factories import make_workspace
from viz_app.analysis import analyze
from viz_app.io.whowhen import annotation, annotation_records, import_whowhen, speaker


@pytest.fixture(scope="module")
def magentic():
    (trace,) = import_whowhen(FIXTURES / "whowhen_magentic.json")
    return trace


def test_magentic_run_validates_against_the_reference_schema(magentic):
    assert_reference_valid(magentic)


def test_arrow_roles_are_delegations_that_spawn_their_target(magentic):
    assert delegations(magentic) == [("Orchestrator", "WebSurfer"), ("Orchestrator", "Assistant")]
    assert spawns(magentic) == delegations(magentic)


def test_termination_condition_is_the_stop(magentic):
    assert stop_agents(magentic) == ["Orchestrator"]


def test_thought_is_a_decision_and_final_answer_an_aggregate(magentic):
    kinds = {e.extras["source_id"]: (e.type, e.decision) for e in magentic.events}
    assert kinds["history[1]"] == ("orchestrator_decision", "continue")
    assert kinds["history[8]"] == ("aggregate", None)


def test_steps_happen_at_their_index(magentic):
    assert all(e.t == int(e.extras["source_id"][8:-1]) for e in magentic.events
               if e.extras.get("source_id", "").startswith("history["))


def test_annotation_sits_on_the_mistaken_step(magentic):
    found = annotation(magentic)
    event = magentic.event(found["event_id"])
    assert event.extras["source_id"] == "history[6]"
    assert (found["mistake_agent"], event.agent) == ("Assistant", "Assistant")
    assert "live album" in found["mistake_reason"]
    assert magentic.metrics == {"mistake_step": 6, "task_success": 0.0}


def test_speaker_reads_role_notes():
    assert speaker({"role": "Orchestrator (-> WebSurfer)"}) == ("Orchestrator", "-> WebSurfer")
    assert speaker({"role": "assistant", "name": "Coder"}) == ("Coder", None)


@pytest.fixture(scope="module")
def group_chat():
    (trace,) = import_whowhen(FIXTURES / "whowhen_algorithm_generated.json")
    return trace


@pytest.fixture(scope="module")
def unterminated():
    (trace,) = import_whowhen(FIXTURES / "whowhen_magentic_unterminated.json")
    return trace


def test_algorithm_generated_group_chat_is_messages_to_the_next_speaker(group_chat):
    assert_reference_valid(group_chat)
    assert [(e.agent, e.to) for e in group_chat.events if e.type == "message"] == [
        ("DataAnalysis_Expert", "Computer_terminal"), ("DataAnalysis_Expert", "Computer_terminal"),
        ("Computer_terminal", "Verification_Expert"), ("DataAnalysis_Expert", None)]
    assert annotation(group_chat)["mistake_agent"] == "DataAnalysis_Expert"


def test_the_subsets_are_named_as_the_dataset_names_them(magentic, group_chat):
    """Defect: the docs called the group chats hand-crafted; Hand-Crafted is Magentic-One."""
    assert annotation(magentic)["found"]["subset"] == "Hand-Crafted"
    assert annotation(group_chat)["found"]["subset"] == "Algorithm-Generated"
    docs = (FIXTURES.parents[2] / "docs" / "importers.md").read_text("utf-8")
    assert "Hand-Crafted subset (Magentic-One)" in docs
    assert "Algorithm-Generated subset (CaptainAgent group chats)" in docs


def test_an_inferred_stop_follows_the_runs_last_event_not_the_orchestrators(unterminated):
    """Defect: the stop was put after the orchestrator's last event, before a worker's reply."""
    a = analyze(unterminated)
    (stop,) = a.stops
    last_reply = [e for e in a.order if e.type == "return"][-1]
    assert last_reply.agent == "WebSurfer"
    assert a.position[stop.event_id] > a.position[last_reply.id]
    assert (stop.agent, unterminated.event(stop.event_id).extras["inferred_by"]) == (
        "Orchestrator", "importer")


def test_a_blamed_agent_who_does_not_speak_at_the_step_is_warned_and_marked_uncertain(
        unterminated):
    """Defect: the label went on the step silently although another agent speaks there."""
    assert "annotation_agent_mismatch" in warning_codes(unterminated)
    found = annotation(unterminated)
    event = unterminated.event(found["event_id"])
    assert (event.agent, found["mistake_agent"], found["found"]["speaker"]) == (
        "Orchestrator", "WebSurfer", "Orchestrator")
    records = annotation_records(unterminated, {"task_outcome", "mistake_agent", "mistake_step"})
    by_question = {r["question"]: r for r in records}
    assert by_question["task_outcome"]["mapping"] == "certain"
    assert by_question["mistake_agent"]["mapping"] == "uncertain"
    assert by_question["mistake_step"]["value"] == found["event_id"]
    assert by_question["mistake_step"]["comment"].startswith("[uncertain mapping: Who&When "
                                                             "blames WebSurfer")


def test_mistake_type_labels_ground_truth_and_prompts_are_kept(group_chat, unterminated):
    """Defect: mistake_type, labels, ground_truth and the experts' system prompts were dropped."""
    record = annotation(group_chat)["record"]
    assert (record["mistake_type"], record["labels"]) == ("incomplete data retrieval",
                                                          ["data", "verification"])
    assert record["ground_truth"] == "2019" and "history" not in record
    prompts = {e.agent: e.extras["system_prompt"] for e in group_chat.events
               if "system_prompt" in e.extras}
    assert set(prompts) == {"DataAnalysis_Expert", "Verification_Expert"}
    (aggregate,) = [e for e in group_chat.events if e.type == "aggregate"]
    assert aggregate.extras["ground_truth"] == "2019"
    assert annotation(unterminated)["record"]["groundtruth"] == "4"
    (outcome,) = annotation_records(group_chat, {"task_outcome"})
    assert "raw tags: mistake_type=incomplete data retrieval" in outcome["comment"]


def test_a_group_chat_has_an_aggregate_of_the_other_experts_and_a_stop(group_chat):
    """Defect: the group-chat runs got no stop and no aggregate at all."""
    a = analyze(group_chat)
    (point,) = a.aggregates
    merged = [group_chat.event(i) for i in point.inputs]
    assert [e.agent for e in merged] == ["DataAnalysis_Expert", "Computer_terminal"]
    assert (point.agent, group_chat.event(point.event_id).content) == (
        "Verification_Expert", "2018 had the most rainfall: 800 mm.")
    (stop,) = a.stops
    assert stop.inferred is False and a.position[stop.event_id] == len(a.order) - 1


def test_annotation_is_stored_once_as_an_imported_label(magentic, tmp_path):
    workspace = make_workspace(tmp_path)
    assert workspace.labelling.import_published([magentic]) == 1
    assert workspace.labelling.import_published([magentic]) == 0
    (label,) = workspace.labelling.all()
    assert (label.source, label.origin, label.question, label.value) == (
        "import", "Who&When", "task_outcome", "failure")
    assert "step 6" in label.comment


def test_indexing_a_folder_writes_no_label_only_importing_does(tmp_path):
    """Indexing (the app's library) never writes labels; `import_published_labels` does."""
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "run.json").write_bytes((FIXTURES / "whowhen_magentic.json").read_bytes())
    workspace = make_workspace(tmp_path, traces=[folder])
    workspace.library.update_index()
    assert workspace.labelling.count() == 0
    traces = workspace.library.read_traces().traces
    assert workspace.labelling.import_published(traces.values()) == 1


def test_a_published_annotation_is_checked_against_the_workspaces_own_rubric(magentic, tmp_path):
    from viz_app.labels.rubric import default_rubric, rubric_from_dict

    raw = default_rubric().model_dump(mode="json", exclude={"sha256"})
    raw["version"] = "team-1"
    rubric = rubric_from_dict(raw)
    workspace = make_workspace(tmp_path, rubric=rubric)
    assert workspace.labelling.import_published([magentic]) == 1
    (label,) = workspace.labelling.all()
    assert (label.rubric_version, label.rubric_sha256) == ("team-1", rubric.sha256)
    assert rubric.sha256 != default_rubric().sha256


def test_two_runs_of_one_question_are_two_traces(tmp_path):
    """Defect: the trace id was the question's, and the dataset asks a question in several runs
    (45 of its 184), so importing it made one trace of several."""
    hc, ag = tmp_path / "Hand-Crafted", tmp_path / "Algorithm-Generated"
    hc.mkdir(), ag.mkdir()
    for name in ("3.json", "7.json"):
        (ag / name).write_bytes((FIXTURES / "whowhen_algorithm_generated.json").read_bytes())
    (hc / "3.json").write_bytes((FIXTURES / "whowhen_magentic.json").read_bytes())
    found = [import_whowhen(p)[0] for p in (ag / "3.json", ag / "7.json", hc / "3.json")]
    assert [t.trace_id for t in found] == ["whowhen-ag-3", "whowhen-ag-7", "whowhen-hc-3"]
    assert found[0].task_id == found[1].task_id == "ag-rain-7"
