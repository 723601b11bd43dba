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
"""

from __future__ import annotations

import copy
import gzip
import io
import os
import re
import sys
import zlib
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from typing import Any, BinaryIO, Literal

import fsspec
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
from fsspec.implementations.local import LocalFileSystem
from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError, TraceError
from viz_app.io.native import DEFAULT_MAX_BYTES, limit_mb, size_mb, trace_from_json
from viz_app.model import Trace

MANIFEST = "orchviz-pool.json"
"""The file that marks a folder or prefix as a pool orchviz wrote, and lists its shards."""
IDS = "_ids.parquet"
"""The lookup from trace id to (shard, row), sorted by trace id, written beside the shards."""
POOL_VERSION = 1
"""The version of the pool layout written in the manifest."""

JSON_COLUMNS = ("events", "edges", "rewards", "costs", "metrics")
"""Top-level fields kept as JSON text columns (nested columns are read too)."""
FIELDS = ("trace_id", "task_id", "system", "topology", "events", "edges", "rewards", "costs",
          "metrics")
"""The schema's top-level fields, in the order the schema lists them."""
REQUIRED = ("trace_id", "task_id", "events", "edges", "rewards", "costs")
"""The columns a Parquet shard must have to hold traces (the schema's required fields)."""
META_COLUMNS = ("_sha256", "_source", "_source_format")
"""orchviz's own columns: the trace's hash (kept, so labels made on the original file apply),
the file it was written from, and the format it was read as."""

SHARD_ROWS = 10_000
"""Traces per shard, by default."""
ROW_GROUP_ROWS = 64
"""Traces per Parquet row group, by default: opening one trace reads its row group."""
ROW_GROUP_BYTES = 16 * 1024 * 1024
"""A row group is closed early once its JSON text passes this many bytes."""
STREAM_ABOVE = 64 * 1024 * 1024
"""A row group larger than this once decompressed (Parquet written by something else) is read a
few rows at a time, never whole."""

SHARD_ENDINGS = {".parquet": ("parquet", False), ".jsonl": ("jsonl", False),
                 ".ndjson": ("jsonl", False), ".jsonl.gz": ("jsonl", True),
                 ".ndjson.gz": ("jsonl", True)}
"""File endings of shards, with their format and whether they are gzipped."""
_TRACE_ENDINGS = (".json", ".json.gz", ".eval")
"""Trace files that are not shards: a folder holding them is a library folder, not a pool."""

_SCHEMA = pa.schema([(name, pa.string()) for name in FIELDS + META_COLUMNS])
_HEX64 = re.compile(r"[0-9a-f]{64}")
S3_DEADLINES = {"connect_timeout": 5, "read_timeout": 30,
                "retries": {"max_attempts": 2, "mode": "standard"}}
"""botocore's settings for S3 unless `--storage-option config_kwargs=...` says otherwise: an
endpoint that does not answer is given up in seconds (botocore's own defaults, with s3fs's
retries, held `pool ls` 417 s)."""
S3_RETRIES = 1
"""Attempts s3fs makes of a call that failed in a way it retries (5 of its own, each of them
botocore's attempts, by default)."""


def _storage_errors() -> tuple[type[BaseException], ...]:
    """What a failed read or listing of storage raises: OSError, and botocore's errors (an
    endpoint that cannot be reached, a timeout, no credentials) once S3 is in use."""
    botocore = sys.modules.get("botocore.exceptions")
    return (OSError, botocore.BotoCoreError) if botocore is not None else (OSError,)


def _read_errors() -> tuple[type[BaseException], ...]:
    """What reading a shard raises when the shard, or its storage, is at fault."""
    return (pa.ArrowException, ValueError, EOFError, zlib.error, *_storage_errors())


class PoolError(OrchvizError):
    """A pool that cannot be written or opened as a whole (a location that is not empty, no
    shards at all, storage that refuses): one sentence naming the location."""


class Shard(BaseModel):
    """One file of a pool."""

    url: str = Field(description="Where the shard is: a local path or an fsspec URL.")
    format: Literal["parquet", "jsonl"] = Field(description="Parquet, or JSON Lines.")
    compressed: bool = Field(description="Whether a JSON Lines shard is gzipped (Parquet "
                             "compresses inside the file, and says False here).")

    model_config = {"frozen": True}


class PoolWriteResult(BaseModel):
    """What `write_pool` did."""

    location: str = Field(description="The pool written, as given.")
    traces: int = Field(description="Traces written.")
    shards: list[Shard] = Field(description="The shards written, in order.")
    skipped: list[str] = Field(default_factory=list,
                               description="One sentence per trace not written (a trace id "
                               "written before, a trace too large or not writable as JSON).")


# -- where a pool is ---------------------------------------------------------------------------


def set_storage_options(location: str, options: dict[str, Any]) -> None:
    """Give every later access to the location's protocol (`s3`, `gs`...) these fsspec options,
    such as `endpoint_url` for an S3-compatible server: they go to fsspec's configuration
    (`fsspec.config.conf`), which the environment (`FSSPEC_S3_ENDPOINT_URL=...`) and fsspec's
    config files also fill. Options apply to this process only."""
    protocol = fsspec.core.split_protocol(location)[0] or "file"
    try:
        fs_class = fsspec.get_filesystem_class(protocol)
    except (ImportError, ValueError) as err:
        raise PoolError(f"{location}: cannot be opened ({_short(err)})") from None
    fsspec.config.conf.setdefault(protocol, {}).update(options)
    fs_class.clear_instance_cache()


def _fs(location: str) -> tuple[fsspec.AbstractFileSystem, str]:
    protocol = fsspec.core.split_protocol(location)[0]
    deadlines: dict[str, Any] = {}
    if protocol in ("s3", "s3a"):
        conf = fsspec.config.conf.get(protocol, {})
        # a copy each time: botocore rewrites the `retries` it is given in place
        deadlines = {"config_kwargs": copy.deepcopy(S3_DEADLINES | conf.get("config_kwargs",
                                                                             {}))}
    try:
        fs, path = fsspec.core.url_to_fs(location, **deadlines)
        if deadlines:
            fs.retries = S3_RETRIES
    except (ImportError, ValueError) as err:
        raise PoolError(f"{location}: cannot be opened ({_short(err)}); for s3:// install "
                        "orchviz[s3] (gs:// needs gcsfs, az:// adlfs, hf:// huggingface_hub)"
                        ) from None
    return fs, path.rstrip("/") or path


def _is_local(fs: fsspec.AbstractFileSystem) -> bool:
    return isinstance(fs, LocalFileSystem)


def _url(fs: fsspec.AbstractFileSystem, path: str) -> str:
    return path if _is_local(fs) else fs.unstrip_protocol(path)


def _open(fs: fsspec.AbstractFileSystem, path: str, mode: str = "rb") -> BinaryIO:
    if _is_local(fs):
        return fs.open(path, mode)
    if "r" in mode:  # every read a range request: no read-ahead of megabytes past a row group
        return fs.open(path, mode, cache_type="none")
    return fs.open(path, mode)


def _shard_kind(name: str) -> tuple[str, bool] | None:
    low = name.lower()
    for ending, kind in SHARD_ENDINGS.items():
        if low.endswith(ending):
            return kind
    return None


def _hidden(relative: str) -> bool:
    return any(part.startswith(("_", ".")) for part in relative.split("/"))


def read_manifest(location: str) -> dict[str, Any] | None:
    """The pool's manifest (`orchviz-pool.json`), or None when there is none."""
    fs, path = _fs(location)
    target = f"{path}/{MANIFEST}"
    try:
        with _open(fs, target) as stream:
            data = stream.read(DEFAULT_MAX_BYTES + 1)
    except FileNotFoundError:
        return None
    except _storage_errors() as err:
        raise PoolError(f"{_url(fs, target)}: cannot be read ({_short(err)})") from None
    try:
        manifest = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise PoolError(f"{_url(fs, target)}: is not a pool manifest ({err})") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("shards"), list):
        raise PoolError(f"{_url(fs, target)}: is not a pool manifest (no list of shards)")
    return manifest


def is_pool(location: str) -> bool:
    """Whether the location (a folder, a prefix, an fsspec URL) holds a pool: orchviz's
    manifest, a single shard file, or a folder whose files are shards (`*.parquet`, `*.jsonl`,
    `*.jsonl.gz`, `*.ndjson`) and no other trace files (`.json` files make a library folder).
    Files and folders whose names begin with `_` or `.` are not looked at."""
    try:
        fs, path = _fs(location)
        if fs.exists(f"{path}/{MANIFEST}"):
            return True
        if fs.isfile(path):
            return _shard_kind(path) is not None
        if not fs.isdir(path):
            return False
        found = False
        for relative in _listing(fs, path):
            if _shard_kind(relative):
                found = True
            elif relative.lower().endswith(_TRACE_ENDINGS):
                return False
        return found
    except (PoolError, *_storage_errors()):
        return False


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


def _listing(fs: fsspec.AbstractFileSystem, path: str) -> list[str]:
    """Every file under the folder, as paths relative to it, hidden ones left out, sorted."""
    names = []
    for found in fs.find(path):
        relative = found[len(path):].lstrip("/")
        if relative and not _hidden(relative):
            names.append(relative)
    return sorted(names)


_FOLLOW_SYMLINKS = [False]


def follow_symlinks(allowed: bool = True) -> None:
    """Let this process read a local pool's shards that are symbolic links to files outside
    its folder (`--follow-symlinks`); by default such a shard is refused."""
    _FOLLOW_SYMLINKS[0] = allowed


def _refuse_outside(fs: fsspec.AbstractFileSystem, folder: str, found: list[Shard]) -> None:
    """PoolError naming the first shard of a local pool whose real place (its symbolic links
    followed) is outside the pool's folder, unless `follow_symlinks` allowed it: a pool copied
    from elsewhere must not read the rest of the disk."""
    if not _is_local(fs) or _FOLLOW_SYMLINKS[0]:
        return
    root = os.path.realpath(folder)
    for shard in found:
        real = os.path.realpath(shard.url)
        if os.path.commonpath([root, real]) != root:
            raise PoolError(f"{shard.url}: is a symbolic link to {real}, outside the pool's "
                            "folder; it was not read (--follow-symlinks reads it)")


def shards(location: str) -> list[Shard]:
    """The pool's shards, in a fixed order: the manifest's, else every shard file under the
    folder sorted by path. Raises PoolError when the location holds none, or (see
    `follow_symlinks`) when a local shard leads outside the pool's folder."""
    fs, path = _fs(location)
    manifest = read_manifest(location)
    if manifest is not None:
        found = []
        for entry in manifest["shards"]:
            name = entry.get("path") if isinstance(entry, dict) else None
            kind = _shard_kind(name) if isinstance(name, str) else None
            if kind is None or name.startswith("/") or ".." in name.split("/"):
                raise PoolError(f"{_url(fs, path)}/{MANIFEST}: names a shard that is not one "
                                f"({str(name)[:80]!r})")
            found.append(Shard(url=_url(fs, f"{path}/{name}"), format=kind[0],
                               compressed=kind[1]))
        _refuse_outside(fs, path, found)
        return found
    try:
        if fs.isfile(path):
            kind = _shard_kind(path)
            if kind:
                return [Shard(url=_url(fs, path), format=kind[0], compressed=kind[1])]
        names = _listing(fs, path) if fs.isdir(path) else []
    except _storage_errors() as err:
        raise PoolError(f"{_url(fs, path)}: cannot be listed ({_short(err)})") from None
    found = [Shard(url=_url(fs, f"{path}/{name}"), format=kind[0], compressed=kind[1])
             for name in names if (kind := _shard_kind(name))]
    if not found:
        raise PoolError(f"{_url(fs, path)}: is not a pool (no {MANIFEST} and no .parquet, "
                        ".jsonl or .jsonl.gz shards)")
    if len(found) > 1 or found[0].url != _url(fs, path):  # a shard named itself is read
        _refuse_outside(fs, path, found)
    return found


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


# -- writing -----------------------------------------------------------------------------------


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
        if fs.exists(path) and (fs.isfile(path) or fs.ls(path)):
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


def _span(first: int, last: int) -> str:
    return f"row {first}" if last <= first else f"rows {first}-{last}"


def _rows(count: int) -> str:
    return f"{count} row was" if count == 1 else f"{count} rows were"


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text[:200]
