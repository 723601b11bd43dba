"""Label records: the current labels as rows, one per reviewer, target and question, with every
field the store keeps. Written as JSON Lines (the shape `orchviz labels import` reads back), CSV
or Parquet."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from viz_app.labels import FIELDS, LabelRecord
from viz_app.text import csv_cell


def label_records(labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """Label records with exactly the store's fields in its order; `event_id` is null for the
    trace itself, as the import format has it."""
    return [{name: record[name] for name in FIELDS} | {"event_id": record["event_id"] or None}
            if tuple(record) != FIELDS or record["event_id"] == "" else dict(record)
            for record in labels]


def flat_records(labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """Records for tables (CSV, Parquet): the value as JSON text, since its type varies by
    question (a number, a category, a list of tags)."""
    records = label_records(labels)
    for record in records:
        record["value"] = orjson.dumps(record["value"]).decode()
    return records


def write_jsonl(records: Iterable[dict[str, Any]], path: str | Path) -> Path:
    """Write records as JSON Lines."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as out:
        dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
        out.writelines(dumps(record, option=newline) for record in records)
    return target


def write_csv(records: list[dict[str, Any]], path: str | Path,
              fields: Iterable[str] | None = None) -> Path:
    """Write records as CSV with a header row (empty cells for nulls, lists and objects as JSON
    text)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    names = list(fields) if fields is not None else list(records[0]) if records else list(FIELDS)
    # no text a spreadsheet would run as a formula (see viz_app.text.csv_cell)
    records = [{k: csv_cell(orjson.dumps(v).decode() if isinstance(v, (list, dict)) else v)
                for k, v in record.items()} for record in records]
    with target.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=names, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(records)
    return target


NUMBER_COLUMNS = ("reward", "seconds_spent", "reward_std", "reward_min", "reward_max")
"""Columns that are numbers even when every value is null (Parquet keeps the type)."""


def write_parquet(records: list[dict[str, Any]], path: str | Path,
                  fields: Iterable[str] | None = None) -> Path:
    """Write records as a Parquet file (pyarrow infers each column's type; a column of nulls
    is a string column unless it is one of NUMBER_COLUMNS)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    names = list(fields) if fields is not None else list(records[0]) if records else list(FIELDS)
    columns = {}
    for name in names:
        values = [r.get(name) for r in records]
        if all(v is None for v in values):
            columns[name] = pa.array(values, type=pa.float64() if name in NUMBER_COLUMNS
                                     else pa.string())
        else:
            columns[name] = pa.array(values)
    pq.write_table(pa.table(columns), target)
    return target


def write_table(records: list[dict[str, Any]], path: str | Path) -> Path:
    """Write records in the format the file name says: .csv, .parquet, else JSON Lines."""
    name = str(path).lower()
    if name.endswith(".csv"):
        return write_csv(records, path)
    if name.endswith(".parquet"):
        return write_parquet(records, path)
    return write_jsonl(records, path)
