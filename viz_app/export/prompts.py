"""Prompts from traces, and TRL's step-wise shapes: stepwise supervision and unpaired preference.

Checked against TRL's `docs/source/dataset_formats.md` and `trl/experimental/prm/prm_trainer.py`
(huggingface/trl at f2cd577, 2026-07-24): stepwise supervision is `{prompt, completions, labels}`
with bool labels, standard format only (TRL defines no conversational stepwise type, and its
PRMTrainer tokenizes `prompt` as a string); unpaired preference is `{prompt, completion, label}`
with a bool label, standard or conversational (`prompt` and `completion` as lists of
`{role, content}` messages, which `trl.data_utils.is_conversational` recognises).

**Prompts.** A prompt starts `Task: <the task's words>` (`analysis.task_text`: the root's first
instruction, else the task id and a word that only the id is recorded) and `Orchestration:`, then one line per event in
time order, `[t=12.5] orchestrator aggregate: <its text>` (decisions name their kind, messages,
returns and spawns their recipient, tool events their tool). The trace's free-text `system`
description is left out unless `prompt_with_system` is asked: in the demo traces it states the
answer, and teams write notes there.

**Conversational.** Messages are seen from the step's agent: its own events are `assistant`
turns, every other event (and the task) a `user` turn; consecutive lines of one role make one
message. Roles alternate, as strict chat templates require: where the agent's own events came
right before its step (a prompt that would end with an assistant turn), they join the step's
completion as one assistant turn (`alternate`): the agent acted several times with nothing
between, which is one turn of a chat.

**Bools.** TRL's labels are bools; a step's label is `reward > threshold` (0 by default). The
rubric puts its neutral answers at reward 0 (`3 partial`, `partial`), and TRL's True means "a
desirable completion", so a neutral step is False; `--threshold` moves the line. Every row keeps
the reward, each answer's original value (`answers[].value_json`), the threshold, and the
provenance of every label behind it, so nothing the bool cut is lost.

- stepwise (one row per trace): `prompt` is the header and every event before the first step
  (it ends with a newline); `completions[i]` is the events after step i-1 up to and including
  step i, one line each, without the newline after the last (PRMTrainer appends its
  `step_separator`, "\n" by default, after each completion and labels that token); `labels[i]`
  its bool. `prompt + "".join(c + "\n" for c in completions)` is the orchestration up to its
  last step, which is what PRMTrainer reads with its default separator.
- unpaired (one row per step): `prompt` is the header and every event before the step;
  `completion` is the step's event; `label` its bool.

Steps are described in `viz_app.export.steps`. A 'should have stopped at' pointer's step is the
stopping agent's stop placed at the event pointed at: its prompt is the orchestration up to and
including that event, without the stop it corrects, and its completion the stop
(`steps.stop_line`). In stepwise, the orchestration as it happened is one row (the pointers'
steps are not in it) and each pointer is a row of its own: the steps up to the pointed event,
then the stop there, labelled True. Rows name the stop a pointer corrects in `corrects`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from viz_app.analysis import task_text
from viz_app.errors import OrchvizError
from viz_app.export.consensus import ExportOptions, answers_labels, dumps, provenance
from viz_app.export.steps import (Step, TraceSteps, branch_positions, branch_steps,
                                  stop_line)
from viz_app.labels import LabelRecord, Rubric
from viz_app.model import Trace


def task_line(trace: Trace) -> str:
    """A prompt's first line: the task in the trace's own words (`analysis.task_text`)."""
    return f"Task: {task_text(trace)}\n"


def header(trace: Trace, with_system: bool = False) -> str:
    """The top of every prompt: the task (and, when asked, the system that attempted it)."""
    lines = [task_line(trace).rstrip("\n")]
    if with_system and (trace.system or trace.topology):
        lines.append(f"System: {trace.system or 'unknown'} ({trace.topology or 'unknown'} "
                     "topology)")
    lines.append("Orchestration:")
    return "\n".join(lines) + "\n"


def turns(ts: TraceSteps, agent: str) -> list[list]:
    """The trace's events seen from `agent` as turns `[role, start, stop]`: its own events are
    `assistant` turns, every other event a `user` turn, consecutive events of one role one turn
    (made from the agent's own positions, once per trace and agent)."""
    found = ts.turns_of.get(agent)
    if found is None:
        if not ts.turns_of:
            ts.turns_of[""] = _positions(ts)
        own = ts.turns_of[""].get(agent, [])
        found, at = [], 0
        for position in own:
            if found and found[-1][0] == "assistant" and found[-1][2] == position:
                found[-1][2] = at = position + 1
                continue
            if position > at:
                found.append(["user", at, position])
            found.append(["assistant", position, position + 1])
            at = position + 1
        if at < len(ts.analysis.order):
            found.append(["user", at, len(ts.analysis.order)])
        ts.turns_of[agent] = found
    return found


def _positions(ts: TraceSteps) -> dict[str, list[int]]:
    """agent -> the positions of its events, in time order."""
    actor = ts.analysis.actor
    found: dict[str, list[int]] = {}
    for i, event in enumerate(ts.analysis.order):
        found.setdefault(actor[event.id], []).append(i)
    return found


def conversation(ts: TraceSteps, agent: str, stop: int, head: str = "",
                 upto: int | None = None) -> list[dict[str, str]]:
    """The head (a user message) and the events before position `stop` as chat messages seen
    from `agent`: its own events `assistant` turns, the rest `user` turns, consecutive lines of
    one role one message. The whole conversation is made once per trace, agent and head (up to
    `upto`, the furthest stop that will be asked of it, when the caller knows it); a
    conversation that stops earlier shares its whole messages (the same dicts: rows are written,
    never changed) and makes only the message the stop cuts."""
    messages, spans, ends = _whole_conversation(ts, agent, head,
                                                None if upto is None else max(upto, stop))
    whole = bisect_right(ends, stop)
    found = messages[:whole]
    if whole < len(spans):
        prefix, start = spans[whole]
        if start < stop:
            found.append({"role": messages[whole]["role"],
                          "content": prefix + "".join(ts.lines[start:stop])})
        elif prefix and not found:
            found.append({"role": "user", "content": prefix})
    return found


def _whole_conversation(ts: TraceSteps, agent: str, head: str, upto: int | None = None):
    """(messages, (prefix, first position) of each, last position + 1 of each) of the whole
    trace seen from `agent`; a head merged into the first user turn is its prefix. With `upto`,
    the messages end with the first that reaches past position `upto`: every stop up to it
    finds the same messages, and the message it cuts, as in the whole."""
    made = ts.messages_of.get((agent, head))
    if made is not None and (made[3] is None or (upto is not None and upto <= made[3])):
        return made[:3]
    lines = ts.lines
    messages: list[dict[str, str]] = []
    spans: list[tuple[str, int]] = []
    ends: list[int] = []
    for role, start, end in turns(ts, agent):
        text = "".join(lines[start:end])
        if not messages and head and role == "user":
            messages.append({"role": role, "content": head + text})
            spans.append((head, start))
        else:
            if not messages and head:
                messages.append({"role": "user", "content": head})
                spans.append(("", 0))
                ends.append(0)
            messages.append({"role": role, "content": text})
            spans.append(("", start))
        ends.append(end)
        if upto is not None and end > upto:
            break
    else:
        upto = None  # it reached the end: the whole conversation
    if not messages and head:
        messages.append({"role": "user", "content": head})
        spans.append(("", 0))
        ends.append(0)
    ts.messages_of[(agent, head)] = (messages, spans, ends, upto)
    return messages, spans, ends


def pointer_conversation(ts: TraceSteps, step: Step, head: str) -> list[dict[str, str]]:
    """A pointer's context as chat messages seen from the agent that stopped (the head merged
    into the first user message, consecutive lines of one role one message)."""
    actor, order, lines = ts.analysis.actor, ts.analysis.order, ts.lines
    messages: list[dict[str, str]] = [{"role": "user", "content": head}]
    for position in branch_positions(ts, step):
        role = "assistant" if actor[order[position].id] == step.agent else "user"
        if messages[-1]["role"] == role:
            messages[-1]["content"] += lines[position]
        else:
            messages.append({"role": role, "content": lines[position]})
    return messages


def context(ts: TraceSteps, step: Step, options: ExportOptions) -> str | list[dict[str, str]]:
    """Everything before a step: the header and the events before it (for a pointer's step,
    the events up to and including the one pointed at, without the stop it corrects)."""
    head = ts.heads.get(options.prompt_with_system)
    if head is None:  # once per trace: every step of it has the same
        head = ts.heads[options.prompt_with_system] = header(ts.trace,
                                                             options.prompt_with_system)
    if step.pointer:
        if options.conversational:
            return pointer_conversation(ts, step, head)
        return head + "".join(ts.lines[p] for p in branch_positions(ts, step))
    if options.conversational:
        return conversation(ts, step.agent, step.position, head, ts.last_step[step.agent])
    lines = ts.lines[:step.position]
    lines.insert(0, head)
    return "".join(lines)  # one copy of the text (`head + join` made two)


def step_text(ts: TraceSteps, step: Step, options: ExportOptions) -> str | list[dict[str, str]]:
    """The step's own event (an assistant turn, when conversational); for a pointer's step,
    the stop it corrects, placed at the event pointed at."""
    line = stop_line(ts, step) if step.pointer else ts.lines[step.position]
    return [{"role": "assistant", "content": line}] if options.conversational else line


def alternate(prompt: list[dict[str, str]], completion: list[dict[str, str]]
              ) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """A conversational prompt and completion whose roles alternate across the two: a prompt
    that ends with an assistant turn gives that turn to the completion's first (assistant)
    message, as one turn (the prompt is a fresh list; no message is changed in place)."""
    if prompt and completion and prompt[-1]["role"] == "assistant" == completion[0]["role"]:
        last = prompt.pop()
        completion = [{"role": "assistant", "content": last["content"]
                       + completion[0]["content"]}, *completion[1:]]
    return prompt, completion


def step_columns(ts: TraceSteps, step: Step, options: ExportOptions) -> dict[str, Any]:
    """What every per-step row keeps beside its trainer's columns."""
    return {"trace_id": ts.trace.trace_id, "task_id": ts.trace.task_id,
            "event_id": step.event_id, "agent": step.agent, "kind": step.kind,
            "reward": step.reward, "threshold": options.threshold,
            "answers": [a.summary() for a in step.answers], "merged": step.merged,
            "call_json": dumps(step.call), "corrects": step.corrects or None,
            "outcome_reward": ts.outcome_reward, "provenance": provenance(step.labels)}


def unpaired_rows(all_steps: Sequence[TraceSteps], options: ExportOptions) -> Iterator[dict]:
    """One unpaired row per step, by trace then time."""
    for ts in all_steps:
        for step in ts.steps:
            prompt, completion = context(ts, step, options), step_text(ts, step, options)
            if options.conversational:
                prompt, completion = alternate(prompt, completion)
            yield {"prompt": prompt, "completion": completion,
                   "label": step.label(options.threshold), **step_columns(ts, step, options)}
        ts.let_go()  # the trace's lines and conversations are done with


NO_CONVERSATIONAL_STEPWISE = (
    "--format stepwise has no conversational variant because TRL defines none (huggingface/trl "
    "f2cd577, 2026-07-24: docs/source/dataset_formats.md leaves the conversational stepwise "
    "supervision cell empty, and trl/experimental/prm/prm_trainer.py tokenizes `prompt` as a "
    "string): drop --conversational")


def branches(ts: TraceSteps) -> Iterator[tuple[list[int], list[Step]]]:
    """The orchestrations a trace's step-wise rows are made from, as (positions, steps): first
    as it happened (its steps but the pointers', every event up to the last of them), then,
    for each pointer, as it would have gone had the agent stopped there (`branch_positions`,
    `branch_steps`: its last step is the pointer's stop)."""
    decisions = ts.decisions
    if decisions:
        yield list(range(decisions[-1].position + 1)), decisions
    for step in ts.steps:
        if step.pointer:
            yield branch_positions(ts, step), branch_steps(ts, step)


def segments(ts: TraceSteps, positions: list[int], steps: list[Step],
             lines: Sequence[str]) -> tuple[str, list[str]]:
    """(the lines before the first step, then per step the lines after the one before up to
    and including it): a pointer's step ends with its stop (`stop_line`)."""
    at = {p: i for i, p in enumerate(positions)}
    first = at[steps[0].position]
    parts, start = [], first
    for step in steps:
        end = at[step.position] + 1
        part = "".join(lines[p] for p in positions[start:end])
        parts.append(part + stop_line(ts, step, lines) if step.pointer else part)
        start = end
    return "".join(lines[p] for p in positions[:first]), parts


def stepwise_row(ts: TraceSteps, options: ExportOptions) -> dict[str, Any] | None:
    """The stepwise row of one trace as it happened, or None when it has no step."""
    return next(stepwise_branch_rows(ts, options), None) if ts.decisions else None


def stepwise_branch_rows(ts: TraceSteps, options: ExportOptions) -> Iterator[dict[str, Any]]:
    """The stepwise rows of one trace: as it happened, then one per pointer."""
    if options.conversational:
        raise OrchvizError(NO_CONVERSATIONAL_STEPWISE)
    head = header(ts.trace, options.prompt_with_system)
    for positions, steps in branches(ts):
        before, parts = segments(ts, positions, steps, ts.lines)
        yield {"prompt": head + before, "completions": [p[:-1] for p in parts],
               "labels": [s.label(options.threshold) for s in steps],
               **trace_columns(ts, options, steps)}


def trace_columns(ts: TraceSteps, options: ExportOptions,
                  steps: Sequence[Step] | None = None) -> dict[str, Any]:
    """What every per-trace step-wise row keeps beside its trainer's columns: per step its
    event, agent, kind, reward, answers, merged inputs and LLM call; the trace's outcome;
    `corrects`, the stop a pointer's row corrects (its last step; None for the row of the
    orchestration as it happened); and the provenance of the labels behind it (every label of
    the trace on the row as it happened)."""
    steps = ts.decisions if steps is None else steps
    pointer = steps[-1] if steps and steps[-1].pointer else None
    return {"trace_id": ts.trace.trace_id, "task_id": ts.trace.task_id,
            "event_ids": [s.event_id for s in steps], "agents": [s.agent for s in steps],
            "kinds": [s.kind for s in steps], "rewards": [s.reward for s in steps],
            "threshold": options.threshold,
            "answers": [[a.summary() for a in s.answers] for s in steps],
            "merged": [s.merged for s in steps], "calls_json": [dumps(s.call) for s in steps],
            "outcome_reward": ts.outcome_reward,
            "outcome": [a.summary() for a in ts.outcome],
            "corrects": pointer.corrects if pointer else None,
            "provenance": provenance(answers_labels([
                *ts.outcome, *(a for s in steps for a in s.answers)]) if pointer
                else ts.labels)}


def stepwise_rows(all_steps: Sequence[TraceSteps], options: ExportOptions) -> Iterator[dict]:
    """One stepwise row per trace with a step, by trace id."""
    if options.conversational:
        raise OrchvizError(NO_CONVERSATIONAL_STEPWISE)
    for ts in all_steps:
        yield from stepwise_branch_rows(ts, options)


def trace_steps_of(trace: Trace, labels: Iterable[LabelRecord], rubric: Rubric | None,
                   options: ExportOptions = ExportOptions()) -> TraceSteps:
    """One trace's steps from current label records, chosen by `options`."""
    from viz_app.export.consensus import select
    from viz_app.export.steps import trace_steps

    selection = select((r for r in labels if r["trace_id"] == trace.trace_id), rubric, options)
    return trace_steps(trace, selection.answers, rubric)


def stepwise_record(trace: Trace, labels: Iterable[LabelRecord], rubric: Rubric | None,
                    options: ExportOptions = ExportOptions()) -> dict[str, Any] | None:
    """The stepwise row of one trace from current label records, or None without a step."""
    return stepwise_row(trace_steps_of(trace, labels, rubric, options), options)


def unpaired_records(trace: Trace, labels: Iterable[LabelRecord], rubric: Rubric | None,
                     options: ExportOptions = ExportOptions()) -> list[dict[str, Any]]:
    """The unpaired rows of one trace from current label records, in time order."""
    return list(unpaired_rows([trace_steps_of(trace, labels, rubric, options)], options))
