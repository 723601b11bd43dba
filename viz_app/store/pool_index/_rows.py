"""What the pool index keeps of a trace: its summary row (`summarise_trace`, the same
summary the folder index keeps), the rows and failures of a shard, the tables they go in, and
the models the index answers with (`summary.LibraryRow`, `summary.LibraryFailure`, PoolUpdate,
Bin)."""

from __future__ import annotations

import json
import re

import pyarrow as pa
from pydantic import BaseModel, Field

from viz_app.analysis import forget
from viz_app.errors import TraceError
from viz_app.io.pool import Shard, read_shard
from viz_app.labels import Rubric
from viz_app.model import Trace, paused_gc
from viz_app.store.pool_index._words import pack_words
from viz_app.summary import Bin, LibraryRow, summarise  # noqa: F401 - Bin: the bars it answers

POOL_TEXT_LIMIT = 20_000
"""Characters of a trace's text (ids, agents, tools, then event content) kept in the word index."""


# -- what the index keeps of a trace ------------------------------------------------------------


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


_ROW_COLUMNS = ["trace_id", "shard", "position", "task_id", "system", "topology",
                "source_format", "events", "agents", "depth", "makespan_s", "parallelism",
                "tokens", "cost_usd", "rewards", "targets", "sha256", "warnings",
                "rollout_step", "rollout_group", "trainer_reward", "task"]


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
        "sha256": found.sha256, "warnings": found.warnings,
        "rollout_step": found.rollout_step, "rollout_group": found.rollout_group,
        "trainer_reward": found.trainer_reward, "task": found.task, "text": text,
        "packed": pack_words(text),  # in the worker: the writer is one process
    }



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
    "warnings INTEGER, rollout_step INTEGER, rollout_group VARCHAR, trainer_reward DOUBLE, "
    "task VARCHAR)",
    "CREATE TABLE IF NOT EXISTS failures (shard VARCHAR, position INTEGER, error VARCHAR)",
]
_TRACE_TYPES = pa.schema([
    ("doc", pa.int64()), ("trace_id", pa.string()), ("shard", pa.string()),
    ("position", pa.int32()), ("task_id", pa.string()), ("system", pa.string()),
    ("topology", pa.string()), ("source_format", pa.string()), ("events", pa.int32()),
    ("agents", pa.int32()), ("depth", pa.int32()), ("makespan_s", pa.float64()),
    ("parallelism", pa.float64()), ("tokens", pa.float64()), ("cost_usd", pa.float64()),
    ("rewards", pa.map_(pa.string(), pa.float64())), ("targets", pa.string()),
    ("target_count", pa.int32()), ("sha256", pa.string()), ("warnings", pa.int32()),
    ("rollout_step", pa.int32()), ("rollout_group", pa.string()),
    ("trainer_reward", pa.float64()), ("task", pa.string())])
_BATCH_TYPES = _TRACE_TYPES.remove(0)
"""A piece's rows as its Batch holds them: every column but `doc`."""



def pool_row(record: dict, location: str = "") -> LibraryRow:
    """A row of the index as the library's one row type (`summary.LibraryRow`): its `path` the
    shard's URL, its `position` the trace's row there, its `pool` the pool's location."""
    rewards = record["rewards"] or {}
    if isinstance(rewards, dict) and set(rewards) == {"key", "value"} and isinstance(
            rewards["key"], list):
        rewards = dict(zip(rewards["key"], rewards["value"]))
    return LibraryRow(
        trace_id=record["trace_id"], path=record["shard"], position=record["position"],
        task_id=record["task_id"], system=record["system"], topology=record["topology"],
        source_format=record["source_format"], events=record["events"],
        agents=record["agents"], depth=record["depth"], makespan_s=record["makespan_s"],
        parallelism=record["parallelism"], tokens=record["tokens"],
        cost_usd=record["cost_usd"], rewards={str(k): float(v) for k, v in rewards.items()},
        targets=json.loads(record["targets"]) if record["targets"] else None,
        sha256=record["sha256"], warnings=record["warnings"], pool=location,
        rollout_step=record["rollout_step"], rollout_group=record["rollout_group"],
        trainer_reward=record["trainer_reward"], task=record["task"] or "")


# -- running summarise_piece over many pieces ---------------------------------------------------
