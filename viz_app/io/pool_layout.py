"""Where a pool is and what it is made of: its shards (`Shard`), its manifest, its layout's
constants, the storage it is on (any fsspec URL) and how a folder is told to be a pool.

`viz_app.io.pool` reads a pool and is the face callers import; `viz_app.io.pool_writer` writes
one. Both stand on this module. Nothing here reads a trace or opens a database.
"""

from __future__ import annotations

import copy
import os
import re
import sys
import zlib
from typing import Any, BinaryIO, Literal

import fsspec
import orjson
import pyarrow as pa
from fsspec.implementations.local import LocalFileSystem
from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError
from viz_app.io.native import DEFAULT_MAX_BYTES

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


def _short(err: BaseException) -> str:
    text = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return text[:200]
