"""Agent Lightning's shapes, checked against microsoft/agent-lightning v0.3.0 (3b5d733):
`Triplet` (types/core.py), the triplet adapter's prompt and response payloads (adapter/
triplet.py), `emit_reward`'s span attributes (emitter/reward.py, semconv.py, utils/otel.py); and
v1.0.0's reward event (schemas.py). agentlightning is not installed here (its dependencies pull
a LiteLLM proxy and pin packages the app uses), so its types are mirrored below with the field
names as they stand at those commits, and the rows are validated against the mirror."""

from __future__ import annotations

import json
from typing import Any, Optional

import pytest
from pydantic import BaseModel, Field

from factories import make_workspace, premature
from viz_app.cli import main
from viz_app.export.readers import read_export


class Triplet(BaseModel):
    """agentlightning.types.core.Triplet at v0.3.0."""

    prompt: Any
    response: Any
    reward: Optional[float] = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class RewardData(BaseModel):
    """agentlightning.schemas.RewardData at v1.0.0."""

    value: float
    message: Optional[str] = None
    source: Optional[str] = None
    reason: Optional[str] = None


class EventCreate(BaseModel):
    """agentlightning.schemas.EventCreate at v1.0.0."""

    event_type: str
    data: dict[str, Any] = Field(default_factory=dict)


PROMPT_PAYLOAD = {"token_ids", "raw_content", "image_urls"}
RESPONSE_PAYLOAD = {"token_ids", "raw_content"}
ADAPTER_METADATA = {"request", "response", "response_id", "agent_name"}
"""What `TraceToTripletBase.span_to_triplet` puts in a triplet (adapter/triplet.py)."""


def rows_of(tmp_path, raw) -> list[dict]:
    ws = make_workspace(tmp_path, traces=[raw])
    trace = ws.library.trace(raw["trace_id"])
    for reviewer in ("ann", "bob"):
        ws.labelling.save(trace, "aggregation_quality", 4, reviewer, "e12", comment="kept both")
        ws.labelling.save_target(trace, "e13", {"stopping_correctness": "premature",
                                             "stop_should_have_been": "e15"}, reviewer)
    out = tmp_path / "al.jsonl"
    assert main(["labels", "export", "--db", str(tmp_path / "orchviz.db"), "--traces",
                 str(tmp_path / "traces"), "--format", "agent-lightning", "-o", str(out)]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.fixture
def with_calls():
    raw = premature().to_dict()
    for event in raw["events"]:
        if event["id"] == "e12":
            event.update(response_id="chatcmpl-12", prompt_token_ids=[11, 12],
                         response_token_ids=[13], source_id="span-12")
    return raw


def test_each_step_is_a_triplet_of_the_adapters_shape(tmp_path, with_calls):
    rows = rows_of(tmp_path, with_calls)
    assert [r["metadata"]["event_id"] for r in rows] == ["e12", "e13", "e15"]
    for row in rows:
        triplet = Triplet.model_validate(row)
        assert set(triplet.prompt) == PROMPT_PAYLOAD and set(triplet.response) == \
            RESPONSE_PAYLOAD
        assert ADAPTER_METADATA <= set(triplet.metadata)
    aggregate = rows[0]
    assert aggregate["reward"] == 0.5 and aggregate["metadata"]["agent_name"] == "orchestrator"
    assert aggregate["prompt"]["token_ids"] == [11, 12]
    assert aggregate["response"]["token_ids"] == [13]
    assert aggregate["response"]["raw_content"][0]["role"] == "assistant"
    assert aggregate["prompt"]["raw_content"][0]["content"].startswith("Task: ")


def test_the_reward_span_is_what_emit_reward_writes_linked_by_response_id(tmp_path,
                                                                          with_calls):
    aggregate = rows_of(tmp_path, with_calls)[0]
    span = aggregate["reward_span"]
    assert span["name"] == "agentlightning.annotation"
    assert span["attributes"] == {
        "agentlightning.reward.0.name": "primary", "agentlightning.reward.0.value": 0.5,
        "agentlightning.reward.1.name": "aggregation_quality",
        "agentlightning.reward.1.value": 0.5,
        "agentlightning.link.0.key_match": "gen_ai.response.id",
        "agentlightning.link.0.value_match": "chatcmpl-12"}
    assert aggregate["linked"] is True and aggregate["metadata"]["response_id"] == "chatcmpl-12"


def test_a_trace_read_from_spans_links_by_span_id_too(tmp_path, with_calls):
    """Agent Lightning's own spans, read by orchviz's importer, keep their span ids."""
    from viz_app.export import FORMATS, ExportInput
    from viz_app.io.native import trace_from_dict

    rows_of(tmp_path, with_calls)
    ws = make_workspace(tmp_path)
    spans = trace_from_dict(with_calls, "spans.json", source_format="agentlightning")
    given = ExportInput(labels=ws.labelling.current_records(), traces={spans.trace_id: spans},
                        rubric=ws.rubric)
    aggregate = next(iter(FORMATS["agent-lightning"].rows(given).rows))
    attributes = aggregate["reward_span"]["attributes"]
    assert attributes["agentlightning.link.1.key_match"] == "span_id"
    assert attributes["agentlightning.link.1.value_match"] == "span-12"


def test_without_ids_the_reward_says_it_is_not_linked(tmp_path):
    rows = rows_of(tmp_path, premature().to_dict())
    assert not any(r["linked"] for r in rows)
    assert not any(k.startswith("agentlightning.link") for r in rows
                   for k in r["reward_span"]["attributes"])


def test_the_reward_event_is_v1s_event_create(tmp_path, with_calls):
    aggregate = rows_of(tmp_path, with_calls)[0]
    event = EventCreate.model_validate(aggregate["reward_event"])
    data = RewardData.model_validate(event.data)
    assert (event.event_type, data.value, data.source, data.reason) == \
        ("reward", 0.5, "orchviz", "aggregation_quality")
    assert data.message == "kept both | kept both"


def test_the_rows_read_back_into_labels(tmp_path, with_calls):
    rows_of(tmp_path, with_calls)
    back = read_export("agent-lightning", tmp_path / "al.jsonl")
    assert sorted((r["reviewer"], r["question"]) for r in back) == sorted(
        (r, q) for r in ("ann", "bob")
        for q in ("aggregation_quality", "stopping_correctness", "stop_should_have_been"))
