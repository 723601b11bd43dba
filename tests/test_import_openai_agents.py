"""OpenAI Agents SDK exports become traces: agent spans are agents, handoffs delegations,
function spans tool calls, generation usage tokens."""

import pytest
from importing import (FIXTURES, assert_reference_valid, delegations, returns, spawns,
                       stop_agents, warning_codes)

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.openai_agents import import_openai_agents


@pytest.fixture(scope="module", params=["openai_agents_batch.json", "openai_agents.jsonl"])
def trace(request):
    (found,) = import_openai_agents(FIXTURES / request.param)
    return found


def test_export_validates_against_the_reference_schema(trace):
    assert_reference_valid(trace)


def test_one_trace_per_trace_id_named_by_the_trace_record(trace):
    assert trace.trace_id == "trace_0a1b2c3d4e5f60718293a4b5c6d7e8f9"
    assert trace.task_id == "ticket-42"
    assert trace.system == "Customer support"


def test_handoff_is_a_delegation_and_spawns_its_target(trace):
    assert delegations(trace) == [("Triage", "Billing")]
    assert ("Triage", "Billing") in spawns(trace)


def test_agent_as_tool_is_spawned_by_the_enclosing_agent_and_returns_to_it(trace):
    assert ("Billing", "LedgerChecker") in spawns(trace)
    assert returns(trace) == [("LedgerChecker", "Billing")]
    assert analyze(trace).depth_of["LedgerChecker"] == 2


def test_function_spans_are_tool_calls_with_results(trace):
    calls = [(e.agent, e.tool) for e in trace.events if e.type == "tool_call"]
    assert calls == [("Billing", "lookup_invoice"), ("Billing", "ledger_checker")]
    assert analyze(trace).call_of_result  # each result is paired with its call


def test_generation_usage_becomes_tokens(trace):
    assert trace.costs.tokens == 62 + 34 + 140
    assert {e.model for e in trace.events if e.tokens} == {"gpt-4o", "gpt-4o-mini"}


def test_the_last_agent_to_finish_stops(trace):
    assert stop_agents(trace) == ["Billing"]


def test_an_unknown_span_type_is_a_warning(trace):
    assert warning_codes(trace) == ["unknown_record"]
    assert "mcp_tools" in trace.reader_warnings[0].message


def test_spans_keep_their_source_ids(trace):
    ids = {e.extras.get("source_id") for e in trace.events}
    assert {"span_h1", "span_f1", "span_a3"} <= ids


def test_records_without_spans_are_refused():
    with pytest.raises(TraceError) as err:
        import_openai_agents(b'[{"object": "trace", "id": "t1"}]', name="only-trace.json")
    assert err.value.file == "only-trace.json"
    assert "trace.span" in err.value.problem


def test_spans_inside_another_wrapper_are_read_wherever_their_list_is():
    """Defect: `{trace_id, spans: [...]}` was refused with "no trace.span records"."""
    (wrapped,) = import_openai_agents(FIXTURES / "openai_agents_wrapped.json")
    (plain,) = import_openai_agents(FIXTURES / "openai_agents.jsonl")
    assert_reference_valid(wrapped)
    assert (wrapped.trace_id, wrapped.task_id, wrapped.system) == (
        plain.trace_id, plain.task_id, plain.system)
    assert spawns(wrapped) == spawns(plain) and delegations(wrapped) == delegations(plain)
    assert [(e.type, e.agent, e.t) for e in wrapped.events] == [
        (e.type, e.agent, e.t) for e in plain.events]


def test_a_document_with_no_span_anywhere_is_still_refused():
    with pytest.raises(TraceError) as err:
        import_openai_agents(b'{"trace_id": "t1", "spans": []}', name="empty.json")
    assert "no `trace.span` records" in err.value.problem
