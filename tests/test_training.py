"""A run under training: groups of siblings, where siblings part, and the trainer's reward beside
the reviewers' per step, the rollouts where they part most first."""

from pathlib import Path
from types import SimpleNamespace

import pytest
from factories import make_workspace

from viz_app.io.detect import read_any
from viz_app.training import (SIBLING_STEPS, STEP_CHARS, compare_rewards, group_view, groups,
                              parting, reviewers_rewards, siblings)

ROLLOUTS = Path(__file__).resolve().parent / "fixtures" / "rollouts"
VERL = ROLLOUTS / "verl" / "gsm8k-grpo" / "rollout_data"
ART = (ROLLOUTS / "art" / ".art" / "email-agent" / "models" / "agent-7b" / "trajectories"
       / "train" / "0003.jsonl")


def row(trace_id, step, group, reward):
    return SimpleNamespace(trace_id=trace_id, rollout_step=step, rollout_group=group,
                           trainer_reward=reward)


def test_the_library_rows_of_a_run_fall_into_its_groups(tmp_path):
    ws = make_workspace(tmp_path, [VERL])
    rows = ws.library.update_index().rows
    found = groups(rows)
    assert sorted(len(g) for g in found.values()) == [3, 3]
    mine = siblings(rows, rows[4].trace_id)
    assert [r.trace_id for r in mine] == [r.trace_id for r in rows[3:]]
    assert siblings(rows, "no-such-trace") == []


def test_text_rollouts_of_one_prompt_part_at_the_response():
    traces = read_any(VERL / "3.jsonl")[:3]
    found = parting(traces)
    assert (found.position, found.by, found.shared) == (1, "content", 1)
    assert list(found.events.values()) == ["e2", "e2", "e2"]


def test_agent_rollouts_part_where_one_does_another_thing():
    first, second = read_any(ART)[:2]  # the first consults a sub-agent, the second does not
    found = parting([first, second])
    assert found.by == "length" and found.position == 5
    assert first.event(found.events[first.trace_id]).type == "spawn"
    assert found.events[second.trace_id] is None
    assert parting([first]) is None and parting([first, first]) is None


def test_the_group_view_shows_each_sibling_from_where_they_part():
    traces = read_any(VERL / "3.jsonl")[:3]
    view = group_view(traces)
    assert view.parting == parting(traces)
    assert "Natalia sold clips" in view.prompt
    assert [s.trace_id for s in view.siblings] == [t.trace_id for t in traces]
    first = view.siblings[0]
    assert first.where == "message In May she sold 48/2 = 24 clips. Altogether 48 + 24 = 72. #### 72"
    assert [(s.event_id, s.parts) for s in first.steps][0] == ("e2", True)
    assert first.steps[0].text.startswith("In May she sold")


def test_the_group_view_of_agents_marks_the_one_that_had_ended():
    first, second = read_any(ART)[:2]
    view = group_view([first, second])
    assert view.siblings[1].where == "(had ended)" and view.siblings[1].steps == []
    assert view.siblings[0].where.startswith("spawn")
    assert view.siblings[0].steps[0].parts and view.siblings[0].steps[0].type == "spawn"
    assert len(view.siblings[0].steps) <= SIBLING_STEPS
    assert all(len(s.text) <= STEP_CHARS for s in view.siblings[0].steps)
    assert group_view([first, first]).siblings[0].where == "alike throughout"


def test_the_reviewers_reward_is_their_mean_on_the_whole_run_apart_from_imports():
    records = [
        {"trace_id": "a", "event_id": "", "reward": 1.0, "source": "human"},
        {"trace_id": "a", "event_id": "", "reward": 0.0, "source": "human"},
        {"trace_id": "a", "event_id": "e3", "reward": -1.0, "source": "human"},
        {"trace_id": "b", "event_id": "e2", "reward": -0.5, "source": "human"},
        {"trace_id": "c", "event_id": "", "reward": 1.0, "source": "import"},
        {"trace_id": "d", "event_id": "", "reward": None, "source": "human"}]
    assert reviewers_rewards(records) == {"a": 0.5, "b": -0.5}


def test_per_step_the_trainer_beside_the_reviewers_and_the_widest_gaps_first():
    rows = [row("s1a", 1, "g1", 0.0), row("s1b", 1, "g1", 1.0), row("s2a", 2, "g2", 1.0),
            row("s2b", 2, "g2", 1.0), row("s2c", 2, "g3", 0.5), row("x", None, None, 0.2)]
    reviewers = {"s1a": -1.0, "s1b": 1.0, "s2a": -1.0, "s2b": 1.0}
    found = compare_rewards(rows, reviewers, model={"s2a": -0.8})
    assert found.scale == (0.0, 1.0)
    one, two = found.steps
    assert (one.step, one.rollouts, one.reviewed, one.trainer_mean) == (1, 2, 2, 0.5)
    assert one.gap == pytest.approx(0.0)  # trainer and reviewers agree at step 1
    assert (two.rollouts, two.reviewed, two.trainer_mean) == (3, 2, pytest.approx(2.5 / 3))
    assert two.trainer_reviewed_mean == 1.0 and two.reviewers_mean == 0.0
    assert two.gap == 1.0 and two.model_mean == -0.8  # the trainer rewards what reviewers do not
    assert [g.trace_id for g in found.rollouts][0] == "s2a"
    assert found.rollouts[0].gap == 2.0 and found.rollouts[0].model == -0.8
