"""The 'should have stopped at' pointer in every shape that encodes it, over generated
campaigns: a pointer's row is the stopping agent's own stop placed at the event pointed at
(never the pointed event's text, never averaged into another step's or trajectory's reward),
and conversations alternate roles across prompt and completion as strict chat templates
require."""

from __future__ import annotations

import statistics

from hypothesis import HealthCheck, given, settings
from test_export_roundtrip import RUBRIC, build, scenario

from viz_app.export import FORMATS, ExportInput

STOP = " orchestrator_decision (stop): "


def rows(format, case, **options):
    traces, labels, chosen = build(case)
    return list(FORMATS[format].rows(ExportInput(
        labels=labels, traces=traces, rubric=RUBRIC,
        options=chosen.model_copy(update=options))).rows)


def alternates(messages) -> bool:
    roles = [m["role"] for m in messages]
    return roles[0] == "user" and roles[-1] == "assistant" and \
        all(a != b for a, b in zip(roles, roles[1:]))


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenario)
def test_conversations_alternate_in_unpaired_and_agent_lightning_rows(case):
    for row in rows("unpaired", case, conversational=True):
        assert alternates(row["prompt"] + row["completion"]), row["event_id"]
    for row in rows("agent-lightning", case):
        assert alternates(row["prompt"]["raw_content"] + row["response"]["raw_content"])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenario)
def test_a_pointers_row_is_the_stop_placed_at_the_pointed_event(case):
    for row in rows("unpaired", case):
        if row["kind"] == "should_have_stopped":
            assert STOP in row["completion"] and row["corrects"] and row["label"] is True
            assert f"{row['agent']}{STOP}" in row["completion"]
        else:
            assert row["corrects"] is None
    for row in rows("agent-lightning", case):
        if row["metadata"]["kind"] == "should_have_stopped":
            (response,) = row["response"]["raw_content"]
            assert STOP in response["content"].splitlines()[-1]
            assert row["linked"] is False and row["metadata"]["corrects"]
    for row in rows("stepwise", case):
        assert ("should_have_stopped" in row["kinds"]) == (row["corrects"] is not None)
        if row["corrects"]:
            assert row["kinds"][-1] == "should_have_stopped" and row["labels"][-1] is True
            assert STOP in row["completions"][-1].splitlines()[-1]
            assert "should_have_stopped" not in row["kinds"][:-1]
    for row in rows("openrlhf-prm", case):
        if row["corrects"]:
            assert STOP in row["input"].splitlines()[-1] and row["label"][-1] == "+"


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=scenario)
def test_no_pointer_is_averaged_into_a_reward(case):
    for episode in rows("rllm", case):
        for trajectory in episode["trajectories"]:
            labelled = [s for s in trajectory["steps"] if s["info"]["labelled"]]
            if trajectory["info"]["corrects"]:
                (step,) = trajectory["steps"]
                assert step["info"]["kind"] == "should_have_stopped"
                assert trajectory["reward"] == step["reward"]
            elif labelled:
                assert all(s["info"]["kind"] == "decision" for s in labelled)
                assert trajectory["reward"] == statistics.fmean(s["reward"] for s in labelled)
    for row in rows("unpaired", case):
        if row["kind"] == "decision":
            assert all(a["resolution"] != "implied" for a in row["answers"])
