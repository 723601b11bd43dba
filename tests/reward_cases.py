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
    ws.update_index()
    made = []
    for trace, truth in cases:
        held = ws.trace(trace.trace_id)
        for event_id, answers in answers_of(held, truth).items():
            made += ws.labels.checked(held, event_id, answers, REVIEWER,
                                      suggestions_visible=False)
    ws.labels.add(made)
    return ws, [ws.trace(t.trace_id) for t, _ in cases]
