"""verl's shape: Parquet rows `{data_source, prompt, ability, reward_model, extra_info}` for
training a reward model or a generative judge on the labels.

Checked against volcengine/verl at b178a3c (2026-01-29): `docs/preparation/prepare_data.rst`
(the five fields: `data_source` indexes the reward function, `prompt` is a chat-template message
list, `ability` the task category, `reward_model` holds `style` and `ground_truth`, `extra_info`
anything else, `index` included), `examples/data_preprocess/full_hh_rlhf.py` (an RM dataset in
that shape) and `verl/utils/dataset/rl_dataset.py` (reads `prompt_key`, default `prompt`, and
`extra_info.index`).

One row per selected answer a judge can learn (scale, categorical, boolean, event and tags
questions; see `viz_app.export.consensus`): the judge reads the whole orchestration (a stop is
judged by what came after it), the target (its event, agent and, for an aggregate, the events
it merged), the rubric's question with its guidance and choices, and is to answer one choice.
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

from viz_app.export.consensus import Answer, ExportOptions, dumps, provenance
from viz_app.export.prompts import header
from viz_app.export.steps import TraceSteps, call_of
from viz_app.labels.rubric import Question, Rubric

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
                 options: ExportOptions) -> str:
    """What the judge reads: the orchestration, the target, the question."""
    text = [header(ts.trace, options.prompt_with_system), *ts.lines]
    if answer.event_id:
        event = ts.trace.event(answer.event_id)
        target = (f"Target: event {event.id} ({event.type} by "
                  f"{ts.analysis.actor[event.id]} at t={float(event.t):g})")
        merged = ts.merged.get(event.id)
        if merged:
            target += f", which merged {', '.join(merged)}"
        text.append(target + "\n")
    else:
        text.append("Target: the whole orchestration\n")
    text.append(question_text(question))
    return "".join(text)


def verl_rows(all_steps: Sequence[TraceSteps], rubric: Rubric | None,
              options: ExportOptions) -> Iterator[dict[str, Any]]:
    """One verl row per selected answer a judge can learn, by trace, event and question."""
    questions = rubric.questions_by_id if rubric is not None else {}
    index = 0
    for ts in all_steps:
        for answer in sorted((a for a in ts.answers if a.resolution != "implied"),
                             key=lambda a: a.key):
            question = questions.get(answer.question)
            if question is None or question.kind not in JUDGED_KINDS or answer.value is None:
                continue
            event = ts.trace.events_by_id.get(answer.event_id) if answer.event_id else None
            if answer.event_id and event is None:
                continue
            merged = ts.merged.get(answer.event_id, []) if event else []
            yield {
                "data_source": f"orchviz/{answer.question}",
                "prompt": [{"role": "user",
                            "content": judge_prompt(ts, answer, question, options)}],
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
