"""Pools: many traces kept as Parquet or JSON Lines shards, local or on object storage.

A pool is a folder (or an object-storage prefix: `s3://`, `gs://`, `az://`, `hf://`, any fsspec
URL) of shards, one trace a row. orchviz writes Parquet shards whose columns are the schema's
top-level fields (`trace_id`, `task_id`, `system`, `topology` as text; `events`, `edges`,
`rewards`, `costs`, `metrics` as JSON text) and a few of its own, named with a leading
underscore (`_sha256`, `_source`, `_source_format`), in small row groups, so that one trace is
read without reading the others. Beside the shards it writes `orchviz-pool.json` (the manifest)
and `_ids.parquet` (trace id -> shard and row, sorted by id). A bare folder of `*.parquet`,
`*.jsonl` or `*.jsonl.gz` shards written by something else is a pool too.

A trace of a pool is found by its locator: the shard and its row (counted from 0). Every shard,
row and row group that cannot be read becomes a `TraceError` naming the shard and the rows; the
readers report it and go on. Nothing here opens a database.

This module reads a pool and is its face: where a pool is and what it is made of come from
`viz_app.io.pool_layout`, writing one from `viz_app.io.pool_writer`.
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, Literal

import fsspec
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from viz_app.errors import TraceError
from viz_app.io.native import DEFAULT_MAX_BYTES, limit_mb, size_mb, trace_from_json
from viz_app.io.pool_layout import (  # noqa: F401 - the face shows where a pool is, too
    _HEX64,
    FIELDS,
    IDS,
    JSON_COLUMNS,
    MANIFEST,
    META_COLUMNS,
    POOL_VERSION,
    REQUIRED,
    ROW_GROUP_BYTES,
    ROW_GROUP_ROWS,
    S3_DEADLINES,
    S3_RETRIES,
    SHARD_ENDINGS,
    SHARD_ROWS,
    STREAM_ABOVE,
    PoolError,
    PoolWriteResult,
    Shard,
    _fs,
    _hidden,
    _is_local,
    _listing,
    _open,
    _read_errors,
    _shard_kind,
    _short,
    _storage_errors,
    _url,
    follow_symlinks,
    is_pool,
    read_manifest,
    set_storage_options,
    shards,
)
from viz_app.io.pool_writer import append_pool, write_pool  # noqa: F401 - the face writes too
from viz_app.model import Trace


def is_pool_source(location: str) -> bool:
    """Whether a source named to `orchviz pool write` is a pool to read traces from rather than
    trace files: a URL (`s3://...`) or a folder holding a pool, a folder of Parquet shards, or a
    Parquet file. A local folder or file of JSON Lines is read as trace files instead (the same
    traces, and the files are named in errors)."""
    if fsspec.core.split_protocol(location)[0] not in (None, "file", "local"):
        return is_pool(location)
    try:
        fs, path = _fs(location)
        if fs.exists(f"{path}/{MANIFEST}"):
            return True
        return is_pool(location) and all(s.format == "parquet" for s in shards(location))
    except (PoolError, *_storage_errors()):
        return False


def read_pool(location: str, on_error: Callable[[TraceError], None]) -> Iterator[Trace]:
    """Every trace of a pool, shard after shard (see `read_shard`)."""
    for shard in shards(location):
        for _, trace in read_shard(shard, on_error):
            yield trace


# -- reading -----------------------------------------------------------------------------------


def read_shard(shard: Shard, on_error: Callable[[TraceError], None],
               max_bytes: int = DEFAULT_MAX_BYTES,
               groups: tuple[int, int] | None = None) -> Iterator[tuple[int, Trace]]:
    """Every trace of a shard with its row (counted from 0). A row that does not validate, a
    row group or a shard that cannot be read (a truncated Parquet file, columns that are not a
    pool's, a broken gzip stream) is reported to `on_error` as a TraceError naming the shard and
    the rows, and the rest is still read. `groups` (first, end) reads only those row groups of
    a Parquet shard (`row_groups` gives their sizes), rows still counted from the shard's start:
    the pieces that processes share a large shard in."""
    if shard.format == "parquet":
        yield from _parquet_rows(shard, on_error, max_bytes, groups)
    else:
        yield from _jsonl_rows(shard, on_error, max_bytes, only=None)


def row_groups(shard: Shard) -> list[int] | None:
    """The number of rows of each row group of a Parquet shard, from its footer alone; None
    for a JSON Lines shard, or one whose footer cannot be read or that lacks a pool's columns
    (reading it whole says why, once)."""
    if shard.format != "parquet":
        return None
    try:
        fs, path = _fs(shard.url)
        with _open(fs, path) as stream:
            parquet = _parquet(stream)
            _parquet_columns(parquet, shard)
            metadata = parquet.metadata
            return [metadata.row_group(g).num_rows for g in range(metadata.num_row_groups)]
    except Exception:  # noqa: BLE001  (any failure: the whole shard is read, and says why)
        return None


def read_trace(shard: Shard, row: int, max_bytes: int = DEFAULT_MAX_BYTES) -> Trace:
    """The trace at a row of a shard. In Parquet, only the footer and the row group holding it
    are read. A JSON Lines shard is read from its start up to the row (no parsing of the rows
    before it): pools of Parquet open faster. Raises TraceError naming shard and row."""
    if row < 0:
        raise TraceError(shard.url, f"row {row}", "is not a row (rows count from 0)")
    if shard.format == "jsonl":
        errors: list[TraceError] = []
        for _, trace in _jsonl_rows(shard, errors.append, max_bytes, only=row):
            return trace
        raise errors[0] if errors else TraceError(shard.url, f"row {row}",
                                                  "the shard has fewer rows")
    fs, path = _fs(shard.url)
    try:
        with _open(fs, path) as stream:
            parquet = _parquet(stream)
            columns = _parquet_columns(parquet, shard)
            start = 0
            for group in range(parquet.num_row_groups):
                count = parquet.metadata.row_group(group).num_rows
                if row < start + count:
                    skip = row - start
                    for table in _tables(parquet, group, columns):
                        if skip < table.num_rows:
                            values = table.slice(skip, 1).to_pylist()[0]
                            return _row_trace(values, row, shard, max_bytes)
                        skip -= table.num_rows
                start += count
    except TraceError:
        raise
    except _read_errors() as err:
        raise TraceError(shard.url, f"row {row}", f"cannot be read ({_short(err)})") from None
    raise TraceError(shard.url, f"row {row}", f"the shard has {start} rows")


def _parquet_columns(parquet: pq.ParquetFile, shard: Shard) -> list[str]:
    """The columns to read, or a TraceError when the shard lacks a required one."""
    names = parquet.schema_arrow.names
    missing = [name for name in REQUIRED if name not in names]
    if missing:
        rows = parquet.metadata.num_rows
        raise TraceError(shard.url, _span(0, rows - 1),
                         f"the shard has no column {missing[0]!r} (its columns: "
                         f"{', '.join(names[:12])}), so it holds no traces; "
                         f"{_rows(rows)} skipped")
    return [name for name in FIELDS + META_COLUMNS if name in names]


def _parquet_rows(shard: Shard, on_error: Callable[[TraceError], None],
                  max_bytes: int,
                  groups: tuple[int, int] | None = None) -> Iterator[tuple[int, Trace]]:
    fs, path = _fs(shard.url)
    try:
        stream = _open(fs, path)
    except _storage_errors() as err:
        on_error(TraceError(shard.url, "rows 0 onward", f"cannot be opened ({_short(err)}); "
                            "the shard was skipped"))
        return
    with stream:
        try:
            parquet = _parquet(stream)
            columns = _parquet_columns(parquet, shard)
        except TraceError as err:
            on_error(err)
            return
        except _read_errors() as err:
            on_error(TraceError(shard.url, "rows 0 onward", "is not a readable Parquet file "
                                f"({_short(err)}); the shard was skipped"))
            return
        start = 0
        first, end = groups if groups is not None else (0, parquet.num_row_groups)
        for group in range(min(end, parquet.num_row_groups)):
            count = parquet.metadata.row_group(group).num_rows
            if group < first:
                start += count
                continue
            done = 0
            try:
                for table in _tables(parquet, group, columns):
                    for offset, values in enumerate(table.to_pylist()):
                        row = start + done + offset
                        try:
                            trace = _row_trace(values, row, shard, max_bytes)
                        except TraceError as err:
                            on_error(err)
                            continue
                        yield row, trace
                    done += table.num_rows
            except _read_errors() as err:
                on_error(TraceError(shard.url, _span(start + done, start + count - 1),
                                    f"row group {group} cannot be read ({_short(err)}); "
                                    f"{_rows(count - done)} skipped"))
            start += count


def _parquet(stream: BinaryIO) -> pq.ParquetFile:
    """A Parquet file over an open stream, its column chunks read a megabyte at a time."""
    return pq.ParquetFile(stream, buffer_size=1024 * 1024)


def _tables(parquet: pq.ParquetFile, group: int, columns: list[str]) -> Iterator[pa.Table]:
    """A row group's rows: the whole group at once, or a few rows at a time when it is large.
    Its JSON text columns are read as bytes, which the decoder reads (as Python strings they
    would be decoded from UTF-8 only to be encoded again)."""
    if parquet.metadata.row_group(group).total_byte_size <= STREAM_ABOVE:
        yield _json_as_bytes(parquet.read_row_group(group, columns=columns))
        return
    for batch in parquet.iter_batches(batch_size=8, row_groups=[group], columns=columns):
        yield _json_as_bytes(pa.Table.from_batches([batch]))


def _json_as_bytes(table: pa.Table) -> pa.Table:
    """The table, its JSON columns of text cast to binary (the same buffers: no copy)."""
    for index, field in enumerate(table.schema):
        if field.name in JSON_COLUMNS and pa.types.is_string(field.type):
            table = table.set_column(index, field.name, table.column(index).cast(pa.binary()))
        elif field.name in JSON_COLUMNS and pa.types.is_large_string(field.type):
            table = table.set_column(index, field.name,
                                     table.column(index).cast(pa.large_binary()))
    return table


_KEYS = {name: b',"' + name.encode() + b'":' for name in FIELDS}
"""Each top-level key as a row's text gives it, after the comma before it."""


def _row_trace(values: dict[str, Any], row: int, shard: Shard, max_bytes: int) -> Trace:
    """The trace in one row read from a shard (its columns' values), validated as a trace
    file is."""
    parts = []
    for name in FIELDS:
        value = values.get(name)
        if value is None:
            continue
        if name in JSON_COLUMNS and isinstance(value, (bytes, str)):
            raw = value if isinstance(value, bytes) else value.encode()
        else:
            try:
                raw = orjson.dumps(_plain(value))
            except orjson.JSONEncodeError as err:
                raise TraceError(shard.url, f"row {row}: {name}",
                                 f"cannot be written as JSON ({err})") from None
        parts += (_KEYS[name], raw)
    if parts:  # one copy of the text, not three (a trace is tens of KB)
        parts[0] = b"{" + parts[0][1:]
        parts.append(b"}")
    data = b"".join(parts) if parts else b"{}"
    if len(data) > max_bytes:
        raise TraceError(shard.url, f"row {row}", f"the trace is {size_mb(len(data), max_bytes)}, over "
                         f"the {limit_mb(max_bytes)} limit (set ORCHVIZ_MAX_BYTES to raise it)")
    sha = values.get("_sha256")
    known = sha if isinstance(sha, str) and _HEX64.fullmatch(sha) else ""
    trace = _validated(data, shard, row, sha256=known)
    trace._sha256 = known
    fmt = values.get("_source_format")
    trace._source_format = fmt if isinstance(fmt, str) and fmt else "orchviz"
    return trace


def _validated(data: bytes, shard: Shard, row: int, line: int | None = None,
               sha256: str = "") -> Trace:
    """A trace from its JSON bytes, validated as a trace file is; errors name shard and row
    (and, in JSON Lines, the line). `sha256`: the hash the row keeps, if any."""
    try:
        trace = trace_from_json(data, shard.url, line=line, sha256=sha256)
    except TraceError as err:
        place = f"row {row}: {err.place}" if err.place else f"row {row}"
        raise TraceError(shard.url, place, err.problem) from None
    trace._source = shard.url
    if b'"rollout_apart"' in data:  # held apart from its rollout or spans: said again
        from viz_app.io.join_wait import apart_note

        note = apart_note(trace)
        if note is not None:
            trace._warnings = [*trace.reader_warnings, note]
    return trace


def _plain(value: Any) -> Any:
    """A value read from a nested Parquet column as JSON would hold it: struct fields that are
    null are absent, maps are objects."""
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        if value and all(isinstance(item, tuple) and len(item) == 2 for item in value):
            return {str(key): _plain(item) for key, item in value}
        return [_plain(item) for item in value]
    return value


_JUNK_LINE = re.compile(rb"^[ \t\r\f\v]*[^\s{]", re.M)
"""A line that holds something, and not a JSON object: not a trace."""
CHUNK_BYTES = 4 * 1024 * 1024
"""Bytes of a JSON Lines shard read (decompressed) at a time."""
BAD_IN_A_ROW = 1000
"""Lines in a row that hold no trace after which the rest of a shard is skipped, said once:
a shard of junk costs a thousand lines of work, not one per line."""

Line = tuple[int, Literal["line", "long", "junk"], Any]


def _jsonl_lines(stream: BinaryIO, max_bytes: int) -> Iterator[Line]:
    """The lines of a JSON Lines stream, as `(row, kind, payload)` (row = line number - 1):
    `line` with the bytes of a line that may hold a trace (its first character a `{`), `long`
    for one over `max_bytes`, `junk` with the number of lines from `row` on that hold
    something else. Blank lines and junk are passed over in bulk, by searches in C (a
    gigabyte of blank lines in about a second), never a line at a time."""
    row, buffer, skipping = 0, b"", False
    read = getattr(stream, "read1", stream.read)  # what is there: lines before damage count
    while True:
        chunk = read(CHUNK_BYTES)
        last = not chunk
        if last:
            if skipping or not buffer.strip():
                return
            chunk = b"\n"
        buffer += chunk
        position = 0
        if skipping:  # the rest of a line over the limit
            end = buffer.find(b"\n")
            if end < 0:
                buffer = b""
                continue
            position, skipping, row = end + 1, False, row + 1
        while True:
            brace = buffer.find(b"{", position)
            newline = buffer.rfind(b"\n", position, brace if brace >= 0 else len(buffer))
            start = newline + 1 if newline >= 0 else position
            if brace < 0:
                start = newline + 1 if newline >= 0 else position  # whole lines only
            elif buffer[start:brace].strip():  # a `{` inside a junk line: pass over it
                end = buffer.find(b"\n", brace)
                start = end + 1 if end >= 0 else start
                brace = -2 if end >= 0 else -1
            if start > position:
                passed = buffer[position:start]
                if passed.strip():
                    first = _JUNK_LINE.search(passed)
                    yield (row + passed.count(b"\n", 0, first.start()), "junk",
                           _JUNK_LINE.subn(b"", passed)[1])
                row += passed.count(b"\n")
                position = start
            if brace == -2:
                continue
            if brace < 0:
                break
            end = buffer.find(b"\n", start)
            if end < 0:
                break
            yield (row, "line", buffer[start:end]) if end - start <= max_bytes else \
                (row, "long", None)
            row += 1
            position = end + 1
        buffer = buffer[position:]
        if len(buffer) > max_bytes:  # a line over the limit, its end not read yet
            yield row, ("line" if buffer.lstrip()[:1] == b"{" else "junk"), None
            buffer, skipping = b"", True
        if last:
            return


def _jsonl_rows(shard: Shard, on_error: Callable[[TraceError], None], max_bytes: int,
                only: int | None) -> Iterator[tuple[int, Trace]]:
    """The traces of a JSON Lines shard (row = line number - 1; blank lines hold none). With
    `only`, just that row: the lines before it are passed over unparsed. Lines that cannot be
    traces are named one sentence for each run of them; after `BAD_IN_A_ROW` lines in a row
    without a trace, the rest of the shard is skipped."""
    fs, path = _fs(shard.url)
    try:
        raw = _open(fs, path)
    except _storage_errors() as err:
        on_error(TraceError(shard.url, "rows 0 onward", f"cannot be opened ({_short(err)}); "
                            "the shard was skipped"))
        return
    too_long = (f"the line is over the {limit_mb(max_bytes)} limit (set ORCHVIZ_MAX_BYTES to "
                "raise it)")
    bad_run, row = 0, -1
    with raw:
        # a few large reads: unbuffered, each small read would be a request to object storage
        buffered = io.BufferedReader(raw, buffer_size=CHUNK_BYTES)
        stream: Any = gzip.GzipFile(fileobj=buffered) if shard.compressed else buffered
        lines = _jsonl_lines(stream, max_bytes)
        while True:
            try:
                row, kind, payload = next(lines)
            except StopIteration:
                if only is not None:
                    on_error(TraceError(shard.url, f"row {only}", "the shard has fewer rows"))
                return
            except _read_errors() as err:
                what = "is not a readable gzip file" if shard.compressed else "cannot be read"
                on_error(TraceError(shard.url, f"row {row + 1} onward",
                                    f"{what} ({_short(err)}); the rest of the shard was skipped"))
                return
            if kind == "junk":
                count = payload if isinstance(payload, int) else 1
                if only is not None and row <= only < row + count:
                    on_error(TraceError(shard.url, f"row {only}: line {only + 1}",
                                        "the line is not a JSON object, so not a trace"))
                    return
                if only is None:
                    on_error(TraceError(
                        shard.url, f"row {row}: line {row + 1}" if count == 1 else
                        f"rows {row} onward: {count} lines",
                        "the line is not a JSON object, so not a trace" if count == 1 else
                        "the lines are not JSON objects, so not traces"))
                bad_run += count
            elif only is not None and row != only:
                if row > only:
                    on_error(TraceError(shard.url, f"row {only}: line {only + 1}",
                                        "the line is empty"))
                    return
                continue
            elif kind == "long" or payload is None:
                on_error(TraceError(shard.url, f"row {row}: line {row + 1}", too_long))
                bad_run += 1
            else:
                try:
                    trace = _validated(payload.rstrip(b"\r"), shard, row, line=row + 1)
                except TraceError as err:
                    on_error(err)
                    bad_run += 1
                else:
                    bad_run = 0
                    yield row, trace
            if only is not None and row >= only:
                return
            if only is None and bad_run >= BAD_IN_A_ROW:
                on_error(TraceError(shard.url, f"row {row + 1} onward",
                                    f"{BAD_IN_A_ROW} lines in a row held no trace, so the rest "
                                    "of the shard was skipped"))
                return


def find_trace(location: str, trace_id: str) -> tuple[Shard, int] | None:
    """Where a trace is in a pool: its shard and row, from the pool's `_ids.parquet` (reading
    only the row groups whose id range holds it), else by reading the `trace_id` column of every
    shard (JSON Lines: every line). None when no trace has the id."""
    fs, path = _fs(location)
    ids_path = f"{path}/{IDS}"
    if fs.exists(ids_path):
        return _lookup(fs, ids_path, path, trace_id)
    for shard in shards(location):
        for row, found in _shard_ids(shard):
            if found == trace_id:
                return shard, row
    return None


def _lookup(fs: fsspec.AbstractFileSystem, ids_path: str, path: str,
            trace_id: str) -> tuple[Shard, int] | None:
    try:
        with _open(fs, ids_path) as stream:
            parquet = _parquet(stream)
            for group in range(parquet.num_row_groups):
                stats = parquet.metadata.row_group(group).column(0).statistics
                if stats is not None and stats.has_min_max and not (
                        stats.min <= trace_id <= stats.max):
                    continue
                table = parquet.read_row_group(group)
                for found, name, row in zip(table.column("trace_id").to_pylist(),
                                            table.column("shard").to_pylist(),
                                            table.column("row").to_pylist()):
                    if found == trace_id:
                        kind = _shard_kind(name) if isinstance(name, str) else None
                        if kind is None or name.startswith("/") or ".." in name.split("/"):
                            raise PoolError(f"{_url(fs, ids_path)}: names a shard that is not "
                                            f"one ({str(name)[:80]!r})")
                        return Shard(url=_url(fs, f"{path}/{name}"), format=kind[0],
                                     compressed=kind[1]), row
    except _read_errors() as err:
        raise PoolError(f"{_url(fs, ids_path)}: cannot be read ({_short(err)}); write the pool "
                        "again, or delete the file to look ids up in the shards") from None
    return None


def _shard_ids(shard: Shard) -> Iterator[tuple[int, str]]:
    """(row, trace id) of every row of a shard, unvalidated; unreadable shards hold none."""
    if shard.format == "jsonl":
        for row, trace in _jsonl_rows(shard, lambda _err: None, DEFAULT_MAX_BYTES, only=None):
            yield row, trace.trace_id
        return
    fs, path = _fs(shard.url)
    try:
        with _open(fs, path) as stream:
            parquet = _parquet(stream)
            if "trace_id" not in parquet.schema_arrow.names:
                return
            start = 0
            for group in range(parquet.num_row_groups):
                column = parquet.read_row_group(group, columns=["trace_id"]).column(0)
                for offset, value in enumerate(column.to_pylist()):
                    yield start + offset, value
                start += len(column)
    except _read_errors():
        return


def trace_by_id(location: str, trace_id: str) -> Trace:
    """The trace of a pool with this id (see `find_trace`); TraceError when there is none."""
    found = find_trace(location, trace_id)
    if found is None:
        raise TraceError(location, "", f"the pool holds no trace with id {trace_id!r}")
    return read_trace(*found)


def _span(first: int, last: int) -> str:
    return f"row {first}" if last <= first else f"rows {first}-{last}"


def _rows(count: int) -> str:
    return f"{count} row was" if count == 1 else f"{count} rows were"
