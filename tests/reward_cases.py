"""A labelled store for the reward model's tests: planted traces (`viz_app.planted`, whose ground
truth is known) saved in a workspace with one blind reviewer's answers on every spawn, aggregate
and stop (the planted fault's answer on its target, the sound answer elsewhere), and a merge
correction on every dropped result (the merge keeping every input), which the decision-pairs
export turns into preferences."""

from __future__ import annotations

from pathlib import Path

from factories import make_workspace
from viz_app import planted
from viz_app.analysis import analyze
from viz_app.io.native import trace_from_dict
from viz_app.labels.rubric import default_rubric, targets
from viz_app.suggest import rules
from viz_app.workspace import Workspace

QUESTIONS = ("stopping_correctness", "aggregation_quality", "spawn_necessity")
REVIEWER = "truth"


def planted_traces(split: str = "tuning", every: int = 4, offset: int = 0) -> list:
    """Every `every`-th planted case of a split (all four kinds, faults and controls), as
    traces with their truth: [(trace, {(event id, question): answer})]."""
    found = []
    for case in planted.cases(split)[offset::every]:
        trace = trace_from_dict(case.trace, case.name)
        found.append((trace, {(f.event_id, f.question): f.value for f in case.faults}))
    return found


def answers_of(trace, truth: dict) -> dict[str, dict]:
    """A reviewer's answers per target: the truth's answer or the sound one, and the merge
    it should have made where a result was dropped."""
    analysis = analyze(trace)
    inputs = {p.event_id: p.inputs for p in analysis.aggregates}
    events = trace.events_by_id
    made: dict[str, dict] = {}
    for target in targets(default_rubric(), analysis):
        asked = [q for q in target.questions if q in QUESTIONS]
        if not asked or target.event_id is None:
            continue
        answers = {q: truth.get((target.key, q), rules.FINE[q]) for q in asked}
        if answers.get("aggregation_quality") == 2 and target.key in inputs:
            merged = " ".join(events[i].content or "" for i in inputs[target.key]
                              if i in events)
            answers["merge_correction"] = {"action": "merge", "text": merged}
        made[target.key] = answers
    return made


def labelled_workspace(folder: Path, every: int = 4) -> tuple[Workspace, list]:
    """A workspace in `folder` holding every `every`-th planted tuning case, each target of
    the three questions answered blind by one reviewer."""
    cases = planted_traces("tuning", every)
    ws = make_workspace(folder, traces=[t for t, _ in cases])
    ws.library.update_index()
    made = []
    for trace, truth in cases:
        held = ws.library.trace(trace.trace_id)
        for event_id, answers in answers_of(held, truth).items():
            made += ws.labelling.checked(held, event_id, answers, REVIEWER,
                                      suggestions_visible=False)
    ws.labelling.add(made)
    return ws, [ws.library.trace(t.trace_id) for t, _ in cases]


def planted_labels(pairs: list) -> list[dict]:
    """The truth of planted traces as blind label records of one reviewer (no store)."""
    from viz_app.labels.rubric import reward_of

    rubric = default_rubric()
    made = []
    for trace, truth in pairs:
        for key, answers in answers_of(trace, truth).items():
            for q, value in answers.items():
                made.append({"trace_id": trace.trace_id, "trace_sha256": trace.sha256,
                             "event_id": key, "question": q, "value": value,
                             "reward": reward_of(rubric.question(q), value),
                             "reviewer": REVIEWER, "source": "human",
                             "suggestions_visible": False,
                             "created_at": "2026-01-01T00:00:00+00:00",
                             "label_id": f"{trace.trace_id}/{key}/{q}"})
    return made


def small_model_file(path: Path, every: int = 12) -> Path:
    """A reward model trained (no store, no held-out figures) on every `every`-th planted
    tuning case, written as a model file."""
    from viz_app.reward.scoring import write_model_file
    from viz_app.reward.train import build_training_set, library_versions
    from viz_app.reward.model import training_sha256, weights_sha256
    from viz_app.reward.train import RewardModel

    cases = planted_traces("tuning", every)
    built = build_training_set(default_rubric(), planted_labels(cases), [],
                               {t.trace_id: t for t, _ in cases})
    model = RewardModel(model_id=training_sha256(built.data, {"test": True}),
                        versions=library_versions(), training=built.data)
    model.weights_sha256 = weights_sha256(model.heads())
    write_model_file(model, path)
    return path
