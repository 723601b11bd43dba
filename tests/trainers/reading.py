"""Reading an export as a trainer's user does: the file with `datasets.load_dataset`, the
folder with `load_dataset(FOLDER)` (the card's configs) or `load_from_disk(FOLDER/arrow)`."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from review_campaign import Export

SOURCES = ("file", "folder", "arrow")
"""The three ways in: the file; the folder's Parquet shards; its `save_to_disk` stream."""


def dataset(export: Export, source: str):
    """The export as a `datasets.Dataset`, read from `source`. Each load has a cache of its own:
    `datasets` keys a folder's cache by its name and files, so two folders both called
    `preference-dataset` would otherwise share one."""
    from datasets import load_dataset, load_from_disk

    cache = tempfile.mkdtemp(prefix="datasets-cache-")
    if source == "file":
        kind = "parquet" if export.file.suffix == ".parquet" else "json"
        return load_dataset(kind, data_files=str(export.file), split="train", cache_dir=cache)
    if source == "folder":
        return load_dataset(str(export.folder), split="train", cache_dir=cache)
    return load_from_disk(str(export.folder / "arrow"))


def file_rows(export: Export) -> list[dict[str, Any]]:
    """The file's rows exactly as written (JSON Lines; Parquet through pyarrow)."""
    if export.file.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(export.file).to_pylist()
    return [json.loads(line) for line in export.file.read_text().splitlines()]


def json_columns(export: Export) -> list[str]:
    """The columns the folder's card says are JSON text."""
    facts = json.loads((export.folder / "orchviz_export.json").read_text())
    return list(facts.get("json_columns", []))


def decoded(row: dict[str, Any], columns: list[str]) -> dict[str, Any]:
    """A folder row with its JSON-text columns (dotted paths reach into structs and lists of
    them) read back into values."""
    row = json.loads(json.dumps(row))
    for column in columns:
        _decode(row, column.split("."))
    return row


def _decode(value: Any, path: list[str]) -> None:
    if isinstance(value, list):
        for item in value:
            _decode(item, path)
    elif isinstance(value, dict) and path and path[0] in value:
        if len(path) == 1:
            if isinstance(value[path[0]], str):
                value[path[0]] = json.loads(value[path[0]])
        else:
            _decode(value[path[0]], path[1:])


def rows(export: Export, source: str) -> list[dict[str, Any]]:
    """The rows as a consumer gets them from `source`, JSON-text columns read back."""
    if source == "file":
        return file_rows(export)
    return [decoded(r, json_columns(export)) for r in dataset(export, source).to_list()]


def folder_text(export: Export) -> str:
    """The dataset card."""
    return (Path(export.folder) / "README.md").read_text()


def first_difference(got: Any, want: Any, path: str = "row") -> str | None:
    """Where two values first differ, as `path: got vs want`, or None when they are equal."""
    if type(got) is not type(want):
        return f"{path}: {got!r:.120} vs {want!r:.120}"
    if isinstance(got, dict):
        for key in [*want, *(k for k in got if k not in want)]:
            if key not in got or key not in want:
                return f"{path}.{key}: only in the {'file' if key in want else 'folder'}"
            found = first_difference(got[key], want[key], f"{path}.{key}")
            if found:
                return found
    elif isinstance(got, list):
        if len(got) != len(want):
            return f"{path}: {len(got)} items vs {len(want)}"
        for i, (a, b) in enumerate(zip(got, want)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
    elif got != want:
        return f"{path}: {got!r:.120} vs {want!r:.120}"
    return None
