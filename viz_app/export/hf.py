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
- `arrow/`: the files `Dataset.save_to_disk` writes (`data-00000-of-00001.arrow`, the rows as
  one Arrow stream; `state.json`; `dataset_info.json`, whose features `datasets` infers from the
  Arrow schema as it does for a table it saves), so `datasets.load_from_disk(FOLDER + "/arrow")`
  reads it too (they sit in a folder of their own: `load_dataset` refuses a folder that holds
  them). orchviz writes them itself, so it needs no `datasets` to write a folder, only to load
  one (`pip install orchviz[hf]`).

Rows are turned into Arrow a batch at a time; the Parquet shards and the Arrow stream are
written in one pass over them (`PARQUET`: zstd-compressed, which the step-by-step prompts shrink
to a tenth and which writes faster than snappy).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, islice
from pathlib import Path
from typing import Any

import orjson

from viz_app.errors import OrchvizError
from viz_app.export.lengths import card_lines
from viz_app.labels import LabelRecord, Rubric

SHARD_ROWS = 50_000
"""Rows per Parquet shard."""

SUMMARY = "orchviz_export.json"
CARD = "README.md"
ARROW = "arrow"
"""The subfolder of `save_to_disk`'s files."""


PARQUET: dict[str, Any] = {"compression": "zstd"}
"""How every Parquet file of a training export is written (pyarrow's `ParquetWriter` options)."""

DATA_FILE = "data-00000-of-00001.arrow"
"""The one data file of `arrow/`, named as `Dataset.save_to_disk` names it."""

BATCH_ROWS = 500
"""Rows turned into Arrow at a time (the Python rows of one batch are all that is held)."""

TRACE_BATCH_ROWS = 50
"""Rows at a time for the shapes whose row is a whole trace (a stepwise row, an rLLM episode
with every agent's steps): 500 of them would hold most of a large export at once."""


def _has_empty_struct(kind) -> bool:
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return kind.num_fields == 0 or any(_has_empty_struct(f.type) for f in kind)
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _has_empty_struct(kind.value_type)
    return False


def _json_column(values: list[Any]):
    import pyarrow as pa

    return pa.array([None if v is None else orjson.dumps(v).decode() for v in values],
                    type=pa.string())


def _array(values: list[Any]):
    """`pa.array(values)`, with the same type and values, made faster for the shapes training
    rows have: a column of dicts with the same keys in the same order is made a key at a time
    (each key's values as a column of their own, which is how `pa.array` infers a struct's
    types; inferring over the dicts themselves took a third more time on the provenance
    columns), and a column of lists of dicts or lists from their items. Anything
    else, or anything these cannot make as a plain array, is `pa.array`'s."""
    import pyarrow as pa

    if not values:
        return pa.array(values)
    first = values[0]
    kind = type(first)
    if kind is dict:
        keys = tuple(first)
        if keys and all(type(v) is dict and tuple(v) == keys for v in values):
            try:
                children = [_array([v[k] for v in values]) for k in keys]
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                # pyarrow infers a struct's field more leniently than a column of its own
                # ([False, 0.0] is a double there and an error alone): its inference decides
                children = []
            if children and all(isinstance(c, pa.Array) for c in children):
                return pa.StructArray.from_arrays(children, names=list(keys))
    elif kind is list:
        if all(type(v) is list for v in values):
            items = [x for v in values for x in v]
            if items and type(items[0]) in (dict, list):
                try:
                    inner = _array(items)
                except (pa.ArrowInvalid, pa.ArrowTypeError):
                    inner = None  # as for a struct above: pyarrow's inference decides
                if isinstance(inner, pa.Array):
                    offsets = pa.array(accumulate(map(len, values), initial=0), pa.int32())
                    return pa.ListArray.from_arrays(offsets, inner)
    return pa.array(values)


def _batch_table(rows: list[dict[str, Any]], as_json: set[str]):
    """One batch as a Table; columns Arrow cannot type are JSON text (and added to as_json)."""
    import pyarrow as pa

    columns = {}
    for name in dict.fromkeys(k for row in rows for k in row):
        values = [row.get(name) for row in rows]
        if name in as_json:
            columns[name] = _json_column(values)
            continue
        try:
            column = _array(values)
            if _has_empty_struct(column.type) and any(values):
                raise TypeError("an object with no keys")
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            column = _json_column(values)
            as_json.add(name)
        columns[name] = column
    return pa.table(columns)


def _as_json(table, names: set[str], done: set[str]):
    """The table with the named columns as JSON text (those in `done` already are)."""
    for name in names - done:
        if name in table.column_names:
            index = table.column_names.index(name)
            table = table.set_column(index, name, _json_column(table[name].to_pylist()))
    return table


class Spool:
    """Rows turned into Arrow a batch at a time and spilled to a temporary folder, so that a
    shape of any size is written as Parquet with only one batch in memory. Types are unified
    across batches (a column null in one batch takes the type of another, objects gain the keys
    any batch has); a column no promotion unifies, or that holds objects with no keys, is
    written as JSON text (`as_json`). Use it as a context manager."""

    def __init__(self, rows: Iterable[dict[str, Any]], schema=None,
                 batch_rows: int = BATCH_ROWS, *, tables: Iterable[tuple[Any, set[str]]] = (),
                 as_json: set[str] | None = None):
        """`tables`: batches already turned into Arrow, each with the JSON-text columns it
        was made with, that come before `rows`; `as_json`: the JSON-text columns so far."""
        import pyarrow as pa

        self._folder = tempfile.TemporaryDirectory(prefix="orchviz-spool-")
        self._files: list[tuple[Path, set[str]]] = []
        self._given = schema
        self.num_rows = 0
        as_json = set(as_json or ())
        schemas = [self._spill_table(table, done) for table, done in tables]
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == batch_rows:
                schemas.append(self._spill(batch, as_json))
                batch = []
        if batch or not self._files:
            schemas.append(self._spill(batch, as_json))
        while True:
            try:
                schema = pa.unify_schemas(schemas, promote_options="permissive")
                break
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                clash = {name for name in dict.fromkeys(n for s in schemas for n in s.names)
                         if not _unify([s.field(name) for s in schemas if name in s.names])}
                if not clash:
                    raise
                as_json |= clash
                schemas = [_json_schema(s, clash) for s in schemas]
        empty = {f.name for f in schema if _has_empty_struct(f.type)}
        if empty:
            as_json |= empty
            schema = _json_schema(schema, empty)
        self.schema = pa.schema([f.with_type(_no_null(f.type)) for f in schema])
        self.as_json = sorted(as_json)

    def _spill(self, batch: list[dict[str, Any]], as_json: set[str]):
        import pyarrow as pa

        table = pa.Table.from_pylist(batch, schema=self._given) if self._given is not None \
            else _batch_table(batch, as_json)
        return self._spill_table(table, as_json)

    def _spill_table(self, table, as_json: set[str]):
        import pyarrow as pa

        path = Path(self._folder.name) / f"{len(self._files):06d}.arrow"
        with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_stream(
                sink, table.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")) as out:
            out.write_table(table)  # compressed: the spill of a step's prompts shrinks tenfold
        self._files.append((path, set(as_json)))
        self.num_rows += table.num_rows
        return table.schema

    def batches(self):
        """The batches, each with the unified schema."""
        import pyarrow as pa

        target = set(self.as_json)
        for path, done in self._files:
            with pa.OSFile(str(path)) as source:  # read, not mapped: the memory is the batch's
                table = pa.ipc.open_stream(source).read_all()
            yield _conform(_as_json(table, target, done), self.schema)

    def write_parquet(self, path: Path, start: int = 0, stop: int | None = None) -> None:
        """Write rows start to stop as one Parquet file."""
        import pyarrow.parquet as pq

        with pq.ParquetWriter(path, self.schema, **PARQUET) as out:
            seen = 0
            for table in self.batches():
                low, high = max(start - seen, 0), table.num_rows if stop is None \
                    else min(stop - seen, table.num_rows)
                if high > low:
                    out.write_table(table.slice(low, high - low))
                seen += table.num_rows
                if stop is not None and seen >= stop:
                    break

    def __enter__(self) -> Spool:
        return self

    def __exit__(self, *exc) -> None:
        self._folder.cleanup()


def _conform(table, schema):
    """A batch in the unified schema (nulls and missing keys promoted)."""
    import pyarrow as pa

    if table.schema.equals(schema):
        return table
    return pa.concat_tables([schema.empty_table(), table],
                            promote_options="permissive").select(schema.names)


def _no_null(kind):
    """A type with every `null` in it (a key no row gave a value) made `string`: Parquet keeps
    such a column better as strings, and pyarrow 26 builds invalid arrays when it promotes a
    batch into a schema that nests a null-typed field in a list of structs."""
    import pyarrow as pa

    if pa.types.is_null(kind):
        return pa.string()
    if pa.types.is_struct(kind):
        return pa.struct([f.with_type(_no_null(f.type)) for f in kind])
    if pa.types.is_list(kind):
        return pa.list_(_no_null(kind.value_type))
    if pa.types.is_large_list(kind):
        return pa.large_list(_no_null(kind.value_type))
    return kind


def _unify(fields) -> bool:
    import pyarrow as pa

    try:
        pa.unify_schemas([pa.schema([f]) for f in fields], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return False
    return True


def _json_schema(schema, names: set[str]):
    import pyarrow as pa

    return pa.schema([pa.field(f.name, pa.string()) if f.name in names else f for f in schema])


def reviewers_table(labels: Iterable[LabelRecord]) -> list[dict[str, Any]]:
    """Per reviewer: labels, how they were identified, sources and origins."""
    found: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "labels": 0, "identified_by": Counter(), "source": Counter(), "origin": Counter()})
    # counted by (reviewer, identified_by, source, origin) first, in C: the combinations are
    # few, and taking them in the order first seen keeps each count's keys in that order
    combos = Counter((r["reviewer"], r.get("identified_by"), r.get("source"), r.get("origin"))
                     for r in labels)
    for (reviewer, identified_by, source, origin), count in combos.items():
        entry = found[reviewer]
        entry["labels"] += count
        entry["identified_by"][identified_by or "-"] += count
        entry["source"][source or "-"] += count
        if origin:
            entry["origin"][origin] += count
    return [{"reviewer": name, "labels": e["labels"],
             "identified_by": dict(e["identified_by"]), "source": dict(e["source"]),
             "origin": dict(e["origin"])} for name, e in sorted(found.items())]


def summary(format: str, framework: str, rows: int, labels: Sequence[LabelRecord],
            used: set[str], rubric: Rubric | None, options: dict[str, Any],
            left_out: list[str], notes: list[str], *, trainer: str = "",
            lengths: dict[str, Any] | None = None) -> dict[str, Any]:
    """The facts the card and `orchviz_export.json` state (`used`: the ids of the labels the
    rows rest on; the reviewers table counts those, not every label read)."""
    from viz_app.labels import pairwise_agreement, question_agreement

    alpha = []
    if rubric is not None:  # `agreement(rubric, labels)`, the labels sorted by question once
        by_question: dict[str, list[LabelRecord]] = defaultdict(list)
        for record in labels:
            by_question[record["question"]].append(record)
        alpha = [{"question": q.question, "alpha": q.alpha, "level": q.level,
                  "shared_targets": q.shared_targets, "note": q.note}
                 for q in (question_agreement(question, by_question.get(question.id, []),
                                              worst=0) for question in rubric.questions)]
    pairwise = pairwise_agreement(labels)
    if pairwise is not None:
        alpha.append({"question": pairwise.question, "alpha": pairwise.alpha,
                      "level": pairwise.level, "shared_targets": pairwise.shared_targets,
                      "note": pairwise.note})
    return {"format": format, "framework": framework, "trainer": trainer, "rows": rows,
            "labels_read": len(labels), "labels_used": len(used),
            "traces": len({r["trace_id"] for r in labels if r["label_id"] in used}),
            "rubric": {"name": rubric.name, "version": rubric.version, "sha256": rubric.sha256}
            if rubric is not None else None,
            "rubric_versions": sorted({f"{r['rubric_version']} {r['rubric_sha256']}"
                                       for r in labels}),
            "options": options, "left_out": left_out, "notes": notes, "agreement": alpha,
            "reviewers": reviewers_table(r for r in labels if r["label_id"] in used),
            "lengths": lengths, "json_columns": []}


def _dtype(kind) -> str:
    """The `datasets` dtype name of an Arrow primitive type (as `datasets.Value` names it)."""
    import pyarrow as pa

    named = {pa.float64(): "float64", pa.float32(): "float32", pa.float16(): "float16",
             pa.null(): "null"}
    return named.get(kind, str(kind))


def feature(kind) -> dict[str, Any]:
    """An Arrow type as a feature of the card's `dataset_info` (the YAML that
    `datasets.Features._to_yaml_list` writes: `dtype`, `list` or `struct`)."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return {"struct": [{"name": f.name, **feature(f.type)} for f in kind]}
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        inner = feature(kind.value_type)
        return {"list": inner.get("dtype") or inner.get("struct") or inner}
    return {"dtype": _dtype(kind)}


def features(schema) -> list[dict[str, Any]]:
    """The features of a folder's rows, one per column, in the card's YAML form."""
    return [{"name": f.name, **feature(f.type)} for f in schema]


def card_text(facts: dict[str, Any], files: list[str], arrow: str) -> str:
    """The dataset card (README.md) of an export folder; `arrow` says whether the
    load_from_disk files were written ("written"), or why not ("no rows")."""
    rubric = facts["rubric"] or {"name": "-", "version": "-", "sha256": "-"}
    import yaml

    # the config is named by the rows' fingerprint (see `fingerprint`), and is the default
    name = f"orchviz-{facts['fingerprint']}" if facts.get("fingerprint") else "default"
    front = ["---", "configs:", f"- config_name: {name}", "  default: true", "  data_files:",
             "  - split: train", "    path: data/train-*.parquet"]
    if facts.get("features"):
        front += ["dataset_info:", f"  config_name: {name}", "  features:"] + [
            "  " + line for line in yaml.safe_dump(facts["features"], sort_keys=False,
                                                   allow_unicode=True).splitlines()]
    front += ["tags:", "- orchviz", "- reward-labels", f"- {facts['format']}", "---", ""]
    body = [f"# orchviz reward labels: {facts['format']} ({facts['framework']})", "",
            f"{facts['rows']} rows made from {facts['labels_used']} of {facts['labels_read']} "
            f"current labels on {facts['traces']} traces, written by `orchviz labels export "
            f"--format {facts['format']} --hf-dataset`. See orchviz's docs/trainers/ for what "
            "each column holds.", "",
            *([f"Trainer it serves today: {facts['trainer']}.", ""]
              if facts.get("trainer") else []),
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
    body += ["", *card_lines(facts.get("lengths"))] if facts.get("lengths") else []
    body += ["", "## Agreement", "", "| question | Krippendorff's alpha | level | targets with 2+ "
             "reviewers |", "|---|---|---|---|"]
    body += [f"| {q['question']} | {q['alpha']:.3f} | {q['level']} | {q['shared_targets']} |"
             if q["alpha"] is not None else
             f"| {q['question']} | - ({q['note']}) | {q['level']} | {q['shared_targets']} |"
             for q in facts["agreement"]]
    body += ["", "## Reviewers", "", "The labels behind the rows, by reviewer.", "",
             "| reviewer | labels | identified by | source | origin |",
             "|---|---|---|---|---|"]
    body += [f"| {r['reviewer']} | {r['labels']} | {_counts(r['identified_by'])} | "
             f"{_counts(r['source'])} | {_counts(r['origin'])} |" for r in facts["reviewers"]]
    body += ["", "## Loading", "", "```python", "import datasets",
             'rows = datasets.load_dataset("parquet", data_dir="FOLDER/data", split="train")',
             'rows = datasets.load_dataset("FOLDER", split="train")  # by this card\'s configs']
    body += ['rows = datasets.load_from_disk("FOLDER/arrow")'] if arrow == "written" else \
        ['rows = datasets.load_from_disk("FOLDER/arrow")  # no rows: an empty dataset (the '
         'load_dataset lines refuse a split with no rows)']
    body += ["```", ""]
    if facts["json_columns"]:
        body += ["Columns written as JSON text: "
                 + ", ".join(f"`{c}`" for c in facts["json_columns"]) + ".", ""]
    body += ["Files: " + ", ".join(f"`{f}`" for f in files), ""]
    return "\n".join(front + body)


def _counts(counter: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counter.items())) or "-"


RESERVE = 1 << 20
"""Bytes reserved beyond a batch's own in the Arrow stream's file (its messages' headers and
padding)."""


def _reserve(sink, size: int) -> None:
    """Allocate the file's blocks for the next `size` bytes (and `RESERVE`) before they are
    written: the file system then skips its per-page block reservation, a third of the time of
    writing a large stream and most of its variation (bench/bench_exports.py). `_trim` cuts the
    file back to what was written."""
    if hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(sink.fileno(), sink.tell(), size + RESERVE)
        except OSError:
            pass


def _trim(sink) -> None:
    """Cut the stream's file to the bytes written (`_reserve` allocated more)."""
    sink.flush()
    os.ftruncate(sink.fileno(), sink.tell())


class _DataFiles:
    """The data files of an export folder written a table at a time: Parquet shards of
    `SHARD_ROWS` rows (named when the count is known) and, once a row comes, the Arrow stream
    of `arrow/`."""

    def __init__(self, target: Path, schema):
        import pyarrow.parquet as pq

        if target.exists() and not target.is_dir():
            raise OrchvizError(f"{target} is a file: --hf-dataset writes a folder")
        self.data = target / "data"
        self.data.mkdir(parents=True, exist_ok=True)
        for old in [*self.data.glob("train-*.parquet"), *self.data.glob(".train-*.partial")]:
            old.unlink()
        self.arrow = target / ARROW
        if self.arrow.exists():
            for old in self.arrow.iterdir():
                if old.is_file():
                    old.unlink()
        self.schema = schema
        self.parts = [self._part(0)]
        self.out = pq.ParquetWriter(self.parts[0], schema, **PARQUET)
        self.sink = self.stream = None
        self.seen = 0

    def _part(self, shard: int) -> Path:
        return self.data / f".train-{shard:05d}.partial"

    def write(self, table) -> None:
        """Add a table's rows (in the folder's schema)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not table.num_rows:
            return
        if self.stream is None:
            self.arrow.mkdir(exist_ok=True)
            self.sink = pa.OSFile(str(self.arrow / DATA_FILE), "wb")
            self.stream = pa.ipc.new_stream(self.sink, self.schema)
        _reserve(self.sink, table.nbytes)
        self.stream.write_table(table)
        at = 0
        while at < table.num_rows:
            room = len(self.parts) * SHARD_ROWS - self.seen
            if room == 0:
                self.out.close()
                self.parts.append(self._part(len(self.parts)))
                self.out = pq.ParquetWriter(self.parts[-1], self.schema, **PARQUET)
                continue
            piece = table.slice(at, min(room, table.num_rows - at))
            self.out.write_table(piece)
            at += piece.num_rows
            self.seen += piece.num_rows

    def close(self) -> list[Path]:
        """Close the files; the shards, under their names. With no rows, `arrow/` still
        holds an empty stream of the schema, so `datasets.load_from_disk` reads an empty
        dataset with its features."""
        import pyarrow as pa

        self.out.close()
        if self.stream is None:
            self.arrow.mkdir(exist_ok=True)
            self.sink = pa.OSFile(str(self.arrow / DATA_FILE), "wb")
            self.stream = pa.ipc.new_stream(self.sink, self.schema)
        if self.stream is not None:
            self.stream.close()
            _trim(self.sink)
            self.sink.close()
        shards = len(self.parts)
        named = [self.data / f"train-{i:05d}-of-{shards:05d}.parquet" for i in range(shards)]
        for part, name in zip(self.parts, named):
            part.replace(name)
        return named

    def abort(self, keep_stream: bool = False) -> None:
        """Close the files after a failure, leaving no partial shard behind (nor the stream,
        unless it is to be read back)."""
        try:
            self.out.close()
            if self.stream is not None:
                self.stream.close()
                if keep_stream:
                    _trim(self.sink)
                self.sink.close()
        finally:
            for part in self.parts:
                part.unlink(missing_ok=True)
            if not keep_stream:
                (self.arrow / DATA_FILE).unlink(missing_ok=True)


def _finish(target: Path, files: _DataFiles, shards: list[Path], as_json: list[str],
            facts: dict[str, Any]) -> list[Path]:
    """The state files, card and summary beside written data files; every file written."""
    facts = {**facts, "json_columns": as_json, "features": features(files.schema)}
    facts["fingerprint"] = fingerprint(shards, files.schema, facts)
    written = list(shards)
    if files.stream is not None:
        written += _disk_state(files.arrow, files.schema, facts)
    names = [str(p.relative_to(target)) for p in written] + [CARD, SUMMARY]
    (target / CARD).write_text(card_text(facts, names, "written" if files.seen else "no rows"),
                               "utf-8")
    (target / SUMMARY).write_bytes(orjson.dumps({**facts, "files": names},
                                                option=orjson.OPT_INDENT_2))
    return [*written, target / CARD, target / SUMMARY]


FOOTER = 1 << 16
"""Bytes read from the end of each shard for its fingerprint (its Parquet footer: the schema,
row groups and every column chunk's statistics)."""


def fingerprint(shards: Sequence[Path], schema, facts: dict[str, Any]) -> str:
    """What tells one export's rows from another's, cheaply: the schema, the facts, and each
    shard's size and footer. The card names its config by it, because `datasets` caches a
    folder loaded by name under its config's name, not its files: a folder written again with
    other rows, under a config of the same name, would load the old rows from the cache."""
    import hashlib

    found = hashlib.sha256(schema.to_string().encode())
    found.update(orjson.dumps(facts, option=orjson.OPT_SORT_KEYS))
    for shard in shards:
        size = shard.stat().st_size
        found.update(str(size).encode())
        with shard.open("rb") as data:
            data.seek(max(size - FOOTER, 0))
            found.update(data.read())
    return found.hexdigest()[:16]


def write_hf_dataset(spool: Spool, folder: str | Path, facts: dict[str, Any]) -> list[Path]:
    """Write spooled rows as a `datasets` folder (Parquet shards, `save_to_disk`'s files, card,
    summary), the shards and the Arrow stream in one pass; returns the files written."""
    target = Path(folder)
    files = _DataFiles(target, spool.schema)
    try:
        for table in spool.batches():
            files.write(table)
    except BaseException:
        files.abort()
        raise
    return _finish(target, files, files.close(), spool.as_json, facts)


def write_hf_rows(rows: Iterable[dict[str, Any]], schema, folder: str | Path,
                  facts_of: Callable[[int], dict[str, Any]],
                  batch_rows: int = BATCH_ROWS) -> tuple[list[Path], int]:
    """Write rows of a known Arrow schema as a `datasets` folder, a batch at a time straight
    into its files (no spool: the schema needs no unifying); `facts_of(rows)` gives the facts
    of the card once the rows are written. Returns the files written and the rows."""
    import pyarrow as pa

    target = Path(folder)
    files = _DataFiles(target, schema)
    try:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == batch_rows:
                files.write(pa.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch:
            files.write(pa.Table.from_pylist(batch, schema=schema))
    except BaseException:
        files.abort()
        raise
    shards = files.close()
    return _finish(target, files, shards, [], facts_of(files.seen)), files.seen


def write_hf_inferred(rows: Iterable[dict[str, Any]], folder: str | Path,
                      facts_of: Callable[[int], dict[str, Any]],
                      batch_rows: int = BATCH_ROWS,
                      as_json: set[str] | None = None) -> tuple[list[Path], int]:
    """Write rows whose Arrow types are inferred as a `datasets` folder, exactly as a Spool
    would, without spooling while it can: the folder's schema is the first batch's (settled as
    a Spool settles it), and batches go straight into the files while each adds nothing to the
    first's types (`_within`). At the first batch that does, the batches written are taken
    back from the Arrow stream (in the first batch's types) into a Spool with the rest, which
    unifies them.
    Returns the files written and the rows; `facts_of(rows)` gives the card's facts;
    `as_json`: columns written as JSON text whatever their values (the format's
    `json_columns`)."""
    import pyarrow as pa

    target = Path(folder)
    rows = iter(rows)
    as_json = set(as_json or ())
    batch = list(islice(rows, batch_rows))
    first = _batch_table(batch, as_json) if batch else None
    if first is None or any(_has_empty_struct(f.type) for f in first.schema):
        ahead = [] if first is None else [(first, set(as_json))]
        with Spool(rows, batch_rows=batch_rows, tables=ahead, as_json=as_json) as spool:
            return write_hf_dataset(spool, target, facts_of(spool.num_rows)), spool.num_rows
    raw, settled_json = first.schema, set(as_json)
    unified = pa.unify_schemas([raw], promote_options="permissive")
    schema = pa.schema([f.with_type(_no_null(f.type)) for f in unified])
    files = _DataFiles(target, schema)
    sizes: list[int] = []
    table, first = first, None
    try:
        while True:
            files.write(_conform(table, schema))
            sizes.append(table.num_rows)
            # the written batch's rows and Arrow memory are let go before the next batch is
            # made, which then reuses them (warm) rather than memory fresh from the system
            batch = table = None
            batch = list(islice(rows, batch_rows))
            if not batch:
                break
            table = _batch_table(batch, as_json)
            if as_json != settled_json or not _within(table.schema, raw):
                break
    except BaseException:
        files.abort()
        raise
    if batch:  # types differ: spool everything
        files.abort(keep_stream=True)
        stream = files.arrow / DATA_FILE

        def taken_back():
            with pa.memory_map(str(stream)) as source:
                whole = pa.ipc.open_stream(source).read_all()
                at = 0
                for size in sizes:
                    yield _in_types(whole.slice(at, size).combine_chunks(), raw), settled_json
                    at += size
                del whole
            yield table, set(as_json)

        try:
            spool = Spool(rows, batch_rows=batch_rows, tables=taken_back(), as_json=as_json)
        finally:
            stream.unlink(missing_ok=True)
        with spool:
            return write_hf_dataset(spool, target, facts_of(spool.num_rows)), spool.num_rows
    shards = files.close()
    return _finish(target, files, shards, sorted(settled_json), facts_of(files.seen)), \
        files.seen


def _within(schema, first) -> bool:
    """Whether a batch's types add nothing to the first batch's (the same, or fewer keys, or
    keys in another order, or nulls where the first has a type): then the unified schema is
    the first's whatever the batch."""
    import pyarrow as pa

    if schema.equals(first):
        return True
    try:
        return pa.unify_schemas([first, schema], promote_options="permissive").equals(first)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return False


def _in_types(table, schema):
    """A batch read back from the folder's stream in the types it was made with (the columns
    whose nulls the folder's schema made text are made again from their values)."""
    import pyarrow as pa

    columns = [column if column.type == field.type
               else pa.array(column.to_pylist(), type=field.type)
               for column, field in zip(table.columns, schema)]
    return pa.Table.from_arrays(columns, schema=schema)


def settled(schema) -> bool:
    """Whether rows of this known schema can go straight into a folder (`write_hf_rows`):
    a Spool of them would end with the same schema (it has no null type, which a spool makes
    text, and no object with no keys, which it makes JSON)."""
    return not any(_has_empty_struct(f.type) or _no_null(f.type) != f.type for f in schema)


def _disk_state(folder: Path, schema, facts: dict[str, Any]) -> list[Path]:
    """`state.json` and `dataset_info.json` beside the Arrow stream, with the keys
    `Dataset.save_to_disk` writes (datasets 2 to 5): one data file, no format, no split, a
    fingerprint (here the hash of the schema and the facts, so one export writes one), and no
    features, which `load_from_disk` then infers from the stream's schema."""
    import hashlib

    print_ = hashlib.sha256(schema.to_string().encode() + orjson.dumps(
        facts, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]
    state = {"_data_files": [{"filename": DATA_FILE}], "_fingerprint": print_,
             "_format_columns": None, "_format_kwargs": {}, "_format_type": None,
             "_output_all_columns": False, "_split": None}
    info = {"citation": "", "description": "", "features": None, "homepage": "", "license": ""}
    (folder / "state.json").write_text(json.dumps(state, indent=2), "utf-8")
    (folder / "dataset_info.json").write_text(json.dumps(info, indent=2), "utf-8")
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


def write_parquet_stream(rows: Iterable[dict[str, Any]], path: Path, schema) -> int:
    """Write rows as one Parquet file against a known schema, a batch at a time; returns the
    rows written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    count = 0
    with pq.ParquetWriter(path, schema, **PARQUET) as out:
        batch: list[dict[str, Any]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == BATCH_ROWS:
                out.write_table(pa.Table.from_pylist(batch, schema=schema))
                count, batch = count + len(batch), []
        if batch:
            out.write_table(pa.Table.from_pylist(batch, schema=schema))
            count += len(batch)
    return count
