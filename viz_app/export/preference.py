"""The preference export: one row per judged pair of orchestrations, in the shape reward-model
and DPO trainers read (`prompt`, `chosen`, `rejected`, `margin`), with the trace ids and the
provenance of every label behind it.

Checked against TRL's `docs/source/dataset_formats.md` (preference type, explicit prompt,
standard and conversational) and `trl/trainer/reward_trainer.py` (an optional `margin` column
is subtracted in the loss) at huggingface/trl f2cd577.

- `prompt` is the task (`Task: <task_id>`); `chosen` and `rejected` are each orchestration as
  text: one line per event in time order (`event_line`), after its system line only when
  `prompt_with_system` is asked; so `prompt + chosen` reads as one document. Conversational:
  `prompt` is one user message, `chosen` and `rejected` the orchestration's messages seen from
  its root agent (its events are assistant turns, the others' user turns).
- Judged pairs (the `pairwise_preference` labels): each judgement is a vote +w for the pair's
  first trace or -w for its second, w = strength / 3 (no strength: 1; a tie: 0). Reviewers who
  all chose the same trace (or all called it a tie) agree, and the mean vote gives the margin in
  (0, 1]; a tie makes no row. Reviewers who chose differently dispute the pair: by default it is
  left out and reported (`--disputed mean` combines the votes, and a pair whose votes cancel is
  left out; `--disputed adjudicated` takes an adjudicator's judgement).
- From scores (`--from-scores`): a trace's score is the mean of its selected answers' rewards
  (see `viz_app.export.consensus`). Every two traces of one `task_id` whose scores differ make a
  pair: the higher one is chosen, and the margin is half the difference (rewards lie in
  [-1, 1], so it is in (0, 1]). A pair that reviewers judged is not added again from scores.
- A pair whose two orchestrations read the same (chosen would equal rejected: two runs with one
  hash, or runs that differ only where the text does not show) is never written; it is
  reported.
"""

from __future__ import annotations

import itertools
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from viz_app.analysis import analyze
from viz_app.export.consensus import (ADJUDICATED, ADJUDICATION, SHOWN, ExportOptions,
                                      Selection, answers_labels, provenance, select)
from viz_app.export.prompts import conversation, header, task_line
from viz_app.export.steps import event_line
from viz_app.export.steps import TraceSteps
from viz_app.labels import (PAIRWISE_QUESTION, STRENGTHS, LabelRecord, Preference, Rubric,
                            pair_key, preference_of, preferences)
from viz_app.model import Trace

def task_prompt(trace: Trace) -> str:
    """The prompt of a preference row: the task the orchestrations attempted, by its id (the one
    fact both sides share; each side's orchestration holds its own instruction)."""
    return f"Task: {trace.task_id}\n"


def orchestration_text(trace: Trace, with_system: bool = False) -> str:
    """An orchestration as text for a trainer: each event on one line in time order, after the
    system that ran it when asked."""
    analysis = analyze(trace)
    head = header(trace, with_system).removeprefix(task_line(trace))
    return head + "".join(event_line(e, analysis) for e in analysis.order)


def orchestration_messages(trace: Trace, with_system: bool = False) -> list[dict[str, str]]:
    """An orchestration as chat messages seen from its root agent."""
    analysis = analyze(trace)
    ts = TraceSteps(trace=trace, analysis=analysis, steps=[], outcome=[])
    head = header(trace, with_system).removeprefix(task_line(trace))
    return conversation(ts, analysis.root, len(analysis.order),
                        head.removesuffix("Orchestration:\n"))


def vote(p: Preference) -> float:
    """A judgement as a signed vote: + for the pair's first trace, - for its second, its size the
    strength over 3 (no strength: 1; a tie: 0)."""
    if p.chosen is None:
        return 0.0
    size = (p.strength or 1) / max(STRENGTHS)
    return size if p.chosen == p.first else -size


@dataclass
class PreferenceRows:
    """The rows of a preference export, and what it left out."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _texts(trace: Trace, options: ExportOptions) -> tuple[Any, Any]:
    if options.conversational:
        return ([{"role": "user", "content": task_prompt(trace)}],
                orchestration_messages(trace, options.prompt_with_system))
    return task_prompt(trace), orchestration_text(trace, options.prompt_with_system)


def _row(chosen: Trace, rejected: Trace, margin: float, source: str, options: ExportOptions,
         labels: Iterable[LabelRecord], **extra) -> dict[str, Any] | None:
    prompt, chosen_text = _texts(chosen, options)
    _, rejected_text = _texts(rejected, options)
    if chosen_text == rejected_text:
        return None
    row = {"prompt": prompt, "chosen": chosen_text, "rejected": rejected_text, "margin": margin,
           "chosen_trace_id": chosen.trace_id, "rejected_trace_id": rejected.trace_id,
           "task_id": chosen.task_id, "same_task": chosen.task_id == rejected.task_id,
           "source": source, "reviewers": [], "reasons": [], "chosen_score": None,
           "rejected_score": None, "disputed": False, "resolution": "scores",
           "provenance": provenance(labels)}
    row.update(_rollouts(chosen, rejected))
    row.update(extra)
    return row


def _rollouts(chosen: Trace, rejected: Trace) -> dict[str, Any]:
    """For two rollouts of a trainer's run: their step and group (when one: siblings judged
    against each other) and the trainer's reward of each, beside the reviewers' choice."""
    from viz_app.io.rollouts import rollout_of, trainer_reward

    a, b = rollout_of(chosen), rollout_of(rejected)
    if a is None or b is None:
        return {}
    return {"step": a.step if a.step == b.step else None,
            "group": a.group if a.group == b.group else None,
            "chosen_trainer_reward": trainer_reward(chosen),
            "rejected_trainer_reward": trainer_reward(rejected)}


def _judged(labels: list[LabelRecord]) -> dict[tuple[str, str], list[LabelRecord]]:
    by_pair: dict[tuple[str, str], list[LabelRecord]] = defaultdict(list)
    for record in labels:
        if record["question"] != PAIRWISE_QUESTION or not record.get("pair_trace_id"):
            continue
        by_pair[pair_key(record["trace_id"], record["pair_trace_id"])].append(record)
    return by_pair


def judged_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                options: ExportOptions = ExportOptions()) -> PreferenceRows:
    """One row per judged pair whose two traces are in `traces`, resolved as the module says,
    sorted by pair."""
    found = PreferenceRows()
    why: dict[str, list[str]] = defaultdict(list)
    crossed: list[str] = []
    for (first, second), records in sorted(_judged(list(labels)).items()):
        if first not in traces or second not in traces:
            continue
        adjudicated = [r for r in records if r.get("source") == ADJUDICATION]
        reviewed = [r for r in records if r.get("source") != ADJUDICATION]
        pair = f"{first} vs {second}"
        disputed = len({preference_of(r).chosen for r in reviewed}) > 1
        if options.adjudicated_only:
            used, resolution = adjudicated, ADJUDICATED
            if not adjudicated:
                why["no adjudication"].append(pair)
                continue
        elif len(reviewed) < options.min_reviewers:
            why["few reviewers"].append(pair)
            continue
        elif not disputed:
            used, resolution = reviewed, "single" if len(reviewed) == 1 else "agreed"
        elif options.disputed == "mean":
            used, resolution = reviewed, "mean"
        elif options.disputed == ADJUDICATED and adjudicated:
            used, resolution = adjudicated, ADJUDICATED
        else:
            why["disputed"].append(pair + " (" + ", ".join(
                f"{r['reviewer']}: {preference_of(r).chosen or 'tie'}" for r in reviewed) + ")")
            continue
        judged = sorted((preference_of(r) for r in used), key=lambda p: p.reviewer)
        if resolution != "mean" and len({p.chosen for p in judged}) > 1:
            why["adjudicators disagree"].append(pair)
            continue
        mean = statistics.fmean(vote(p) for p in judged)
        if mean == 0:
            why["tie"].append(pair)
            continue
        chosen, rejected = (first, second) if mean > 0 else (second, first)
        if traces[chosen].task_id != traces[rejected].task_id:
            if not options.allow_cross_task:
                why["cross-task"].append(f"{pair} ({traces[first].task_id} vs "
                                         f"{traces[second].task_id})")
                continue
            crossed.append(pair)
        row = _row(traces[chosen], traces[rejected], abs(mean), "judged", options, records,
                   reviewers=[p.reviewer for p in judged], reasons=[p.reason for p in judged],
                   disputed=disputed, resolution=resolution)
        if row is None:
            why["identical"].append(pair)
        else:
            found.rows.append(row)
    _say(found, why, options)
    if crossed:
        found.notes.append(f"{len(crossed)} judged pairs across tasks written "
                           "(--allow-cross-task): each row's prompt is its chosen trace's "
                           "task: " + "; ".join(crossed[:SHOWN])
                           + (f"; and {len(crossed) - SHOWN} more" if len(crossed) > SHOWN
                              else ""))
    return found


_WHY = {
    "cross-task": "judged pairs left out because their two traces attempt different tasks "
                  "(a row's prompt is one task; --allow-cross-task writes them with the chosen "
                  "trace's task)",
    "disputed": "judged pairs left out because their reviewers chose differently (the default, "
                "--disputed drop; --disputed mean combines the votes, --disputed adjudicated "
                "takes an adjudicator's judgement)",
    "few reviewers": "judged pairs left out with fewer judges than --min-reviewers {k}",
    "no adjudication": "judged pairs left out without an adjudicated judgement "
                       "(--adjudicated-only)",
    "adjudicators disagree": "judged pairs left out: their adjudicated judgements disagree",
    "identical": "pairs left out because the two orchestrations read the same (chosen would "
                 "equal rejected)",
}


def _say(found: PreferenceRows, why: dict[str, list[str]], options: ExportOptions) -> None:
    for reason, pairs in why.items():
        shown = "; ".join(pairs[:SHOWN]) + (f"; and {len(pairs) - SHOWN} more"
                                            if len(pairs) > SHOWN else "")
        if reason == "tie":
            found.notes.append(f"{len(pairs)} judged pairs make no row: judged about the same "
                               f"(or votes that cancel): {shown}")
        else:
            found.left_out.append(f"{len(pairs)} {_WHY[reason].format(k=options.min_reviewers)}"
                                  f": {shown}")


def trace_scores(selection: Selection) -> dict[str, tuple[float, list[LabelRecord]]]:
    """trace id -> (score, the labels behind it): the mean of its selected answers' rewards."""
    per_trace: dict[str, list] = defaultdict(list)
    for answer in selection.answers:
        if answer.reward is not None:
            per_trace[answer.trace_id].append(answer)
    return {t: (statistics.fmean(a.reward for a in found), answers_labels(found))
            for t, found in per_trace.items()}


def score_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace], rubric: Rubric | None,
               options: ExportOptions = ExportOptions(),
               skip: Iterable[tuple[str, str]] = ()) -> PreferenceRows:
    """Pairs from scores: every two scored traces of one task whose scores differ (pairs in
    `skip`, in canonical order, are left out), the higher-scored one chosen."""
    selection = select(labels, rubric, options)
    scores = {t: s for t, s in trace_scores(selection).items() if t in traces}
    skipped = set(skip)
    by_task: dict[str, list[str]] = defaultdict(list)
    for trace_id in sorted(scores):
        by_task[traces[trace_id].task_id].append(trace_id)
    found = PreferenceRows(left_out=list(selection.left_out), notes=list(selection.notes))
    identical = []
    for _task, members in sorted(by_task.items()):
        for a, b in itertools.combinations(members, 2):
            if pair_key(a, b) in skipped or scores[a][0] == scores[b][0]:
                continue
            hi, lo = (a, b) if scores[a][0] > scores[b][0] else (b, a)
            row = _row(traces[hi], traces[lo], (scores[hi][0] - scores[lo][0]) / 2, "scores",
                       options, [*scores[hi][1], *scores[lo][1]], chosen_score=scores[hi][0],
                       rejected_score=scores[lo][0])
            if row is None:
                identical.append(f"{hi} vs {lo}")
            else:
                found.rows.append(row)
    _say(found, {"identical": identical} if identical else {}, options)
    return found


def preference_export(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                      rubric: Rubric | None = None, options: ExportOptions = ExportOptions(), *,
                      from_scores: bool = False) -> PreferenceRows:
    """The preference export: judged pairs, then (with `from_scores`) pairs from scores that
    no reviewer judged."""
    labels = list(labels)
    found = judged_rows(labels, traces, options)
    if from_scores:
        judged = {pair_key(p.first, p.second) for p in preferences(labels)}
        scored = score_rows(labels, traces, rubric, options, skip=judged)
        found.rows += scored.rows
        found.left_out += scored.left_out
        found.notes += scored.notes
    return found


def preference_rows(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                    rubric: Rubric | None = None, options: ExportOptions = ExportOptions(), *,
                    from_scores: bool = False) -> list[dict[str, Any]]:
    """The rows of the preference export (see `preference_export`)."""
    return preference_export(labels, traces, rubric, options, from_scores=from_scores).rows


def unplaced_pairs(labels: Iterable[LabelRecord],
                   traces: Mapping[str, Trace]) -> list[tuple[str, str]]:
    """Judged pairs left out because a trace of theirs is not among `traces`."""
    return sorted({p.pair for p in preferences(labels)
                   if p.first not in traces or p.second not in traces})


def why_no_pairs(labels: Iterable[LabelRecord], traces: Mapping[str, Trace],
                 rubric: Rubric | None = None, options: ExportOptions = ExportOptions(), *,
                 from_scores: bool = False) -> str:
    """Why the preference export has no row, in one sentence: no pair was judged (and, from
    scores, no two scored traces attempt one task, or theirs tie), or every judged pair was left
    out for the reasons said beside it."""
    labels = list(labels)
    judged = {p.pair for p in preferences(labels)}
    if judged:
        said = f"all {len(judged)} judged pairs were left out, for the reasons said above"
    else:
        said = ("no pair of traces was judged (a pairwise_preference answer: the Compare "
                "page's 'which is better', or `orchviz labels add --pair`)")
    if not from_scores:
        return said + ("; --from-scores also pairs two traces of one task by their reviewers' "
                       "rewards" if not judged else "")
    scores = {t: s for t, (s, _) in trace_scores(select(labels, rubric, options)).items()
              if t in traces}
    if not scores:
        return said + ", and no trace has a score to pair by (--from-scores reads the rewards " \
                      "of its answers: none of the current answers has a reward)"
    by_task: dict[str, list[float]] = defaultdict(list)
    for trace_id, score in scores.items():
        by_task[traces[trace_id].task_id].append(score)
    shared = {task: s for task, s in by_task.items() if len(s) > 1}
    if not shared:
        return said + f", and no two of the {len(scores)} scored traces attempt the same task " \
                      f"(--from-scores pairs only within one task_id; {len(by_task)} tasks)"
    return said + f", and the scored traces of each task have the same score (" + \
        "; ".join(f"{task}: {scores[0]:+.2f}" for task, scores in sorted(shared.items())[:SHOWN]) \
        + ")"
