"""TRAIL span trees become traces: a manager spawning its managed agent (then delegating to it
again), tools and model calls in the agent that runs them, times from RFC 3339 timestamps and
ISO 8601 durations; the published annotation is kept verbatim and mapped, honestly, to labels."""

import pytest
from factories import make_workspace
from importing import FIXTURES, assert_reference_valid, delegations, returns, spawns, warning_codes

from viz_app.analysis import analyze
from viz_app.errors import TraceError
from viz_app.io.detect import detect_format, read_any
from viz_app.io.records import published
from viz_app.io.trail import annotation_records, import_trail

TRACE_ID = "0035f455b3ff2295167a844f04d85d34"
TRACE = FIXTURES / "trail" / "data" / "GAIA" / f"{TRACE_ID}.json"
ANNOTATION = FIXTURES / "trail" / "processed_annotations_gaia" / f"{TRACE_ID}.json"


@pytest.fixture(scope="module")
def trace():
    (found,) = import_trail(TRACE)
    return found


def test_trail_trace_validates_and_is_detected(trace):
    assert_reference_valid(trace)
    assert detect_format(TRACE) == "trail"
    assert (trace.trace_id, trace.system) == (TRACE_ID, "smolagents-gaia")
    assert trace.task_id.startswith("How many studio albums did Mercedes Sosa")


def test_the_managed_agent_is_spawned_once_then_delegated_to_and_returns_each_time(trace):
    assert spawns(trace) == [("manager", "search_agent")]
    assert delegations(trace) == [("manager", "search_agent")]
    assert returns(trace) == [("search_agent", "manager"), ("search_agent", "manager")]
    a = analyze(trace)
    assert a.figures.depth == 1 and sorted(a.agents) == ["manager", "search_agent"]


def test_a_tool_span_that_wraps_a_managed_agent_is_not_a_tool_call(trace):
    assert [e.tool for e in trace.events if e.type == "tool_call"] == [
        "web_search", "visit_page", "web_search", "final_answer"]


def test_times_come_from_timestamps_and_iso_durations(trace):
    results = {e.tool: e.t for e in trace.events if e.type == "tool_result"
               and e.agent == "search_agent" and e.tool == "visit_page"}
    assert results == {"visit_page": 18.5}  # starts at 14.5 s, lasts PT4.000000S
    assert trace.costs.wall_clock_s == 45.0
    assert trace.costs.tokens == 400 + 30 + 900 + 40 + 700 + 30 + 1200 + 80 + 1500 + 60 + 1800 + 20


def test_an_error_span_keeps_its_message(trace):
    (timed_out,) = [e for e in trace.events if e.extras.get("error")]
    assert (timed_out.tool, timed_out.extras["error"]) == ("web_search", "Timeout after 30s")


def test_the_managers_output_after_the_returns_is_the_aggregate(trace):
    (point,) = analyze(trace).aggregates
    assert trace.event(point.event_id).content == "4" and len(point.inputs) == 2


def test_the_annotation_beside_the_trace_is_kept_verbatim_on_the_located_events(trace):
    kept = published(trace, "TRAIL")
    errors = {k["record"]["category"]: (trace.event(e), k) for e, k in kept
              if k.get("about") != "trace"}
    event, misread = errors["Tool Output Misinterpretation"]
    assert (event.type, event.agent, misread["span"]) == ("return", "search_agent",
                                                         "b1a2c3d4e5f60001")
    assert misread["record"]["evidence"] == "Discography: 2000 Misa Criolla (live)"
    assert errors["Timeout Issues"][0].tool == "web_search"
    (head,) = [k for _, k in kept if k.get("about") == "trace"]
    assert head["record"]["scores"][0]["overall"] == 3.5
    assert head["dataset_version"].startswith("TRAIL")


def test_an_error_located_outside_the_trace_is_kept_with_a_warning(trace):
    assert "annotation_unplaced" in warning_codes(trace)
    (unplaced,) = [k for _, k in published(trace, "TRAIL") if k.get("placed") is False]
    assert unplaced["record"]["category"] == "Goal Deviation"


def test_task_orchestration_on_the_aggregate_is_an_uncertain_aggregation_label(trace):
    (record,) = annotation_records(trace, {"aggregation_quality", "stopping_correctness",
                                           "task_outcome", "message_necessity"})
    (point,) = analyze(trace).aggregates
    assert (record["question"], record["event_id"], record["value"], record["mapping"]) == (
        "aggregation_quality", point.event_id, 2, "uncertain")
    assert record["comment"].startswith("[uncertain mapping:")
    assert "Tool Output Misinterpretation (HIGH)" in record["comment"]  # raw tags, not dropped


def test_the_labels_go_into_the_workspace_under_its_rubric_once(trace, tmp_path):
    workspace = make_workspace(tmp_path)
    assert workspace.labelling.import_published([trace]) == 1
    assert workspace.labelling.import_published([trace]) == 0
    (label,) = workspace.labelling.all()
    assert (label.source, label.origin, label.reviewer, label.reward) == (
        "import", "TRAIL", "TRAIL", -0.5)


def test_an_annotation_file_alone_is_refused_clearly():
    with pytest.raises(TraceError) as err:
        read_any(ANNOTATION)
    assert "TRAIL annotation file, not a trace" in err.value.problem


def test_a_trace_read_from_bytes_without_its_file_has_no_annotation():
    (alone,) = import_trail(TRACE.read_bytes(), name="upload.json")
    assert published(alone) == [] and analyze(alone).figures.depth == 1


def _as_otlp(doc: dict) -> dict:
    """The same TRAIL spans as an OTLP/JSON export would carry them: flat, typed attributes,
    nanosecond times."""
    from viz_app.io.records import parse_duration, parse_time

    spans, stack = [], [(s, None) for s in doc["spans"]]
    while stack:
        span, parent = stack.pop()
        start = parse_time(span["timestamp"])
        end = start + parse_duration(span["duration"])
        typed = [{"key": k, "value": {"intValue": str(v)} if isinstance(v, int)
                  else {"stringValue": str(v)}} for k, v in span["span_attributes"].items()]
        record = {"traceId": doc["trace_id"], "spanId": span["span_id"],
                  "name": span["span_name"], "startTimeUnixNano": str(int(start * 1e9)),
                  "endTimeUnixNano": str(int(end * 1e9)), "attributes": typed, "status": {}}
        if parent:
            record["parentSpanId"] = parent
        spans.append(record)
        stack.extend((c, span["span_id"]) for c in span["child_spans"])
    return {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "smolagents-gaia"}}]},
        "scopeSpans": [{"spans": spans}]}]}


def test_the_same_run_exported_as_otlp_has_the_same_spawn_tree(trace):
    """Fidelity: one run through two exporters (TRAIL's tree, OTLP's flat spans)."""
    import json

    from viz_app.io.otlp import import_otlp

    (otlp,) = import_otlp(json.dumps(_as_otlp(json.loads(TRACE.read_text("utf-8")))).encode(),
                          name="same-run.otlp.json")
    assert_reference_valid(otlp)
    for check in (spawns, delegations, returns):
        assert check(otlp) == check(trace)
    a, b = analyze(otlp), analyze(trace)
    assert (sorted(a.agents), a.figures.depth) == (sorted(b.agents), b.figures.depth)
    assert [(e.type, e.agent, e.tool) for e in a.order if e.type != "orchestrator_decision"] == [
        (e.type, e.agent, e.tool) for e in b.order if e.type != "orchestrator_decision"]
