"""Prompts from traces, and TRL's step-wise shapes: stepwise supervision and unpaired preference.

Checked against TRL's `docs/source/dataset_formats.md` and `trl/experimental/prm/prm_trainer.py`
(huggingface/trl at f2cd577, 2026-07-24): stepwise supervision is `{prompt, completions, labels}`
with bool labels, standard format only (TRL defines no conversational stepwise type, and its
PRMTrainer tokenizes `prompt` as a string); unpaired preference is `{prompt, completion, label}`
with a bool label, standard or conversational (`prompt` and `completion` as lists of
`{role, content}` messages, which `trl.data_utils.is_conversational` recognises).

**Prompts.** A prompt starts `Task: <task_id>` and `Orchestration:`, then one line per event in
time order, `[t=12.5] orchestrator aggregate: <its text>` (decisions name their kind, messages,
returns and spawns their recipient, tool events their tool). The trace's free-text `system`
description is left out unless `prompt_with_system` is asked: in the demo traces it states the
answer, and teams write notes there.

**Conversational.** Messages are seen from the step's agent: its own events are `assistant`
turns, every other event (and the task) a `user` turn; consecutive lines of one role make one
message.

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

Steps (and the 'should have stopped at' pointer's step) are described in
`viz_app.export.steps`.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from viz_app.errors import OrchvizError
from viz_app.export.consensus import ExportOptions, dumps, provenance
from viz_app.export.steps import Step, TraceSteps
from viz_app.labels.label import LabelRecord
from viz_app.labels.rubric import Rubric
from viz_app.model import Trace


def header(trace: Trace, with_system: bool = False) -> str:
    """The top of every prompt: the task (and, when asked, the system that attempted it)."""
    lines = [f"Task: {trace.task_id}"]
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


def context(ts: TraceSteps, step: Step, options: ExportOptions) -> str | list[dict[str, str]]:
    """Everything before a step: the header and the events before it."""
    head = ts.heads.get(options.prompt_with_system)
    if head is None:  # once per trace: every step of it has the same
        head = ts.heads[options.prompt_with_system] = header(ts.trace,
                                                             options.prompt_with_system)
    if options.conversational:
        return conversation(ts, step.agent, step.position, head, ts.last_step[step.agent])
    lines = ts.lines[:step.position]
    lines.insert(0, head)
    return "".join(lines)  # one copy of the text (`head + join` made two)


def step_text(ts: TraceSteps, step: Step, options: ExportOptions) -> str | list[dict[str, str]]:
    """The step's own event (an assistant turn, when conversational)."""
    line = ts.lines[step.position]
    return [{"role": "assistant", "content": line}] if options.conversational else line


def step_columns(ts: TraceSteps, step: Step, options: ExportOptions) -> dict[str, Any]:
    """What every per-step row keeps beside its trainer's columns."""
    return {"trace_id": ts.trace.trace_id, "task_id": ts.trace.task_id,
            "event_id": step.event_id, "agent": step.agent, "kind": step.kind,
            "reward": step.reward, "threshold": options.threshold,
            "answers": [a.summary() for a in step.answers], "merged": step.merged,
            "call_json": dumps(step.call), "outcome_reward": ts.outcome_reward,
            "provenance": provenance(step.labels)}


def unpaired_rows(all_steps: Sequence[TraceSteps], options: ExportOptions) -> Iterator[dict]:
    """One unpaired row per step, by trace then time."""
    for ts in all_steps:
        for step in ts.steps:
            yield {"prompt": context(ts, step, options), "completion": step_text(ts, step, options),
                   "label": step.label(options.threshold), **step_columns(ts, step, options)}
        ts.let_go()  # the trace's lines and conversations are done with


NO_CONVERSATIONAL_STEPWISE = (
    "--format stepwise has no conversational variant because TRL defines none (huggingface/trl "
    "f2cd577, 2026-07-24: docs/source/dataset_formats.md leaves the conversational stepwise "
    "supervision cell empty, and trl/experimental/prm/prm_trainer.py tokenizes `prompt` as a "
    "string): drop --conversational")


def stepwise_row(ts: TraceSteps, options: ExportOptions) -> dict[str, Any] | None:
    """The stepwise row of one trace, or None when it has no step."""
    if options.conversational:
        raise OrchvizError(NO_CONVERSATIONAL_STEPWISE)
    steps = ts.steps
    if not steps:
        return None
    lines = ts.lines
    first = steps[0].position
    completions, start = [], first
    for step in steps:
        completions.append("".join(lines[start:step.position + 1])[:-1])
        start = step.position + 1
    return {"prompt": header(ts.trace, options.prompt_with_system) + "".join(lines[:first]),
            "completions": completions, "labels": [s.label(options.threshold) for s in steps],
            **trace_columns(ts, options)}


def trace_columns(ts: TraceSteps, options: ExportOptions) -> dict[str, Any]:
    """What every per-trace step-wise row keeps beside its trainer's columns: per step its
    event, agent, kind, reward, answers, merged inputs and LLM call; the trace's outcome; and
    the provenance of every label of the trace."""
    steps = ts.steps
    return {"trace_id": ts.trace.trace_id, "task_id": ts.trace.task_id,
            "event_ids": [s.event_id for s in steps], "agents": [s.agent for s in steps],
            "kinds": [s.kind for s in steps], "rewards": [s.reward for s in steps],
            "threshold": options.threshold,
            "answers": [[a.summary() for a in s.answers] for s in steps],
            "merged": [s.merged for s in steps], "calls_json": [dumps(s.call) for s in steps],
            "outcome_reward": ts.outcome_reward,
            "outcome": [a.summary() for a in ts.outcome],
            "provenance": provenance(ts.labels)}


def stepwise_rows(all_steps: Sequence[TraceSteps], options: ExportOptions) -> Iterator[dict]:
    """One stepwise row per trace with a step, by trace id."""
    if options.conversational:
        raise OrchvizError(NO_CONVERSATIONAL_STEPWISE)
    for ts in all_steps:
        row = stepwise_row(ts, options)
        if row is not None:
            yield row


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
