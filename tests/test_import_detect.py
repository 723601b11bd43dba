"""Detection picks the right format for every fixture, says so, and refuses what it cannot read."""

import pytest
from importing import FIXTURES

from viz_app.errors import TraceError
from viz_app.io.detect import FORMATS, detect_format, read_any, read_folder

EXPECTED = {
    "claude_session.jsonl": "claude_code",
    "openai_agents_batch.json": "openai_agents",
    "openai_agents.jsonl": "openai_agents",
    "openai_agents_wrapped.json": "openai_agents",
    "otlp_genai_hex.json": "otlp",
    "otlp_genai_base64.json": "otlp",
    "otlp_openinference.jsonl": "otlp",
    "inspect_handoff.eval": "inspect_ai",
    "inspect_handoff.json": "inspect_ai",
    "inspect_transcript_events.json": "inspect_ai",
    "whowhen_magentic.json": "whowhen",
    "whowhen_algorithm_generated.json": "whowhen",
    "whowhen_magentic_unterminated.json": "whowhen",
    "trail/data/GAIA/0035f455b3ff2295167a844f04d85d34.json": "trail",
    "agentops_crewai.json": "agentops",
    "langfuse_trace.json": "langfuse",
    "agentlightning_rollout.json": "agentlightning",
    "mast_mad_records.json": "mast",
    "mast_human_labelled.json": "mast",
    "mast_metagpt_run.json": "mast",
    "../example_trace.json": "orchviz",
}


@pytest.mark.parametrize("name,fmt", sorted(EXPECTED.items()))
def test_each_fixture_is_detected_as_its_format(name, fmt):
    assert detect_format(FIXTURES / name) == fmt


@pytest.mark.parametrize("name,fmt", sorted(EXPECTED.items()))
def test_read_any_reports_the_choice_and_sets_source_format(name, fmt):
    heard = []
    traces = read_any(FIXTURES / name, on_format=lambda label, chosen: heard.append(chosen))
    assert heard == [fmt]
    assert traces and all(t.source_format == fmt for t in traces)


def test_detection_works_on_uploaded_bytes_with_a_name():
    data = (FIXTURES / "claude_session.jsonl").read_bytes()
    (trace,) = read_any(data, name="upload.jsonl")
    assert trace.source_format == "claude_code"
    assert trace.source == "upload.jsonl"


def test_every_registered_format_has_a_title():
    assert set(FORMATS) == {"orchviz", "claude_code", "openai_agents", "otlp", "codex",
                            "inspect_ai", "whowhen", "trail", "agentops",
                            "langfuse", "agentlightning", "mast", "verl", "openrlhf", "art",
                            "skyrl", "rllm"}
    assert all(f.title for f in FORMATS.values())


def test_a_file_in_no_known_format_is_refused_naming_the_file():
    with pytest.raises(TraceError) as err:
        read_any(b'{"hello": "world"}', name="mystery.json")
    assert err.value.file == "mystery.json"
    assert "no format orchviz reads" in err.value.problem


def test_a_named_format_that_does_not_fit_gives_a_clear_error():
    with pytest.raises(TraceError) as err:
        read_any(FIXTURES / "whowhen_magentic.json", fmt="otlp")
    assert "resourceSpans" in err.value.problem


def test_folders_yield_one_trace_per_session():
    heard = []
    claude = read_folder(FIXTURES / "claude_code_project", on_format=lambda l, f: heard.append(f))
    codex = read_folder(FIXTURES / "codex_rollouts", on_format=lambda l, f: heard.append(f))
    assert [t.trace_id for t in claude] == ["s-2222"]
    assert len(codex) == 1
    assert heard == ["claude_code", "codex"]


def test_a_native_trace_too_large_to_parse_for_a_look_is_still_detected():
    from viz_app.io.native import dump_trace, trace_from_dict
    from viz_app.synth import synth_trace

    big = dump_trace(trace_from_dict(synth_trace(agents=40, events=15000,
                                                 topology="hierarchical", seed=3), "big"))
    assert len(big) > 1_100_000
    assert detect_format(big, "big.json") == "orchviz"


def test_a_pretty_printed_document_read_as_json_lines_is_called_one_document_not_truncated():
    """Defect: a JSON Lines importer called a pretty-printed JSON document truncated."""
    for fmt in ("claude_code", "codex"):
        with pytest.raises(TraceError) as err:
            read_any(FIXTURES / "whowhen_magentic.json", fmt=fmt)
        assert "one JSON document" in err.value.problem and "not JSON Lines" in err.value.problem
        assert "truncated" not in err.value.problem


def test_a_file_in_no_format_names_the_top_level_keys_it_has():
    """Defect: "no format matches" said nothing of what the file holds."""
    with pytest.raises(TraceError) as err:
        read_any(b'{"runs": [], "schema": "x/1"}', name="mystery.json")
    assert "its top-level keys are `runs`, `schema`" in err.value.problem
    with pytest.raises(TraceError) as err:
        read_any(b'{"step": 1}\n{"step": 2}\n', name="steps.jsonl")
    assert "its first line's top-level keys are `step`" in err.value.problem
    with pytest.raises(TraceError) as err:
        read_any(b'[{"prompt": "a", "completion": "b"}]', name="pairs.json")
    assert "a JSON list of 1 items whose first object has the keys `prompt`, `completion`" in \
        err.value.problem
