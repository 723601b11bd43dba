"""A run under training, as its reviewers see it: the groups of siblings a trainer sampled for one
prompt at one step, the decision where siblings part, and the trainer's reward beside the
reviewers' (and a reward model's) step by step, with the rollouts where they part most.

Pure functions over what the library already holds: index rows (a rollout's step, group and
trainer reward, `store.index.LibraryRow`), traces, and label records (the reviewers' current
answers, each with the reward its answer maps to). No store, no Streamlit.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol

from pydantic import BaseModel, Field

from viz_app.analysis import analyze
from viz_app.model import Event, Trace


class RolloutRow(Protocol):
    """What this module reads of a library row (the folder index's and the pool's alike)."""

    trace_id: str
    rollout_step: int | None
    rollout_group: str | None
    trainer_reward: float | None


# -- groups ---------------------------------------------------------------------------------------


def groups(rows: Iterable[RolloutRow]) -> dict[str, list[RolloutRow]]:
    """The rows of each group (rollouts sampled for one prompt at one step), in library order."""
    found: dict[str, list[RolloutRow]] = defaultdict(list)
    for row in rows:
        if row.rollout_group is not None:
            found[row.rollout_group].append(row)
    return dict(found)


def siblings(rows: Iterable[RolloutRow], trace_id: str) -> list[RolloutRow]:
    """The group a trace belongs to, itself included (empty for a trace of no group)."""
    rows = list(rows)
    mine = next((r.rollout_group for r in rows if r.trace_id == trace_id), None)
    return [r for r in rows if mine is not None and r.rollout_group == mine]


# -- where siblings part --------------------------------------------------------------------------


class Parting(BaseModel):
    """Where the siblings of a group stop doing the same thing."""

    position: int = Field(description="The place (in each sibling's events, in time order, the "
                          "importer's inferred stop left out) of the first event they differ at.")
    by: Literal["decision", "content", "length"] = Field(
        description="`decision`: an event of another kind, agent, tool or decision there; "
        "`content`: the same step, said differently; `length`: one ended and another went on.")
    events: dict[str, str | None] = Field(description="Each sibling's event there (None: it "
                                          "had ended).")
    shared: int = Field(description="Events every sibling shares before it.")


def _steps(trace: Trace) -> list[Event]:
    return [e for e in analyze(trace).order
            if not (e.decision == "stop" and e.extras.get("inferred_by") == "importer")]


def _shape(event: Event, trace: Trace) -> tuple[Any, ...]:
    analysis = analyze(trace)
    agent = analysis.actor.get(event.id, event.agent)
    if agent in analysis.agent_names and analysis.parent.get(agent) is not None:
        agent = analysis.role_of(agent)  # a sub-agent by its role: siblings name theirs apart
    return (event.type, agent, event.tool, event.decision)


def parting(traces: Sequence[Trace]) -> Parting | None:
    """The first event at which siblings part: the first place where one does another kind of
    thing (another event type, agent role, tool or decision) or has ended; else, where all do
    the same things, the first where one says something else. None for fewer than two, or for
    siblings that are alike throughout."""
    if len(traces) < 2:
        return None
    steps = [_steps(t) for t in traces]
    longest = max(len(s) for s in steps)
    shortest = min(len(s) for s in steps)
    for i in range(longest):
        if i >= shortest:
            return _at(traces, steps, i, "length")
        if len({_shape(s[i], t) for s, t in zip(steps, traces)}) > 1:
            return _at(traces, steps, i, "decision")
    for i in range(shortest):
        if len({(s[i].content or s[i].content_ref or "").strip() for s in steps}) > 1:
            return _at(traces, steps, i, "content")
    return None


def _at(traces: Sequence[Trace], steps: list[list[Event]], i: int, by: str) -> Parting:
    return Parting(position=i, by=by, shared=i,
                   events={t.trace_id: s[i].id if i < len(s) else None
                           for t, s in zip(traces, steps)})


# -- what the group page shows of each sibling -----------------------------------------------------


SIBLING_STEPS = 12
"""The most steps the group page lists of a sibling, from where the siblings part."""
STEP_CHARS = 1200
"""The most characters of a step's text it lists (the trace page shows the whole)."""


class SiblingStep(BaseModel):
    """One step of a sibling as the group page lists it."""

    event_id: str
    type: str
    agent: str
    text: str = Field(description="Its text, cut to STEP_CHARS characters.")
    parts: bool = Field(description="Whether the siblings part at this step.")


class Sibling(BaseModel):
    """One sibling of a group: what it does where they part, and its steps from there."""

    trace_id: str
    where: str = Field(description="What it does where the siblings part, on one line: 'alike "
                       "throughout' when they never do, '(had ended)' when it had.")
    steps: list[SiblingStep] = Field(description="Its steps from where they part (the ones "
                                     "before are alike), at most SIBLING_STEPS.")
    length: int = Field(description="Its steps in all (the importer's inferred stop left out): "
                        "how long it ran, beside its siblings.")


class GroupView(BaseModel):
    """A group's siblings as the group page sets them side by side: worked out once per
    version of their files (the page keeps it), not on every key a reviewer presses."""

    parting: Parting | None
    prompt: str | None = Field(description="The first human turn of the first sibling (the "
                               "prompt they were sampled for), None when it has none.")
    siblings: list[Sibling]


def group_view(traces: Sequence[Trace]) -> GroupView:
    """What the group page shows of these siblings (in this order)."""
    found = parting(traces)
    start = found.position if found is not None else 0
    siblings = []
    for trace in traces:
        parted = found.events.get(trace.trace_id) if found is not None else None
        every = _steps(trace)
        steps = [SiblingStep(event_id=e.id, type=e.type, agent=e.agent, text=e.text[:STEP_CHARS],
                             parts=e.id == parted)
                 for e in every[start:start + SIBLING_STEPS]]
        siblings.append(Sibling(trace_id=trace.trace_id, where=_where(trace, found), steps=steps,
                                length=len(every)))
    first = next((e for e in analyze(traces[0]).order if e.type == "human_intervention"),
                 None) if traces else None
    return GroupView(parting=found, prompt=first.text if first is not None else None,
                     siblings=siblings)


def _where(trace: Trace, found: Parting | None) -> str:
    if found is None:
        return "alike throughout"
    event_id = found.events.get(trace.trace_id)
    if event_id is None:
        return "(had ended)"
    event = trace.event(event_id)
    said = " ".join(event.text.split())[:70]
    return " ".join(part for part in (event.type, event.tool, said) if part)


# -- the reviewers' reward of a rollout -----------------------------------------------------------


def reviewers_rewards(records: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Trace id -> the reviewers' reward for the rollout: the mean reward of the current answers
    about the whole run (event-less targets, such as the task's outcome), over reviewers; a
    rollout judged only at its decisions takes the mean of those. Answers without a reward are
    left out, and so are imported labels (a dataset's, not the team's reviewers'); an
    adjudicated answer counts as the reviewers'."""
    whole: dict[str, list[float]] = defaultdict(list)
    parts: dict[str, list[float]] = defaultdict(list)
    for record in records:
        reward = record.get("reward")
        if reward is None or record.get("source") == "import":
            continue
        (whole if not record.get("event_id") else parts)[record["trace_id"]].append(
            float(reward))
    return {trace_id: statistics.fmean(whole.get(trace_id) or parts[trace_id])
            for trace_id in set(whole) | set(parts)}


# -- the trainer's reward beside the reviewers' ----------------------------------------------------


class StepRewards(BaseModel):
    """One training step: the trainer's reward, the reviewers' and a reward model's."""

    step: int
    rollouts: int = Field(description="Rollouts of the step in the library.")
    reviewed: int = Field(description="Of those, the ones reviewers labelled.")
    trainer_mean: float | None = Field(description="The trainer's mean reward over all its "
                                       "rollouts, as the trainer logs it.")
    trainer_reviewed_mean: float | None = Field(
        description="The trainer's mean over the reviewed rollouts only (the same rollouts as "
        "the reviewers' mean), on the reviewers' scale (see `scaled`).")
    reviewers_mean: float | None = Field(description="The reviewers' mean reward, -1 to 1.")
    model_mean: float | None = Field(None, description="A reward model's mean team reward over "
                                     "the reviewed rollouts, when one was given.")
    gap: float | None = Field(description="trainer_reviewed_mean - reviewers_mean: above 0 the "
                              "trainer rewards what reviewers do not (a reward-hacking alarm).")


class RolloutGap(BaseModel):
    """A reviewed rollout, the trainer's reward beside the reviewers'."""

    trace_id: str
    step: int | None
    group: str | None
    trainer: float = Field(description="The trainer's reward, as logged.")
    trainer_scaled: float = Field(description="On the reviewers' scale, -1 to 1.")
    reviewers: float
    model: float | None = None
    gap: float = Field(description="trainer_scaled - reviewers.")


class RewardComparison(BaseModel):
    """The trainer's reward beside the reviewers', per step and per rollout."""

    steps: list[StepRewards]
    rollouts: list[RolloutGap] = Field(description="Reviewed rollouts, the largest |gap| first.")
    scale: tuple[float, float] | None = Field(description="The trainer's lowest and highest "
                                              "reward in the run, mapped to -1 and 1.")


def scaled(value: float, low: float, high: float) -> float:
    """A trainer's reward on the reviewers' scale: the run's lowest reward -1, its highest 1
    (a run whose rewards never vary: 0)."""
    if high <= low:
        return 0.0
    return -1.0 + 2.0 * (value - low) / (high - low)


def compare_rewards(rows: Iterable[RolloutRow], reviewers: Mapping[str, float],
                    model: Mapping[str, float] | None = None) -> RewardComparison:
    """Per step, the trainer's mean reward (over all its rollouts, and over those reviewers
    labelled, on their scale) beside the reviewers' mean (and a reward model's, `model`: trace
    id -> team reward), and every reviewed rollout with its gap, the largest first."""
    rows = [r for r in rows if r.trainer_reward is not None]
    rewards = [r.trainer_reward for r in rows]
    span = (min(rewards), max(rewards)) if rewards else None
    by_step: dict[int, list[RolloutRow]] = defaultdict(list)
    for row in rows:
        if row.rollout_step is not None:
            by_step[row.rollout_step].append(row)
    model = model or {}
    steps = []
    for step in sorted(by_step):
        members = by_step[step]
        seen = [r for r in members if r.trace_id in reviewers]
        trainer = statistics.fmean(scaled(r.trainer_reward, *span) for r in seen) \
            if seen and span else None
        judged = statistics.fmean(reviewers[r.trace_id] for r in seen) if seen else None
        modelled = [model[r.trace_id] for r in seen if r.trace_id in model]
        steps.append(StepRewards(
            step=step, rollouts=len(members), reviewed=len(seen),
            trainer_mean=statistics.fmean(r.trainer_reward for r in members),
            trainer_reviewed_mean=trainer, reviewers_mean=judged,
            model_mean=statistics.fmean(modelled) if modelled else None,
            gap=trainer - judged if trainer is not None and judged is not None else None))
    gaps = [RolloutGap(trace_id=r.trace_id, step=r.rollout_step, group=r.rollout_group,
                       trainer=r.trainer_reward, trainer_scaled=scaled(r.trainer_reward, *span),
                       reviewers=reviewers[r.trace_id], model=model.get(r.trace_id),
                       gap=scaled(r.trainer_reward, *span) - reviewers[r.trace_id])
            for r in rows if r.trace_id in reviewers and span]
    gaps.sort(key=lambda g: (-abs(g.gap), g.trace_id))
    return RewardComparison(steps=steps, rollouts=gaps, scale=span)


# -- reading a group's rollouts, a reward model's view of them -------------------------------------


def read_rows(rows: Sequence[Any]) -> dict[str, Trace]:
    """The traces of library rows (with `path` and `position`), each file read once: a group's
    siblings mostly share one rollout file, which `ws.library.trace` would read once per sibling.
    A file that cannot be read leaves its rows out (the trace page says why, when opened)."""
    from viz_app.errors import TraceError
    from viz_app.io.detect import read_any

    by_file: dict[str, list[Any]] = defaultdict(list)
    for row in rows:
        by_file[str(row.path)].append(row)
    found: dict[str, Trace] = {}
    for path, wanted in by_file.items():
        try:
            traces = read_any(Path(path), on_error=lambda _err: None)
        except TraceError:
            continue
        for row in wanted:
            if 0 <= row.position < len(traces) and traces[row.position].trace_id == row.trace_id:
                found[row.trace_id] = traces[row.position]
    return found


def model_rewards(model: Any, traces: Iterable[Trace], rubric: Any) -> dict[str, float]:
    """Trace id -> a stored reward model's team reward for each rollout (`viz_app.reward`)."""
    from viz_app.reward.scoring import SklearnScorer

    traces = list(traces)
    if not traces:
        return {}
    scores = SklearnScorer(model, rubric).score_rollouts(traces)
    return {s.trace_id: float(s.team_reward) for s in scores}
