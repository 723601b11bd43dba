"""The index of a pool: one summary row per trace in DuckDB, its words in a SQLite FTS5 index.

A pool (`viz_app.io.pool`) keeps 10^5-10^6 rollouts in Parquet or JSON Lines shards, locally or
on object storage. Its index lives in two embedded files, no server: a DuckDB file with a row per
trace (figures, task and GRPO group, system, topology, carried rewards, label targets under the
rubric, hash, warnings, and where it is: shard and row), a row per shard (how it was stamped when
it was read) and a row per failure (a shard or row that could not be read, with the sentence
saying why); and a SQLite file whose FTS5 table holds the words of each trace (its ids, agents,
tools and event content up to POOL_TEXT_LIMIT characters), keyed by the trace's `doc` number.
DuckDB's own full-text extension is downloaded at run time, which an offline machine cannot do;
FTS5 is part of Python's sqlite3.

Indexing maps one pure function, `summarise_shard(shard, rubric)`, over the shards that are new
or changed (by size and modification time or etag): in this process, on a process pool over
every core, or on a Ray cluster with Ray Data (`ray="auto"` or an address). Only this process
writes the index files.

Queries take structured filters (`Condition(field, op, value)`, fields from FIELDS or
`reward.NAME`), always bound as parameters: no user text becomes SQL. A search is a list of
words, each matched as a word prefix in the FTS5 index (all words must match).
"""

from __future__ import annotations

import ctypes
import fcntl
import hashlib
import json
import os
import pickle
import queue
import re
import shutil
import signal
import sqlite3
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Literal

import duckdb
import pyarrow as pa
from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError, StoreError, TraceError
from viz_app.io.pool import Shard, read_shard, read_trace, row_groups
from viz_app.analysis import forget
from viz_app.labels.rubric import Rubric
from viz_app.model import Trace, paused_gc
from viz_app.summary import summarise

POOL_TEXT_LIMIT = 20_000
"""Characters of a trace's text (ids, agents, tools, then event content) kept in the word index."""
INDEX_VERSION = "1"
"""The layout of the index files; files of another layout are rebuilt (they are a cache)."""
PAGE_SIZE = 50
RANKED_HITS = 20_000
"""A search with more hits than this lists them in index order, not by relevance."""


class FilterError(OrchvizError):
    """A filter or sort the pool index cannot use: an unknown field, operator or value."""


# -- fields and filters ---------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexField:
    """A field of the pool index that filters, sorts, histograms and strata may name."""

    column: str
    """Its column in the `traces` table."""
    kind: Literal["text", "number"]
    help: str


FIELDS: dict[str, IndexField] = {
    "trace_id": IndexField("trace_id", "text", "the trace's id"),
    "task_id": IndexField("task_id", "text", "the task the run attempted"),
    "group": IndexField("task_id", "text", "the GRPO group: rollouts of one task"),
    "system": IndexField("system", "text", "the system that produced it"),
    "topology": IndexField("topology", "text", "its orchestration topology"),
    "source_format": IndexField("source_format", "text", "orchviz, or the importer's name"),
    "shard": IndexField("shard", "text", "the shard it is in"),
    "row": IndexField("position", "number", "its row in the shard"),
    "events": IndexField("events", "number", "number of events"),
    "agents": IndexField("agents", "number", "number of agents"),
    "depth": IndexField("depth", "number", "depth of the spawn tree"),
    "makespan_s": IndexField("makespan_s", "number", "first event to the end of the last (s)"),
    "parallelism": IndexField("parallelism", "number", "agent lifetimes over the makespan"),
    "tokens": IndexField("tokens", "number", "tokens the run used"),
    "cost_usd": IndexField("cost_usd", "number", "what the run cost in dollars"),
    "warnings": IndexField("warnings", "number", "structural warnings"),
    "targets": IndexField("target_count", "number", "what the rubric asks to label in it"),
}
"""Every field by the name filters use; `reward.NAME` names a carried reward channel too."""

NUMBER_FIELDS = [name for name, f in FIELDS.items() if f.kind == "number"]
REWARD_PREFIX = "reward."
Op = Literal["=", "!=", "<", "<=", ">", ">=", "~", "in"]
_OPS = ("<=", ">=", "!=", "==", "=", "<", ">", "~")
_CONDITION = re.compile(r"^\s*([A-Za-z_][\w.\-]*)\s*(<=|>=|!=|==|=|<|>|~)\s*(.*?)\s*$")


class Condition(BaseModel):
    """One structured filter: `field op value` (`~` is "contains", for text fields)."""

    field: str = Field(description="A name of FIELDS, or reward.NAME.")
    op: Op = Field(description="Comparison: = != < <= > >= ~ (contains) in (one of a list).")
    value: str | float | int | list[str | float | int] = Field(description="What to compare "
                                                                "with (a list for `in`).")


def parse_condition(expr: str) -> Condition:
    """A condition from a command-line expression such as `agents>10`, `topology=tree` or
    `reward.team>=0.5`; FilterError (one sentence) when it is not one."""
    found = _CONDITION.match(expr or "")
    if found is None or not found.group(3):
        raise FilterError(f"cannot read the filter {expr!r}: write FIELD OP VALUE, such as "
                          f"agents>10 or topology=tree (operators {' '.join(_OPS)})")
    name, op, value = found.groups()
    op = "=" if op == "==" else op
    kind = _kind(name)
    if kind == "number":
        if op == "~":
            raise FilterError(f"the filter {expr!r} uses ~ (contains) on {name}, a number")
        try:
            number = float(value)
        except ValueError:
            raise FilterError(f"the filter {expr!r} compares {name}, a number, with "
                              f"{value!r}") from None
        return Condition(field=name, op=op, value=number)
    return Condition(field=name, op=op, value=value.strip("'\""))


def _kind(name: str) -> str:
    if name.startswith(REWARD_PREFIX) and len(name) > len(REWARD_PREFIX):
        return "number"
    if name not in FIELDS:
        raise FilterError(f"the pool index has no field {name!r} (fields: "
                          f"{', '.join(FIELDS)}, reward.NAME)")
    return FIELDS[name].kind


def _field_sql(name: str, params: list) -> str:
    """The SQL of a field; a reward channel's name goes in as a parameter."""
    _kind(name)
    if name.startswith(REWARD_PREFIX):
        params.append(name[len(REWARD_PREFIX):])
        return "t.rewards[?]"
    return f"t.{FIELDS[name].column}"


def _value(name: str, value: Any) -> Any:
    if _kind(name) == "number":
        try:
            return float(value)
        except (TypeError, ValueError):
            raise FilterError(f"{name} is a number, not {value!r}") from None
    return str(value)


def _where(filters: Sequence[Condition], params: list) -> str:
    parts = ["TRUE"]
    for c in filters:
        sql = _field_sql(c.field, params)
        if c.op == "in":
            values = c.value if isinstance(c.value, list) else [c.value]
            if not values:
                parts.append("FALSE")
                continue
            parts.append(f"{sql} IN ({', '.join('?' for _ in values)})")
            params.extend(_value(c.field, v) for v in values)
        elif c.op == "~":
            if _kind(c.field) != "text":
                raise FilterError(f"~ (contains) needs a text field, not {c.field}")
            parts.append(f"contains(lower({sql}), lower(?))")
            params.append(str(c.value))
        else:
            parts.append(f"{sql} {c.op} ?")
            params.append(_value(c.field, c.value))
    return " AND ".join(parts)


def search_query(search: str) -> str | None:
    """The FTS5 query of what a person typed: each word a quoted prefix phrase, all required (no
    FTS5 syntax of theirs is ever parsed); None when nothing searchable is left."""
    words = [w for w in (search or "").split() if re.search(r"\w", w)]
    if not words:
        return None
    return " AND ".join('"' + w.replace('"', '""') + '"*' for w in words)


# -- what the index keeps of a trace ------------------------------------------------------------


class PoolRow(BaseModel):
    """What the library shows of one trace of a pool, without reading its shard."""

    trace_id: str
    shard: str = Field(description="The shard's URL.")
    row: int = Field(description="Its row in the shard.")
    task_id: str = Field(description="The task; its rollouts make a GRPO group.")
    system: str
    topology: str
    source_format: str
    events: int
    agents: int
    depth: int
    makespan_s: float
    parallelism: float
    tokens: float
    cost_usd: float
    rewards: dict[str, float] = Field(default_factory=dict, description="Its reward channels.")
    targets: dict[str, list[str]] | None = Field(None, description="Target key -> required "
                                                 "questions under the rubric (None: no rubric).")
    sha256: str
    warnings: int

    @property
    def group(self) -> str:
        """The GRPO group (the task id)."""
        return self.task_id

    def labelled(self, answered: dict[str, set[str]]) -> int:
        """How many of its targets have every required question answered."""
        return sum(1 for key, required in (self.targets or {}).items()
                   if set(required) <= answered.get(key, set()))


class PoolFailure(BaseModel):
    """A shard, or a row of one, that could not be indexed."""

    shard: str
    row: int = Field(description="The row, or -1 when the whole shard failed.")
    error: str = Field(description="The sentence saying where and what.")


class PoolUpdate(BaseModel):
    """What an update of a pool's index did."""

    shards: int = Field(0, description="Shards in the pool.")
    read: int = Field(0, description="Shards read this time (new or changed).")
    skipped: int = Field(0, description="Shards unchanged since indexed: not read.")
    removed: int = Field(0, description="Shards indexed before that are gone.")
    traces: int = Field(0, description="Traces in the index now.")
    failures: int = Field(0, description="Failures in the index now.")
    seconds: float = Field(0.0, description="Wall time of the update.")
    engine: str = Field("inline", description="inline, processes, or ray.")
    pieces: int = Field(0, description="Units of work the shards read were shared out in "
                        "(whole shards, or runs of a Parquet shard's row groups).")
    costs: dict[str, float] = Field(default_factory=dict, description=(
        "Seconds spent, by step: `summarise_cpu` (CPU, where the pieces were read: reading, "
        "decoding and summarising), `pack_cpu` (CPU there: the rows' table, and pickling it to "
        "send), `receive` (this process: unpickling), `wait` (this process waiting for the "
        "next piece), `write_rows` (DuckDB), `write_words` (FTS5 and the words' copies, on "
        "their own thread when workers read the pieces), `wait_words` (waiting for that "
        "thread to take a piece's words), `publish` (checkpoint, sync, swap), `forget` (the "
        "words of replaced rows): wall seconds of this process; and `writer_cpu`, its CPU "
        "seconds over receiving and writing, `words_cpu` the part of it writing words (on a "
        "busy machine, wall seconds include waiting for a core)."))


class Bin(BaseModel):
    """One bar of a histogram: [low, high) and how many traces fall in it."""

    low: float
    high: float
    count: int


_ROW_COLUMNS = ["trace_id", "shard", "position", "task_id", "system", "topology",
                "source_format", "events", "agents", "depth", "makespan_s", "parallelism",
                "tokens", "cost_usd", "rewards", "targets", "sha256", "warnings"]


def summarise_trace(trace: Trace, shard: str, row: int, rubric: Rubric | None) -> dict:
    """The index's row of one trace: its summary (`summary.summarise`, which the folder index
    keeps too), with its `text` for the word index and `packed`, the text's copy
    (`pack_words`), kept so that FTS5 can delete its words. The trace may be the compiled read
    path's records. The index keeps no critical path (it would cost as much as every other
    figure together), so none is computed."""
    found = summarise(trace, rubric, POOL_TEXT_LIMIT, critical_path=False)
    text = found.text
    return {
        "trace_id": found.trace_id, "shard": shard, "position": row,
        "task_id": found.task_id, "system": found.system, "topology": found.topology,
        "source_format": found.source_format, "events": found.events, "agents": found.agents,
        "depth": found.depth, "max_fanout": found.max_fanout, "makespan_s": found.makespan_s,
        "parallelism": found.parallelism, "tokens": found.tokens, "cost_usd": found.cost_usd, "rewards": found.rewards,
        "targets": None if found.targets is None else json.dumps(found.targets),
        "target_count": None if found.targets is None else len(found.targets),
        "sha256": found.sha256, "warnings": found.warnings, "text": text,
        "packed": pack_words(text),  # in the worker: the writer is one process
    }


_LZ4 = pa.Codec("lz4")


def pack_words(text: str) -> bytes:
    """The copy of a trace's words the word index keeps (FTS5 forgets a doc of a contentless
    table only when given the text it was added with): their UTF-8 compressed with LZ4, behind
    a tag, `L`, and their length, which LZ4 needs to decompress. LZ4 costs a fifth of the CPU
    of zlib at level 1 on these words (12 against 57 us for 15 KB), for a copy about a third
    larger; it is made in the worker, as the writer is one process."""
    data = text.encode()
    return b"L" + len(data).to_bytes(4, "little") + _LZ4.compress(data, asbytes=True)


def unpack_words(packed: bytes) -> str:
    """The words `pack_words` kept; or, from an index written before it, their zlib copy
    (whose first byte is never `L`)."""
    return _unpacked_utf8(packed).decode()


def _unpacked_utf8(packed: bytes) -> bytes:
    """The words `pack_words` kept, as their UTF-8: FTS5 reads a value's UTF-8 whether it is
    bound as text or as bytes (the same tokens, hits and ranks: tested), so the writer hands
    them over undecoded (0.004 ms of CPU a trace less of the writer's, in decoding and in
    sqlite3 encoding them again)."""
    if packed[:1] == b"L":
        size = int.from_bytes(packed[1:5], "little")
        return _LZ4.decompress(packed[5:], size, asbytes=True)
    return zlib.decompress(packed)


_ROW_OF = re.compile(r"\brow (\d+)\b")


def _failure(shard: str, err: Exception) -> dict:
    place = getattr(err, "place", "") or ""
    found = _ROW_OF.search(place) or _ROW_OF.search(str(err))
    return {"shard": shard, "row": int(found.group(1)) if found else -1, "error": str(err)}


def summarise_shard(shard: Shard, rubric: Rubric | None, groups: tuple[int, int] | None = None
                    ) -> tuple[list[dict], list[dict]]:
    """Every trace of a shard summarised (`summarise_trace`), and every row or the whole shard
    that could not be read, as failure records (shard, row, error). Pure: reads the shard,
    writes nothing; the same function runs in this process, a process pool or Ray. `groups`
    (first, end) summarises only those row groups of a Parquet shard (a `Piece` of it).

    The cyclic garbage collector rests meanwhile: each trace is freed (`forget`) as soon as
    it is summarised, so it would find nothing, yet it would scan every trace's objects."""
    rows: list[dict] = []
    failures: list[dict] = []
    with paused_gc():
        try:
            for row, trace in read_shard(shard, on_error=lambda err: failures.append(
                    _failure(shard.url, err)), groups=groups):
                try:
                    rows.append(summarise_trace(trace, shard.url, row, rubric))
                except Exception as err:  # an analysis bug must not stop the rest
                    failures.append(_failure(shard.url, TraceError(
                        shard.url, f"row {row}", f"could not be indexed ({err!r})")))
                forget(trace)  # freed now: a trace and its analysis point at each other
        except TraceError as err:
            failures.append(_failure(shard.url, err))
        except Exception as err:  # a reader's bug, or storage that fails: the shard is named
            failures.append(_failure(shard.url, TraceError(shard.url, "",
                                                           f"could not be read ({err!r})")))
    return rows, failures


# -- the unit of work: a piece of a shard, and the batch of rows it gives -------------------------

PIECE_ROWS = 1_024
"""Rows of a Parquet shard one task reads at most (whole row groups, so a row group of more is a
piece of its own). A pool's shards hold 10,000 traces: shared out in pieces, the work balances
over the workers whatever the shards' sizes, and what a worker sends back is a few tens of MB."""
PIECES_PER_WORKER = 4
"""Fewer pieces than this per worker and they are made smaller (down to a row group): the last
piece each worker reads is then a small part of the whole."""
TAPER = 2
"""Towards the pool's end pieces shrink, each at most 1/(TAPER x workers) of the rows left after
it begins (down to a row group): the workers then finish within a small piece of each other,
and the writer has little left to write when the last one ends (guided self-scheduling). With
pieces of 1,024 rows only the last 4,096 rows of two workers are read in smaller ones."""


@dataclass(frozen=True)
class Piece:
    """A unit of indexing work: a whole shard, or a run of a Parquet shard's row groups. The
    pieces of a shard are indexed one after the other, in order: its old rows go at the first,
    its row in `shards` comes with the last."""

    shard: Shard
    groups: tuple[int, int] | None = None
    """The row groups (first, end) it reads; None: the whole shard."""
    rows: int = 0
    """Rows it holds, as its footer says (0 when not known)."""
    first: bool = True
    last: bool = True


def plan(todo: Sequence[Shard], parallel: int) -> list[Piece]:
    """The pieces the shards are read in, in the shards' order, then the rows': whole shards
    (their rows counted) when reading in this process (`parallel` 1) or for a JSON Lines shard
    (gzip cannot seek, so a piece would read the stream from its start), else runs of row
    groups of about PIECE_ROWS rows, fewer when there are fewer than PIECES_PER_WORKER pieces a
    worker. The footers are read on a few threads (on object storage each is a request)."""
    parquet = [s for s in todo if s.format == "parquet"]
    if parquet:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(16, len(parquet))) as threads:
            sizes = dict(zip([s.url for s in parquet], threads.map(row_groups, parquet)))
    else:
        sizes = {}
    if parallel <= 1:  # whole shards, with their rows counted (for the progress bar)
        return [Piece(s, rows=sum(sizes.get(s.url) or [0])) for s in todo]
    total = sum(sum(sizes.get(s.url) or [0]) for s in todo)
    target = max(1, min(PIECE_ROWS, -(-total // (PIECES_PER_WORKER * parallel))))
    left = total  # rows of Parquet pieces not yet planned
    pieces: list[Piece] = []
    for shard in todo:
        groups = sizes.get(shard.url)
        if not groups:  # JSON Lines, a footer that cannot be read (reading it says why), empty
            pieces.append(Piece(shard))
            continue
        runs: list[tuple[int, int, int]] = []
        start, rows = 0, 0
        for g, count in enumerate(groups):
            rows += count
            if rows >= min(target, -(-left // (TAPER * parallel))) or g == len(groups) - 1:
                runs.append((start, g + 1, rows))
                start, left, rows = g + 1, left - rows, 0
        pieces += [Piece(shard, (a, b), n, first=i == 0, last=i == len(runs) - 1)
                   for i, (a, b, n) in enumerate(runs)]
    return pieces


@dataclass
class Batch:
    """What a piece gives the writer: its rows as an Arrow table (every column of `traces`
    but `doc`, numbered by the writer), their words and the words' compressed copies, its
    failures, and what reading it cost where it was read."""

    piece: Piece
    table: pa.Table
    texts: list[str] | list[bytes]
    """Each row's words; their UTF-8 once they travelled as their packed copies (`_unpickled`)."""
    packed: list[bytes]
    failures: list[dict]
    rewards: list[str]
    """The reward channels its rows carry."""
    summarise_cpu: float = 0.0
    """CPU seconds of reading, decoding and summarising its traces (`summarise_shard`)."""
    pack_cpu: float = 0.0
    """CPU seconds of making its table (and, in a worker, of pickling the batch)."""


def summarise_piece(piece: Piece, rubric: Rubric | None) -> Batch:
    """A piece summarised (`summarise_shard` over its row groups) into a Batch: pure, the
    same in this process, a worker process or a Ray task."""
    started = time.process_time()
    rows, failures = summarise_shard(piece.shard, rubric, piece.groups)
    summarised = time.process_time()
    table = pa.table({f.name: pa.array([list(r["rewards"].items()) for r in rows] if
                                       f.name == "rewards" else [r[f.name] for r in rows],
                                       f.type) for f in _BATCH_TYPES}, schema=_BATCH_TYPES)
    rewards = sorted({k for r in rows for k in r["rewards"]})
    return Batch(piece, table, [r["text"] for r in rows], [r["packed"] for r in rows],
                 failures, rewards, summarised - started, time.process_time() - summarised)


def _summarise_pickled(data: bytes) -> tuple[bytes, float]:
    """summarise_piece in a worker: its arguments and its Batch travel pickled (with the CPU
    seconds the pickling took, which the batch cannot hold). The words travel once, as their
    packed copies, which `_unpickled` unpacks: a fifth of the bytes (4 against 19 KB a trace
    of the benchmark), and on this machine 0.024 ms of CPU a trace less in all (pickling and
    the pipe's copies, against 0.004 of unpacking in the writer); on a Ray cluster, a fifth
    of what crosses the network to the writer."""
    _freeze_heap()  # a Ray worker's first task (a process pool's worker froze at its start)
    piece, rubric = pickle.loads(data)
    batch = summarise_piece(piece, rubric)
    started = time.process_time()
    if len(batch.packed) == len(batch.texts):
        batch.texts = []
    payload = pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)
    return payload, time.process_time() - started


def _unpickled(result: tuple[bytes, float]) -> Batch:
    batch = pickle.loads(result[0])
    batch.pack_cpu += result[1]
    if len(batch.texts) != len(batch.packed):
        batch.texts = [_unpacked_utf8(packed) for packed in batch.packed]
    return batch


def shard_stamp(shard: Shard) -> str:
    """What says a shard changed: its size and modification time (or etag) as storage reports
    them; '' when storage cannot say (then the shard is read every time)."""
    try:
        import fsspec

        fs, path = fsspec.core.url_to_fs(shard.url)
        info = fs.info(path)
    except ImportError:
        try:
            stat = os.stat(shard.url)
        except OSError:
            return ""
        info = {"size": stat.st_size, "mtime": stat.st_mtime_ns}
    except Exception:  # storage that cannot be reached now: read it (and say why then)
        return ""
    keys = ("size", "mtime", "ETag", "etag", "LastModified", "last_modified", "md5Hash",
            "generation", "updated")
    return json.dumps({k: str(info[k]) for k in keys if info.get(k) is not None}, sort_keys=True)


# -- where the index lives ----------------------------------------------------------------------


def pool_key(location: str | os.PathLike) -> str:
    """A short hash naming a pool's index files (by its location, resolved when local)."""
    text = str(location)
    if "://" not in text:
        text = str(Path(text).expanduser().resolve())
    return hashlib.sha256(text.rstrip("/").encode("utf-8")).hexdigest()[:12]


def default_index_path(location: str | os.PathLike, db_url: str) -> Path:
    """Where a pool's index lives by default: beside the label database when that is a SQLite
    file (`orchviz.pool-<hash>.duckdb` beside `orchviz.db`), else in the user's cache folder
    (`$XDG_CACHE_HOME/orchviz`, default ~/.cache/orchviz). The word index is the same path
    with `.fts.sqlite`."""
    key = pool_key(location)
    if db_url.startswith("sqlite:///") and ":memory:" not in db_url:
        db = Path(db_url.removeprefix("sqlite:///").split("?")[0])
        return db.parent / f"{db.stem}.pool-{key}.duckdb"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "orchviz"
    return cache / f"pool-{key}.duckdb"


# -- the index ----------------------------------------------------------------------------------

_SCHEMA = [
    "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    "CREATE TABLE IF NOT EXISTS shards (url VARCHAR, format VARCHAR, compressed BOOLEAN, "
    "stamp VARCHAR, rubric_sha VARCHAR, traces INTEGER, failures INTEGER, indexed_at DOUBLE)",
    "CREATE TABLE IF NOT EXISTS traces (doc BIGINT, trace_id VARCHAR, shard VARCHAR, "
    "position INTEGER, task_id VARCHAR, system VARCHAR, topology VARCHAR, "
    "source_format VARCHAR, events INTEGER, agents INTEGER, depth INTEGER, "
    "makespan_s DOUBLE, parallelism DOUBLE, tokens DOUBLE, cost_usd DOUBLE, "
    "rewards MAP(VARCHAR, DOUBLE), targets VARCHAR, target_count INTEGER, sha256 VARCHAR, "
    "warnings INTEGER)",
    "CREATE TABLE IF NOT EXISTS failures (shard VARCHAR, position INTEGER, error VARCHAR)",
]
_TRACE_TYPES = pa.schema([
    ("doc", pa.int64()), ("trace_id", pa.string()), ("shard", pa.string()),
    ("position", pa.int32()), ("task_id", pa.string()), ("system", pa.string()),
    ("topology", pa.string()), ("source_format", pa.string()), ("events", pa.int32()),
    ("agents", pa.int32()), ("depth", pa.int32()), ("makespan_s", pa.float64()),
    ("parallelism", pa.float64()), ("tokens", pa.float64()), ("cost_usd", pa.float64()),
    ("rewards", pa.map_(pa.string(), pa.float64())), ("targets", pa.string()),
    ("target_count", pa.int32()), ("sha256", pa.string()), ("warnings", pa.int32())])
_BATCH_TYPES = _TRACE_TYPES.remove(0)
"""A piece's rows as its Batch holds them: every column but `doc`."""

Progress = Callable[[int, int, str], None]
"""Called as `progress(done, total, shard)` while shards are indexed, `done` and `total` in
traces (rows): the Parquet footers give the total before anything is read; a shard whose rows
are not known beforehand (JSON Lines, a footer that cannot be read) adds its own to both once
it is read."""


class IndexBusy(StoreError):
    """Another process or thread is updating the pool index (`PoolIndex.update(wait=False)`)."""


_FORGET_BATCH = 5_000
"""Docs whose words are forgotten in one SQLite transaction."""

_HELD_LOCKS: set[int] = set()
"""File descriptors of the writer locks this process holds. A process forked meanwhile (the
workers that read shards) closes its copies, so that the lock goes with the process that took
it, and asks to be ended when that one ends: killed mid-update, it leaves no worker behind
(ProcessPoolExecutor's workers would otherwise wait for work forever) and no lock held."""
_FORKED_BY = [0]


def _before_fork() -> None:
    _FORKED_BY[0] = os.getpid()


def _after_fork_in_child() -> None:
    if not _HELD_LOCKS:
        return
    for fd in list(_HELD_LOCKS):  # a close, never LOCK_UN: that would free the parent's lock
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_LOCKS.clear()
    try:  # Linux: SIGTERM when the parent ends (PR_SET_PDEATHSIG)
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != _FORKED_BY[0]:  # the parent ended before the request was made
        os._exit(1)


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def _disk_full(folder: Path) -> bool:
    """Whether the file system holding `folder` has (next to) no room left: SQLite and
    DuckDB report a full disk as an I/O error as often as not."""
    try:
        return shutil.disk_usage(folder).free < 256 * 1024
    except OSError:
        return False


WORDS_COMMIT = 16_384
"""Traces whose words the word index takes in one transaction: FTS5 writes a segment at each
commit and merges segments as they add up, so fewer, larger ones cost less."""
WORDS_HASH = 64 * 1024 * 1024
"""Bytes of new words FTS5 gathers in memory before it writes them out as a segment (its
`hashsize`, 1 MB by default): with 64 MB a commit of WORDS_COMMIT traces is one or two segments,
not dozens, and FTS5 merges far less (on 40,000 traces of the benchmark 0.149 -> 0.113 ms of
CPU a trace for the words, for about 85 MB more memory in the writer). Searches read the same
words and counts either way."""
WORDS_TAIL = 2_048
"""When fewer traces than this are still to come, the words so far are committed: the last
commit, which the update waits for after the workers are done, then writes a small segment
(on two workers, 0.28 s of a 14 s update for the 7,000 traces after the last full commit)."""
WORDS_MERGE = 8
"""Segments of a size FTS5 lets gather before it merges them into one (its `automerge`, 4 by
default): each word is rewritten fewer times as the index grows (on 200,000 traces 0.138-0.145
-> 0.120-0.134 ms of CPU a trace), and a search, which reads every segment, took as long."""


class _WordWriter:
    """An update's words going into the word index: in transactions of WORDS_COMMIT traces,
    not synced to disk one by one (SQLite's WAL with `synchronous=NORMAL`: a process killed
    midway loses nothing committed); `finish` commits the rest with a sync that makes every
    word written durable, before the DuckDB file that points at them is made live.

    With `threaded` (when workers summarise the pieces), the words go in on a thread of their
    own, a couple of batches behind, while this process receives and writes the next pieces'
    rows: SQLite tokenises and merges without holding the GIL, so the writer's serial part is
    the larger of the two, not their sum. Its CPU and wall seconds are `cpu` and `wall`."""

    def __init__(self, db: sqlite3.Connection, threaded: bool = False, expected: int = 0):
        self.db = db
        self.pending = 0
        self.left = expected
        """Traces whose words are still to come, as far as known (0: not known)."""
        self.cpu = self.wall = 0.0
        self.error: BaseException | None = None
        PoolIndex._set_dirty(db)
        for option, value in (("hashsize", WORDS_HASH), ("automerge", WORDS_MERGE)):
            db.execute("INSERT INTO words(words, rank) VALUES (?, ?)", [option, value])
        db.commit()
        db.execute("PRAGMA synchronous=NORMAL")
        self.queue: queue.Queue | None = queue.Queue(maxsize=2) if threaded else None
        self.thread: threading.Thread | None = None

    def add(self, docs: range, texts: list[str] | list[bytes], packed: list[bytes]) -> None:
        if not docs:
            return
        if self.queue is None:
            self._insert(docs, texts, packed)
            return
        if self.error is not None:
            raise self.error
        if self.thread is None:  # with the first words: the workers are forked by then, from
            # a process of one thread (`_process_summaries`)
            self.thread = threading.Thread(target=self._run, name="orchviz-words", daemon=True)
            self.thread.start()
        self.queue.put((docs, texts, packed))

    def _insert(self, docs: range, texts: list[str] | list[bytes], packed: list[bytes]
                ) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        self.db.executemany("INSERT INTO words(rowid, body) VALUES (?, ?)", zip(docs, texts))
        self.db.executemany("INSERT INTO texts(doc, body) VALUES (?, ?)", zip(docs, packed))
        self.pending += len(docs)
        tail = self.left > WORDS_TAIL >= self.left - len(docs) > 0  # the last words come next
        self.left -= len(docs)
        if self.pending >= WORDS_COMMIT or tail:
            self.db.commit()
            self.pending = 0
        self.wall += time.perf_counter() - started
        self.cpu += time.thread_time() - cpu

    def _run(self) -> None:
        while (item := self.queue.get()) is not None:
            if self.error is None:  # after a failure, the rest is only drained
                try:
                    self._insert(*item) if item != "finish" else self._commit()
                except BaseException as err:  # raised where the words are handed over
                    self.error = err

    def close(self) -> None:
        """Let the thread write what it holds and end (the update's end, or its failure)."""
        if self.thread is not None and self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def finish(self) -> None:
        """Commit every word, durably: on the words' thread, if there is one, which this call
        does not wait for (`wait` does), so that the writer meanwhile checkpoints its DuckDB
        file; the last words and the checkpoint are the update's tail, when the workers are
        done and a core would otherwise idle."""
        if self.thread is None or self.error is not None:
            self.close()
            self.wait()
            self._commit()
        else:
            self.queue.put("finish")

    def wait(self) -> None:
        """Until every word handed over is committed; a failure on the thread is raised here."""
        self.close()
        if self.error is not None:
            raise self.error

    def _commit(self) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        self.db.commit()
        self.db.execute("PRAGMA synchronous=FULL")
        PoolIndex._set_dirty(self.db)  # a commit with FULL syncs the WAL: every word before it
        self.db.commit()
        self.wall += time.perf_counter() - started
        self.cpu += time.thread_time() - cpu


def _parallelism(workers: int | None, ray: str | None) -> int:
    """How many workers share the pieces: `workers` (default: every core), or on Ray the CPUs
    of the cluster (known once it is joined; pieces are made for at least 2)."""
    if ray is not None:
        try:
            import ray as ray_module

            if ray_module.is_initialized():
                return max(2, int(ray_module.cluster_resources().get("CPU", 2)))
        except ImportError:
            pass
        return max(2, os.cpu_count() or 1)
    return max(1, workers or os.cpu_count() or 1)


def _waited(batches: Iterator[Batch], costs: dict[str, float]) -> Iterator[Batch]:
    """The batches, with the time this process waited for each counted."""
    while True:
        started, received = time.perf_counter(), costs["receive"]
        batch = next(batches, None)
        costs["wait"] += time.perf_counter() - started - (costs["receive"] - received)
        if batch is None:
            return
        yield batch


class PoolIndex:
    """The index of one pool: a DuckDB file (summary rows) and a SQLite FTS5 file (words).

    Any number of processes read it while one updates it. The DuckDB file is never written in
    place: an update (serialised by an exclusive `flock` on `<index>.lock`) writes a copy beside
    it and `os.replace`s the live file with it, and readers, which open the live file read-only,
    notice the new file (its inode, by `os.stat` before each query) and open it, an open
    connection reading the old version meanwhile. The word index (in WAL mode: reading and
    writing never wait for each other) takes new words under new doc numbers (never reused)
    before the swap, and forgets the words of replaced rows after it, so a reader's search joins
    only docs its DuckDB version holds; while its words are not exact (the `dirty` flag of its
    `state` table) searches are counted through DuckDB, not by the word index alone."""

    def __init__(self, path: str | os.PathLike, location: str = ""):
        self.path = Path(path)
        self.text_path = self.path.with_suffix(".fts.sqlite")
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.location = location
        self._database: duckdb.DuckDBPyConnection | None = None
        self._opened: tuple | None = None  # (inode, mtime, size) of the file _database reads
        self._hit_cache: dict[str, list] = {}
        self.last_update: PoolUpdate | None = None
        """What the last update by this object did (None before one)."""
        self.updated_at = 0.0
        """When this object last finished an update (time.time())."""
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self._usable():
            with self._writing(wait=True):
                if not self._usable():  # not made meanwhile by another
                    self._create()
        with self._text() as db:
            self._text_tables(db)

    def _usable(self) -> bool:
        """Whether both files can serve: the DuckDB file in the current layout, and beside it
        a word index SQLite can read (missing only while the DuckDB file holds no rows). Both
        are caches: an index that is not usable is made afresh, and the next update reads
        every shard again."""
        if self._live_version() != INDEX_VERSION:
            return False
        if not self.text_path.exists():
            with self._duck() as con:
                return con.execute("SELECT count(*) FROM traces").fetchall()[0][0] == 0
        try:
            with self._text() as db:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
                if db.execute("SELECT count(*) FROM sqlite_master WHERE name = 'words'"
                              ).fetchone()[0] == 0:
                    return False
        except StoreError:
            return False
        return True

    def _live_version(self) -> str | None:
        """The layout version of the live DuckDB file; None when it is missing or unreadable
        (the index is a cache: it is made again)."""
        if not self.path.exists():
            return None
        try:
            with self._duck() as con:
                return self._meta(con, "version", missing_ok=True)
        except (StoreError, duckdb.Error):
            return None

    def _create(self) -> None:
        """Make both files afresh in the current layout (the caller holds the writer lock):
        the word index is emptied, then an empty DuckDB file takes the live one's place."""
        self._sweep()
        try:
            with self._text() as db:
                db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except StoreError:  # not a database SQLite reads: start a new file
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{self.text_path}{suffix}").unlink(missing_ok=True)
        with self._text() as db:
            for table in ("words", "texts", "state"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
            self._text_tables(db)
        with self._new_version(fresh=True):
            pass

    @staticmethod
    def _text_tables(db: sqlite3.Connection) -> None:
        if db.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            db.commit()
            db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS words USING fts5(body, content='', "
                   "tokenize='unicode61 remove_diacritics 2')")
        db.execute("CREATE TABLE IF NOT EXISTS texts (doc INTEGER PRIMARY KEY, "
                   "body BLOB NOT NULL)")
        db.execute("CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT)")

    # -- connections ------------------------------------------------------------------------------

    def _stat(self) -> tuple | None:
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_ino, found.st_mtime_ns, found.st_size

    def _open(self) -> duckdb.DuckDBPyConnection:
        """The live file attached read-only to a database of its own (`duckdb.connect(path)`
        would hand back this process's open instance of the file it replaced)."""
        con = duckdb.connect(":memory:")
        try:
            con.execute("ATTACH '{}' AS idx (READ_ONLY)".format(str(self.path).replace("'", "''")))
        except duckdb.Error as err:
            con.close()
            first = (str(err).strip() or type(err).__name__).splitlines()[0][:200]
            raise StoreError(f"the pool index {self.path} cannot be read ({first}); delete it "
                             "and run `orchviz pool index` again") from None
        return con

    @contextmanager
    def _duck(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only cursor of the live index (a cursor per operation: threads of the app each
        get their own). When an update replaced the file since the last operation, the new one
        is opened; cursors of the old one read it to their end."""
        with self._lock:
            stamp = self._stat()
            if self._database is None or (stamp is not None and stamp != self._opened):
                if stamp is None:
                    raise StoreError(f"the pool index {self.path} is missing; run `orchviz pool "
                                     "index` to make it")
                self._database, self._opened = self._open(), stamp
                self._hit_cache.clear()
            cursor = self._database.cursor()
        try:
            cursor.execute("USE idx")
            yield cursor
        finally:
            cursor.close()

    def close(self) -> None:
        """Close the index's files (the next query opens them again)."""
        with self._lock:
            if self._database is not None:
                self._database.close()
                self._database, self._opened = None, None

    @contextmanager
    def _text(self, shared: bool = False) -> Iterator[sqlite3.Connection]:
        """A connection to the word index, in a transaction; its failures are StoreErrors
        saying what failed in one sentence. `shared`: another thread may use it (one at a
        time: the update's words thread)."""
        try:
            db = sqlite3.connect(self.text_path, timeout=30, check_same_thread=not shared)
            try:
                with db:
                    yield db
            finally:
                db.close()
        except sqlite3.Error as err:
            reason = " ".join(str(err).split())[:200] or type(err).__name__
            if "full" in reason or _disk_full(self.text_path.parent):
                raise StoreError(f"the disk that holds the pool's word index {self.text_path} "
                                 "is full, so the index was left as it was") from None
            if "I/O" in reason:
                raise StoreError(f"the disk that holds the pool's word index {self.text_path} "
                                 f"failed to read or write ({reason}), so the index was left "
                                 "as it was") from None
            raise StoreError(f"the pool's word index {self.text_path} cannot be used "
                             f"({reason}); `orchviz pool index --rebuild` makes it again"
                             ) from None

    @contextmanager
    def _writing(self, wait: bool = True) -> Iterator[None]:
        """Hold the index's writer lock (an exclusive flock of `<index>.lock`: one update at a
        time, across processes and within one); IndexBusy when it is held and not `wait`."""
        try:
            fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as err:
            raise StoreError(f"the pool index {self.path} cannot be updated: its lock file "
                             f"{self.lock_path} cannot be opened ({err.strerror})") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not wait:
                        raise IndexBusy(f"the pool index {self.path} is being updated by "
                                        "another process or the app; its new rows show when "
                                        "that update finishes") from None
                    time.sleep(0.2)
            _HELD_LOCKS.add(fd)
            try:
                yield
            finally:
                _HELD_LOCKS.discard(fd)
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _temp_path(self) -> Path:
        return self.path.with_name(f"{self.path.name}.{os.getpid()}-{os.urandom(4).hex()}.tmp")

    def _sweep(self) -> None:
        """Delete the copies an update that died left (the caller holds the writer lock, so no
        update is writing one)."""
        for left in self.path.parent.glob(f"{self.path.name}.*.tmp*"):
            left.unlink(missing_ok=True)

    @staticmethod
    def _discard(temp: Path) -> None:
        temp.unlink(missing_ok=True)
        temp.with_name(temp.name + ".wal").unlink(missing_ok=True)

    @contextmanager
    def _new_version(self, fresh: bool, ready: Sequence[Callable[[], None]] = ()
                     ) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the next version of the DuckDB file (the caller holds the writer
        lock): a copy of the live file, or with `fresh` an empty one in the current layout.
        When the body ends, the copy is checkpointed and closed, each of `ready` (which the
        body may add to) is called, and it is made the live file; when any of that fails, the
        copy is deleted and the live file stays as it was."""
        temp = self._temp_path()
        try:
            if not fresh:
                shutil.copyfile(self.path, temp)
            con = duckdb.connect(str(temp))
            try:
                if fresh:
                    for statement in _SCHEMA:
                        con.execute(statement)
                    self._set_meta(con, "version", INDEX_VERSION)
                if self.location:
                    self._set_meta(con, "location", self.location)
                # one transaction for the whole version: DuckDB would otherwise commit (and
                # sync its WAL) at every statement, several for each piece written; the file
                # is this update's own copy until it is published
                con.execute("BEGIN TRANSACTION")
                yield con
                con.execute("COMMIT")
                con.execute("CHECKPOINT")
            finally:
                con.close()
            for wait in ready:  # the words the file points at are durable before it is live
                wait()
            self._publish(temp)
        except (OSError, duckdb.Error) as err:  # a full disk, a read-only folder
            raise self._write_failure(err) from None
        finally:
            self._discard(temp)

    def _write_failure(self, err: BaseException) -> StoreError:
        """The sentence for a write of the index that failed (a full disk, a read-only
        folder): the index was left as it was."""
        if _disk_full(self.path.parent):
            return StoreError(f"the disk that holds the pool index {self.path} is full, so the "
                              "index was left as it was")
        reason = getattr(err, "strerror", None) or \
            (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        if getattr(err, "filename", None):
            reason = f"{err.filename}: {reason}"
        return StoreError(f"the pool index {self.path} could not be updated ({reason}); it was "
                          "left as it was")

    def _publish(self, temp: Path) -> None:
        """Make a written, closed copy the live file: synced, then renamed over it at once."""
        if temp.with_name(temp.name + ".wal").exists():
            raise StoreError(f"the pool index {temp} was not checkpointed; the live index "
                             "was kept")
        fd = os.open(temp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    @staticmethod
    def _meta(con: duckdb.DuckDBPyConnection, key: str, missing_ok: bool = False) -> str | None:
        try:
            found = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
        except duckdb.CatalogException:
            if missing_ok:  # a new file: no tables yet
                return None
            raise
        return found[0][0] if found else None

    @staticmethod
    def _set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
        con.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", [key, value])

    # -- indexing ---------------------------------------------------------------------------------

    def update(self, shards: Sequence[Shard], *, rubric: Rubric | None = None,
               workers: int | None = None, ray: str | None = None,
               progress: Progress | None = None, rebuild: bool = False,
               wait: bool = True) -> PoolUpdate:
        """Bring the index up to date with a pool's shards: new and changed shards (by
        `shard_stamp`, and any indexed under another rubric) are summarised by
        `summarise_shard`, on `workers` processes (default: every core; 1 reads here) or on Ray
        (`ray`: "auto" joins the cluster this machine knows of or starts one, else a cluster
        address); rows of shards gone from the pool are dropped. `rebuild` reads every shard.

        One update runs at a time: another waits for it (`wait`), or raises IndexBusy at once.
        Readers of the index (this object, other objects and processes) go on reading it as it
        was until the update replaces it whole; an update that fails or is killed leaves it as
        it was."""
        started = time.perf_counter()
        with self._writing(wait):
            self._sweep()
            self._hit_cache.clear()
            try:
                result = self._update(shards, rubric, workers, ray, progress, rebuild)
            except (OSError, duckdb.Error) as err:  # a full disk, a read-only folder
                raise self._write_failure(err) from None
        self._hit_cache.clear()
        result.seconds = time.perf_counter() - started
        self.last_update, self.updated_at = result, time.time()
        return result

    def _update(self, shards: Sequence[Shard], rubric: Rubric | None, workers: int | None,
                ray: str | None, progress: Progress | None, rebuild: bool) -> PoolUpdate:
        """`update`'s work, under the writer lock: the new version of the DuckDB file is
        written beside the live one (a copy of it, or an empty file for a whole update), the
        new words go into the word index under new doc numbers, the file replaces the live
        one, and then the words of the rows it no longer holds are forgotten."""
        rubric_sha = rubric.sha256 if rubric is not None else ""
        stamps = {s.url: shard_stamp(s) for s in shards}
        self._recover()
        with self._duck() as con:
            known = {url: (stamp, sha) for url, stamp, sha in
                     con.execute("SELECT url, stamp, rubric_sha FROM shards").fetchall()}
            stale = int(self._meta(con, "stale_words") or 0)
            next_doc = int(self._meta(con, "next_doc") or 0)
        present = set(stamps)
        gone = [url for url in known if url not in present]
        todo = [s for s in shards if rebuild or not stamps[s.url]
                or known.get(s.url) != (stamps[s.url], rubric_sha)]
        result = PoolUpdate(shards=len(shards), read=len(todo), removed=len(gone),
                            skipped=len(shards) - len(todo))
        if not todo and not gone:  # nothing changed: the live file stays
            with self._duck() as con:
                result.traces = con.execute("SELECT count(*) FROM traces").fetchall()[0][0]
                result.failures = con.execute("SELECT count(*) FROM failures").fetchall()[0][0]
            return result
        whole = rebuild or (set(known) <= {s.url for s in todo})
        # (words kept without their text, by an index written before texts were, stay: only
        # emptying the word index would drop them, and readers still search it; they are
        # counted as stale and the word index is then not taken as exact)
        with self._text() as db:  # doc numbers are never reused: a reader may hold old rows
            self._set_dirty(db)  # from here to the end, the words and a reader's rows may differ
            top = db.execute("SELECT max(doc) FROM texts").fetchone()[0]
        next_doc = max(next_doc, -1 if top is None else top + 1)
        ready: list[Callable[[], None]] = []  # the words committed, before the swap
        with ExitStack() as held, self._new_version(fresh=whole, ready=ready) as con:
            if whole:
                with self._duck() as live:
                    forget = [r[0] for r in live.execute("SELECT doc FROM traces").fetchall()]
            else:
                forget = self._drop(con, gone)
            result.engine = "inline"
            costs = dict.fromkeys(("summarise_cpu", "pack_cpu", "receive", "wait",
                                   "write_rows", "write_words", "wait_words", "words_cpu",
                                   "writer_cpu"), 0.0)
            if todo:
                if ray is not None:
                    _ray_init(ray)
                parallel = _parallelism(workers, ray)
                pieces = plan(todo, parallel)
                result.pieces = len(pieces)
                if ray is not None:
                    result.engine, batches = "ray", _ray_summaries(pieces, rubric, ray, costs)
                elif parallel > 1 and len(pieces) > 1:
                    result.engine = "processes"
                    batches = _process_summaries(pieces, rubric, parallel, costs)
                else:
                    batches = (summarise_piece(p, rubric) for p in pieces)
                total = sum(p.rows for p in pieces)
                if progress is not None:
                    progress(0, total, "")
                done, counts = 0, [0, 0]
                # the word index stays open until the file is live: its last commit (on the
                # words' thread) runs beside the DuckDB checkpoint, and is waited for before
                # the swap (`ready`)
                words = held.enter_context(self._words(result.engine != "inline", total))
                for batch in _waited(batches, costs):
                    piece = batch.piece
                    costs["summarise_cpu"] += batch.summarise_cpu
                    costs["pack_cpu"] += batch.pack_cpu
                    if piece.first:
                        counts = [0, 0]
                    counts[0] += batch.table.num_rows
                    counts[1] += len(batch.failures)
                    forget += self._write(con, batch, stamps[piece.shard.url], rubric_sha,
                                          next_doc, words, counts, costs)
                    next_doc += batch.table.num_rows
                    read = piece.rows or batch.table.num_rows + len(batch.failures)
                    done, total = done + read, total + (0 if piece.rows else read)
                    if progress is not None:
                        progress(done, total, piece.shard.url)
                words.finish()
                ready.append(words.wait)
            result.costs = costs
            self._set_meta(con, "next_doc", str(next_doc))
            self._set_meta(con, "stale_words",
                           str(stale + len(forget) - self._kept_texts(forget)))
            result.traces = con.execute("SELECT count(*) FROM traces").fetchall()[0][0]
            result.failures = con.execute("SELECT count(*) FROM failures").fetchall()[0][0]
            published = time.perf_counter()
        result.costs["publish"] = time.perf_counter() - published
        if todo:
            costs["write_words"], costs["words_cpu"] = words.wall, words.cpu
            costs["writer_cpu"] += words.cpu
        started = time.perf_counter()
        self._forget_words(forget, clean=True)
        result.costs["forget"] = time.perf_counter() - started
        return result

    def _drop(self, con: duckdb.DuckDBPyConnection, urls: Sequence[str]) -> list[int]:
        """Forget shards in the file being written: their rows go. Returns their docs, whose
        words `_forget_words` deletes once the file is live (until then readers of the live
        file still find them)."""
        docs: list[int] = []
        for url in urls:
            docs += [r[0] for r in con.execute("SELECT doc FROM traces WHERE shard = ?",
                                               [url]).fetchall()]
            for table, column in (("traces", "shard"), ("failures", "shard"), ("shards", "url")):
                con.execute(f"DELETE FROM {table} WHERE {column} = ?", [url])
        return docs

    @staticmethod
    def _set_dirty(db: sqlite3.Connection) -> None:
        """Say that the word index may hold docs the live DuckDB file does not (an update is
        writing, or died writing): searches are then counted through DuckDB."""
        db.execute("INSERT OR REPLACE INTO state VALUES ('dirty', '1')")

    def _words_dirty(self) -> bool:
        with self._text() as db:
            try:
                found = db.execute("SELECT value FROM state WHERE key = 'dirty'").fetchone()
            except sqlite3.OperationalError:  # a word index made before the flag
                return False
        return found is not None and found[0] == "1"

    def _recover(self) -> None:
        """After an update that died (the word index left dirty; the caller holds the writer
        lock): forget the words of docs the live DuckDB file does not hold."""
        import numpy as np

        if not self._words_dirty():
            return
        with self._text() as db:
            kept = np.fromiter((r[0] for r in db.execute("SELECT doc FROM texts")), np.int64)
        with self._duck() as con:
            con.register("kept", pa.table({"doc": kept}))
            orphans = [r[0] for r in con.execute(
                "SELECT k.doc FROM kept k ANTI JOIN traces t ON t.doc = k.doc").fetchall()]
            con.unregister("kept")
        self._forget_words(orphans, clean=True)

    def _kept_texts(self, docs: Sequence[int]) -> int:
        """How many of these docs have their text kept (so their words can be forgotten)."""
        found = 0
        with self._text() as db:
            for start in range(0, len(docs), 500):
                chunk = list(docs[start:start + 500])
                found += db.execute(
                    f"SELECT count(*) FROM texts WHERE doc IN ({', '.join('?' * len(chunk))})",
                    chunk).fetchone()[0]
        return found

    def _forget_words(self, docs: Sequence[int], clean: bool = False) -> int:
        """Delete the words of these docs from the word index: a contentless FTS5 table (SQLite
        before 3.43 has no `contentless_delete`) forgets a doc only when given the text it was
        added with, kept compressed in `texts` (`pack_words`). With `clean`, the word index is
        then said to hold no doc the live file does not. Returns how many docs had no text kept."""
        missing = 0
        for start in range(0, len(docs), _FORGET_BATCH):
            with self._text() as db:
                for doc in docs[start:start + _FORGET_BATCH]:
                    kept = db.execute("SELECT body FROM texts WHERE doc = ?", [doc]).fetchone()
                    if kept is None:
                        missing += 1
                        continue
                    db.execute("INSERT INTO words(words, rowid, body) VALUES ('delete', ?, ?)",
                               [doc, unpack_words(kept[0])])
                db.executemany("DELETE FROM texts WHERE doc = ?",
                               [[d] for d in docs[start:start + _FORGET_BATCH]])
        if clean:
            with self._text() as db:
                db.execute("DELETE FROM state WHERE key = 'dirty'")
        return missing

    def _write(self, con: duckdb.DuckDBPyConnection, batch: Batch, stamp: str,
               rubric_sha: str, first: int, words: _WordWriter, counts: list[int],
               costs: dict[str, float]) -> list[int]:
        """Write a piece's rows into the file being written (`con`), numbered from `first`,
        and their words into the word index (marked dirty: the live file lacks them). Its
        shard's old rows go with its first piece, and its row in `shards` (with `counts`,
        its traces and failures) comes with its last. Returns the docs of the rows it
        replaced."""
        started, cpu = time.perf_counter(), time.thread_time()
        piece = batch.piece
        shard = piece.shard
        dropped = self._drop(con, [shard.url]) if piece.first else []
        count = batch.table.num_rows
        if count:
            table = batch.table.add_column(0, "doc", pa.array(range(first, first + count),
                                                                pa.int64()))
            con.register("batch", table)
            con.execute(f"INSERT INTO traces SELECT {', '.join(_TRACE_TYPES.names)} FROM batch")
            con.unregister("batch")
        if batch.failures:
            con.executemany("INSERT INTO failures VALUES (?, ?, ?)",
                            [[f["shard"], f["row"], f["error"]] for f in batch.failures])
        if piece.last:
            con.execute("INSERT INTO shards VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [shard.url, shard.format, bool(shard.compressed), stamp, rubric_sha,
                         counts[0], counts[1], time.time()])
        names = set(json.loads(self._meta(con, "reward_names") or "[]"))
        if set(batch.rewards) - names:
            self._set_meta(con, "reward_names", json.dumps(sorted(names | set(batch.rewards))))
        costs["write_rows"] += time.perf_counter() - started
        costs["writer_cpu"] += time.thread_time() - cpu
        handed = time.perf_counter()
        words.add(range(first, first + count), batch.texts, batch.packed)  # its own costs
        if words.queue is not None:  # waiting for the words' thread to take them
            costs["wait_words"] += time.perf_counter() - handed
        return dropped

    @contextmanager
    def _words(self, threaded: bool = False, expected: int = 0) -> Iterator[_WordWriter]:
        """The word index, taking an update's words (see `_WordWriter`); its thread, if any,
        is done before the word index is closed, whether the update ends or fails."""
        with self._text(shared=threaded) as db:
            words = _WordWriter(db, threaded, expected)
            try:
                yield words
            finally:
                words.close()

    # -- queries ----------------------------------------------------------------------------------

    def _words_exact(self) -> bool:
        """Whether every doc of the word index has its row (no shard was dropped since the
        last whole update), so the word index alone can count and page a search."""
        with self._duck() as con:
            if int(self._meta(con, "stale_words") or 0) != 0:
                return False
        return not self._words_dirty()  # an update's words not yet (or no longer) in DuckDB

    def _word_count(self, search: str) -> int:
        """How many docs of the word index a search matches (counted inside SQLite)."""
        key = "#" + (search_query(search) or "")
        if key not in self._hit_cache:
            with self._text() as db:
                self._hit_cache[key] = [db.execute(
                    "SELECT count(*) FROM words WHERE words MATCH ?",
                    [search_query(search)]).fetchall()[0][0], None]
        return self._hit_cache[key][0]

    def _hits(self, search: str, ranked: bool = False) -> pa.Table | None:
        """The docs of the traces matching a search; None when there is nothing to search.
        With `ranked`, and no more than RANKED_HITS of them, with their bm25 `rank` too (a word
        that most traces hold is not worth ranking them all by). The last few searches are
        kept until the index changes: a page and its count search once."""
        import numpy as np

        query = search_query(search)
        if query is None:
            return None
        found = self._hit_cache.get(query)
        if found is None:
            with self._text() as db:
                try:
                    docs = np.fromiter((r[0] for r in db.execute(
                        "SELECT rowid FROM words WHERE words MATCH ?", [query])), np.int64)
                except sqlite3.OperationalError as err:
                    raise FilterError(f"cannot search for {search!r} ({err})") from None
            found = [pa.table({"doc": docs}), None]
            while len(self._hit_cache) >= 8:
                self._hit_cache.pop(next(iter(self._hit_cache)))
            self._hit_cache[query] = found
        if not ranked or found[0].num_rows > RANKED_HITS:
            return found[0]
        if found[1] is None:
            with self._text() as db:
                rows = db.execute("SELECT rowid, rank FROM words WHERE words MATCH ?",
                                  [query]).fetchall()
            docs, ranks = zip(*rows) if rows else ((), ())
            found[1] = pa.table({"doc": pa.array(docs, pa.int64()),
                                 "rank": pa.array(ranks, pa.float64())})
        return found[1]

    @contextmanager
    def _selection(self, filters: Sequence[Condition], search: str, ranked: bool = False
                   ) -> Iterator[tuple[duckdb.DuckDBPyConnection, str, list]]:
        """A connection, the FROM ... WHERE ... of the traces a filter and search select, and
        its parameters (callers put theirs before or after, in the order of the SQL text)."""
        hits = self._hits(search, ranked)
        params: list = []
        where = _where(filters, params)
        with self._duck() as con:
            if hits is None:
                yield con, f"FROM traces t WHERE {where}", params
            else:
                con.register("hits", hits)
                yield con, f"FROM traces t JOIN hits h ON h.doc = t.doc WHERE {where}", params

    def page(self, filters: Sequence[Condition] = (), search: str = "", sort: str | None = None,
             descending: bool = False, offset: int = 0, limit: int = PAGE_SIZE) -> list[PoolRow]:
        """One page of the traces a filter and search select, sorted by a field (default: by
        relevance when searching, else index order)."""
        if sort is None and not filters and search_query(search) is not None and \
                self._words_exact() and self._word_count(search) > RANKED_HITS:
            return self._word_page(search, offset, limit)  # a common word: no need to join all
        order_params: list = []
        hits = self._hits(search, ranked=sort is None)
        ranked = sort is None and hits is not None and "rank" in hits.column_names
        if sort is not None:
            order = f"{_field_sql(sort, order_params)} {'DESC' if descending else 'ASC'} NULLS LAST"
        else:
            order = "h.rank" if ranked else "t.doc"
        with self._selection(filters, search, ranked) as (con, selection, params):
            columns = ", ".join(f"t.{c}" for c in _ROW_COLUMNS)
            found = con.execute(f"SELECT {columns} {selection} ORDER BY {order}, t.doc "
                                "LIMIT ? OFFSET ?", [*params, *order_params, max(0, int(limit)),
                                                     max(0, int(offset))]).fetchall()
        return [_pool_row(dict(zip(_ROW_COLUMNS, r))) for r in found]

    def _word_page(self, search: str, offset: int, limit: int) -> list[PoolRow]:
        """A page of a search in index order, read from the word index in doc order (FTS5
        gives matches by rowid, so it stops after the page)."""
        with self._text() as db:
            docs = [r[0] for r in db.execute(
                "SELECT rowid FROM words WHERE words MATCH ? ORDER BY rowid LIMIT ? OFFSET ?",
                [search_query(search), max(0, int(limit)), max(0, int(offset))])]
        with self._duck() as con:
            con.register("picked", pa.table({"doc": pa.array(docs, pa.int64())}))
            columns = ", ".join(f"t.{c}" for c in _ROW_COLUMNS)
            found = con.execute(f"SELECT {columns} FROM traces t JOIN picked p ON p.doc = t.doc "
                                "ORDER BY t.doc").fetchall()
        return [_pool_row(dict(zip(_ROW_COLUMNS, r))) for r in found]

    def count(self, filters: Sequence[Condition] = (), search: str = "") -> int:
        """How many traces a filter and search select."""
        if search_query(search) is not None and not filters and self._words_exact():
            return self._word_count(search)
        with self._selection(filters, search) as (con, selection, params):
            return con.execute(f"SELECT count(*) {selection}", params).fetchall()[0][0]

    def histogram(self, field: str, filters: Sequence[Condition] = (), search: str = "",
                  bins: int = 20) -> list[Bin]:
        """Bars of a numeric field over the traces selected (equal widths, `bins` at most;
        one per whole number when the field's values are whole and fewer)."""
        if _kind(field) != "number":
            raise FilterError(f"a histogram needs a numeric field, not {field}")
        field_params: list = []
        expr = _field_sql(field, field_params)
        bins = max(1, int(bins))
        with self._selection(filters, search) as (con, selection, params):
            values = (f"(SELECT {expr} AS x {selection}) WHERE x IS NOT NULL "
                      "AND isfinite(x)")
            low, high, whole = con.execute(
                f"SELECT min(x), max(x), bool_and(x = floor(x)) FROM {values}",
                [*field_params, *params]).fetchall()[0]
            if low is None:
                return []
            if whole and high - low + 1 <= bins:
                width, bins = 1.0, int(high - low + 1)
            else:
                width = (high - low) / bins or 1.0
            counts = dict(con.execute(
                f"SELECT least(CAST(floor((x - ?) / ?) AS BIGINT), ?) AS b, count(*) "
                f"FROM {values} GROUP BY b",
                [low, width, bins - 1, *field_params, *params]).fetchall())
        return [Bin(low=low + i * width, high=low + (i + 1) * width, count=counts.get(i, 0))
                for i in range(bins)]

    def values(self, field: str, filters: Sequence[Condition] = (), search: str = "",
               limit: int = 100) -> list[tuple[str, int]]:
        """The commonest values of a text field among the traces selected, with counts."""
        if _kind(field) != "text":
            raise FilterError(f"values() needs a text field, not {field}")
        field_params: list = []
        expr = _field_sql(field, field_params)
        with self._selection(filters, search) as (con, selection, params):
            return [(str(v), int(n)) for v, n in con.execute(
                f"SELECT v, count(*) AS n FROM (SELECT {expr} AS v {selection}) GROUP BY v "
                "ORDER BY n DESC, v LIMIT ?", [*field_params, *params, int(limit)]).fetchall()]

    def sample(self, n: int, seed: int = 0, filters: Sequence[Condition] = (), search: str = "",
               stratify: str | None = None, strata: int = 4) -> list[str]:
        """Trace ids of `n` traces drawn without replacement from those selected, the same for
        the same seed and index. With `stratify`, drawn evenly over its strata (a text field's
        values, or `strata` quantile bins of a numeric field): each stratum gives n / k, a
        small stratum all it has, and what it could not give goes to the others."""
        import numpy as np
        import pandas as pd

        rng = np.random.default_rng(seed)
        key_params: list = []
        if stratify is None:
            key = "0"
        elif _kind(stratify) == "number":
            key = (f"ntile({max(1, int(strata))}) OVER (ORDER BY "
                   f"{_field_sql(stratify, key_params)}, t.doc)")
        else:
            key = _field_sql(stratify, key_params)
        with self._selection(filters, search) as (con, selection, params):
            table = con.sql(f"SELECT t.doc AS doc, {key} AS s {selection} ORDER BY t.doc",
                            params=[*key_params, *params]).to_arrow_table()
            docs = table.column("doc").to_numpy()
            codes, strata_found = pd.factorize(table.column("s").to_pandas(), use_na_sentinel=False)
            order = np.argsort(codes, kind="stable")  # rows grouped by stratum, in doc order
            sizes = np.bincount(codes, minlength=len(strata_found)) if len(codes) else \
                np.zeros(0, np.int64)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]) if len(sizes) else sizes
            quota = _even_quota({j: int(sizes[j]) for j in range(len(sizes))}, max(0, int(n)))
            chosen: list[int] = []
            for j in sorted(range(len(sizes)), key=lambda j: (strata_found[j] is None,
                                                              str(strata_found[j]))):
                if quota[j]:
                    members = order[starts[j]:starts[j] + sizes[j]]
                    chosen += members[rng.choice(len(members), quota[j], replace=False)].tolist()
            picked = pa.table({"doc": pa.array(docs[chosen] if chosen else [], pa.int64()),
                               "i": pa.array(range(len(chosen)), pa.int64())})
            con.register("picked", picked)
            return [r[0] for r in con.execute(
                "SELECT t.trace_id FROM traces t JOIN picked p ON p.doc = t.doc ORDER BY p.i"
            ).fetchall()]

    def locate(self, trace_id: str) -> tuple[Shard, int] | None:
        """The shard and row of a trace, or None when the index has no such id."""
        with self._duck() as con:
            found = con.execute(
                "SELECT s.url, s.format, s.compressed, t.position FROM traces t "
                "JOIN shards s ON s.url = t.shard WHERE t.trace_id = ? ORDER BY t.doc LIMIT 1",
                [trace_id]).fetchall()
        if not found:
            return None
        url, fmt, compressed, row = found[0]
        return Shard(url=url, format=fmt, compressed=bool(compressed)), int(row)

    def trace(self, trace_id: str) -> Trace:
        """A trace of the pool by id, reading only its row group; TraceError when the index
        has no such id or its shard cannot be read."""
        found = self.locate(trace_id)
        if found is None:
            raise TraceError(self.location or str(self.path), "",
                             f"no trace with id {trace_id!r} in the pool's index")
        return read_trace(*found)

    def failures(self, limit: int = 100) -> list[PoolFailure]:
        """The shards and rows that failed, first ones first."""
        with self._duck() as con:
            return [PoolFailure(shard=s, row=r, error=e) for s, r, e in con.execute(
                "SELECT shard, position, error FROM failures ORDER BY shard, position LIMIT ?",
                [int(limit)]).fetchall()]

    def failure_count(self) -> int:
        """How many failures the index holds."""
        with self._duck() as con:
            return con.execute("SELECT count(*) FROM failures").fetchall()[0][0]

    def reward_names(self) -> list[str]:
        """The reward channels the traces carry (kept as shards are indexed: a channel of a
        shard gone since may stay listed until the next whole update)."""
        with self._duck() as con:
            return json.loads(self._meta(con, "reward_names") or "[]")


def _even_quota(sizes: dict[Any, int], n: int) -> dict[Any, int]:
    """n split as evenly as the sizes allow (water filling): no stratum gives more than it has."""
    quota = {k: 0 for k in sizes}
    left = min(n, sum(sizes.values()))
    open_ = sorted(sizes, key=lambda k: (sizes[k], str(k)))
    while left > 0 and open_:
        share = max(1, left // len(open_))
        for k in list(open_):
            take = min(share, sizes[k] - quota[k], left)
            quota[k] += take
            left -= take
            if quota[k] >= sizes[k]:
                open_.remove(k)
            if left == 0:
                break
    return quota


def _pool_row(record: dict) -> PoolRow:
    rewards = record["rewards"] or {}
    if isinstance(rewards, dict) and set(rewards) == {"key", "value"} and isinstance(
            rewards["key"], list):
        rewards = dict(zip(rewards["key"], rewards["value"]))
    return PoolRow(
        trace_id=record["trace_id"], shard=record["shard"], row=record["position"],
        task_id=record["task_id"], system=record["system"], topology=record["topology"],
        source_format=record["source_format"], events=record["events"],
        agents=record["agents"], depth=record["depth"], makespan_s=record["makespan_s"],
        parallelism=record["parallelism"], tokens=record["tokens"],
        cost_usd=record["cost_usd"], rewards={str(k): float(v) for k, v in rewards.items()},
        targets=json.loads(record["targets"]) if record["targets"] else None,
        sha256=record["sha256"], warnings=record["warnings"])


# -- running summarise_piece over many pieces ---------------------------------------------------


def _process_summaries(pieces: Sequence[Piece], rubric: Rubric | None, workers: int,
                       costs: dict[str, float]) -> Iterator[Batch]:
    """summarise_piece over the pieces on a pool of `workers` processes, the batches given in
    the pieces' order (so docs are numbered as when reading inline), with at most three pieces
    a worker sent out and not yet written, so memory stays bounded. Processes are forked from
    a single-threaded program (a command) and spawned from a threaded one (the app's server),
    where a fork may copy a lock another thread holds."""
    method = "fork" if threading.active_count() == 1 and os.name == "posix" else "spawn"
    if method == "fork":
        # pyarrow's first conversion of Python values imports pandas (about 0.14 s of CPU and
        # 50 MB): done here once, every forked worker shares it instead of doing it again
        pa.array([[("warm", 0.0)]], pa.map_(pa.string(), pa.float64()))
    with ProcessPoolExecutor(max_workers=min(workers, len(pieces)),
                             mp_context=get_context(method), initializer=_die_with,
                             initargs=(os.getpid(),)) as pool:
        yield from _in_order(pieces, 3 * workers, lambda piece: pool.submit(
            _summarise_pickled, pickle.dumps((piece, rubric))), _result, costs)


def _result(future) -> tuple[bytes, float]:
    try:
        return future.result()
    except BrokenProcessPool:
        raise OrchvizError("a process indexing the pool stopped before it finished "
                           "(out of memory?); the shards indexed so far are kept: "
                           "index again, or with --workers 1 to see why") from None


def _in_order(pieces: Sequence[Piece], window: int, submit: Callable[[Piece], Any],
              result: Callable[[Any], tuple[bytes, float]], costs: dict[str, float]
              ) -> Iterator[Batch]:
    """Each piece sent out by `submit`, `window` at most ahead of the one being written, and
    its batch (`result` of what submit gave, unpickled) given in the pieces' order."""
    from collections import deque

    sent: deque = deque()
    left = iter(pieces)
    for piece in left:
        sent.append(submit(piece))
        if len(sent) >= window:
            break
    while sent:
        found = result(sent.popleft())
        for piece in left:  # the next piece goes out before this one's batch is written
            sent.append(submit(piece))
            break
        started, cpu = time.perf_counter(), time.thread_time()
        batch = _unpickled(found)
        costs["receive"] += time.perf_counter() - started
        costs["writer_cpu"] += time.thread_time() - cpu
        yield batch


def _die_with(parent: int) -> None:
    """A worker's first act: end when the process that started it ends, however it ends
    (`kill -9` included), by the OS's own means: on Linux the parent-death signal
    (`prctl(PR_SET_PDEATHSIG, SIGKILL)`); elsewhere a thread that watches for the worker being
    handed to another parent. A worker whose parent died before it asked ends at once."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
        except (OSError, AttributeError):
            _watch_parent(parent)
    else:
        _watch_parent(parent)
    if os.getppid() != parent:
        os._exit(1)
    _freeze_heap()


def _freeze_heap() -> None:
    """In a worker, once: what it holds before its first piece (the modules, forked or
    imported) goes out of the collector's sight (`gc.freeze`). Each piece is summarised with
    the collector paused, and its first full collection afterwards would otherwise scan that
    whole heap again (about 15 ms a piece), to find nothing."""
    if not _FROZEN:
        import gc

        gc.freeze()
        _FROZEN.append(True)


_FROZEN: list[bool] = []
_PR_SET_PDEATHSIG = 1
"""prctl's option number for the parent-death signal (linux/prctl.h)."""


def _watch_parent(parent: int) -> None:
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, name="orchviz-parent-watch", daemon=True).start()


def _ray_init(address: str) -> None:
    """Join Ray: `address` "auto" joins the cluster this machine knows of (RAY_ADDRESS, or one
    started by `ray start`) or starts a local one; any other value is a cluster's address. A
    Ray already initialised in this process is used."""
    try:
        import ray
    except ImportError:
        raise OrchvizError("--ray needs Ray: pip install 'orchviz[ray]'") from None
    if not ray.is_initialized():
        from viz_app.store import ray_local

        if address == "auto" and _RAY_WATCHER[0] is None:  # it may start a local Ray, whose
            _RAY_WATCHER[0] = ray_local.watch_local_ray()  # agents must end with this process
        try:
            ray.init(address=None if address == "auto" else address, logging_level="ERROR",
                     log_to_driver=False, include_dashboard=False)
        except Exception as err:  # an address that does not answer
            raise OrchvizError(f"cannot reach the Ray cluster at {address} ({err})") from None
        finally:
            if _RAY_WATCHER[0] is not None and not ray_local.started_a_cluster():
                _RAY_WATCHER[0].terminate()  # a cluster joined, not started: nothing to end
                _RAY_WATCHER[0].wait()
                _RAY_WATCHER[0] = None


_RAY_WATCHER: list = [None]
"""The watcher of a local Ray this process started (`viz_app.store.ray_local`)."""


def _ray_summaries(pieces: Sequence[Piece], rubric: Rubric | None, address: str,
                   costs: dict[str, float]) -> Iterator[Batch]:
    """summarise_piece over the pieces as Ray tasks of one CPU each, at most two pieces a CPU
    of the cluster sent out and not yet written, the batches given in the pieces' order. (Ray
    tasks rather than Ray Data: the order is kept, the memory bounded by the window, and the
    batches travel as they are, not turned into Ray Data's blocks.)"""
    import ray

    _ray_init(address)
    task = ray.remote(num_cpus=1)(_summarise_pickled)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    yield from _in_order(pieces, 2 * cpus, lambda piece: task.remote(
        pickle.dumps((piece, rubric))), _ray_result, costs)


def _ray_result(ref) -> tuple[bytes, float]:
    import ray

    try:
        return ray.get(ref)
    except ray.exceptions.RayError as err:
        first = (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
        raise OrchvizError(f"a Ray task indexing the pool failed ({first}); the shards "
                           "indexed so far are kept: index again, or without --ray to see "
                           "why") from None
