"""rLLM's episodes (rllm/types.py): an `Episode` `{id, task, termination_reason, is_correct,
session_id, trajectories, metrics, info}` holds one `Trajectory` `{uid, name, task, steps,
reward, info}` per agent, each a list of `Step`s (`chat_completions`, `observation`, `thought`,
`action`, `model_response`, `reward`, `done`, `info`, the token ids and `weight_version`).
Read as `Episode.to_dict()` writes it (and orchviz's rLLM export), as pydantic's `model_dump`
writes it (`rllm eval --save-episodes`: `episodes/episode_<n>_<task>.json`, steps with `input`,
`output`, `metadata`), or as rLLM's UI logger posts it during training (`episode_id` and the
training `step` beside the episode): one episode a file, a JSON list, or one a line.

The episode id is `<task_id>:<rollout_idx>`: the episodes of one task at one step are one group.
A trajectory's steps are its agent's turns: the new messages of each step's cumulative
`chat_completions` (else its `observation` as the environment's turn and `model_response` as the
policy's), `action` as a tool call when it is not the response. With several trajectories the
first agent is the root and each other is spawned by it and returns to it with its last
response. The trainer's reward is the trajectory's reward (with several, their mean, each also
as `trainer.<name>`); `is_correct` the metric `task_success`; the highest `weight_version` the
checkpoint.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import each_json_value, first_value
from viz_app.io.rollouts import (TRAINER_REWARD, Chat, as_text, content_text, number,
                                 prompt_key, text_trace)
from viz_app.model import Trace, paused_gc

NAME = "rllm"
DEFAULT_NAME = "default_traj_name"


def _is_episode(value: Any) -> bool:
    if not (isinstance(value, dict) and isinstance(value.get("trajectories"), list)
            and ("id" in value or "episode_id" in value)):
        return False
    head = value["trajectories"][0] if value["trajectories"] else {}
    return isinstance(head, dict) and "steps" in head


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes hold rLLM episodes (0 to 1)."""
    first = first_value(data)
    if isinstance(first, list) and first:
        first = first[0]
    if _is_episode(first):
        return 1.0
    head = data[:65536]
    if first is None and b'"trajectories"' in head and b'"steps"' in head and (
            b'"termination_reason"' in head or b'"is_correct"' in head):
        return 0.8
    return 0.0


def import_rllm(source: Source, *, name: str | None = None) -> list[Trace]:
    """One trace per rLLM episode."""
    data, label = read_source(source, name)
    traces = []
    with paused_gc(keep=True):
        _read(data, label, traces)
    if not traces:
        raise TraceError(label, "", "holds no rLLM episodes")
    return traces


def _read(data: bytes, label: str, traces: list[Trace]) -> None:
    system = _run(label)
    for line, value in each_json_value(data, label):
        listed = value.__class__ is list
        for n, item in enumerate(value if listed else (value,)):
            if not _is_episode(item):
                place = f"line {line}" + (f", item {n + 1}" if listed else "")
                raise TraceError(label, place, "is not an rLLM episode (no id and trajectories "
                                 "of steps)")
            traces.append(_trace(item, f"item {n + 1}" if listed else f"line {line}", label,
                                 system))


def _info(value: dict[str, Any]) -> dict[str, Any]:
    found = value.get("info", value.get("metadata"))
    return found if found.__class__ is dict else {}


def _trace(episode: dict[str, Any], place: str, label: str, system: str) -> Trace:
    episode_id = episode.get("id", episode.get("episode_id"))
    episode_id = (episode_id if episode_id.__class__ is str else str(episode_id or "")) \
        or "episode"
    task_id, _, rollout_idx = episode_id.partition(":")
    info = _info(episode)
    step = episode.get("step")
    if step.__class__ is not int:
        step = info.get("step")
        if step.__class__ is not int:
            step = info.get("global_step")
            if step.__class__ is not int:
                step = None
    trajectories = [t for t in episode["trajectories"] if t.__class__ is dict]
    names = _names(trajectories)
    newest = _newest_weights(trajectories)
    rollout: dict[str, Any] = {"trainer": NAME,
                               "group": f"{'-' if step is None else step}:{task_id}"}
    if step is not None:  # as `rollouts.rollout_dict` keeps it (the group as `group_id`)
        rollout["step"] = step
    if rollout_idx.isdigit():
        rollout["index"] = int(rollout_idx)
    rollout["rollout_id"] = episode_id
    if newest is not None:
        rollout["checkpoint"] = f"weights v{newest}"
    split = episode.get("session_type")
    if split is not None:
        rollout["split"] = split if split.__class__ is str else as_text(split)
    rollout["source"] = place
    head: dict[str, Any] = {}
    reason = episode.get("termination_reason")
    if reason is not None:
        reason = reason if reason.__class__ is str else as_text(reason)
        if reason:
            head["termination_reason"] = reason
    if info:
        head["episode_info"] = info
    metrics = episode.get("metrics")
    metrics = {k: found for k, v in metrics.items() if (found := number(v)) is not None} \
        if metrics.__class__ is dict and metrics else {}
    correct = episode.get("is_correct")
    if correct.__class__ is bool:
        metrics["task_success"] = 1.0 if correct else 0.0
    trace_id = episode_id if step is None else f"{episode_id}@{step}"
    if not task_id:
        task_id = f"prompt-{prompt_key(_task_text(episode.get('task')) or '')}"
    turn = _one_turn(trajectories)
    if turn is not None:  # a prompt and a response: straight into the structs, as Chat would
        prompt, response, said = turn
        return text_trace(label=label, source_format=NAME, trace_id=trace_id, task_id=task_id,
                          rollout=rollout, rewards=_rewards(trajectories, names),
                          prompt=prompt, response=response, said=said or None, system=system,
                          metrics=metrics, agent=names[0], head=head)
    chat = Chat(names[0] if names else "policy")
    for n, (trajectory, agent) in enumerate(zip(trajectories, names)):
        if n == 0:
            _steps(chat, trajectory, agent)
            continue
        spawned = chat.add("spawn", chat.root, to=agent, role="subagent")
        chat.next_turn()
        start = len(chat.events)
        _steps(chat, trajectory, agent)
        said = next((e for e in reversed(chat.events[start:]) if e.type == "message"), None)
        back = chat.add("return", agent, from_=agent, to=chat.root,
                        content=said.content if said else None,
                        reward=number(trajectory.get("reward")))
        chat.link(spawned, back, "return")
        chat.next_turn()
    if not chat.events:
        chat.prompt(_task_text(episode.get("task")) or episode_id)
    return chat.trace(label=label, source_format=NAME, trace_id=trace_id, task_id=task_id,
                      rollout=rollout, rewards=_rewards(trajectories, names), system=system,
                      metrics=metrics, first=head)


def _newest_weights(trajectories: list[dict[str, Any]]) -> int | None:
    """The highest `weight_version` the steps of an episode say (None when none says one)."""
    newest = None
    for trajectory in trajectories:
        steps = trajectory.get("steps")
        if steps.__class__ is not list:
            if not steps:
                continue
            steps = list(steps)
        for step in steps:
            if step.__class__ is dict:
                version = step.get("weight_version")
                if version.__class__ is int and (newest is None or version > newest):
                    newest = version
    return newest


def _one_turn(trajectories: list[dict[str, Any]]
              ) -> tuple[str, str, dict[str, Any]] | None:
    """(prompt, response, the response's other keys) of an episode that is one agent's one
    step of text (an observation and a response, no chat, no action): most training episodes.
    None for any other shape, which `Chat` reads."""
    if len(trajectories) != 1:
        return None
    steps = trajectories[0].get("steps")
    if steps.__class__ is not list or len(steps) != 1 or steps[0].__class__ is not dict:
        return None
    step = steps[0]
    history = step.get("chat_completions")
    if (isinstance(history, list) and history) or step.get("action") is not None:
        return None
    observation = step.get("observation", step.get("input"))
    response = step.get("model_response") or step.get("output")
    if observation is None or not response:
        return None
    prompt = content_text(observation) or as_text(observation)
    if not prompt:
        return None
    thought = step.get("thought")
    said = {"thought": as_text(thought)} if thought else {}
    reward = number(step.get("reward"))
    if reward is not None:
        said["step_reward"] = reward
    return prompt, content_text(response) or "", said


def _run(label: str) -> str:
    """The run an episode file is of: the folder holding `episodes/` (`rllm eval`'s run)."""
    parent = PurePath(label).parent
    return (parent.parent.name if parent.name == "episodes" else "") or "rllm"


def _names(trajectories: list[dict[str, Any]]) -> list[str]:
    """Each trajectory's agent, as it names itself (a default name is `policy`, or `agent-<n>`
    beside others); a name used twice gets its number."""
    if len(trajectories) == 1:  # most episodes: one agent
        name = trajectories[0].get("name")
        name = (name if name.__class__ is str else as_text(name)) or DEFAULT_NAME
        return ["policy" if name == DEFAULT_NAME else name]
    names: list[str] = []
    for n, trajectory in enumerate(trajectories):
        name = as_text(trajectory.get("name")) or DEFAULT_NAME
        if name == DEFAULT_NAME:
            name = "policy" if len(trajectories) == 1 else f"agent-{n + 1}"
        names.append(name if name not in names else f"{name}-{n + 1}")
    return names


def _task_text(task: Any) -> str | None:
    if isinstance(task, dict):
        for key in ("question", "instruction", "prompt", "problem", "task"):
            if isinstance(task.get(key), str):
                return task[key]
        return None
    return content_text(task) if task is not None else None


def _steps(chat: Chat, trajectory: dict[str, Any], agent: str) -> None:
    """A trajectory's steps as its agent's turns."""
    seen = 0
    for step in trajectory.get("steps") or []:
        if not isinstance(step, dict):
            continue
        history = step.get("chat_completions")
        if isinstance(history, list) and history:
            fresh = history[seen:] if len(history) >= seen else history
            seen = len(history)
            chat.messages(fresh, agent)
        else:
            observation = step.get("observation", step.get("input"))
            if observation is not None:
                chat.heard(agent, content_text(observation) or as_text(observation))
                chat.next_turn()
            response = step.get("model_response") or step.get("output")
            if response:  # the step's own message: its thought and reward said as it is made
                thought = step.get("thought")
                reward = number(step.get("reward"))
                extra = {"thought": as_text(thought)} if thought else {}
                if reward is not None:
                    extra["step_reward"] = reward
                said = chat._said(agent, content_text(response) or "", None, None, extra)
                chat.t += 1.0
                if step.get("action") is not None:
                    _action(chat, step, said, agent)
                continue
        said = next((e for e in reversed(chat.events) if e.agent == agent
                     and e.type == "message"), None)
        if said is None:
            continue
        if step.get("thought") and "thought" not in chat.keys_of(said):
            chat.annotate(said, thought=as_text(step["thought"]))
        chat.annotate(said, step_reward=number(step.get("reward")))
        _action(chat, step, said, agent)


def _action(chat: Chat, step: dict[str, Any], said: Any, agent: str) -> None:
    """A step's action, as a tool call of the message it follows, when it is not that
    message's words."""
    action = step.get("action")
    if action is not None and as_text(action) != said.content:
        made = chat.add("tool_call", agent, tool="action", content=as_text(action))
        chat.link(said, made, "causal")
        chat.next_turn()


def _rewards(trajectories: list[dict[str, Any]], names: list[str]) -> dict[str, float]:
    if len(trajectories) == 1 and "signals" not in trajectories[0]:  # most episodes
        value = number(trajectories[0].get("reward"))
        return {} if value is None else {TRAINER_REWARD: value}
    found: dict[str, float] = {}
    for trajectory, name in zip(trajectories, names):
        value = number(trajectory.get("reward"))
        if value is not None:
            found[name] = value
    rewards: dict[str, float] = {}
    if found:
        rewards[TRAINER_REWARD] = sum(found.values()) / len(found)
    if len(found) > 1:
        rewards.update({f"{TRAINER_REWARD}.{name}": value for name, value in found.items()})
    signals = trajectories[0].get("signals") if trajectories else None
    if signals.__class__ is dict:
        rewards.update({f"{TRAINER_REWARD}.{k}": v for k, value in signals.items()
                        if (v := number(value)) is not None})
    return rewards
