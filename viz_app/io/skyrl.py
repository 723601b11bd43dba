"""SkyRL's dumps (skyrl-train `trainer_utils`): the training trajectories of each step,
`{export_path}/dumped_trajectories/global_step_<N>.jsonl` (`dump_training_trajectories`: `{step,
env_key, data_source, stop_reason, reward, turns, tokens, prompt, text, timestamp}`, with
`closing_turn`, `outcome_info` and `image_paths` where the environment gives them), and the
evaluation results, `{export_path}/dumped_evals/global_step_<N>_evals/<data_source>.jsonl`
(`dump_per_dataset_eval_results`: `{input_prompt, output_response, score, stop_reason,
env_class, env_extras, data_source}`) beside `aggregated_results.jsonl` (the step's metrics,
no rollouts: it reads as none).

`prompt`/`input_prompt` and `text`/`output_response` are decoded token ids: a multi-turn
episode's observations are inside the response text, as the policy saw them. The rollouts of
one step with the same prompt are one group (`n_samples_per_prompt`); the reward (summed when
token-level) is the trainer's.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from viz_app.errors import TraceError
from viz_app.io.native import Source, read_source
from viz_app.io.records import first_value
from viz_app.io.rollouts import (TRAINER_REWARD, Chat, OnError, PromptKeys, Rollout, as_text,
                                 group_id, number, pending_note, rollout_lines, run_name,
                                 step_in_name, text_trace, with_note)
from viz_app.model import Trace

NAME = "skyrl"
TRAIN_KEYS = ("prompt", "text", "reward")
EVAL_KEYS = ("input_prompt", "output_response", "score")
AGGREGATE = "aggregated_results.jsonl"
RUN_FOLDERS = ("dumped_trajectories", "dumped_evals", "eval_only")


def detect(data: bytes, name: str = "") -> float:
    """How sure it is that the bytes are a SkyRL trajectory or evaluation dump (0 to 1)."""
    path = PurePath(name)
    if path.name == AGGREGATE and "dumped_evals" in path.parts:
        return 0.9
    first = first_value(data)
    if not isinstance(first, dict):
        return 0.0
    if all(k in first for k in EVAL_KEYS) and ("env_class" in first or "data_source" in first):
        return 1.0
    if all(k in first for k in TRAIN_KEYS) and ("env_key" in first or "stop_reason" in first):
        return 1.0
    return 0.0


def import_skyrl(source: Source, *, name: str | None = None,
                 first_line: int = 1, on_error: OnError | None = None) -> list[Trace]:
    """One trace per trajectory of a SkyRL dump (none for a step's aggregated metrics)."""
    data, label = read_source(source, name)
    path = PurePath(label)
    if path.name == AGGREGATE:
        return []
    folder_step = step_in_name(path.parent.name) if path.parent.name.endswith("_evals") else None
    step = step_in_name(path.stem) if folder_step is None else folder_step
    evaluation = path.parent.name.endswith("_evals") or path.parent.name == "eval_only"
    run = run_name(label, RUN_FOLDERS)
    keys = PromptKeys()
    traces = []
    for line, row in rollout_lines(data, label, first_line, on_error):
        if evaluation or ("input_prompt" in row and "prompt" not in row):
            traces.append(_eval_trace(row, line, label, run, step, keys))
        elif all(k in row for k in ("prompt", "text")):
            traces.append(_train_trace(row, line, label, run, step, keys))
        else:
            problem = TraceError(label, f"line {line}", "is not a SkyRL trajectory (no prompt "
                                 "and text, nor input_prompt and output_response)")
            if on_error is None:
                raise problem
            on_error(problem)
    if not traces:
        raise TraceError(label, "", "holds no SkyRL trajectories yet")
    return with_note(traces, pending_note(data, label))


def _reward(value: Any) -> float | None:
    if value.__class__ is list:  # token-level rewards, summed as SkyRL sums them
        try:
            return number(sum(value)) if value else None
        except TypeError:
            numbers = [n for n in map(number, value) if n is not None]
            return sum(numbers) if numbers else None
    return number(value)


def _train_trace(row: dict[str, Any], line: int, label: str, run: str,
                 file_step: int | None, keys: PromptKeys) -> Trace:
    prompt = row.get("prompt")
    if prompt.__class__ is not str:
        prompt = as_text(prompt) or ""
    step = row.get("step")
    if step.__class__ is not int:
        step = file_step
    key = keys[prompt]
    # as `Rollout.to_dict` gives it, built straight (the struct and its conversion were a
    # tenth of the reading)
    rollout: dict[str, Any] = {"trainer": NAME, "group": f"train:{_step_text(step)}:{key}"}
    if step is not None:
        rollout["step"] = step
    rollout["index"] = line - 1
    rollout["split"] = "train"
    rollout["source"] = f"line {line}"
    rewards = {} if (reward := _reward(row.get("reward"))) is None else {TRAINER_REWARD: reward}
    where = f"{run}/" if run else ""
    env_key = row.get("env_key")
    system = (env_key if env_key.__class__ is str else as_text(env_key)) or "skyrl"
    if not row.get("closing_turn"):  # a prompt and a response: straight into the structs
        said: dict[str, Any] = {}
        stop = row.get("stop_reason")
        if stop is not None:
            said["stop_reason"] = stop if stop.__class__ is str else as_text(stop)
        turns = number(row.get("turns"))
        if turns is not None:
            said["turns"] = turns
        if row.get("image_paths") is not None:
            said["image_paths"] = row["image_paths"]
        asked: dict[str, Any] = {}
        for name in ("env_key", "data_source"):
            value = row.get(name)
            if value is not None:
                asked[name] = value if value.__class__ is str else as_text(value)
        text = row.get("text")
        return text_trace(
            label=label, source_format=NAME, trace_id=f"skyrl/{where}{step}/{line - 1}",
            task_id=f"prompt-{key}", rollout=rollout, rewards=rewards, system=system,
            prompt=prompt, response=(text if text.__class__ is str else as_text(text)) or "",
            asked=asked or None, said=said or None, tokens=number(row.get("tokens")))
    rollout_ = Rollout(trainer=NAME, step=step, group=rollout["group"], index=line - 1,
                       split="train", source=f"line {line}")
    chat = Chat()
    asked = chat.prompt(prompt)
    if asked is not None:
        chat.annotate(asked, **{k: as_text(row[k]) for k in ("env_key", "data_source")
                                if row.get(k) is not None})
    said = chat.response(row.get("text"), tokens=number(row.get("tokens")),
                         stop_reason=as_text(row.get("stop_reason")),
                         turns=number(row.get("turns")), image_paths=row.get("image_paths"))
    if row.get("closing_turn"):  # the environment's last word, never trained on
        chat.add("message", "environment", content=as_text(row["closing_turn"]),
                 kind="closing_turn", to=chat.root, outcome_info=row.get("outcome_info"))
        chat.link(said, chat.events[-1], "causal")
        chat.next_turn()
    return chat.trace(label=label, source_format=NAME, trace_id=f"skyrl/{where}{step}/{line - 1}",
                      task_id=f"prompt-{key}", rollout=rollout_, rewards=rewards, system=system)


def _step_text(step: int | None) -> str:
    """A step as a group id says it (`group_id`): `-` when not known."""
    return "-" if step is None else str(step)


def _eval_trace(row: dict[str, Any], line: int, label: str, run: str,
                step: int | None, keys: PromptKeys) -> Trace:
    prompt = as_text(row.get("input_prompt")) or ""
    dataset = as_text(row.get("data_source")) or PurePath(label).stem
    key = keys[prompt]
    rollout = Rollout(trainer=NAME, step=step, group=group_id("eval", dataset, step, key),
                      index=line - 1, split=dataset, source=f"line {line}")
    rewards = {} if (score := _reward(row.get("score"))) is None else {TRAINER_REWARD: score}
    kept = {"env_class": as_text(row.get("env_class")), "data_source": dataset,
            "env_extras": row.get("env_extras")}
    stop = as_text(row.get("stop_reason"))
    where = f"{run}/" if run else ""
    return text_trace(
        label=label, source_format=NAME, trace_id=f"skyrl/{where}eval/{step}/{dataset}/{line - 1}",
        task_id=f"prompt-{key}", rollout=rollout.to_dict(), rewards=rewards,
        system=as_text(row.get("env_class")) or "skyrl", prompt=prompt,
        response=as_text(row.get("output_response")) or "",
        asked={k: v for k, v in kept.items() if v is not None},
        said={"stop_reason": stop} if stop is not None else None)
