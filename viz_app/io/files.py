"""Finding trace files: files, folders (recursively) and glob patterns."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable
from pathlib import Path

TRACE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".json.gz", ".jsonl.gz", ".ndjson.gz", ".eval")
"""File endings that may hold traces (native or in a format an importer reads)."""

LOG_FOLDER = "trajectories"
"""The folder whose Parquet files are trainers' rollout logs (OpenPipe ART's
`models/<model>/trajectories/<split>/<step>.parquet`); Parquet elsewhere is a pool's shard or
other data, not a trace file a folder search should pick."""


def is_trace_file(path: Path) -> bool:
    """Whether a file's name says it may hold traces."""
    if path.name.startswith("."):
        return False
    name = path.name.lower()
    return name.endswith(TRACE_SUFFIXES) or (
        name.endswith(".parquet") and LOG_FOLDER in path.parent.parts[-3:])


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


def source_path(source: bytes | str | os.PathLike, name: str | None, size: int) -> Path | None:
    """The file a source was read from: the path given, or the file its bytes' name names
    (what `read_any` passes on) when that file holds as many bytes; None for an upload. An
    importer that reads a file's neighbours (a session's sub-agent files) needs it."""
    if not isinstance(source, bytes):
        return Path(source)
    try:
        path = Path(name) if name else None
        return path if path is not None and path.is_file() and path.stat().st_size == size \
            else None
    except OSError:
        return None
