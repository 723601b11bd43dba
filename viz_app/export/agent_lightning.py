"""Agent Lightning's shapes: a `Triplet` per labelled step, with the reward record that links it
to the LLM call it judges.

Checked against microsoft/agent-lightning at tag v0.3.0 (3b5d733, 2025-12-24, the release pip
installs on Python 3.11): `agentlightning/types/core.py` (`Triplet`: `prompt`, `response`,
`reward`, `metadata`), `agentlightning/adapter/triplet.py` (`span_to_triplet`: `prompt` is
`{token_ids, raw_content, image_urls}`, `response` is `{token_ids, raw_content}`, `metadata`
holds `request`, `response`, `response_id` and `agent_name`), `agentlightning/emitter/reward.py`
(`emit_reward` writes an `agentlightning.annotation` span whose attributes list the reward's
dimensions as `agentlightning.reward.<i>.name` / `.value`, the primary one first) and
`agentlightning/utils/otel.py` (`make_link_attributes` links it to the judged span as
`agentlightning.link.<i>.key_match` / `.value_match`, by `gen_ai.response.id` or `span_id`).
And against the main branch's v1.0.0 (c632d8d, 2026-08-22), which replaced spans with events:
`agentlightning/schemas.py` `EventCreate(event_type="reward", data=RewardData(value, message,
source, reason))`.

Each row (one per step, `viz_app.export.steps`):

- `prompt`, `response`, `reward`, `metadata`: a `Triplet` (`Triplet.model_validate(row)`
  reads it; pydantic ignores the other keys). `prompt.raw_content` is the context as chat
  messages seen from the step's agent, `response.raw_content` the step's event as an assistant
  message; `token_ids` are the event's `prompt_token_ids` / `response_token_ids` where the
  trace carries them (else empty). `metadata.response_id` is the event's `response_id`.
- `reward_span`: `{name, attributes}` of the span `emit_reward` would write for this step: the
  step's reward as the primary dimension, one dimension per rubric question after it, and a link
  to the judged call by `gen_ai.response.id` (where the event has a `response_id`) and by
  `span_id` (where the trace was read from spans, whose ids orchviz keeps as `source_id`).
  Replay: `emit_reward({d.name: d.value ...}, primary_key="primary", attributes=links)`.
- `reward_event`: the v1.0 `EventCreate` for the same reward (`source` "orchviz", `reason` the
  questions, `message` the reviewers' comments).
- `linked`: whether the reward names the call it judges (false where the trace carries neither
  id: then only the trace and event ids say where it belongs).

A 'should have stopped at' pointer's row is the stopping agent's stop placed at the event
pointed at (`viz_app.export.steps`): its prompt the conversation up to and including that event
(without the stop it corrects), its response the stop; it links to no call (no call made that
stop) and names the stop it corrects in `metadata.corrects`. Roles alternate across prompt and
response, as strict chat templates require (`viz_app.export.prompts.alternate`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from viz_app.export.consensus import ExportOptions, dumps, provenance
from viz_app.export.prompts import alternate, context, step_text
from viz_app.export.steps import Step, TraceSteps

ANNOTATION_SPAN = "agentlightning.annotation"
"""`AGL_ANNOTATION` in agentlightning/semconv.py: the span name `emit_reward` writes."""

REWARD_PREFIX = "agentlightning.reward"
LINK_PREFIX = "agentlightning.link"

FIRST_LINK = f"{LINK_PREFIX}.0.key_match"

SPAN_FORMATS = frozenset({"agentlightning", "otlp", "agentops", "openai_agents", "langfuse"})
"""Importers whose events keep the span id they came from as `source_id`."""


def reward_attributes(step: Step, source_format: str) -> dict[str, Any]:
    """The flattened attributes of the reward span `emit_reward` would write for a step."""
    attributes: dict[str, Any] = {f"{REWARD_PREFIX}.0.name": "primary",
                                  f"{REWARD_PREFIX}.0.value": float(step.reward)}
    i = 1
    for answer in step.answers:
        if answer.reward is not None:
            attributes[f"{REWARD_PREFIX}.{i}.name"] = answer.question
            attributes[f"{REWARD_PREFIX}.{i}.value"] = float(answer.reward)
            i += 1
    call = step.call
    if call:
        links = []
        if "response_id" in call:
            links.append(("gen_ai.response.id", call["response_id"]))
        if "source_id" in call and source_format in SPAN_FORMATS:
            links.append(("span_id", call["source_id"]))
        for i, (key, value) in enumerate(links):
            attributes[f"{LINK_PREFIX}.{i}.key_match"] = key
            attributes[f"{LINK_PREFIX}.{i}.value_match"] = value
    return attributes


def triplet_row(ts: TraceSteps, step: Step, options: ExportOptions,
                source_format: str | None = None) -> dict[str, Any]:
    """The row of one step (`options` conversational: a Triplet's prompt is chat messages)."""
    attributes = reward_attributes(step, source_format if source_format is not None
                                   else ts.trace.source_format)
    labels = step.labels
    comments = [r["comment"] for r in labels if r.get("comment")]
    call = step.call
    prompt, response = alternate(context(ts, step, options), step_text(ts, step, options))
    return {
        "prompt": {"token_ids": call.get("prompt_token_ids", []),
                   "raw_content": prompt, "image_urls": []},
        "response": {"token_ids": call.get("response_token_ids", []),
                     "raw_content": response},
        "reward": step.reward,
        "metadata": {"request": None, "response": None,
                     "response_id": call.get("response_id"), "agent_name": step.agent,
                     "trace_id": ts.trace.trace_id, "task_id": ts.trace.task_id,
                     "event_id": step.event_id, "kind": step.kind,
                     "label": step.label(options.threshold), "threshold": options.threshold,
                     "answers": [a.summary() for a in step.answers], "merged": step.merged,
                     "call_json": dumps(call), "corrects": step.corrects or None,
                     "outcome_reward": ts.outcome_reward,
                     "provenance": provenance(labels)},
        "reward_span": {"name": ANNOTATION_SPAN, "attributes": attributes},
        "reward_event": {"event_type": "reward", "data": {
            "value": step.reward, "message": " | ".join(comments) or None, "source": "orchviz",
            "reason": ",".join(a.question for a in step.answers if a.reward is not None)}},
        "linked": FIRST_LINK in attributes,  # links are numbered from 0
    }


def triplet_rows(all_steps: Sequence[TraceSteps], options: ExportOptions) -> Iterator[dict]:
    """One row per step, by trace then time."""
    conversational = options.model_copy(update={"conversational": True})
    for ts in all_steps:
        source_format = ts.trace.source_format
        for step in ts.steps:
            yield triplet_row(ts, step, conversational, source_format)
        ts.let_go()  # the trace's lines and conversations are done with

