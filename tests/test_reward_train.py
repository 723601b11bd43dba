"""`orchviz reward train`: the reward model learns the team's answers and decision pairs per
sub-decision, is measured on traces it never saw against a baseline that reads no decision, is
stored under its training set's hash and refits to the same weights."""

from __future__ import annotations

import json

import pytest

from reward_cases import labelled_workspace
from viz_app.cli import main
from viz_app.reward.decisions import text_decisions, trace_decisions
from viz_app.reward.model import RewardError
from viz_app.reward.scoring import SklearnScorer, read_model_file, write_model_file

pytest.importorskip("sklearn", reason="the reward model needs scikit-learn (the test extra)")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("reward-train")
    ws, traces = labelled_workspace(folder, every=6)
    model, added = ws.rewards.train(resamples=200)
    return ws, traces, model, added, folder


def test_the_model_learns_each_sub_decision_and_beats_the_length_baseline(trained):
    _, _, model, added, _ = trained
    assert added
    report = {s.sub_decision: s for s in model.report.sub_decisions}
    assert set(report) == {"O1", "O4", "O5"}  # the planted cases label spawns, merges, stops
    for sub in ("O1", "O4"):
        found = report[sub]
        assert found.answered > 20
        assert found.pairwise_answers.low is not None  # an interval, over traces
        # held out, the model orders the team's answers far better than length does
        assert found.pairwise_answers.value > 0.8
        assert found.pairwise_answers.value > found.pairwise_answers_baseline.value + 0.15
        rows = {row.rater: row for row in found.agreement}
        assert rows["reward-model"].alpha.value > 0.3
        assert rows["reward-model"].alpha.low is not None
        assert rows["reward-model"].alpha.value > rows["length-baseline"].alpha.value
    # merge corrections and confirmations became preferences; held out, most chosen merges
    # score above their rejected side (20 pairs: a wide interval)
    assert report["O4"].pairs > 0
    assert report["O4"].pairwise_pairs.value >= 0.6


def test_the_model_is_stored_with_its_hash_versions_and_refits_the_same_weights(trained):
    ws, traces, model, _, _ = trained
    (stored,) = ws.rewards.models()
    assert stored.model_id == model.model_id and len(stored.model_id) == 64
    assert stored.weights_sha256 == model.weights_sha256
    assert {"orchviz", "scikit-learn", "numpy", "scipy"} <= set(stored.versions)
    assert stored.report == model.report
    decisions = [d for t in traces[:5] for d in trace_decisions(t, ws.rubric)]
    assert stored.score(decisions).tolist() == model.score(decisions).tolist()
    # the same labels train the same model, which is not stored twice
    again, added = ws.rewards.train(resamples=0)
    assert again.model_id == model.model_id and not added


def test_a_refit_that_gives_other_weights_is_refused_in_one_sentence(trained):
    _, _, model, _, _ = trained
    altered = model.model_copy(update={"weights_sha256": "0" * 64})
    altered.__dict__.pop("_heads", None)
    with pytest.raises(RewardError, match="refits to other weights than it was trained with"):
        altered.heads()


def test_a_model_file_reads_back_to_the_same_scores(trained, tmp_path):
    ws, traces, model, _, _ = trained
    path = tmp_path / "model.json"
    write_model_file(model, path)
    again = SklearnScorer(read_model_file(path), ws.rubric)
    mine = SklearnScorer(model, ws.rubric)
    assert [s.team_reward for s in again.score_rollouts(traces[:4])] == \
        [s.team_reward for s in mine.score_rollouts(traces[:4])]
    (tmp_path / "other.json").write_text('{"kind": "something"}')
    with pytest.raises(RewardError, match="is not a reward model file"):
        read_model_file(tmp_path / "other.json")


def test_a_rollout_scores_each_decision_and_the_team_reward_is_their_mean(trained):
    ws, traces, model, _, _ = trained
    (score,) = SklearnScorer(model, ws.rubric).score_rollouts(traces[:1])
    assert score.model_version == model.version
    assert score.decisions and {d.sub_decision for d in score.decisions} <= {"O1", "O2", "O3",
                                                                            "O4", "O5"}
    assert all(-1.0 <= d.reward <= 1.0 for d in score.decisions)
    assert score.team_reward == pytest.approx(
        sum(d.reward for d in score.decisions) / len(score.decisions))


def test_a_text_is_read_as_the_event_lines_a_prompt_writes():
    text = ("[t=1] orchestrator spawn -> worker_1: Spawn worker_1 to find the price.\n"
            "some words the policy wrote\n"
            "[t=9] orchestrator aggregate: The price is 12 USD.\n")
    found = text_decisions(text, prompt="Task: t1\nOrchestration:\n")
    assert [d.sub_decision for d in found] == ["O1", "O4"]
    assert "Spawn worker_1" in found[1].context  # what came before is the context
    assert "Task: t1" in found[0].context
    (plain,) = text_decisions("no event lines at all")
    assert plain.sub_decision == "any"


def test_the_cli_trains_prints_the_figures_and_writes_the_model_file(trained, tmp_path,
                                                                     capsys):
    ws, traces, model, _, folder = trained
    out = tmp_path / "model.json"
    code = main(["reward", "train", "--db", str(folder / "orchviz.db"), "--resamples", "50",
                 "-o", str(out)])
    said = capsys.readouterr().out
    assert code == 0, said
    assert "pairwise accuracy over answers" in said and "alpha" in said
    assert "baseline" in said and model.version in said
    assert read_model_file(out).model_id == model.model_id
    code = main(["reward", "score", "--model", str(out), str(traces[0].source)])
    lines = capsys.readouterr().out.splitlines()
    assert code == 0 and json.loads(lines[0])["model_version"] == model.version
    assert main(["reward", "models", "--db", str(folder / "orchviz.db")]) == 0
    assert model.version in capsys.readouterr().out


def test_too_few_labels_is_one_sentence_and_nothing_stored(tmp_path, capsys):
    from factories import make_workspace

    make_workspace(tmp_path)
    code = main(["reward", "train", "--db", str(tmp_path / "orchviz.db")])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith("orchviz: the reward model needs at least") and \
        len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize("verb", ["train", "serve", "score", "models"])
def test_every_reward_verb_has_help(verb, capsys):
    with pytest.raises(SystemExit) as done:
        main(["reward", verb, "--help"])
    assert done.value.code == 0
    said = capsys.readouterr().out
    assert f"orchviz reward {verb}" in said
    if verb == "serve":
        for option in ("--token-env", "--max-body-bytes", "--deadline", "--workers", "--audit",
                       "--ray", "127.0.0.1"):
            assert option in said


def test_the_reward_model_is_a_producer_on_the_agreement_page(trained):
    from reward_cases import REVIEWER, answers_of, planted_traces

    ws, _, model, _, _ = trained
    rows = [r for r in ws.suggestions.agreement(resamples=100).rows
            if r.rater == "reward-model"]
    assert {r.question for r in rows} >= {"spawn_necessity", "aggregation_quality",
                                          "stopping_correctness"}
    spawn = next(r for r in rows if r.question == "spawn_necessity")
    stored = next(s for s in model.report.sub_decisions if s.sub_decision == "O1")
    # the page measures the stored held-out answers against the same blind labels
    assert spawn.alpha.value == pytest.approx(next(
        a.alpha.value for a in stored.agreement if a.rater == "reward-model"), abs=1e-9)
    # a second version, trained on more labels, is its own point, and the page warns when
    # its alpha leaves the first version's interval
    more = planted_traces("tuning", every=6, offset=3)
    from viz_app.io.native import write_trace

    folder = ws.library.folders[0]
    for trace, _ in more:
        write_trace(trace, folder / f"{trace.trace_id}.json")
    ws.library.update_index()
    made = []
    for trace, truth in more:
        held = ws.library.trace(trace.trace_id)
        for event_id, answers in answers_of(held, truth).items():
            made += ws.labelling.checked(held, event_id, answers, REVIEWER,
                                      suggestions_visible=False)
    ws.labelling.add(made)
    second, added = ws.rewards.train(resamples=100)
    assert added and second.version != model.version
    history = ws.suggestions.agreement_history("spawn_necessity", resamples=100)
    points = [p for p in history.points if p.rater == "reward-model"]
    assert [p.version for p in points] == [model.version, second.version]
    first, then = points
    outside = not first.alpha.low <= then.alpha.value <= first.alpha.high
    assert outside == any(s.rater == "reward-model" and s.version == second.version
                          for s in history.shifts)


def test_scoring_word_by_word_is_the_fitted_model(trained):
    """The served scores (each word's weight looked up) are the hashed rows the ridge was
    fitted on, times its weights: exactly on the decisions it learnt from, and within the
    rare collision of an unseen word elsewhere."""
    import numpy as np

    from viz_app.reward.model import score_hashed, score_with

    ws, traces, model, _, _ = trained
    heads = model.heads()
    learnt = [e.decision() for e in model.training.examples[:400]]
    assert np.abs(score_with(heads, learnt) - score_hashed(heads, learnt)).max() < 1e-9
    unseen = [d for t in traces[:10] for d in trace_decisions(t, ws.rubric)]
    assert np.abs(score_with(heads, unseen) - score_hashed(heads, unseen)).max() < 0.05
