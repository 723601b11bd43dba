"""rLLM's shape, checked against rllm/types.py (rllm-org/rllm 9beb6e0): an Episode per trace, a
Trajectory per agent with `signals`, Steps with every key `Step.from_dict` reads. rLLM itself is
not installed here (it pulls tinker and a training stack), so the key sets it reads are written
out below as they stand at that commit."""

from __future__ import annotations

import json

import pytest

from factories import PREMATURE, make_workspace, premature
from viz_app.cli import main
from viz_app.export.readers import read_export
from viz_app.export.rllm import EPISODE_KEYS, STEP_KEYS, TRAJECTORY_KEYS

STEP_FROM_DICT = {"prompt_ids", "response_ids", "logprobs", "chat_completions", "observation",
                  "thought", "action", "model_response", "reward", "done", "mc_return"}
"""Keys `Step.from_dict` indexes without a default (rllm/types.py)."""
TRAJECTORY_FROM_DICT = {"name", "task", "reward"}
EPISODE_FROM_DICT = {"id", "task", "is_correct", "trajectories"}
TERMINATION_REASONS = {"max_prompt_length_exceeded", "max_response_length_exceeded",
                       "env_done", "max_turns_exceeded", "timeout", "unknown", "error"}
"""`rllm.workflows.workflow.TerminationReason` values."""


@pytest.fixture
def episode(tmp_path):
    raw = premature().to_dict()
    for event in raw["events"]:
        if event["id"] == "e12":
            event.update(prompt_token_ids=[1, 2], response_token_ids=[3])
    ws = make_workspace(tmp_path, traces=[raw])
    trace = ws.library.trace(raw["trace_id"])
    for reviewer in ("ann", "bob"):
        ws.labelling.save(trace, "aggregation_quality", 4, reviewer, "e12")
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                             "stop_should_have_been": "e15"}, reviewer)
    ws.labelling.save(trace, "task_outcome", "failure", "ann")
    out = tmp_path / "rllm.jsonl"
    assert main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(tmp_path / "traces"), "--format", "rllm", "-o", str(out)]) == 0
    (found,) = [json.loads(line) for line in out.read_text().splitlines()]
    return found


def test_the_keys_are_rllms(episode):
    assert list(episode) == list(EPISODE_KEYS) and EPISODE_FROM_DICT <= set(episode)
    assert episode["termination_reason"] in TERMINATION_REASONS
    for trajectory in episode["trajectories"]:
        assert set(TRAJECTORY_KEYS) | {"signals"} == set(trajectory)
        assert TRAJECTORY_FROM_DICT <= set(trajectory)
        for step in trajectory["steps"]:
            assert list(step) == list(STEP_KEYS) and STEP_FROM_DICT <= set(step)


def test_one_trajectory_per_agent_with_the_orchestrators_labels_on_its_steps(episode):
    assert episode["id"] == "checkout-latency-regression:demo-10-review-premature-stop"
    by_name = {t["name"]: t for t in episode["trajectories"] if not t["info"]["corrects"]}
    assert set(by_name) == {"orchestrator", "log_analyst", "deploy_analyst", "db_analyst"}
    orchestrator = by_name["orchestrator"]
    labelled = {s["info"]["event_id"]: s for s in orchestrator["steps"] if s["info"]["labelled"]}
    assert set(labelled) == {"e12", "e13"}
    assert (labelled["e12"]["reward"], labelled["e13"]["reward"]) == (0.5, -1.0)
    assert labelled["e12"]["info"]["merged"] == ["e10", "e11"]
    assert orchestrator["signals"] == {"aggregation_quality": 0.5,
                                       "stopping_correctness": -1.0, "task_outcome": -1.0}
    assert orchestrator["reward"] == pytest.approx((0.5 - 1.0) / 2)  # its steps, no pointer


def test_the_pointer_is_the_orchestrators_stop_in_a_trajectory_of_its_own(episode):
    (pointer,) = [t for t in episode["trajectories"] if t["info"]["corrects"]]
    assert pointer["name"] == "orchestrator" and pointer["info"]["corrects"] == "e13"
    assert pointer["uid"].endswith(":orchestrator:should_have_stopped:e15")
    (step,) = pointer["steps"]
    assert step["reward"] == pointer["reward"] == 1.0 and step["done"] is True
    assert step["action"]["decision"] == "stop"
    assert step["model_response"].startswith("Two of three analysts agree")  # not e15's text
    last = step["observation"].splitlines()[-1]  # up to and including the pointed event
    assert last.startswith("[t=50.2] db_analyst return -> orchestrator: ROOT CAUSE")
    assert "[t=31]" not in step["observation"]  # the stop it corrects is not in its context
    assert (step["info"]["kind"], step["info"]["event_id"]) == ("should_have_stopped", "e15")
    assert step["info"]["call_json"] == "{}" and step["response_ids"] == []


def test_unlabelled_steps_say_so_and_token_ids_pass_through(episode):
    orchestrator = next(t for t in episode["trajectories"] if t["name"] == "orchestrator")
    steps = {s["info"]["event_id"]: s for s in orchestrator["steps"]}
    assert steps["e1"]["info"]["labelled"] is False and steps["e1"]["reward"] == 0.0
    assert (steps["e12"]["prompt_ids"], steps["e12"]["response_ids"]) == ([1, 2], [3])
    assert orchestrator["steps"][-1]["done"] is True


def test_the_episode_keeps_the_outcome_and_reads_back(episode, tmp_path):
    assert episode["is_correct"] is False and episode["info"]["outcome_reward"] == -1.0
    assert episode["metrics"] == {"aggregation_quality": 0.5, "stopping_correctness": -1.0,
                                  "task_outcome": -1.0}
    back = read_export("rllm", tmp_path / "rllm.jsonl")
    assert len(back) == 7 and {r["question"] for r in back} == {
        "aggregation_quality", "stopping_correctness", "stop_should_have_been",
        "task_outcome"}


def test_an_rllm_step_without_a_label_defaults_as_rllms_does(episode):
    """rLLM's Step has reward 0.0, done False, mc_return 0.0 by default: unlabelled steps
    look like its defaults, so a trainer reading them adds nothing a label did not say."""
    for trajectory in episode["trajectories"]:
        for step in trajectory["steps"]:
            if not step["info"]["labelled"]:
                assert (step["reward"], step["mc_return"], step["advantage"]) == (0.0, 0.0, None)
