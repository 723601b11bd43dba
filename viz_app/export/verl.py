"""verl's shape: Parquet rows `{data_source, prompt, ability, reward_model, extra_info}` for
training a reward model or a generative judge on the labels.

Checked against volcengine/verl at b178a3c (2026-01-29): `docs/preparation/prepare_data.rst`
(the five fields: `data_source` indexes the reward function, `prompt` is a chat-template message
list, `ability` the task category, `reward_model` holds `style` and `ground_truth`, `extra_info`
anything else, `index` included), `examples/data_preprocess/full_hh_rlhf.py` (an RM dataset in
that shape) and `verl/utils/dataset/rl_dataset.py` (reads `prompt_key`, default `prompt`, and
`extra_info.index`).

One row per selected answer a judge can learn (scale, categorical, boolean, event and tags
questions; see `viz_app.export.consensus`): the judge reads the orchestration up to and
including the target (what the agent had when it acted; the whole run for a stop, which is
judged by what came after it, and for the trace itself), the target (its event, agent and, for
an aggregate, the events it merged), the rubric's question with its guidance and choices, and
is to answer one choice.
`reward_model` is `{"style": "rule", "ground_truth": <the answer>}` (a string; JSON text for an
answer that is not one), `data_source` is `orchviz/<question>` so a `compute_score` can be
picked per question, and `extra_info` keeps the answer's value as JSON, its reward and spread,
the reviewers, the target's agent, merged inputs and LLM call ids, and the provenance of every
label behind it. A disputed target averaged with `--disputed mean` has no answer to learn and is
reported instead.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from viz_app.export.consensus import PROVENANCE_FIELDS, Answer, ExportOptions, dumps, provenance
from viz_app.export.prompts import header
from viz_app.export.steps import TraceSteps, call_of
from viz_app.labels import Question, Rubric

HINDSIGHT = frozenset({"stop"})
"""Targets judged with what came after them: a stop is premature or late by the events that
followed it. Every other event target is judged by the orchestration up to and including it (what
the agent had when it acted), the trace itself by the whole orchestration."""

JUDGED_KINDS = ("scale", "categorical", "boolean", "event", "tags")
"""Question kinds a judge is trained on (free text is not)."""

ABILITY = "orchestration_review"


def ground_truth(value: Any) -> str:
    """An answer as verl's `ground_truth` string."""
    return value if isinstance(value, str) else dumps(value)


def question_text(question: Question) -> str:
    """The rubric's question as the judge reads it."""
    lines = [f"Question: {question.prompt}"]
    if question.guidance:
        lines.append(f"Guidance: {' '.join(question.guidance.split())}")
    if question.kind == "event":
        lines.append("Answer with the id of one event of the orchestration.")
    elif question.choices:
        many = question.kind == "tags"
        lines.append("Answer with a JSON list of any of these values:" if many
                     else "Answer with exactly one of these values:")
        for choice in question.choices:
            anchor = f": {' '.join(choice.guidance.split())}" if choice.guidance else ""
            lines.append(f"- {ground_truth(choice.value)} ({choice.label}){anchor}")
    return "\n".join(lines) + "\n"


def judge_prompt(ts: TraceSteps, answer: Answer, question: Question,
                 options: ExportOptions, seen: dict | None = None,
                 asked: dict[str, str] | None = None) -> str:
    """What the judge reads: the orchestration (up to the target, or whole: see
    `HINDSIGHT`), the target, the question, joined in one copy. `seen` keeps the prompt's
    header for the answers of one trace (cleared for the next)."""
    stop = len(ts.lines)
    if answer.event_id and question.target.kind not in HINDSIGHT:
        stop = ts.analysis.position[answer.event_id] + 1
    seen = {} if seen is None else seen
    if "" not in seen:
        seen.clear()
        seen[""] = header(ts.trace, options.prompt_with_system)
    text = ts.lines[:stop]
    text.insert(0, seen[""])  # joined once with the rest below: one copy of the text
    if answer.event_id:
        event = ts.events[answer.event_id]
        target = (f"Target: event {event.id} ({event.type} by "
                  f"{ts.analysis.actor[event.id]} at t={float(event.t):g})")
        merged = ts.merged.get(event.id)
        if merged:
            target += f", which merged {', '.join(merged)}"
        text.append(target + "\n")
    else:
        text.append("Target: the whole orchestration\n")
    text.append(asked[question.id] if asked is not None and question.id in asked
                else question_text(question))
    return "".join(text)


def verl_rows(all_steps: Sequence[TraceSteps], rubric: Rubric | None,
              options: ExportOptions) -> Iterator[dict[str, Any]]:
    """One verl row per selected answer a judge can learn, by trace, event and question."""
    questions = rubric.questions_by_id if rubric is not None else {}
    index = 0
    seen: dict[int, str] = {}
    asked = {q.id: question_text(q) for q in questions.values()}
    for ts in all_steps:
        seen.clear()
        for answer in sorted((a for a in ts.answers if a.resolution != "implied"),
                             key=lambda a: a.key):
            question = questions.get(answer.question)
            if question is None or question.kind not in JUDGED_KINDS or answer.value is None:
                continue
            event = ts.events.get(answer.event_id) if answer.event_id else None
            if answer.event_id and event is None:
                continue
            merged = ts.merged.get(answer.event_id, []) if event else []
            yield {
                "data_source": f"orchviz/{answer.question}",
                "prompt": [{"role": "user",
                            "content": judge_prompt(ts, answer, question, options, seen,
                                                       asked)}],
                "ability": ABILITY,
                "reward_model": {"style": "rule", "ground_truth": ground_truth(answer.value)},
                "extra_info": {
                    "split": "train", "index": index, "trace_id": ts.trace.trace_id,
                    "task_id": ts.trace.task_id, "event_id": answer.event_id or None,
                    "agent": ts.analysis.actor[event.id] if event else None,
                    **answer.summary(), "merged": list(merged),
                    "call_json": dumps(call_of(event) if event else {}),
                    "provenance": provenance(answer.labels)},
            }
            index += 1


NUMBERS = frozenset({"reward", "seconds_spent", "reward_std"})
"""Provenance and answer fields that are numbers."""

BOOLS = frozenset({"suggestions_visible"})
"""Provenance fields that are bools (every other one is text)."""


def verl_schema():
    """The Arrow schema of a verl row: rows are written a batch at a time against it."""
    import pyarrow as pa

    text = pa.string()
    entry = pa.struct([(name, pa.float64() if name in NUMBERS else pa.bool_() if name in BOOLS
                        else text) for name in PROVENANCE_FIELDS])
    info = pa.struct([
        ("split", text), ("index", pa.int64()), ("trace_id", text), ("task_id", text),
        ("event_id", text), ("agent", text), ("question", text), ("value_json", text),
        ("reward", pa.float64()), ("reward_std", pa.float64()), ("reviewers", pa.int64()),
        ("disputed", pa.bool_()), ("resolution", text), ("merged", pa.list_(text)),
        ("call_json", text), ("provenance", pa.list_(entry))])
    return pa.schema([
        ("data_source", text),
        ("prompt", pa.list_(pa.struct([("role", text), ("content", text)]))),
        ("ability", text),
        ("reward_model", pa.struct([("style", text), ("ground_truth", text)])),
        ("extra_info", info)])
