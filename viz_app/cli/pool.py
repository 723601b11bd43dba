"""The `orchviz pool` verbs: pools of traces as Parquet or JSON Lines shards, local or on object
storage. One sub-parser group; each verb is a `register_*` function (adding its parser) and a
function that runs it."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
from tqdm import tqdm

from viz_app.cli.workspace import DB_HELP, add_db_option, add_rubric_option
from viz_app.analysis import figure_text
from viz_app.errors import TraceError
from viz_app.io import pool
from viz_app.io.detect import FORMATS, folder_format, holds_spans, read_any
from viz_app.io.files import trace_files
from viz_app.io.native import dump_trace
from viz_app.io.rollouts import join_stream
from viz_app.model import Trace
from viz_app.text import terminal_text


def register(verbs: argparse._SubParsersAction) -> None:
    """Add the `pool` verb and its own verbs."""
    p = verbs.add_parser(
        "pool", help="pools of many traces: Parquet or JSON Lines shards, local or on S3",
        description="Pools hold many traces as Parquet or JSON Lines shards in a folder or on "
        "object storage (s3://, gs://, az://, hf://; install orchviz[s3] for S3). Give an "
        "S3-compatible endpoint with --storage-option endpoint_url=URL, or with the "
        "environment (AWS_ENDPOINT_URL, FSSPEC_S3_ENDPOINT_URL).")
    pool_verbs = p.add_subparsers(dest="pool_verb", metavar="VERB", required=True)
    for add in POOL_VERBS:
        add(pool_verbs)


def add_storage_option(p: argparse.ArgumentParser) -> None:
    """Add `--storage-option KEY=VALUE` (repeatable): fsspec options for the pool's storage;
    and `--follow-symlinks`."""
    p.add_argument("--follow-symlinks", action="store_true",
                   help="read shards of a local pool that are symbolic links to files outside "
                   "its folder (refused by default)")
    p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                   help="an fsspec option for the pool's storage, such as "
                   "endpoint_url=http://127.0.0.1:9000 or anon=true (repeat for more)")


def apply_storage_options(location: str | list[str], options: list[str],
                          follow_symlinks: bool = False) -> None:
    """Give the storage of the locations named (those on object storage: a folder needs no
    options) the `--storage-option` values; JSON values such as true or 3 are read as such,
    anything else as text. `follow_symlinks`: read local shards that lead outside their pool's
    folder."""
    pool.follow_symlinks(follow_symlinks)
    parsed: dict[str, object] = {}
    for option in options:
        key, sep, value = option.partition("=")
        if not sep or not key:
            raise pool.PoolError(f"--storage-option {option!r}: expected KEY=VALUE")
        try:
            parsed[key] = orjson.loads(value)
        except orjson.JSONDecodeError:
            parsed[key] = value
    locations = [location] if isinstance(location, str) else location
    for where in locations:
        if parsed and "://" in where and not where.startswith("file://"):
            pool.set_storage_options(where, parsed)


# -- pool write --------------------------------------------------------------------------------


def register_write(verbs: argparse._SubParsersAction) -> None:
    """Add `pool write`."""
    p = verbs.add_parser(
        "write", help="write traces from files or folders as a new pool",
        description="Read traces from files or folders in any format orchviz imports and write "
        "them as a new pool: Parquet shards (the schema's top-level fields as columns, events as "
        "JSON text, small row groups so one trace opens alone) or gzipped JSON Lines, with "
        "orchviz-pool.json (the manifest) and _ids.parquet (trace id -> shard and row). A file "
        "that cannot be read is named on one line and the rest are written.")
    p.add_argument("sources", nargs="+", metavar="SRC",
                   help="trace files or folders, or pools (a pool's folder or URL, Parquet "
                   "shards) to copy into the new one")
    p.add_argument("-o", "--output", required=True, metavar="POOL",
                   help="the new pool: a folder or a URL such as s3://bucket/prefix (must be "
                   "empty or missing)")
    p.add_argument("--from", dest="fmt", choices=list(FORMATS), metavar="FORMAT",
                   help="the format of every SRC (default: detect it)")
    p.add_argument("--format", choices=["parquet", "jsonl"], default="parquet",
                   help="shard format (default: parquet, which opens one trace without reading "
                   "the others)")
    p.add_argument("--no-gzip", action="store_true",
                   help="with --format jsonl: plain .jsonl shards instead of .jsonl.gz")
    p.add_argument("--shard-rows", type=int, default=pool.SHARD_ROWS, metavar="N",
                   help=f"traces per shard (default: {pool.SHARD_ROWS})")
    p.add_argument("--row-group-rows", type=int, default=pool.ROW_GROUP_ROWS, metavar="N",
                   help=f"traces per Parquet row group (default: {pool.ROW_GROUP_ROWS})")
    add_storage_option(p)
    p.set_defaults(run=write)


def _source_traces(sources: list[str], fmt: str | None,
                   failed: list[TraceError]) -> Iterator[Trace]:
    """The traces of the sources, a file at a time; a file that cannot be read is said on one
    line and kept in `failed`."""
    items: list[Path | str] = []
    for source in sources:
        path = Path(source)
        session_folder = path.is_dir() and (fmt in ("claude_code", "codex")
                                            or folder_format(path) is not None)
        if fmt is None and pool.is_pool_source(source):
            items.append(source)
        else:
            items.extend([path] if session_folder else trace_files([source]))

    def report(err: TraceError) -> None:
        failed.append(err)
        tqdm.write(terminal_text(err), file=sys.stderr)

    def read() -> Iterator[Trace]:
        for item in items:
            try:
                if isinstance(item, str):
                    yield from pool.read_pool(item, on_error=report)
                else:
                    yield from read_any(item, fmt=fmt, on_error=report)
            except TraceError as err:
                report(err)

    # a rollout and the spans of its id are one trace, as `orchviz import` makes them; the
    # rollouts are held back to be joined only when some source holds spans
    spans = any(isinstance(item, Path) and item.is_file() and holds_spans(item)
                for item in items)
    yield from join_stream(read()) if spans else read()


def write(args: argparse.Namespace) -> int:
    """Write the pool; 1 when a source failed or nothing was written."""
    apply_storage_options([args.output, *args.sources], args.storage_option,
                          args.follow_symlinks)
    failed: list[TraceError] = []
    with tqdm(desc="writing pool", unit="trace", file=sys.stderr, disable=None) as bar:
        result = pool.write_pool(_source_traces(args.sources, args.fmt, failed), args.output,
                                 shard_rows=args.shard_rows, row_group_rows=args.row_group_rows,
                                 format=args.format, compress=not args.no_gzip,
                                 progress=bar.update)
    for line in result.skipped:
        print(terminal_text(line), file=sys.stderr)
    print(terminal_text(args.output))
    print(f"wrote {result.traces} trace{'s' if result.traces != 1 else ''} in "
          f"{len(result.shards)} shard{'s' if len(result.shards) != 1 else ''}"
          + (f", {len(result.skipped)} skipped" if result.skipped else "")
          + (f", {len(failed)} unreadable" if failed else ""), file=sys.stderr)
    return 1 if failed or not result.traces else 0


# -- pool follow -------------------------------------------------------------------------------


def register_follow(verbs: argparse._SubParsersAction) -> None:
    """Add `pool follow`."""
    p = verbs.add_parser(
        "follow", help="follow a run while a trainer writes it, into a pool",
        description="Look at a trainer's rollout folders every few seconds and add what it "
        "wrote since to a pool (made when missing), one new shard a look: new files whole, the "
        "lines appended to a file followed from where they were left (a half-written last "
        "line waited for, never reported as an error), a rewritten, truncated or rotated file "
        "read again (the ids the pool holds are never added twice). Where each file was left "
        "is kept in the pool (_follow.json): started again, it reads only what is new. With "
        "--db the pool's index is brought up to date after each shard, so the app's pool "
        "library lists the new rollouts. A rollout and the spans of its id go in as one trace, "
        "whichever is written first (--join-wait, --span-wait); a run without spans never "
        "waits. Ctrl+C stops it.")
    p.add_argument("sources", nargs="+", metavar="SRC", help="the folders (or files) a trainer "
                   "writes its rollouts to")
    p.add_argument("-o", "--output", required=True, metavar="POOL",
                   help="the pool to add them to (a folder or URL)")
    p.add_argument("--interval", type=float, default=2.0, metavar="SECONDS",
                   help="seconds between two looks (default 2)")
    p.add_argument("--once", action="store_true", help="look once and stop")
    p.add_argument("--join-wait", type=float, default=120.0, metavar="SECONDS",
                   help="how long spans that name a rollout id wait for that rollout's line, "
                   "to be added joined with it (default 120; 0 adds them at once)")
    p.add_argument("--span-wait", type=float, default=10.0, metavar="SECONDS",
                   help="once the run has written spans that name its rollouts, how long a "
                   "rollout line with an id waits for its spans, to be added joined with them "
                   "(default 10: OpenTelemetry's batch span processor exports every 5 s; 0 "
                   "adds rollouts at once). A run without such spans never waits")
    p.add_argument("--format", choices=["parquet", "jsonl"], default="parquet",
                   help="shard format of a pool made now (default: parquet)")
    add_db_option(p, default=None, help="with it, index the pool after each shard (the app's "
                  "store: a SQLAlchemy URL or a SQLite file)")
    add_rubric_option(p, help="with --db: a rubric YAML file (default: the packaged rubric)")
    add_storage_option(p)
    p.set_defaults(run=follow)


def follow(args: argparse.Namespace) -> int:
    """Follow the sources into the pool until stopped (or once); refused, in one sentence,
    while another follower follows into the same pool (`io.follow.FollowLock`)."""
    from viz_app.io.follow import POSITIONS, FollowLock

    if args.interval <= 0:
        raise pool.PoolError("--interval takes a number of seconds above 0")
    for option, value in (("--join-wait", args.join_wait), ("--span-wait", args.span_wait)):
        if not value >= 0:
            raise pool.PoolError(f"{option} takes a number of seconds, 0 or more")
    apply_storage_options(args.output, args.storage_option, args.follow_symlinks)
    kept = f"{str(args.output).rstrip('/')}/{POSITIONS}"  # where the last follower left off
    # one follower a pool: a second would keep its positions over the first's (FollowerBusy,
    # a PoolError: one sentence, nothing read)
    lock = FollowLock(args.output, lease_s=max(120.0, 10 * args.interval)).acquire()
    try:
        return _follow(args, lock, kept)
    finally:
        lock.release()


def _follow(args: argparse.Namespace, lock, kept: str) -> int:
    import time

    from viz_app.io.follow import Follower, read_positions, write_positions
    from viz_app.io.join_wait import APART, JoinWait

    positions = read_positions(kept)
    follower = Follower(args.sources, positions)
    waits = JoinWait(args.join_wait, args.span_wait, positions)
    written = waits.positions(follower.positions)
    workspace = None
    if args.db:
        args.pool = args.output
        workspace = _pool_workspace(args)

    def report(err: TraceError) -> None:
        print(terminal_text(err), file=sys.stderr)

    added = 0
    try:
        while True:
            lock.renew()  # object storage: still this follower's (else it stops, saying why)
            before = follower.positions
            fresh = waits.ready(follower.poll(on_error=report), time.time(), before=before,
                                written=follower.written)
            if fresh:
                done = pool.append_pool(fresh, args.output, format=args.format)
                added += done.traces
                for line in done.skipped:
                    print(terminal_text(line), file=sys.stderr)
                _say_apart(fresh, APART)
                if done.traces:
                    print(f"added {done.traces} trace{'s' if done.traces != 1 else ''} in "
                          f"{terminal_text(done.shards[-1].url.rsplit('/', 1)[-1])} "
                          f"({added} since the start)", flush=True)
                    if workspace is not None:
                        workspace.library.update_pool_index(wait=True)
            now = waits.positions(follower.positions)  # waiting traces' files put back
            if now != written and (pool.read_manifest(args.output) is not None or not added):
                # kept once what was read is in the pool (or waits: no pool yet, nothing
                written = now  # added): a follower stopped between the two reads it again
                write_positions(kept, written)
            if args.once:
                _say_waiting(waits)
                return 0
            time.sleep(args.interval)
    except KeyboardInterrupt:
        print(f"stopped: {added} traces added to {terminal_text(args.output)}", file=sys.stderr)
        _say_waiting(waits)
        return 0


def _say_apart(traces: list[Trace], code: str, shown: int = 3) -> None:
    """The traces of a look that came after their partner's wait and are kept apart, each on a
    line naming both; past `shown`, one line more counts the rest (a run whose exporter
    flushes later than --span-wait would fill the terminal)."""
    apart = [(t.trace_id, w.message) for t in traces for w in t.reader_warnings
             if w.code == code]
    for trace_id, message in apart[:shown]:
        print(terminal_text(f"{trace_id}: {message}"), file=sys.stderr)
    if len(apart) > shown:
        print(f"and {len(apart) - shown} more kept apart from their rollout or spans in this "
              "look (a longer --span-wait or --join-wait would join them)", file=sys.stderr)


def _say_waiting(waits) -> None:
    """On stopping: the traces still waiting for their partner, read again next time."""
    rollouts = waits.rollouts_waiting
    spans = len(waits.waiting) - rollouts
    parts = [f"{n} {what}{'s' if n != 1 else ''} waiting for {whose}" for n, what, whose in (
        (rollouts, "rollout", "spans"), (spans, "span trace", "a rollout line")) if n]
    if parts:
        print(f"{' and '.join(parts)}: read again when the follower starts again",
              file=sys.stderr)


# -- pool show ---------------------------------------------------------------------------------


def register_show(verbs: argparse._SubParsersAction) -> None:
    """Add `pool show`."""
    p = verbs.add_parser(
        "show", help="print one trace of a pool as JSON",
        description="Print the trace with this id as JSON. The pool's _ids.parquet says where "
        "it is (only the matching part is read); a pool without one is searched shard by shard.")
    p.add_argument("pool", metavar="POOL", help="a pool folder or URL")
    p.add_argument("trace_id", metavar="TRACE_ID")
    add_storage_option(p)
    p.set_defaults(run=show)


def show(args: argparse.Namespace) -> int:
    """Print the trace as JSON."""
    apply_storage_options(args.pool, args.storage_option, args.follow_symlinks)
    trace = pool.trace_by_id(args.pool, args.trace_id)
    sys.stdout.buffer.write(dump_trace(trace) + b"\n")
    return 0


# -- pool index, pool ls ------------------------------------------------------------------------


def _add_workspace_options(p: argparse.ArgumentParser) -> None:
    add_db_option(p, help=f"{DB_HELP}; the pool's index lives beside a SQLite file "
                  "(docs/pools.md)")
    add_rubric_option(p, help="a rubric YAML file (default: the packaged rubric; the index "
                      "records each trace's targets under it)")


def _pool_workspace(args: argparse.Namespace):
    from viz_app.cli.workspace import open_workspace

    apply_storage_options(args.pool, args.storage_option, args.follow_symlinks)
    return open_workspace(args, traces=(), pools=[args.pool], rubric_first=False)


class _TraceBar:
    """The progress bar of an update of a pool's index, in traces (`pool_index.Progress`);
    closed when the update is done (`close`), as the total may grow while shards are read."""

    def __init__(self) -> None:
        # tqdm's monitor thread would make the command threaded, and a threaded process starts
        # the index's workers by spawn (slow to start, slow to notice their parent was killed)
        # rather than fork (`viz_app.store.pool_index._executors`)
        tqdm.monitor_interval = 0
        self.bar: tqdm | None = None

    def __call__(self, done: int, total: int, shard: str) -> None:
        if self.bar is None:
            self.bar = tqdm(total=total or None, desc="indexing pool", unit="trace",
                            disable=None, file=sys.stderr)
        self.bar.total = total or None  # a JSON Lines shard's traces count once it is read
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def register_index(verbs: argparse._SubParsersAction) -> None:
    """Add `pool index`."""
    p = verbs.add_parser(
        "index", help="index a pool: summary rows in DuckDB, words in SQLite FTS5",
        description="Read the pool's new and changed shards (unchanged ones, by size and "
        "modification time or etag, are skipped) and keep one summary row per trace (figures, "
        "task and group, rewards, label targets) and its words, on every core or on a Ray "
        "cluster. Shards and rows that cannot be read are counted and named; the rest is "
        "indexed.")
    p.add_argument("pool", metavar="POOL", help="a pool folder or URL")
    p.add_argument("--ray", default=None, metavar="auto|ADDRESS",
                   help="run on Ray (pip install 'orchviz[ray]'): auto joins the cluster this "
                   "machine knows (or starts one), ADDRESS joins that cluster")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes to read shards with (default: every core; 1 reads here)")
    p.add_argument("--rebuild", action="store_true", help="read every shard again")
    p.add_argument("--timings", action="store_true",
                   help="say where the time went: the workers' CPU per trace (reading and "
                   "summarising), this process's writing, its waiting (docs/pools.md)")
    _add_workspace_options(p)
    add_storage_option(p)
    p.set_defaults(run=index)


def index(args: argparse.Namespace) -> int:
    """Bring the pool's index up to date; say what it did and name the failures."""
    from viz_app.store import IndexBusy

    workspace = _pool_workspace(args)
    bar = _TraceBar()
    options = dict(workers=args.workers, ray=args.ray, progress=bar, rebuild=args.rebuild)
    try:
        try:
            done = workspace.library.update_pool_index(wait=False, **options)
        except IndexBusy:
            print("another update of this pool's index is under way (the app's Re-index or "
                  "another `orchviz pool index`); waiting for it to finish...", file=sys.stderr)
            done = workspace.library.update_pool_index(wait=True, **options)
    finally:
        bar.close()
    pool_index = workspace.library.pool_index()
    for failure in pool_index.failures(limit=20):
        print(terminal_text(failure.error), file=sys.stderr)
    if done.failures > 20:
        print(f"... and {done.failures - 20} more failures", file=sys.stderr)
    print(f"{done.traces} traces indexed from {done.shards} shards ({done.read} read, "
          f"{done.skipped} unchanged, {done.removed} gone) in {done.seconds:.1f} s "
          f"({done.engine}); {done.failures} failures; index: "
          f"{terminal_text(pool_index.path)}")
    if args.timings:
        print(timings(done))
    return 0


def timings(done) -> str:
    """Where an update's time went (`PoolUpdate.costs`), per trace read, in one line."""
    c, n = done.costs, max(1, done.traces)
    if not c:
        return "timings: nothing was read"
    ms = lambda key: c.get(key, 0.0) * 1000 / n  # noqa: E731
    return (f"timings: {done.pieces} pieces; per trace, workers' CPU {ms('summarise_cpu'):.3f} "
            f"ms reading and summarising + {ms('pack_cpu'):.3f} ms packing; this process "
            f"{ms('writer_cpu'):.3f} ms of CPU writing, {ms('words_cpu'):.3f} of it words "
            f"({ms('receive'):.3f} ms receiving, {ms('write_rows'):.3f} ms rows, "
            f"{ms('write_words'):.3f} ms words, wall), {ms('wait'):.3f} ms waiting for pieces"
            f", {ms('wait_words'):.3f} for the words' thread; publish {c.get('publish', 0):.1f} s, "
            f"forget {c.get('forget', 0):.1f} s")


def register_ls(verbs: argparse._SubParsersAction) -> None:
    """Add `pool ls`."""
    from viz_app.query import FIELDS

    p = verbs.add_parser(
        "ls", help="list a pool's traces from its index (or a folder's): search, filter, sort",
        description="List traces of a pool from its index (indexing new and changed shards "
        "first), or of a folder of trace files, a pool of one shard a file (through the folder "
        "index), with the same search and filters. Filters are FIELD OP VALUE, such as "
        "agents>10, topology=tree, "
        "reward.team>=0.5 or task_id~math (~ contains); fields: "
        f"{', '.join(FIELDS)}, reward.NAME.")
    p.add_argument("pool", metavar="POOL", help="a pool folder or URL, or a folder of traces")
    p.add_argument("--search", default="", metavar="TEXT",
                   help="words that must each begin a word of the trace (ids, task, agents, "
                   "tools, content)")
    p.add_argument("--filter", action="append", default=[], metavar="EXPR",
                   help="FIELD OP VALUE, such as agents>10 or 'step>=40 group:G' (repeat: "
                   "all must hold)")
    p.add_argument("--sort", default=None, metavar="FIELD", help="sort by a field")
    p.add_argument("--desc", action="store_true", help="sort descending")
    p.add_argument("--limit", type=int, default=20, metavar="N", help="rows (default: 20)")
    p.add_argument("--offset", type=int, default=0, metavar="N", help="rows to skip first")
    p.add_argument("--json", action="store_true", help="print the rows and count as JSON")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes to index new shards with (default: every core)")
    _add_workspace_options(p)
    add_storage_option(p)
    p.set_defaults(run=ls)


def ls(args: argparse.Namespace) -> int:
    """Print a page of the traces selected, and how many there are."""
    from viz_app.query import parse_conditions

    filters = [c for expr in args.filter for c in parse_conditions(expr)]
    storage = _listed(args)
    total = storage.count(filters, args.search)
    rows = storage.page(filters, args.search, args.sort, args.desc, args.offset, args.limit)
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(
            {"count": total, "rows": [r.model_dump() for r in rows]},
            option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    t = terminal_text
    print(f"{'trace id':<32} {'task':<20} {'topology':<14} {'agents':>6} {'events':>6} "
          f"{'makespan':>9} {'tokens':>9}  rewards")
    for r in rows:
        rewards = " ".join(f"{t(k)}={v:g}" for k, v in sorted(r.rewards.items()))
        print(f"{t(r.trace_id)[:32]:<32} {t(r.task_id)[:20]:<20} {t(r.topology)[:14]:<14} "
              f"{r.agents:>6} {r.events:>6} {figure_text('makespan', r.makespan_s)[:-1]:>9} "
              f"{figure_text('tokens', r.tokens):>9}  {rewards}")
    print(f"{len(rows)} of {total} traces shown", file=sys.stderr)
    return 0


def _listed(args: argparse.Namespace):
    """What `pool ls` lists, through the library's one interface (`ws.library.storage`): a
    pool's index, brought up to date first (as it was, while another process updates it), or,
    for a local folder of trace files, the folders: a pool of one shard a file."""
    from viz_app.io.pool import is_pool
    from viz_app.store import IndexBusy

    if "://" not in args.pool and Path(args.pool).exists() and not is_pool(args.pool):
        from viz_app.cli.workspace import open_workspace

        return open_workspace(args, traces=[args.pool], rubric_first=False).library.storage()
    workspace = _pool_workspace(args)
    bar = _TraceBar()
    try:
        workspace.library.update_pool_index(workers=args.workers, progress=bar, wait=False)
    except IndexBusy:
        print("another update of this pool's index is under way; listing the index as it "
              "was", file=sys.stderr)
    finally:
        bar.close()
    return workspace.library.storage(workspace.library.pools[0])


POOL_VERBS = [register_write, register_follow, register_show, register_index, register_ls]
"""Each adds one `orchviz pool` verb (its parser, `--help` and the function it runs)."""
