"""Dropping inline content for privacy, as the reference schema allows: `content_ref` keeps a
hash of what was there, so that equal contents stay recognisably equal."""

from __future__ import annotations

from viz_app.io.native import trace_from_dict
from viz_app.io.records import content_hash
from viz_app.model import Trace

TEXT_KEYS = ("content", "description", "mistake_reason", "ground_truth", "groundtruth", "error",
             "prompt", "system_prompt", "published_annotation", "langfuse_scores")
"""Extra event keys that hold free text from a model, a tool or a person."""


def redact(trace: Trace) -> Trace:
    """The trace without inline text: each event's `content` (and other free-text keys) is
    dropped, and `content_ref` becomes `sha256:<hex>` of the content when it had some (an
    existing pointer is kept when there was no inline content). Validated like any trace."""
    obj = trace.to_dict()
    for event in obj["events"]:
        text = event.get("content")
        for key in TEXT_KEYS:
            event.pop(key, None)
        if isinstance(text, str):
            event["content_ref"] = content_hash(text)
        event["redacted"] = True
    clean = trace_from_dict(obj, trace.source or trace.trace_id, source_format=trace.source_format)
    clean._warnings = trace.reader_warnings
    return clean
