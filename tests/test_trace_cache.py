"""Traces kept and read ahead (`viz_app.io.trace_cache`, through `ws.library.trace` and
`ws.library.read_ahead`): one version of a file each, never a stale one, a bounded few, and a
read ahead that fails costs nothing but the time it took."""

from __future__ import annotations

import os
import threading

import pytest

from factories import example_trace, make_workspace
from viz_app.errors import TraceError
from viz_app.io.native import write_trace
from viz_app.io.trace_cache import TraceCache, TraceSource


def counted(trace_id: str, events: int = 1, gate: threading.Event | None = None):
    """A source of a trace built in memory, counting its reads (which wait for `gate`)."""
    reads = []

    def read():
        if gate is not None:
            gate.wait(10)
        reads.append(1)
        return example_trace(trace_id)

    return TraceSource(key=trace_id, stamp=lambda: "v1", read=read), reads


def test_a_trace_read_ahead_is_opened_without_reading_it_again(tmp_path):
    workspace = make_workspace(tmp_path, traces=[example_trace("next-one")])
    workspace.library.update_index()
    assert workspace.library.read_ahead(lambda: ["next-one"])
    assert workspace.library.trace_cache.wait()
    assert workspace.library.trace_cache.cached(workspace.library.source("next-one"))
    source = workspace.library.source("next-one")
    opened = workspace.library.trace_cache.get(TraceSource(source.key, source.stamp,
                                                   read=lambda: pytest.fail("read again")))
    assert opened.trace_id == "next-one"


def test_a_file_changed_after_it_was_read_ahead_is_read_again(tmp_path):
    workspace = make_workspace(tmp_path, traces=[example_trace("next-one", task_id="before")])
    workspace.library.update_index()
    workspace.library.read_ahead(lambda: ["next-one"])
    assert workspace.library.trace_cache.wait()
    path, _ = workspace.library.find("next-one")
    write_trace(example_trace("next-one", task_id="after"), path)
    assert workspace.library.trace("next-one").task_id == "after"


def test_the_cache_keeps_the_traces_used_last_and_no_more(tmp_path):
    cache = TraceCache(max_traces=2)
    for name in ("a", "b", "c"):
        cache.get(counted(name)[0])
    assert len(cache) == 2
    assert not cache.cached(counted("a")[0]) and cache.cached(counted("c")[0])


def test_the_cache_keeps_no_more_events_than_its_budget_but_always_the_last_trace():
    size = len(example_trace("x").events)
    cache = TraceCache(max_events=size * 2)
    for name in ("a", "b", "c"):
        cache.get(counted(name)[0])
    assert len(cache) == 2 and cache.events <= size * 2
    small = TraceCache(max_events=1)  # a trace larger than the budget is still kept alone
    small.get(counted("big")[0])
    assert len(small) == 1


def test_reads_ahead_beyond_the_queue_bound_are_not_queued():
    gate = threading.Event()
    cache = TraceCache(max_queued=2)
    assert cache.ahead(lambda: [counted("a", gate=gate)[0]])
    assert cache.ahead(lambda: [counted("b", gate=gate)[0]])
    assert not cache.ahead(lambda: [counted("c", gate=gate)[0]])
    gate.set()
    assert cache.wait()
    assert cache.ahead(lambda: [counted("d")[0]])


def test_opening_a_trace_being_read_ahead_waits_for_that_read(tmp_path):
    gate = threading.Event()
    source, reads = counted("slow", gate=gate)
    cache = TraceCache()
    cache.ahead(lambda: [source])
    opened = []
    opener = threading.Thread(target=lambda: opened.append(cache.get(source)))
    while not cache._reading:  # the read ahead has begun (and waits at the gate)
        threading.Event().wait(0.005)
    opener.start()
    gate.set()
    opener.join(10)
    assert opened[0].trace_id == "slow" and len(reads) == 1


def test_a_read_ahead_that_fails_raises_nothing_and_the_open_says_why(tmp_path):
    workspace = make_workspace(tmp_path, traces=[example_trace("broken-next")])
    workspace.library.update_index()
    path, _ = workspace.library.find("broken-next")
    path.write_text('{"trace_id": "broken-next", "events": [', "utf-8")
    assert workspace.library.read_ahead(lambda: ["broken-next"])
    assert workspace.library.trace_cache.wait()
    assert workspace.library.trace_cache.failures and len(workspace.library.trace_cache) == 0
    with pytest.raises(TraceError) as raised:
        workspace.library.trace("broken-next")
    assert str(path) in str(raised.value)


def test_a_file_mended_after_a_failed_read_ahead_opens(tmp_path):
    workspace = make_workspace(tmp_path, traces=[example_trace("mended")])
    workspace.library.update_index()
    path, _ = workspace.library.find("mended")
    good = path.read_bytes()
    path.write_text("{", "utf-8")
    workspace.library.read_ahead(lambda: ["mended"])
    assert workspace.library.trace_cache.wait()
    path.write_bytes(good)
    assert workspace.library.trace("mended").trace_id == "mended"


def test_finding_what_comes_next_may_fail_without_harm(tmp_path):
    cache = TraceCache()

    def lost():
        raise RuntimeError("the database went away")

    assert cache.ahead(lost)
    assert cache.wait()
    assert "database went away" in cache.failures[-1][1]


def test_a_file_rewritten_with_its_size_and_time_kept_is_read_again(tmp_path):
    workspace = make_workspace(tmp_path, traces=[example_trace("same-size", task_id="aaaa")])
    workspace.library.update_index()
    assert workspace.library.trace("same-size").task_id == "aaaa"
    path, _ = workspace.library.find("same-size")
    before = path.stat()
    path.write_bytes(path.read_bytes().replace(b'"aaaa"', b'"bbbb"'))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size
    assert workspace.library.trace("same-size").task_id == "bbbb"


def test_a_read_ahead_begins_only_after_the_pause_it_was_given():
    source, reads = counted("later")
    cache = TraceCache()
    cache.ahead(lambda: [source], after=0.5)
    threading.Event().wait(0.2)
    assert not reads  # the browser still draws the page just sent
    assert cache.wait() and reads and cache.cached(source)
