"""Following a run while a trainer writes it: a file read once is read again from where it was
left, so the rollouts a trainer appends are read as they come, not the whole file again.

`read_file` reads a file whole (as `detect.read_any` does) and says where a later read can go
on from: a `Tail` (the format, the bytes and lines read, the traces they gave, and a hash of the
file's head that tells the same file from a rewritten one). `read_more` reads only what was
appended since, from the first line not read. Only whole lines are read: a last line without its
newline is waited for (the trainer is still writing it), never reported as an error, and read
from there once it is whole. A file that
shrank or whose head changed is read whole again by the caller. The readers that can go on from
a line are those of a rollout per line (`TAIL_READERS`); every other file is read whole when it
changes, as before.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec

from viz_app.errors import TraceError
from viz_app.io import art, openrlhf, skyrl, verl
from viz_app.io.detect import choose_format, read_any
from viz_app.io.native import DEFAULT_MAX_BYTES, read_source
from viz_app.io.pool_layout import PoolError
from viz_app.io.pool_writer import FOLLOW_LOCK
from viz_app.io.rollouts import complete_lines
from viz_app.model import Trace

TAIL_READERS: dict[str, Callable[..., list[Trace]]] = {
    verl.NAME: verl.import_verl, openrlhf.NAME: openrlhf.import_openrlhf,
    skyrl.NAME: skyrl.import_skyrl, art.NAME: art.import_art}
"""The readers that read a file from a given line (`first_line`): JSON Lines of rollouts."""

HEAD_BYTES = 4096
"""How much of a file's beginning tells the same file from a rewritten one."""


class Tail(msgspec.Struct, frozen=True):
    """Where the reading of a file that grows was left."""

    format: str
    offset: int
    """Bytes read: every whole line before this offset."""
    lines: int
    """Lines those bytes hold."""
    traces: int
    """Traces they gave (the next one's position in the file)."""
    head: str
    """SHA-256 of the file's first `head_size` bytes when it was first read."""
    head_size: int
    """HEAD_BYTES, or fewer when the file held fewer."""
    inode: int = 0
    """The file's inode (0: not known): another file at the same path (a rotated log) is
    read whole."""
    size: int = 0
    """The file's size when it was read to `offset` (what a look compares to skip it)."""
    mtime_ns: int = 0
    """Its modification time then."""
    key: str = ""
    """What its reader names the file by in its traces' ids, where it does (an OpenRLHF rank
    file's `file_key`): handed back to it for the lines read later."""


def _head(data: bytes, size: int) -> str:
    return hashlib.sha256(data[:min(size, HEAD_BYTES)]).hexdigest()


def read_file(path: str | os.PathLike, on_error: Callable[[TraceError], None] | None = None,
              max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[list[Trace], Tail | None]:
    """Every trace of a file, and where reading it can go on from (None for a file that is
    not read by a line-by-line rollout reader, or whose last line has no newline yet)."""
    try:
        before = os.stat(path)
    except OSError:
        before = None
    data, label = read_source(Path(path), None, max_bytes)
    fmt = choose_format(data, label) if data.strip() else None
    if fmt not in TAIL_READERS or data[:4] == b"PAR1":
        return read_any(Path(path), on_error=on_error, max_bytes=max_bytes), None
    traces = TAIL_READERS[fmt](data, name=label, on_error=on_error)
    offset = data.rfind(b"\n") + 1
    if offset != len(data) and not complete_lines(data)[1]:
        return traces, None  # a last line without its newline, read whole: read all next time
    # (a last line being written was left out by the reader: it is read from `offset` next)
    return traces, Tail(format=fmt, offset=offset, lines=data.count(b"\n", 0, offset),
                        traces=len(traces), head=_head(data, offset),
                        head_size=min(offset, HEAD_BYTES),
                        inode=before.st_ino if before is not None else 0, size=len(data),
                        mtime_ns=before.st_mtime_ns if before is not None else 0,
                        key=openrlhf.file_key(data) if fmt == openrlhf.NAME else "")


def read_more(path: str | os.PathLike, tail: Tail,
              on_error: Callable[[TraceError], None] | None = None,
              max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[list[Trace], Tail] | None:
    """The traces a trainer appended to a file since `tail`, and where reading goes on from;
    None when the file is not the one read (another file at its path, by its inode; it shrank
    below what was read, truncated; or its head changed, rewritten): read it whole. A line that
    cannot be read is told to `on_error` (raised without one) and left out."""
    file = Path(path)
    keyed = {"key": tail.key} if tail.format == openrlhf.NAME else {}
    if keyed and not tail.key:
        return None  # kept before the ids named their file: read whole
    try:
        with open(file, "rb") as stream:
            stat = os.fstat(stream.fileno())
            if tail.inode and stat.st_ino != tail.inode:
                return None
            head = stream.read(HEAD_BYTES)
            size = stat.st_size
            if size < tail.offset or _head(head, tail.head_size) != tail.head:
                return None
            stream.seek(tail.offset)
            added = stream.read(min(size - tail.offset, max_bytes))
    except OSError:
        return None
    whole = added[:added.rfind(b"\n") + 1]  # the lines a trainer finished writing
    seen = {"inode": stat.st_ino, "size": tail.offset + len(added),
            "mtime_ns": stat.st_mtime_ns}
    if not whole.strip():
        return [], msgspec.structs.replace(tail, offset=tail.offset + len(whole),
                                           lines=tail.lines + whole.count(b"\n"), **seen)
    traces = TAIL_READERS[tail.format](whole, name=str(file), first_line=tail.lines + 1,
                                       on_error=on_error, **keyed)
    return traces, msgspec.structs.replace(tail, offset=tail.offset + len(whole),
                                           lines=tail.lines + whole.count(b"\n"),
                                           traces=tail.traces + len(traces), **seen)


class Follower:
    """The files under some folders, looked at again and again: each look (`poll`) gives the
    traces written since the last (a new file whole, a followed file's new lines, a rewritten,
    truncated or rotated file whole again: a caller that keeps traces by id adds nothing
    twice).

    Where each file was left is its `positions` (`Positions`: a followed file's `Tail`, the
    stamp of every other file read), which a follower started again is given back: it reads
    only what was written since, and a caller that keeps them once it has kept the traces
    (`orchviz pool follow`, after each shard) neither adds a line twice nor skips one."""

    def __init__(self, sources: Sequence[str | os.PathLike],
                 positions: Positions | None = None):
        self.sources = [Path(s) for s in sources]
        self.seen: dict[Path, tuple[int, int]] = {}
        self.tails: dict[Path, Tail] = {}
        if positions is not None:
            self.seen = {Path(p): (s[0], s[1]) for p, s in positions.seen.items()}
            self.tails = {Path(p): t for p, t in positions.tails.items()}

    @property
    def positions(self) -> Positions:
        """Where each file was left, to give a follower started again."""
        return Positions(seen={str(p): s for p, s in self.seen.items()},
                         tails={str(p): t for p, t in self.tails.items()})

    def written(self, source: str) -> float | None:
        """When a file the last look read last changed (seconds since the epoch; None for a
        file not read)."""
        stamp = self.seen.get(Path(source))
        return stamp[1] / 1e9 if stamp is not None else None

    def poll(self, on_error: Callable[[TraceError], None] | None = None) -> list[Trace]:
        """The traces written since the last look (a file that cannot be read is told to
        `on_error`, and looked at again when it changes)."""
        from viz_app.io.detect import library_files

        found: list[Trace] = []
        for path in library_files(self.sources):
            try:
                stat = path.stat()
            except OSError:
                continue
            stamp = (stat.st_size, stat.st_mtime_ns)
            tail = self.tails.get(path)
            if self.seen.get(path) == stamp and (tail is None or not tail.inode
                                                 or tail.inode == stat.st_ino):
                continue
            self.seen[path] = stamp
            try:
                more = read_more(path, tail, on_error) if tail is not None else None
                if more is not None:
                    traces, self.tails[path] = more
                else:
                    traces, fresh = read_file(path, on_error)
                    self.tails.pop(path, None)
                    if fresh is not None:
                        self.tails[path] = fresh
            except TraceError as err:
                if on_error is None:
                    raise
                on_error(err)
                continue
            found.extend(traces)
        return found


class Pooled(msgspec.Struct, array_like=True, frozen=True):
    """What `orchviz pool follow` put into its pool for one rollout id (`join_wait.JoinWait`)."""

    trace_id: str
    """The pool's trace."""
    form: str
    """`joined` (the spans with the rollout), `rollout` (the rollout alone) or `spans` (the
    spans alone)."""
    at: float
    """When (seconds since the epoch)."""
    rollout: str = ""
    """With `joined`: the id of the rollout's own trace, taken in (read again, it adds
    nothing)."""


class Positions(msgspec.Struct):
    """Where a follower left each file: `seen`, the (size, mtime_ns) of every file it read;
    `tails`, where each followed rollout file was left; and what `orchviz pool follow` keeps of
    the traces waiting to be joined (`viz_app.io.join_wait`). Kept as JSON (`write_positions`)."""

    seen: dict[str, tuple[int, int]] = {}
    tails: dict[str, Tail] = {}
    held: dict[str, float] = {}
    """Traces waiting for their partner (spans for their rollout, a rollout for its spans), by
    id: since when each waits."""
    spans: bool = False
    """The run writes spans that name its rollouts (one was read): its rollouts wait for them."""
    pooled: dict[str, Pooled] = {}
    """What was put into the pool for each rollout id lately."""


POSITIONS = "_follow.json"
"""The file in a pool where `orchviz pool follow` keeps its follower's positions (hidden from
the pool's shards by its underscore)."""


def read_positions(url: str) -> Positions | None:
    """Positions kept at a URL or path; None when there are none, or they cannot be read (the
    follower then reads its files whole once: the pool adds no id twice)."""
    import fsspec

    try:
        with fsspec.open(url, "rb") as stream:
            return msgspec.json.decode(stream.read(), type=Positions)
    except (OSError, ValueError, msgspec.DecodeError):
        return None


def write_positions(url: str, positions: Positions) -> None:
    """Keep positions at a URL or path, whole or not at all (a local file is written beside
    and renamed over the last)."""
    import fsspec

    from fsspec.implementations.local import LocalFileSystem

    data = msgspec.json.encode(positions)
    fs, path = fsspec.core.url_to_fs(url)
    if isinstance(fs, LocalFileSystem):
        temporary = f"{path}.{os.getpid()}.tmp"
        with open(temporary, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    else:
        with fs.open(path, "wb") as stream:  # an object store's put is whole or not at all
            stream.write(data)


# -- one follower a pool ---------------------------------------------------------------------------

LOCK = FOLLOW_LOCK
"""The file in a pool that says which `orchviz pool follow` follows into it (`FollowLock`)."""


class FollowerBusy(PoolError):
    """Another follower follows into this pool: one sentence saying which, and that nothing was
    read."""


class FollowLock:
    """One follower a pool. Two followers of one pool would each keep their own positions in
    `_follow.json` over the other's (a restart then reads lines again or skips them) and add
    shards to the pool at once; so the second is refused, in one sentence naming the first.

    In a local pool the lock is the operating system's (`flock` on `_follow.lock`, held while
    the follower runs, let go by the system when its process ends however it ends). On object
    storage, which has no lock, `_follow.lock` is a lease: the follower writes its name and the
    time there and renews it at every look (`renew`); a lease not renewed for `lease_s` seconds
    is a follower that stopped, and another may take it over. A follower whose lease another
    took over (it was stopped that long) stops rather than write positions over the other's."""

    def __init__(self, pool: str, *, lease_s: float = 120.0):
        import socket
        import uuid

        self.pool = str(pool).rstrip("/")
        self.url = f"{self.pool}/{LOCK}"
        self.lease_s = lease_s
        self.me = {"owner": uuid.uuid4().hex, "host": socket.gethostname(), "pid": os.getpid()}
        self._stream = None
        self._fs = None
        self._path = ""

    def acquire(self) -> FollowLock:
        """Take the pool, or raise FollowerBusy naming the follower that has it."""
        import fcntl
        import time

        import fsspec
        from fsspec.implementations.local import LocalFileSystem

        self._fs, self._path = fsspec.core.url_to_fs(self.url)
        if isinstance(self._fs, LocalFileSystem):
            Path(self._path).parent.mkdir(parents=True, exist_ok=True)
            stream = open(self._path, "a+b")  # noqa: SIM115 (held open while following)
            try:
                fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                stream.seek(0)
                other = _lease(stream.read())
                stream.close()
                raise FollowerBusy(self._busy(other)) from None
            stream.seek(0)
            stream.truncate()
            stream.write(msgspec.json.encode({**self.me, "since": time.time()}))
            stream.flush()
            self._stream = stream
            return self
        other = self._read_lease()
        if other and other.get("owner") != self.me["owner"] and \
                time.time() - float(other.get("renewed", 0)) < self.lease_s:
            raise FollowerBusy(self._busy(other))
        self.me["since"] = time.time()
        self._write_lease()
        return self

    def renew(self) -> None:
        """Say the follower still follows (object storage: the lease's time); FollowerBusy when
        another follower took the pool over meanwhile."""
        if self._stream is not None or self._fs is None:
            return
        other = self._read_lease()
        if other and other.get("owner") not in (None, self.me["owner"]):
            raise FollowerBusy(f"{self.pool}: another follower ({_who(other)}) took this pool "
                               f"over while this one was stopped longer than {self.lease_s:g} s;"
                               " this one stops, and keeps no positions")
        self._write_lease()

    def _write_lease(self) -> None:
        import time

        with self._fs.open(self._path, "wb") as stream:
            stream.write(msgspec.json.encode({**self.me, "renewed": time.time()}))

    def release(self) -> None:
        """Let the pool go (the lock file stays, empty of a follower: its lock is gone)."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        elif self._fs is not None:
            other = self._read_lease()
            if other and other.get("owner") == self.me["owner"]:
                try:
                    self._fs.rm(self._path)
                except OSError:
                    pass
        self._fs = None

    def __enter__(self) -> FollowLock:
        return self.acquire()

    def __exit__(self, *_exc: object) -> None:
        self.release()

    def _read_lease(self) -> dict | None:
        try:
            with self._fs.open(self._path, "rb") as stream:
                return _lease(stream.read())
        except (OSError, ValueError):
            return None

    def _busy(self, other: dict | None) -> str:
        return (f"{self.pool} is followed already by another `orchviz pool follow` "
                f"({_who(other)}): stop that one first, or follow into another pool; nothing "
                "was read")


def _lease(data: bytes) -> dict | None:
    try:
        found = msgspec.json.decode(data) if data.strip() else None
    except msgspec.DecodeError:
        return None
    return found if isinstance(found, dict) else None


def _who(other: dict | None) -> str:
    if not other:
        return "a process that has not said which"
    import datetime

    since = other.get("since")
    when = (datetime.datetime.fromtimestamp(float(since), datetime.timezone.utc)
            .strftime("since %Y-%m-%d %H:%M:%S UTC") if isinstance(since, (int, float)) else "")
    return ", ".join(str(x) for x in (f"process {other.get('pid')} on {other.get('host')}",
                                      when) if x)
