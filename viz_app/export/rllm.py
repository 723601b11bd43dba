"""rLLM's shape: one `Episode` per trace, one `Trajectory` per agent, its `Step`s with rewards.

Checked against `rllm/types.py` (rllm-org/rllm at 9beb6e0, 2026-08-15), whose `Step`,
`Trajectory` and `Episode` are the canonical types, and `rllm/engine/agentflow_engine.py`, which
fills `Trajectory.signals` from an evaluator's named signals. Each line of the export is an
episode as `Episode.to_dict()` writes it, so `Episode.from_dict` reads it back:

- episode: `id` `<task_id>:<trace_id>` (rLLM splits it into `task_id` and `rollout_idx`),
  `task` ({task_id, trace_id}), `termination_reason` `env_done`, `is_correct` (the trace-level
  reward above the threshold), `session_id`, `trajectories`, `metrics` (each question's mean
  reward over the trace), `info` (the trace-level answers, and the provenance of their labels).
- trajectory: one per agent of the trace, in tree order, `name` = the agent; `steps`; `reward`:
  the mean of its steps' rewards, else the trace-level reward, else null; `signals`: per rubric
  question, the mean reward of the agent's answers to it, and the trace-level questions (team
  credit); `info` (agent, steps labelled). `Trajectory.to_dict` does not write `signals` and
  `from_dict` does not read them: they are written beside, and `Trajectory(**row)` keeps them.
- step: one per event the agent acted (a tool's result is the caller's observation, not a
  step), in time order, with every key `Step.from_dict` requires: `model_response` the event's
  text, `action` its type and decision, `observation` the tool result it got (if any),
  `prompt_ids` / `response_ids` from the event's `prompt_token_ids` / `response_token_ids`
  where the trace carries them, `reward` the step's reward (0.0 when unlabelled: `info.labelled`
  tells them apart), `done` on the agent's last event, and `info` (event id, kind, answers,
  merged inputs, LLM call ids, provenance).

Orchestrator decisions' labels land on the orchestrator's steps (the agent that acted). A
stop's 'should have stopped at' pointer is the stopping agent's own stop placed at the event
pointed at (`viz_app.export.steps`), and is a trajectory of its own beside the agent's real one
(same `name`, `uid` `<trace>:<agent>:should_have_stopped:<event>`, `info.corrects` the stop it
corrects): one step whose `observation` is the orchestration up to and including the event
pointed at (without the stop it corrects), whose `model_response` is the stop's text and
`action` the stop decision, with the pointer's reward. So its reward is never averaged into the
real trajectory's, whose stop keeps its own (-1 premature, -0.5 late). Every step's `info` has
`corrects` (None but on a pointer's step).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

from viz_app.export.consensus import ExportOptions, dumps, provenance
from viz_app.export.prompts import header
from viz_app.export.steps import Step, TraceSteps, branch_positions, call_of

STEP_KEYS = ("prompt_ids", "response_ids", "logprobs", "routing_matrices", "chat_completions",
             "observation", "thought", "action", "model_response", "model_output", "info",
             "reward", "done", "mc_return", "advantage", "weight_version")
"""The keys of `Step.to_dict()` (rllm/types.py), in its order."""

TRAJECTORY_KEYS = ("uid", "name", "task", "steps", "reward", "info")
"""The keys of `Trajectory.to_dict()`; orchviz adds `signals`."""

EPISODE_KEYS = ("id", "task", "termination_reason", "is_correct", "session_id", "trajectories",
                "metrics", "info")
"""The keys of `Episode.to_dict()`."""


def _step(ts: TraceSteps, event, step: Step | None, observation: str | None, done: bool,
          options: ExportOptions) -> dict[str, Any]:
    call = step.call if step is not None else call_of(event)
    if step is None:
        info = {"event_id": event.id, "t": float(event.t), "labelled": False, "kind": None,
                "label": None, "answers": [], "merged": [],
                "call_json": dumps(call) if call else "{}", "corrects": None,
                "provenance": []}
    else:
        info = {"event_id": event.id, "t": float(event.t), "labelled": True, "kind": step.kind,
                "label": step.label(options.threshold),
                "answers": [a.summary() for a in step.answers], "merged": step.merged,
                "call_json": dumps(call), "corrects": step.corrects or None,
                "provenance": provenance(step.labels)}
    content = event.content
    return {"prompt_ids": call.get("prompt_token_ids", []),
            "response_ids": call.get("response_token_ids", []), "logprobs": [],
            "routing_matrices": None, "chat_completions": [], "observation": observation,
            "thought": "", "action": {"type": event.type, "decision": event.decision,
                                      "to": event.to, "tool": event.tool},
            "model_response": content if content is not None
            else (event.content_ref or ""), "model_output": None, "info": info,
            "reward": step.reward if step else 0.0, "done": done, "mc_return": 0.0,
            "advantage": None, "weight_version": None}


def _signals(answers) -> dict[str, float]:
    per_question: dict[str, list[float]] = defaultdict(list)
    for answer in answers:
        if answer.reward is not None and answer.resolution != "implied":
            per_question[answer.question].append(answer.reward)
    return {q: statistics.fmean(r) for q, r in sorted(per_question.items())}


def pointer_trajectory(ts: TraceSteps, step: Step, options: ExportOptions,
                       team: dict[str, float]) -> dict[str, Any]:
    """A 'should have stopped at' pointer as a trajectory of the agent that stopped: its stop,
    placed at the event pointed at, seen after the orchestration up to there."""
    analysis, trace = ts.analysis, ts.trace
    stop = ts.events[step.corrects]
    row = _step(ts, stop, step, None, True, options)
    row["observation"] = header(trace) + "".join(ts.lines[p] for p in branch_positions(ts, step))
    row["info"].update(event_id=step.event_id, t=float(ts.events[step.event_id].t),
                       call_json="{}")
    row["prompt_ids"], row["response_ids"] = [], []
    return {"uid": f"{trace.trace_id}:{step.agent}:should_have_stopped:{step.event_id}",
            "name": step.agent, "task": {"task_id": trace.task_id, "trace_id": trace.trace_id},
            "steps": [row], "reward": step.reward,
            "info": {"agent": step.agent, "role": analysis.role_of(step.agent)
                     if step.agent in analysis.agent_names else "tool",
                     "steps_labelled": 1, "corrects": step.corrects},
            "signals": dict(team)}


def episode(ts: TraceSteps, options: ExportOptions) -> dict[str, Any]:
    """One trace as an rLLM episode dict."""
    analysis, trace = ts.analysis, ts.trace
    steps_at = {s.event_id: s for s in ts.decisions}
    result_of = {call: result for result, call in analysis.call_of_result.items()}
    events = trace.events_by_id
    outcome = ts.outcome_reward
    team = _signals(ts.outcome)
    trajectories = []
    names = [*analysis.agents, *sorted({s.agent for s in ts.steps} - set(analysis.agents))]
    for agent in names:
        acted = [e for e in analysis.events_of.get(agent, [])
                 if e.type != "tool_result" or e.id in steps_at]
        own = [(e, steps_at.get(e.id)) for e in acted]
        rows = [_step(ts, e, s, events[result_of[e.id]].text if e.id in result_of else None,
                      i == len(own) - 1, options) for i, (e, s) in enumerate(own)]
        labelled = [s for _, s in own if s is not None]
        rewards = [s.reward for s in labelled]
        trajectories.append({
            "uid": f"{trace.trace_id}:{agent}", "name": agent,
            "task": {"task_id": trace.task_id, "trace_id": trace.trace_id},
            "steps": rows,
            "reward": statistics.fmean(rewards) if rewards else outcome,
            "info": {"agent": agent, "role": analysis.role_of(agent)
                     if agent in analysis.agent_names else "tool",
                     "steps_labelled": len(labelled), "corrects": None},
            "signals": {**_signals(a for s in labelled for a in s.answers), **team}})
    trajectories += [pointer_trajectory(ts, s, options, team) for s in ts.steps if s.pointer]
    metrics = _signals(ts.answers)
    return {"id": f"{trace.task_id}:{trace.trace_id}",
            "task": {"task_id": trace.task_id, "trace_id": trace.trace_id},
            "termination_reason": "env_done",
            "is_correct": outcome is not None and outcome > options.threshold,
            "session_id": trace.trace_id, "trajectories": trajectories, "metrics": metrics,
            "info": {"trace_id": trace.trace_id, "outcome_reward": outcome,
                     "outcome": [a.summary() for a in ts.outcome],
                     "provenance": provenance([*(r for a in ts.outcome for r in a.labels),
                                               *(r for a in ts.unplaced for r in a.labels)])}}


def episodes(all_steps: Sequence[TraceSteps], options: ExportOptions) -> Iterator[dict]:
    """One episode per trace with an answer."""
    for ts in all_steps:
        if ts.steps or ts.outcome or ts.unplaced:
            yield episode(ts, options)
