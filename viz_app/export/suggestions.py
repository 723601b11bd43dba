"""The suggestions export (`--format suggestions`): every stored suggestion on its own, never
mixed into the labels.

One JSON Lines record per suggestion: `trace_id`, `event_id` (null for the trace itself),
`question`, `value`, `confidence`, `producer` ({name, version, model, prompt_sha256}),
`evidence` (event ids), `explanation`, `trace_sha256` and `created_at`, in the order they were
stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from viz_app.export.records import write_jsonl
from viz_app.labels import Suggestion


def suggestion_record(suggestion: Suggestion) -> dict[str, Any]:
    """The exported record of one suggestion."""
    return {
        "trace_id": suggestion.trace_id,
        "event_id": suggestion.event_id or None,
        "question": suggestion.question,
        "value": suggestion.value,
        "confidence": suggestion.confidence,
        "producer": suggestion.producer.model_dump(),
        "evidence": list(suggestion.evidence),
        "explanation": suggestion.explanation,
        "trace_sha256": suggestion.trace_sha256,
        "created_at": suggestion.created_at,
    }


def suggestion_records(suggestions: Iterable[Suggestion]) -> Iterator[dict[str, Any]]:
    """The exported records, one per suggestion, in the order given."""
    return (suggestion_record(s) for s in suggestions)


def write_suggestions(suggestions: Iterable[Suggestion], path: str | Path) -> Path:
    """Write the suggestions as JSON Lines."""
    return write_jsonl(suggestion_records(suggestions), path)
