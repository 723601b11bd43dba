"""rLLM (rllm-org/rllm 9beb6e0, not on PyPI: its data types are vendored in data/rllm with
their licence): every `rllm` row becomes an `Episode` through rLLM's own `Episode.from_dict`, and
each trajectory validates as a `Trajectory` with its signals, from the file and the folder."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reading import file_rows, rows

RLLM = Path(__file__).resolve().parent / "data" / "rllm"
COMMIT = "9beb6e0f676a46d38858991fd79ac5f8e0b16d4c"
SOURCES = ("file", "folder")


@pytest.fixture(scope="module")
def rllm_types():
    sys.path.insert(0, str(RLLM))
    try:
        import rllm.types

        yield rllm.types
    finally:
        sys.path.remove(str(RLLM))


def test_the_vendored_types_are_rllms_at_the_pinned_commit():
    assert COMMIT in (RLLM / "README.md").read_text()
    assert (RLLM / "LICENSE").read_text().lstrip().startswith("Apache License")


@pytest.mark.parametrize("source", SOURCES)
def test_every_row_is_an_episode(shapes, rllm_types, source):
    export = shapes["rllm"]
    expected = file_rows(export)
    episodes = [rllm_types.Episode.from_dict(row) for row in rows(export, source)]
    assert [e.id for e in episodes] == [r["id"] for r in expected]
    assert [e.termination_reason.value for e in episodes] == \
        [r["termination_reason"] for r in expected]
    assert [e.is_correct for e in episodes] == [r["is_correct"] for r in expected]
    for episode, row in zip(episodes, expected):
        assert [(t.name, t.reward) for t in episode.trajectories] == \
            [(t["name"], t["reward"]) for t in row["trajectories"]]
        assert [[s.reward for s in t.steps] for t in episode.trajectories] == \
            [[s["reward"] for s in t["steps"]] for t in row["trajectories"]]


@pytest.mark.parametrize("source", SOURCES)
def test_every_trajectory_validates_with_its_signals(shapes, rllm_types, source):
    """`Trajectory(**d)` is how rLLM's engines rebuild one; its signals are name -> float."""
    export = shapes["rllm"]
    for row, want in zip(rows(export, source), file_rows(export)):
        for given, expected in zip(row["trajectories"], want["trajectories"]):
            trajectory = rllm_types.Trajectory(**given)
            assert trajectory.signals == expected.get("signals", {})


def test_no_step_follows_a_trajectorys_own_stop(shapes, rllm_types):
    """The "should have stopped at" pointer is a statement about the stop decision, so it is
    never a step placed after the agent's real stop (whose reward would be averaged into the
    trajectory's)."""
    for row in file_rows(shapes["rllm"]):
        episode = rllm_types.Episode.from_dict(row)
        for trajectory in episode.trajectories:
            stops = [i for i, s in enumerate(trajectory.steps)
                     if isinstance(s.action, dict) and s.action.get("decision") == "stop"]
            if stops:
                after = [s.info.get("event_id") for s in trajectory.steps[stops[-1] + 1:]]
                assert after == [], f"{episode.id} {trajectory.name}: steps after its stop: {after}"
