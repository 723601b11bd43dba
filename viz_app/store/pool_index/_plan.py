"""The work of an update: the pieces the new and changed shards are read in, the Batch each
gives the writer (`summarise_piece`, pure: the same in this process, a worker or a Ray task),
and the stamp that says a shard changed."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from viz_app.io.pool import Shard, row_groups
from viz_app.labels import Rubric
from viz_app.store.pool_index._rows import _BATCH_TYPES, summarise_shard

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



Progress = Callable[[int, int, str], None]
"""Called as `progress(done, total, shard)` while shards are indexed, `done` and `total` in
traces (rows): the Parquet footers give the total before anything is read; a shard whose rows
are not known beforehand (JSON Lines, a footer that cannot be read) adds its own to both once
it is read."""
