"""Running `summarise_piece` over many pieces: in a pool of processes or as Ray tasks, the
batches given back in the pieces' order, with bounded memory, and workers that end with the
process that started them."""

from __future__ import annotations

import ctypes
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import get_context
from typing import Any

import pyarrow as pa

from viz_app.errors import OrchvizError
from viz_app.labels import Rubric
from viz_app.store.pool_index._plan import Batch, Piece, summarise_piece
from viz_app.store.pool_index._words import _unpacked_utf8


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
        from viz_app.store.pool_index import _ray_local as ray_local

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
"""The watcher of a local Ray this process started (`viz_app.store.pool_index._ray_local`)."""


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
