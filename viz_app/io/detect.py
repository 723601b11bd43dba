"""Reading any supported file: native traces, or a foreign format converted by its importer."""

from __future__ import annotations

from collections.abc import Callable

from viz_app.errors import TraceError
from viz_app.io.native import DEFAULT_MAX_BYTES, Source, load_traces
from viz_app.model import Trace


def read_any(source: Source, *, name: str | None = None,
             on_error: Callable[[TraceError], None] | None = None,
             max_bytes: int = DEFAULT_MAX_BYTES) -> list[Trace]:
    """Every trace in a file of any supported format (native JSON/JSONL for now; importers add
    theirs here). Raises TraceError for a file that cannot be read at all."""
    return list(load_traces(source, name=name, on_error=on_error, max_bytes=max_bytes))
