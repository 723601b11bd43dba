"""Agent Lightning 0.3.0: every `agent-lightning` row is a `Triplet` as the trainer consumes it,
and its reward replays through `emit_reward` into an Agent Lightning trace, with its dimensions
and its link to the LLM response it judges, as docs/trainers/agent-lightning.md does it, from
the file and from the folder."""

from __future__ import annotations

import asyncio

import pytest

from reading import file_rows, rows

SOURCES = ("file", "folder")


def replay(found: list[dict]) -> list:
    """The docs' replay loop under Agent Lightning's own OpenTelemetry tracer; its spans."""
    from agentlightning import emit_reward
    from agentlightning.tracer.otel import OtelTracer
    from agentlightning.utils.otel import make_link_attributes

    tracer = OtelTracer()

    async def run():
        async with tracer.trace_context("orchviz-replay"):
            for row in found:
                a = row["reward_span"]["attributes"]
                dims = {a[k]: a[k[:-4] + "value"] for k in a
                        if k.startswith("agentlightning.reward.") and k.endswith(".name")}
                links = {a[k]: a[k[:-9] + "value_match"] for k in a if k.endswith(".key_match")}
                emit_reward(dims, primary_key="primary", attributes=make_link_attributes(links))

    with tracer.lifespan():
        asyncio.run(run())
        return tracer.get_last_trace()


@pytest.mark.parametrize("source", SOURCES)
def test_every_row_is_a_triplet(shapes, source):
    from agentlightning.types import Triplet

    export = shapes["agent-lightning"]
    found = rows(export, source)
    triplets = [Triplet.model_validate(row) for row in found]
    expected = file_rows(export)
    assert [t.reward for t in triplets] == [r["reward"] for r in expected]
    assert [t.prompt for t in triplets] == [r["prompt"] for r in expected]
    assert [t.response for t in triplets] == [r["response"] for r in expected]
    assert [t.metadata["agent_name"] for t in triplets] == \
        [r["metadata"]["agent_name"] for r in expected]


@pytest.mark.parametrize("source", SOURCES)
def test_the_rewards_replay_with_their_links(shapes, source):
    from agentlightning.emitter.reward import find_reward_spans, get_rewards_from_span
    from agentlightning.utils.otel import extract_links_from_attributes

    found = rows(shapes["agent-lightning"], source)
    spans = find_reward_spans(replay(found))
    assert len(spans) == len(found)
    for row, span in zip(found, spans):
        rewards = {r.name: r.value for r in get_rewards_from_span(span)}
        assert rewards["primary"] == row["reward"]
        if row["linked"]:
            (link,) = [k for k in extract_links_from_attributes(span.attributes)
                       if k.key_match == "gen_ai.response.id"]
            assert link.value_match == row["metadata"]["response_id"]
    assert any(row["linked"] for row in found)  # the reruns carry response ids


@pytest.mark.parametrize("source", SOURCES)
def test_prompts_alternate_roles_as_chat_templates_require(shapes, tiny, source):
    """A Triplet's prompt and response go through the policy's chat template in training."""
    tok = tiny.tokenizer()
    for row in rows(shapes["agent-lightning"], source):
        tok.apply_chat_template(row["prompt"]["raw_content"] + row["response"]["raw_content"],
                                tokenize=False)
