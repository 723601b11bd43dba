"""The per-agent reward matrix: one row per trace, one column per agent.

The shape multi-agent trainers in the MARTI style consume: TsinghuaC3I/MARTI's
`marti/verifiers/auto_reward_alloc.py` (0a9dca8) assigns `local_rewards` as a (problems x agents)
array beside one `outcome_rewards` value per problem. Here a row is a trace (a problem's
rollout), `outcome_reward` its trace-level reward (task outcome, R1 team credit), and each agent
of any exported trace has a column `reward.<agent>`: the mean reward of the steps credited to it
(`viz_app.export.steps`: an event's labels to the agent that acted; a stop's 'should have
stopped at' pointer is a stop that was not made, so it is not averaged into the agent's reward,
and its labels are in the row's provenance), null where the agent has no labelled step or is
not in the trace. For a positional array, `agents` lists the trace's agents in tree order and
`rewards` their rewards in that order; `steps` counts each agent's labelled steps. Written as
JSON Lines, or CSV / Parquet by the output's name (in CSV, the list columns `agents`,
`rewards`, `steps`, `outcome` and `provenance`, every label of the trace, are JSON text).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from viz_app.export.consensus import provenance
from viz_app.export.steps import TraceSteps

COLUMN_PREFIX = "reward."
"""The prefix of an agent's column: `reward.orchestrator`."""


def agent_rewards(ts: TraceSteps) -> dict[str, tuple[float, int]]:
    """agent -> (mean reward of its steps, how many), for the agents with a labelled step."""
    per_agent: dict[str, list[float]] = defaultdict(list)
    for step in ts.decisions:  # a pointer's stop is no step taken: not averaged in
        per_agent[step.agent].append(step.reward)
    return {a: (statistics.fmean(r), len(r)) for a, r in per_agent.items()}


def matrix_rows(all_steps: Sequence[TraceSteps]) -> list[dict[str, Any]]:
    """One row per trace with an answer; one `reward.<agent>` column per agent of any trace."""
    found = [ts for ts in all_steps if ts.steps or ts.outcome or ts.unplaced]
    columns = sorted({a for ts in found for a in ts.analysis.agents}
                     | {s.agent for ts in found for s in ts.steps})
    rows = []
    for ts in found:
        rewards = agent_rewards(ts)
        agents = [*ts.analysis.agents,
                  *sorted(a for a in rewards if a not in ts.analysis.agent_names)]
        row: dict[str, Any] = {"trace_id": ts.trace.trace_id, "task_id": ts.trace.task_id,
                               "outcome_reward": ts.outcome_reward}
        row.update({COLUMN_PREFIX + a: rewards[a][0] if a in rewards else None for a in columns})
        row.update({"agents": agents,
                    "rewards": [rewards[a][0] if a in rewards else None for a in agents],
                    "steps": [rewards[a][1] if a in rewards else 0 for a in agents],
                    "outcome": [a.summary() for a in ts.outcome],
                    "provenance": provenance(ts.labels)})
        rows.append(row)
    return rows
