"""Finding trace files: files, folders (recursively) and glob patterns."""

from __future__ import annotations

import glob
from collections.abc import Iterable
from pathlib import Path

TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz", ".ndjson.gz", ".eval")
"""File endings that may hold traces (native or in a format an importer reads)."""


def is_trace_file(path: Path) -> bool:
    """Whether a file's name says it may hold traces."""
    return path.name.lower().endswith(TRACE_SUFFIXES) and not path.name.startswith(".")


def trace_files(paths: Iterable[str | Path]) -> list[Path]:
    """Every trace file named by `paths`: files as given, folders searched recursively, globs
    expanded. A file named directly is kept whatever its ending; missing paths are kept too, so
    that reading them reports the error."""
    found: dict[Path, None] = {}
    for item in paths:
        path = Path(item)
        if path.is_dir():
            for child in sorted(path.rglob("*")):
                if child.is_file() and is_trace_file(child):
                    found[child] = None
        elif any(ch in str(item) for ch in "*?["):
            for match in sorted(glob.glob(str(item), recursive=True)):
                if Path(match).is_file():
                    found[Path(match)] = None
        else:
            found[path] = None
    return list(found)
