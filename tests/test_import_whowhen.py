"""Who&When tasks become traces with the published annotation on the blamed step, and the
annotation goes into the label store as imported labels."""

import pytest
from importing import FIXTURES, assert_reference_valid, delegations, spawns, stop_agents

from viz_app.io.whowhen import annotation, import_annotation, import_whowhen, speaker


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


def test_hand_crafted_group_chat_is_messages_to_the_next_speaker():
    (trace,) = import_whowhen(FIXTURES / "whowhen_handcrafted.json")
    assert_reference_valid(trace)
    assert [(e.agent, e.to) for e in trace.events if e.type == "message"] == [
        ("DataAnalysis_Expert", "Computer_terminal"),
        ("Computer_terminal", "Verification_Expert"), ("Verification_Expert", None)]
    assert annotation(trace)["mistake_agent"] == "DataAnalysis_Expert"


def test_annotation_is_stored_once_as_an_imported_label(magentic, tmp_path):
    from viz_app.labels.store import open_store

    url = f"sqlite:///{tmp_path / 'labels.db'}"
    assert import_annotation(magentic, url) == 1
    assert import_annotation(magentic, url) == 0
    (label,) = open_store(url).all()
    assert (label.source, label.origin, label.question, label.value) == (
        "import", "Who&When", "task_outcome", "failure")
    assert "step 6" in label.comment
