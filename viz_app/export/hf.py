"""Any training shape as a Hugging Face `datasets` dataset folder (`--hf-dataset`).

The folder holds:

- `data/train-00000-of-0000N.parquet`: the rows as Parquet shards (`SHARD_ROWS` rows each),
  written with pyarrow alone, so `datasets.load_dataset("parquet", data_dir=FOLDER + "/data")`
  reads them, and so does `datasets.load_dataset(FOLDER)` (the card's `configs` name them);
- `README.md`: the dataset card: YAML front matter (`configs`, `tags`), then what the rows are,
  the rubric (name, version, SHA-256), the counts (labels read and used, rows, traces, targets
  left out and why), agreement (Krippendorff's alpha per question) and the reviewers'
  provenance (labels, how each was identified, sources, origins);
- `orchviz_export.json`: the same facts for a program, with `json_columns`: columns written as
  JSON text because Arrow cannot type them (an object with no keys, values whose type varies);
- where `datasets` is installed (`pip install orchviz[hf]`), `Dataset.save_to_disk`'s own files
  in `arrow/` (`data-*.arrow`, `state.json`, `dataset_info.json`), so
  `datasets.load_from_disk(FOLDER + "/arrow")` reads it too (they sit in a folder of their own:
  `load_dataset` refuses a folder that holds them). Without `datasets` the card says so, and the
  Parquet shards still load.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from viz_app.errors import OrchvizError
from viz_app.labels.label import LabelRecord
from viz_app.labels.rubric import Rubric

SHARD_ROWS = 50_000
"""Rows per Parquet shard."""

SUMMARY = "orchviz_export.json"
CARD = "README.md"
ARROW = "arrow"
"""The subfolder of `save_to_disk`'s files."""


def _has_empty_struct(kind) -> bool:
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return kind.num_fields == 0 or any(_has_empty_struct(f.type) for f in kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_empty_struct(kind.value_type)
    return False


def arrow_table(rows: Sequence[dict[str, Any]]):
    """The rows as a pyarrow Table, and the columns written as JSON text because Arrow cannot
    type them (values whose type varies, objects with no keys)."""
    import pyarrow as pa

    names = list(dict.fromkeys(k for row in rows for k in row))
    columns, as_json = {}, []
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            column = pa.array(values)
            if _has_empty_struct(column.type):
                raise TypeError("an object with no keys")
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            column = pa.array([None if v is None else orjson.dumps(v).decode() for v in values],
                              type=pa.string())
            as_json.append(name)
        columns[name] = column
    return pa.table(columns), as_json


def reviewers_table(labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """Per reviewer: labels, how they were identified, sources and origins."""
    found: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "labels": 0, "identified_by": Counter(), "source": Counter(), "origin": Counter()})
    for record in labels:
        entry = found[record["reviewer"]]
        entry["labels"] += 1
        entry["identified_by"][record.get("identified_by") or "-"] += 1
        entry["source"][record.get("source") or "-"] += 1
        if record.get("origin"):
            entry["origin"][record["origin"]] += 1
    return [{"reviewer": name, "labels": e["labels"],
             "identified_by": dict(e["identified_by"]), "source": dict(e["source"]),
             "origin": dict(e["origin"])} for name, e in sorted(found.items())]


def summary(format: str, framework: str, rows: int, labels: Sequence[LabelRecord],
            used: Iterable[LabelRecord], rubric: Rubric | None, options: dict[str, Any],
            left_out: list[str], notes: list[str], as_json: list[str]) -> dict[str, Any]:
    """The facts the card and `orchviz_export.json` state."""
    from viz_app.labels.agreement import agreement

    used_ids = {r["label_id"] for r in used}
    alpha = [{"question": q.question, "alpha": q.alpha, "level": q.level,
              "shared_targets": q.shared_targets, "note": q.note}
             for q in agreement(rubric, labels, worst=0)] if rubric is not None else []
    return {"format": format, "framework": framework, "rows": rows,
            "labels_read": len(labels), "labels_used": len(used_ids),
            "traces": len({r["trace_id"] for r in labels if r["label_id"] in used_ids}),
            "rubric": {"name": rubric.name, "version": rubric.version, "sha256": rubric.sha256}
            if rubric is not None else None,
            "rubric_versions": sorted({f"{r['rubric_version']} {r['rubric_sha256']}"
                                       for r in labels}),
            "options": options, "left_out": left_out, "notes": notes, "agreement": alpha,
            "reviewers": reviewers_table(labels), "json_columns": as_json}


def card_text(facts: dict[str, Any], files: list[str], load_from_disk: bool) -> str:
    """The dataset card (README.md) of an export folder."""
    rubric = facts["rubric"] or {"name": "-", "version": "-", "sha256": "-"}
    front = ["---", "configs:", "- config_name: default", "  data_files:", "  - split: train",
             "    path: data/train-*.parquet", "tags:", "- orchviz", "- reward-labels",
             f"- {facts['format']}", "---", ""]
    body = [f"# orchviz reward labels: {facts['format']} ({facts['framework']})", "",
            f"{facts['rows']} rows made from {facts['labels_used']} of {facts['labels_read']} "
            f"current labels on {facts['traces']} traces, written by `orchviz labels export "
            f"--format {facts['format']} --hf-dataset`. See orchviz's docs/trainers/ for what "
            "each column holds.", "",
            "## Rubric", "",
            f"{rubric['name']}, version {rubric['version']}, SHA-256 `{rubric['sha256']}`. "
            "Versions the labels were made under: "
            + ", ".join(f"`{v}`" for v in facts["rubric_versions"]) + ".", "",
            "## Options", "",
            *[f"- `{k}`: {json.dumps(v)}" for k, v in facts["options"].items()], "",
            "## Left out", ""]
    body += [f"- {s}" for s in facts["left_out"]] or ["Nothing."]
    if facts["notes"]:
        body += ["", "Notes:", *[f"- {s}" for s in facts["notes"]]]
    body += ["", "## Agreement", "", "| question | Krippendorff's alpha | level | targets with 2+ "
             "reviewers |", "|---|---|---|---|"]
    body += [f"| {q['question']} | {q['alpha']:.3f} | {q['level']} | {q['shared_targets']} |"
             if q["alpha"] is not None else
             f"| {q['question']} | - ({q['note']}) | {q['level']} | {q['shared_targets']} |"
             for q in facts["agreement"]]
    body += ["", "## Reviewers", "", "| reviewer | labels | identified by | source | origin |",
             "|---|---|---|---|---|"]
    body += [f"| {r['reviewer']} | {r['labels']} | {_counts(r['identified_by'])} | "
             f"{_counts(r['source'])} | {_counts(r['origin'])} |" for r in facts["reviewers"]]
    body += ["", "## Loading", "", "```python", "import datasets",
             'rows = datasets.load_dataset("parquet", data_dir="FOLDER/data", split="train")',
             'rows = datasets.load_dataset("FOLDER", split="train")  # by this card\'s configs']
    body += ['rows = datasets.load_from_disk("FOLDER/arrow")'] if load_from_disk else [
        "# load_from_disk needs the files `pip install orchviz[hf]` adds to this folder"]
    body += ["```", ""]
    if facts["json_columns"]:
        body += ["Columns written as JSON text: "
                 + ", ".join(f"`{c}`" for c in facts["json_columns"]) + ".", ""]
    body += ["Files: " + ", ".join(f"`{f}`" for f in files), ""]
    return "\n".join(front + body)


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "-"


def write_hf_dataset(rows: Sequence[dict[str, Any]], folder: str | Path,
                     facts: dict[str, Any]) -> list[Path]:
    """Write rows as a `datasets` folder (Parquet shards, card, summary, and where `datasets`
    is installed its `save_to_disk` files); returns the files written."""
    import pyarrow.parquet as pq

    target = Path(folder)
    if target.exists() and not target.is_dir():
        raise OrchvizError(f"{target} is a file: --hf-dataset writes a folder")
    (target / "data").mkdir(parents=True, exist_ok=True)
    for old in (target / "data").glob("train-*.parquet"):
        old.unlink()
    table, as_json = arrow_table(rows)
    facts = {**facts, "json_columns": as_json}
    shards = max(1, -(-table.num_rows // SHARD_ROWS))
    written = []
    for i in range(shards):
        path = target / "data" / f"train-{i:05d}-of-{shards:05d}.parquet"
        pq.write_table(table.slice(i * SHARD_ROWS, SHARD_ROWS), path)
        written.append(path)
    saved = _save_to_disk(table, target / ARROW)
    written += saved
    names = [str(p.relative_to(target)) for p in written] + [CARD, SUMMARY]
    (target / CARD).write_text(card_text(facts, names, bool(saved)), "utf-8")
    (target / SUMMARY).write_bytes(orjson.dumps({**facts, "files": names},
                                                option=orjson.OPT_INDENT_2))
    return [*written, target / CARD, target / SUMMARY]


def _save_to_disk(table, folder: Path) -> list[Path]:
    """`datasets`' own on-disk files, in `folder`, when it is installed."""
    try:
        import datasets
        from datasets.table import InMemoryTable
    except ImportError:
        return []
    if folder.exists():
        for old in folder.iterdir():
            if old.is_file():
                old.unlink()
    was = datasets.utils.logging.is_progress_bar_enabled()
    datasets.utils.logging.disable_progress_bar()
    try:
        datasets.Dataset(InMemoryTable(table)).save_to_disk(str(folder))
    finally:
        if was:
            datasets.utils.logging.enable_progress_bar()
    return sorted(p for p in folder.iterdir() if p.is_file())


def read_hf_rows(folder: str | Path) -> tuple[str, list[dict[str, Any]]]:
    """(format, rows) of a folder `write_hf_dataset` wrote, JSON-text columns decoded."""
    import pyarrow.parquet as pq

    target = Path(folder)
    facts = orjson.loads((target / SUMMARY).read_bytes())
    rows: list[dict[str, Any]] = []
    for path in sorted((target / "data").glob("train-*.parquet")):
        rows += pq.read_table(path).to_pylist()
    for name in facts.get("json_columns", []):
        for row in rows:
            if row.get(name) is not None:
                row[name] = orjson.loads(row[name])
    return facts["format"], rows
