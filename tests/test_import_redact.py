"""--redact drops inline content and keeps a content hash in content_ref."""

import hashlib

from importing import FIXTURES, assert_reference_valid

from viz_app.io.claude_code import import_claude_code
from viz_app.io.redact import redact


def test_redacted_trace_holds_no_inline_text_but_hashes_of_it():
    (trace,) = import_claude_code(FIXTURES / "claude_session.jsonl")
    clean = redact(trace)
    assert_reference_valid(clean)
    assert all(e.content is None for e in clean.events)
    for before, after in zip(trace.events, clean.events):
        if before.content is not None:
            digest = hashlib.sha256(before.content.encode()).hexdigest()
            assert after.content_ref == f"sha256:{digest}"


def test_redaction_keeps_the_structure():
    (trace,) = import_claude_code(FIXTURES / "claude_session.jsonl")
    clean = redact(trace)
    assert [(e.id, e.t, e.type, e.agent, e.to) for e in clean.events] == [
        (e.id, e.t, e.type, e.agent, e.to) for e in trace.events]
    assert clean.source_format == "claude_code"


def test_no_secret_text_survives_anywhere_in_the_output():
    (trace,) = import_claude_code(FIXTURES / "claude_session.jsonl")
    dumped = str(redact(trace).to_dict())
    assert "HTTP/2" not in dumped and "Research httpx" not in dumped


def test_redaction_drops_published_annotations_and_prompts():
    """A published annotation and a system prompt are free text too: --redact leaves neither."""
    from viz_app.io.whowhen import import_whowhen

    (trace,) = import_whowhen(FIXTURES / "whowhen_algorithm_generated.json")
    kept = [key for e in redact(trace).events for key in e.extras
            if key in ("published_annotation", "system_prompt", "ground_truth")]
    assert kept == []
