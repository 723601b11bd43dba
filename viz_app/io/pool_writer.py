"""Writing a pool: `write_pool` makes a new one, `append_pool` adds a shard to one, each shard
written a row group (or a batch of lines) at a time, then the id lookup and the manifest last,
so a reader sees the pool as it was or whole. The layout is `viz_app.io.pool_layout`'s."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any, Literal

import fsspec
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from viz_app.io.native import DEFAULT_MAX_BYTES, limit_mb, size_mb
from viz_app.io.pool_layout import (
    _SCHEMA,
    FIELDS,
    IDS,
    JSON_COLUMNS,
    MANIFEST,
    POOL_VERSION,
    ROW_GROUP_BYTES,
    ROW_GROUP_ROWS,
    SHARD_ROWS,
    PoolError,
    PoolWriteResult,
    Shard,
    _fs,
    _is_local,
    _open,
    _short,
    _storage_errors,
    _url,
    read_manifest,
)
from viz_app.model import Trace

FOLLOW_LOCK = "_follow.lock"
"""The lock `orchviz pool follow` takes in a pool it is about to make (`io.follow.LOCK`)."""
FOLLOWER_FILES = frozenset({FOLLOW_LOCK, "_follow.json"})
"""What a follower may keep in a pool before its first shard: the pool is still empty."""


def write_pool(traces: Iterable[Trace], out: str, *, shard_rows: int = SHARD_ROWS,
               row_group_rows: int = ROW_GROUP_ROWS, format: Literal["parquet", "jsonl"] =
               "parquet", compress: bool = True, progress: Callable[[int], None] | None = None,
               max_bytes: int = DEFAULT_MAX_BYTES) -> PoolWriteResult:
    """Write traces as a new pool at `out` (a folder or fsspec URL that is empty or missing):
    shards `part-00000.parquet`... of `shard_rows` traces each (Parquet row groups of at most
    `row_group_rows` traces or ROW_GROUP_BYTES of text), or `part-00000.jsonl.gz` (`compress`),
    then `_ids.parquet` and the manifest. A trace whose id was written before, or that is over
    `max_bytes`, is skipped and said in the result. `progress(n)` hears of every n traces
    written. Raises PoolError when the location is not empty or cannot be written."""
    if shard_rows < 1 or row_group_rows < 1:
        raise PoolError(f"{out}: shard_rows and row_group_rows must be at least 1")
    fs, path = _fs(out)
    try:
        if fs.exists(path) and (fs.isfile(path) or any(  # a follower's files may wait there
                str(p).rstrip("/").rsplit("/", 1)[-1] not in FOLLOWER_FILES
                for p in fs.ls(path, detail=False))):
            raise PoolError(f"{_url(fs, path)}: is not empty; write a pool to a new folder "
                            "or prefix")
        if _is_local(fs):  # object stores have no folders, and a missing bucket stays missing
            fs.makedirs(path, exist_ok=True)
        return _write(traces, fs, path, out, shard_rows, row_group_rows, format, compress,
                      progress, max_bytes)
    except PoolError:
        raise
    except _storage_errors() as err:
        raise PoolError(f"{_url(fs, path)}: cannot be written ({_short(err)})") from None


def _write(traces: Iterable[Trace], fs: fsspec.AbstractFileSystem, path: str, out: str,
           shard_rows: int, row_group_rows: int, format: str, compress: bool,
           progress: Callable[[int], None] | None, max_bytes: int) -> PoolWriteResult:
    ending = ".parquet" if format == "parquet" else ".jsonl.gz" if compress else ".jsonl"
    written: list[dict[str, Any]] = []
    ids: list[pa.Table] = []
    seen: set[str] = set()
    skipped: list[str] = []
    writer: _ShardWriter | None = None
    try:
        for trace in traces:
            problem = _unwritable(trace, seen, max_bytes)
            if isinstance(problem, str):
                skipped.append(f"{trace.source or trace.trace_id}: {problem}; skipped")
                continue
            row, size = problem
            if writer is None:
                name = f"part-{len(written):05d}{ending}"
                writer = _ShardWriter(fs, f"{path}/{name}", name, format, compress,
                                      row_group_rows)
            seen.add(trace.trace_id)
            writer.add(trace.trace_id, row, size)
            if progress is not None:
                progress(1)
            if writer.rows >= shard_rows:
                written.append(writer.close())
                ids.append(writer.ids())
                writer = None
        if writer is not None:
            written.append(writer.close())
            ids.append(writer.ids())
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    count = _write_ids(fs, f"{path}/{IDS}", ids)
    manifest = {"orchviz_pool": POOL_VERSION, "format": format,
                "layout": "fields as columns, events as JSON text" if format == "parquet"
                else "one trace a line", "traces": count, "shards": written, "ids": IDS,
                "written": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    with _open(fs, f"{path}/{MANIFEST}", "wb") as stream:
        stream.write(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    result_shards = [Shard(url=_url(fs, f"{path}/{entry['path']}"), format=format,
                           compressed=format == "jsonl" and compress)
                     for entry in written]
    return PoolWriteResult(location=out, traces=count, shards=result_shards, skipped=skipped)


def append_pool(traces: Iterable[Trace], location: str, *,
                row_group_rows: int = ROW_GROUP_ROWS,
                format: Literal["parquet", "jsonl"] = "parquet", compress: bool = True,
                max_bytes: int = DEFAULT_MAX_BYTES) -> PoolWriteResult:
    """Add traces to a pool as one new shard (a pool that does not exist yet is written, as
    `write_pool` does): the shard `part-<n>` after the last, then `_ids.parquet` with every id,
    then the manifest, last, so that a reader sees the pool as it was or with the new shard
    whole. A trace whose id the pool holds already is skipped and said in the result (a
    follower that reads a rewritten file again adds nothing twice). The pool's own format and
    compression are kept. Raises PoolError when the pool cannot be read or written."""
    manifest = read_manifest(location)
    if manifest is None:
        return write_pool(traces, location, shard_rows=10 ** 12, row_group_rows=row_group_rows,
                          format=format, compress=compress, max_bytes=max_bytes)
    fs, path = _fs(location)
    format = manifest.get("format") if manifest.get("format") in ("parquet", "jsonl") else format
    shards_ = [e for e in manifest["shards"] if isinstance(e, dict) and "path" in e]
    compress = any(str(e["path"]).endswith(".gz") for e in shards_) if shards_ else compress
    ending = ".parquet" if format == "parquet" else ".jsonl.gz" if compress else ".jsonl"
    try:
        with _open(fs, f"{path}/{IDS}") as stream:
            held = pq.read_table(stream)
    except FileNotFoundError:
        held = None
    except _storage_errors() as err:
        raise PoolError(f"{_url(fs, path)}/{IDS}: cannot be read ({_short(err)})") from None
    seen = set(held.column("trace_id").to_pylist()) if held is not None else set()
    taken = {str(e["path"]) for e in shards_}
    number = len(shards_)
    while f"part-{number:05d}{ending}" in taken:
        number += 1
    name = f"part-{number:05d}{ending}"
    writer: _ShardWriter | None = None
    skipped: list[str] = []
    try:
        for trace in traces:
            problem = _unwritable(trace, seen, max_bytes)
            if isinstance(problem, str):
                skipped.append(f"{trace.source or trace.trace_id}: {problem}; skipped")
                continue
            if writer is None:
                writer = _ShardWriter(fs, f"{path}/{name}", name, format, compress,
                                      row_group_rows)
            seen.add(trace.trace_id)
            writer.add(trace.trace_id, *problem)
        if writer is None:
            return PoolWriteResult(location=location, traces=0, shards=[], skipped=skipped)
        entry = writer.close()
    except BaseException:
        if writer is not None:
            writer.abort()
        raise
    count = _write_ids(fs, f"{path}/{IDS}", ([held] if held is not None else []) + [writer.ids()])
    manifest.update(traces=count, shards=[*manifest["shards"], entry],
                    written=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    with _open(fs, f"{path}/{MANIFEST}", "wb") as stream:
        stream.write(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    return PoolWriteResult(location=location, traces=entry["rows"], skipped=skipped,
                           shards=[Shard(url=_url(fs, f"{path}/{name}"), format=format,
                                         compressed=format == "jsonl" and compress)])


def _unwritable(trace: Trace, seen: set[str], max_bytes: int
                ) -> str | tuple[dict[str, str | None], int]:
    """Why a trace cannot be written, or its row and the bytes of its text."""
    if trace.trace_id in seen:
        return f"trace id {trace.trace_id!r} was written before"
    try:
        row = _trace_row(trace)
    except orjson.JSONEncodeError as err:
        return f"cannot be written as JSON ({err})"
    size = sum(len(value) for value in row.values() if value is not None)
    if size > max_bytes:
        return (f"the trace is {size_mb(size, max_bytes)}, over the {limit_mb(max_bytes)} limit "
                "(set ORCHVIZ_MAX_BYTES to raise it)")
    return row, size


def _trace_row(trace: Trace) -> dict[str, str | None]:
    """A trace as a row of text: its scalar fields, its JSON fields as JSON, orchviz's own."""
    tree = trace.to_dict()
    row: dict[str, str | None] = {}
    for name in FIELDS:
        value = tree.get(name)
        if name in JSON_COLUMNS:
            row[name] = None if value is None else orjson.dumps(value).decode()
        else:
            row[name] = value
    row["_sha256"] = trace.sha256
    row["_source"] = trace.source or None
    row["_source_format"] = trace.source_format
    return row


class _ShardWriter:
    """One shard being written, a row group (or a batch of lines) at a time."""

    def __init__(self, fs: fsspec.AbstractFileSystem, path: str, name: str, format: str,
                 compress: bool, row_group_rows: int):
        self.name = name
        self.format = format
        self.rows = 0
        self.trace_ids: list[str] = []
        self.row_group_rows = row_group_rows
        self.pending: list[dict[str, str | None]] = []
        self.pending_bytes = 0
        self.stream = _open(fs, path, "wb")
        if format == "parquet":
            self.parquet = pq.ParquetWriter(self.stream, _SCHEMA, compression="zstd",
                                            write_statistics=["trace_id"])
        else:
            self.lines = (gzip.GzipFile(fileobj=self.stream, mode="wb", mtime=0) if compress
                          else self.stream)

    def add(self, trace_id: str, row: dict[str, str | None], size: int) -> None:
        """Add a trace's row; a full row group is written out."""
        self.trace_ids.append(trace_id)
        self.rows += 1
        if self.format == "jsonl":
            self.lines.write(_line(row))
            return
        self.pending.append(row)
        self.pending_bytes += size
        if len(self.pending) >= self.row_group_rows or self.pending_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            table = pa.table({name: [row[name] for row in self.pending] for name in _SCHEMA.names},
                             schema=_SCHEMA)
            self.parquet.write_table(table, row_group_size=len(self.pending))
            self.pending = []
            self.pending_bytes = 0

    def close(self) -> dict[str, Any]:
        """Finish the shard; its manifest entry."""
        if self.format == "parquet":
            self._flush()
            self.parquet.close()
        elif self.lines is not self.stream:
            self.lines.close()
        self.stream.close()
        return {"path": self.name, "rows": self.rows}

    def ids(self) -> pa.Table:
        """The lookup rows of the shard: trace id, shard, row."""
        table = pa.table({"trace_id": pa.array(self.trace_ids, pa.string()),
                          "shard": pa.array([self.name] * self.rows, pa.string()).dictionary_encode(),
                          "row": pa.array(range(self.rows), pa.int64())})
        self.trace_ids = []
        return table

    def abort(self) -> None:
        """Give the shard up (writing failed or was interrupted): on object storage the upload
        is discarded, a local file is closed as it stands."""
        try:  # finish the Parquet or gzip framing first, so that nothing writes to it later
            if self.format == "parquet":
                self.parquet.close()
            elif self.lines is not self.stream:
                self.lines.close()
        except Exception:  # noqa: BLE001 - the error that stopped the writing is the one to say
            pass
        try:
            self.stream.discard()  # object storage: the upload is aborted, nothing is stored
            self.stream.closed = True
        except Exception:  # noqa: BLE001 - a local file cannot discard: it is closed instead
            try:
                self.stream.close()
            except Exception:  # noqa: BLE001 - the error that stopped the writing is the one
                pass


def _line(row: dict[str, str | None]) -> bytes:
    parts = []
    for name in FIELDS:
        value = row[name]
        if value is None:
            continue
        raw = value.encode() if name in JSON_COLUMNS else orjson.dumps(value)
        parts.append(b'"' + name.encode() + b'":' + raw)
    return b"{" + b",".join(parts) + b"}\n"


def _write_ids(fs: fsspec.AbstractFileSystem, target: str, ids: list[pa.Table]) -> int:
    """Write the lookup of every shard's ids, sorted by id; how many traces it holds."""
    schema = pa.schema([("trace_id", pa.string()), ("shard", pa.string()), ("row", pa.int64())])
    table = pa.concat_tables([t.cast(schema) for t in ids]) if ids else schema.empty_table()
    table = table.sort_by("trace_id")
    with _open(fs, target, "wb") as stream:
        pq.write_table(table, stream, row_group_size=16_384, compression="zstd")
    return table.num_rows
