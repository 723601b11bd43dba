"""Readers: a training export read back into orchviz's own records.

Every row of a training shape carries the provenance of the labels behind it (every field of
each label, its value as JSON text; `viz_app.export.consensus.provenance`), so reading an export
back gives the label records it was made from, exactly: the same ids, reviewers, values,
rewards, hashes and times. `read_export(format, path)` reads a file (JSON Lines, Parquet or CSV
by its name) or a `--hf-dataset` folder; `labels_of(format, rows)` reads rows already loaded
(by `datasets`, say). `orchviz labels import` takes the records they return.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from viz_app.errors import OrchvizError
from viz_app.export.consensus import records_of
from viz_app.export.hf import SUMMARY, read_hf_rows
from viz_app.labels import LabelRecord
from viz_app.text import csv_value


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """The rows of an export file: JSON Lines, Parquet or CSV (cells that hold JSON lists or
    objects decoded) by its name."""
    target = Path(path)
    name = target.name.lower()
    if name.endswith(".parquet"):
        import pyarrow.parquet as pq

        return pq.read_table(target).to_pylist()
    if name.endswith(".csv"):
        with target.open(newline="", encoding="utf-8") as found:
            return [{k: _cell(v) for k, v in row.items()} for row in csv.DictReader(found)]
    return [orjson.loads(line) for line in target.read_bytes().splitlines() if line.strip()]


def _cell(cell: str) -> Any:
    if cell == "":
        return None
    text = csv_value(cell)
    if text[:1] in "[{":
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    if text != cell:
        return text
    try:
        return float(text)
    except ValueError:
        return text


def _decoded(value: Any) -> Any:
    return orjson.loads(value) if isinstance(value, str) else value


def _row_provenance(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from _decoded(row.get("provenance")) or []


def _rllm_provenance(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from (_decoded(row.get("info")) or {}).get("provenance") or []
    for trajectory in _decoded(row.get("trajectories")) or []:
        for step in trajectory.get("steps") or []:
            yield from (step.get("info") or {}).get("provenance") or []


def _agent_lightning_provenance(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from (_decoded(row.get("metadata")) or {}).get("provenance") or []


def _verl_provenance(row: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield from (_decoded(row.get("extra_info")) or {}).get("provenance") or []


PROVENANCE: dict[str, Callable[[dict[str, Any]], Iterator[dict[str, Any]]]] = {
    "stepwise": _row_provenance, "unpaired": _row_provenance, "preference": _row_provenance,
    "openrlhf-rm": _row_provenance, "openrlhf-prm": _row_provenance,
    "decision-pairs": _row_provenance, "openrlhf-decision-pairs": _row_provenance,
    "decision-groups": _row_provenance,
    "agent-rewards": _row_provenance, "rllm": _rllm_provenance,
    "agent-lightning": _agent_lightning_provenance, "verl": _verl_provenance,
}
"""Where each training shape keeps the provenance of its rows' labels."""


def labels_of(format: str, rows: Iterable[dict[str, Any]]) -> list[LabelRecord]:
    """The label records behind rows of a training shape, each once, sorted as the store sorts
    current labels."""
    where = PROVENANCE.get(format)
    if where is None:
        raise OrchvizError(f"no reader for the {format!r} export (readers: "
                           f"{', '.join(PROVENANCE)})")
    return records_of(entry for row in rows for entry in where(row))


def read_export(format: str | None, path: str | Path) -> list[LabelRecord]:
    """The label records behind an export file or `--hf-dataset` folder (whose format it
    names itself, so `format` may be None there)."""
    target = Path(path)
    if target.is_dir():
        if not (target / SUMMARY).exists():
            raise OrchvizError(f"{target} is no --hf-dataset folder (it has no {SUMMARY})")
        named, rows = read_hf_rows(target)
        return labels_of(format or named, rows)
    if format is None:
        raise OrchvizError("name the export's format")
    return labels_of(format, read_rows(target))
