"""The training-run page read as a reward-hacking alarm (AppTest): where the trainer's reward and
the reviewers' part, the steps that part most and the rollouts that part most (of every step,
or of the step picked), each rollout a link to its trace and its group; the chart's axes and
series say what they are, its hover boxes name the rollout most apart at each step, and a
trainer's id (its text) is escaped there."""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest
from streamlit.testing.v1 import AppTest

from factories import APP, app_env, make_workspace
from viz_app.labels.label import Reviewer

ANN = Reviewer(name="ann", via="self-declared")
HOSTILE = '<img src=x onerror="alert(1)">&amp;'


def verl_step(step: int, scores: list[float], ids: list[str]) -> bytes:
    return b"".join(json.dumps({"input": f"user\nQ{step}\nassistant\n", "output": f"#### {i}",
                                "gts": "1", "score": score, "step": step,
                                "request_id": request}).encode() + b"\n"
                    for i, (score, request) in enumerate(zip(scores, ids)))


@pytest.fixture
def run_env(tmp_path, monkeypatch):
    """A verl run of three steps: at step 2 the trainer rewards (1.0) two rollouts reviewers
    call failures, one of them with an id that is HTML; elsewhere they agree."""
    run = tmp_path / "run" / "rollout_data"
    run.mkdir(parents=True)
    (run / "1.jsonl").write_bytes(verl_step(1, [1.0, 0.0], ["s1-a", "s1-b"]))
    (run / "2.jsonl").write_bytes(verl_step(2, [1.0, 1.0, 0.0], [HOSTILE, "s2-b", "s2-c"]))
    (run / "3.jsonl").write_bytes(verl_step(3, [0.0, 1.0], ["s3-a", "s3-b"]))
    ws = app_env(monkeypatch, make_workspace(tmp_path, traces=[run]))
    said = {"s1-a": "success", "s1-b": "failure", HOSTILE: "failure", "s2-b": "failure",
            "s2-c": "failure", "s3-a": "failure", "s3-b": "success"}
    for trace_id, value in said.items():
        ws.labelling.save_answers(ws.library.trace(trace_id), "", {"task_outcome": value}, ANN)
    return ws


def run_page() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.switch_page("app_pages/run.py")
    return at


def chart(at: AppTest) -> dict:
    (element,) = at.get("plotly_chart")
    return json.loads(element.proto.spec)


def trace_ids(frame) -> list[str]:
    return [unquote(link.removeprefix("trace?trace=")) for link in frame["trace id"]]


def test_the_steps_and_rollouts_that_part_most_each_one_click_from_its_trace(run_env):
    at = run_page().run()
    assert not at.exception, at.exception
    steps, gaps = (d.value for d in at.dataframe)
    assert steps["step"].tolist()[0] == 2 and steps["gap"].tolist()[0] > 1  # the alarm first
    assert trace_ids(gaps)[:2] == sorted([HOSTILE, "s2-b"])  # trainer 1.0, reviewers -1
    assert gaps["trace id"][0] == "trace?trace=" + "%3Cimg%20src%3Dx%20onerror%3D%22alert" \
        "%281%29%22%3E%26amp%3B"  # a link to exactly that trace, the id quoted whole
    assert gaps["group"][0].startswith("group?group=train:2:")

    figure = chart(at)
    names = [s["name"] for s in figure["data"]]
    assert names[:3] == ["trainer, all rollouts", "trainer, reviewed rollouts", "reviewers"]
    assert any(n.startswith("▲ trainer ≥ reviewers + 0.5") for n in names)
    alarm = next(s for s in figure["data"] if s["name"].startswith("▲"))
    assert alarm["x"] == [2]
    layout = figure["layout"]
    assert layout["xaxis"]["title"]["text"] == "training step"
    assert "mean reward" in layout["yaxis"]["title"]["text"]

    hover = json.dumps([s.get("customdata") for s in figure["data"]])
    assert "<img" not in hover and "&lt;img src=x onerror=" in hover  # escaped for Plotly
    assert "&amp;amp;" in hover  # its own & too, as text


def test_a_step_picked_lists_its_rollouts_alone(run_env):
    at = run_page().run()
    at.session_state["run_steps"] = {"selection": {"rows": [2]}}  # the steps' third: step 1
    at = at.run()
    assert not at.exception, at.exception
    steps, gaps = (d.value for d in at.dataframe)
    picked = steps["step"].tolist()[2]
    assert set(gaps["step"]) == {picked} and len(gaps) == 2
    assert any(f"at step {picked}" in m.value for m in at.markdown)


def test_the_page_prints_no_stray_text(run_env):
    at = run_page().run()
    assert not any("this far above" in m.value for m in at.markdown)


def test_the_reward_models_line_when_one_is_stored(run_env, monkeypatch):
    """Beside the newest reward model's: its mean per step is a series of its own, named, and
    a column of the steps and rollouts tables. (The model stands in for one `orchviz reward
    train` stores: the scoring is the reward package's, tested there.)"""
    import viz_app.training
    from viz_app.workspace.rewards import Rewards

    monkeypatch.setattr(Rewards, "models", lambda self: ["newest"])
    monkeypatch.setattr(viz_app.training, "model_rewards",
                        lambda model, traces, rubric: {t.trace_id: 0.25 for t in traces})
    at = run_page().run()
    at = at.toggle(key="run_model").set_value(True).run()
    assert not at.exception, at.exception
    series = {s["name"]: s for s in chart(at)["data"]}
    assert "reward model" in series and series["reward model"]["y"][1] == 0.25
    assert "reward model" in series["reward model"]["hovertemplate"]
    steps, gaps = (d.value for d in at.dataframe)
    assert "reward model" in steps.columns and set(gaps["reward model"]) == {0.25}
