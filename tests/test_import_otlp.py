"""OTLP/JSON spans become traces, under both agent conventions and both id encodings."""

import pytest
from importing import (FIXTURES, assert_reference_valid, delegations, returns, spawns,
                       stop_agents, warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.otlp import hex_id, import_otlp


def test_hex_and_base64_ids_give_the_same_trace():
    (hexed,) = import_otlp(FIXTURES / "otlp_genai_hex.json")
    (b64,) = import_otlp(FIXTURES / "otlp_genai_base64.json")
    assert hexed.trace_id == b64.trace_id == "5b8efff798038103d269b633813fc60c"
    assert [e.to_dict() for e in hexed.events] == [e.to_dict() for e in b64.events]


def test_base64_span_ids_decode_to_hex():
    assert hex_id("7uGbfsPBsXQ=", 8) == "eee19b7ec3c1b174"
    assert hex_id("EEE19B7EC3C1B174", 8) == "eee19b7ec3c1b174"


@pytest.fixture(scope="module")
def genai():
    (trace,) = import_otlp(FIXTURES / "otlp_genai_hex.json")
    return trace


def test_genai_trace_validates_against_the_reference_schema(genai):
    assert_reference_valid(genai)


def test_invoke_agent_spans_nested_in_an_agent_are_parallel_spawns(genai):
    assert spawns(genai) == [("planner", "worker_a"), ("planner", "worker_b")]
    assert analyze(genai).figures.parallelism > 1


def test_nested_agents_return_when_their_span_ends(genai):
    assert returns(genai) == [("worker_a", "planner"), ("worker_b", "planner")]


def test_execute_tool_spans_belong_to_the_agent_that_encloses_them(genai):
    assert [(e.agent, e.tool) for e in genai.events if e.type == "tool_call"] == [
        ("worker_a", "read_file"), ("worker_b", "read_file")]


def test_chat_usage_becomes_tokens_and_the_conversation_is_the_task(genai):
    assert genai.costs.tokens == 50 + 380
    assert genai.task_id == "conv-7"
    assert genai.system == "report-team"


def test_final_chat_after_returns_is_the_aggregate_and_the_root_stops(genai):
    (point,) = analyze(genai).aggregates
    assert len(point.inputs) == 2
    assert stop_agents(genai) == ["planner"]


def test_spans_without_agent_semantics_are_counted(genai):
    assert warning_codes(genai) == ["unknown_record"]


@pytest.fixture(scope="module")
def openinference():
    (trace,) = import_otlp(FIXTURES / "otlp_openinference.jsonl")
    return trace


def test_one_request_per_line_is_read_as_one_trace(openinference):
    assert openinference.trace_id == "0af7651916cd43dd8448eb211c80319c"
    assert_reference_valid(openinference)


def test_openinference_agents_hang_under_their_graph_parent(openinference):
    assert spawns(openinference) == [("supervisor", "flights"), ("supervisor", "hotels")]


def test_transfer_tool_is_a_delegation(openinference):
    assert delegations(openinference) == [("supervisor", "flights")]


def test_llm_token_count_and_session_id_are_read(openinference):
    assert openinference.costs.tokens == 210
    assert openinference.task_id == "sess-9"


def test_a_truncated_export_names_line_and_column():
    with pytest.raises(TraceError) as err:
        import_otlp(FIXTURES / "otlp_truncated.json")
    assert err.value.place.startswith("line ")
    assert "truncated" in err.value.problem


def test_json_without_resource_spans_is_refused():
    with pytest.raises(TraceError) as err:
        import_otlp(FIXTURES / "whowhen_magentic.json")
    assert "resourceSpans" in err.value.problem


def test_a_model_span_keeps_its_response_id_and_exports_pass_it_through(tmp_path):
    import json

    from viz_app.export.steps import call_of

    raw = json.loads((FIXTURES / "otlp_genai_hex.json").read_text())
    chats = [s for rs in raw["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
             if s["name"].startswith("chat")]
    for i, span in enumerate(chats):
        span["attributes"].append({"key": "gen_ai.response.id",
                                   "value": {"stringValue": f"chatcmpl-{i}"}})
    path = tmp_path / "with_response_ids.json"
    path.write_text(json.dumps(raw))
    (trace,) = import_otlp(path)
    generations = [e for e in trace.events if e.model]  # the second chat is the aggregate
    assert [call_of(e)["response_id"] for e in generations] == ["chatcmpl-0", "chatcmpl-1"]
    assert all("response_id" not in call_of(e) for e in trace.events if not e.model)
