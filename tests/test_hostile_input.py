"""Hostile input is refused in one sentence, naming the file and the place, and nothing hangs or
blows up: zip bombs, FIFOs and devices, numbers that are not finite, keys that come twice."""

from __future__ import annotations

import io
import json
import os
import struct
import subprocess
import sys
import threading
import zipfile
from pathlib import Path

import orjson
import pytest

from viz_app.errors import TraceError
from viz_app.io.detect import read_any
from viz_app.io.inspect_ai import import_inspect
from viz_app.io.native import dump_trace, load_trace, load_traces, trace_from_dict, trace_from_json
from viz_app.synth import synth_trace

MB = 1_000_000


def minimal(**changes) -> dict:
    """A valid trace of three events, with `changes` made to its second event."""
    events = [{"id": f"e{k}", "t": k, "type": "message", "agent": "a"} for k in range(3)]
    events[1].update(changes)
    return {"trace_id": "t", "task_id": "k", "events": events, "edges": [], "rewards": {},
            "costs": {"tokens": 0, "wall_clock_s": 2}}


def refusal(data: bytes, name: str = "hostile.json") -> TraceError:
    with pytest.raises(TraceError) as caught:
        trace_from_json(data, name)
    return caught.value


# -- zip bombs -------------------------------------------------------------------------------


def eval_zip(members: dict[str, bytes], declared: dict[str, int] | None = None) -> bytes:
    """An Inspect .eval zip of these members (deflated); `declared` makes a member's central
    directory entry lie about its inflated size."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    data = bytearray(buffer.getvalue())
    for name, size in (declared or {}).items():
        entry = data.find(b"PK\x01\x02")
        while entry >= 0:
            name_length = struct.unpack_from("<H", data, entry + 28)[0]
            if data[entry + 46:entry + 46 + name_length] == name.encode():
                struct.pack_into("<I", data, entry + 24, size)
            entry = data.find(b"PK\x01\x02", entry + 4)
    return bytes(data)


def sample(pad: int) -> bytes:
    """An Inspect sample whose text is `pad` bytes longer than it needs to be."""
    return b'{"id": 1, "epoch": 1, "events": [], "pad": "' + b"a" * pad + b'"}'


HEADER = b'{"eval": {"task": "bomb", "eval_id": "b1"}}'


def test_a_member_that_inflates_past_the_limit_is_refused_before_it_is_inflated(tmp_path):
    bomb = tmp_path / "bomb.eval"
    bomb.write_bytes(eval_zip({"header.json": HEADER, "samples/1_epoch_1.json": sample(8 * MB)}))
    assert bomb.stat().st_size < 20_000  # a thousandfold
    with pytest.raises(TraceError) as caught:
        import_inspect(bomb, max_bytes=MB)
    assert caught.value.file == str(bomb) and caught.value.place == "samples/1_epoch_1.json"
    assert "inflates to 8.0 MB, over the 1 MB limit" in caught.value.problem
    assert "ORCHVIZ_MAX_BYTES" in caught.value.problem


def test_members_that_together_inflate_past_the_limit_are_refused(tmp_path):
    log = eval_zip({"header.json": HEADER, "samples/1_epoch_1.json": sample(MB // 2),
                    "samples/2_epoch_1.json": sample(MB // 2)})
    with pytest.raises(TraceError) as caught:
        import_inspect(log, name="two.eval", max_bytes=MB)
    assert caught.value.place == "samples/2_epoch_1.json"
    assert "the members inflated so far to 1.1 MB, over the 1 MB limit" in caught.value.problem


def test_a_member_whose_header_lies_about_its_size_is_refused_by_what_comes_out():
    log = eval_zip({"header.json": HEADER, "samples/1_epoch_1.json": sample(8 * MB)},
                   declared={"samples/1_epoch_1.json": 1000})
    with pytest.raises(TraceError) as caught:
        import_inspect(log, name="liar.eval", max_bytes=MB)
    assert caught.value.place == "samples/1_epoch_1.json"
    assert "header does not tell the truth" in caught.value.problem


def test_an_eval_within_the_limit_still_imports():
    sample_text = json.dumps({"id": 1, "epoch": 1, "events": [
        {"event": "model", "timestamp": "2024-01-01T00:00:00Z", "output": {"completion": "hi"}}]})
    (trace,) = import_inspect(eval_zip({"header.json": HEADER,
                                        "samples/1_epoch_1.json": sample_text.encode()}),
                              name="ok.eval", max_bytes=MB)
    assert trace.trace_id == "b1:1:1"


def test_the_import_verb_refuses_a_bomb_under_the_configured_limit(tmp_path):
    """As `orchviz import` reads it (format detected, then read), in a process of its own with
    ORCHVIZ_MAX_BYTES set."""
    bomb = tmp_path / "bomb.eval"
    bomb.write_bytes(eval_zip({"header.json": HEADER, "samples/1_epoch_1.json": sample(50 * MB)}))
    script = ("import sys; from viz_app.io.detect import read_any\n"
              "try:\n    read_any(sys.argv[1])\nexcept Exception as err:\n    print(err)\n")
    done = subprocess.run([sys.executable, "-c", script, str(bomb)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "ORCHVIZ_MAX_BYTES": str(MB)})
    assert done.stdout.strip() == (f"{bomb}: samples/1_epoch_1.json: inflates to 50.0 MB, over "
                                   "the 1 MB limit (set ORCHVIZ_MAX_BYTES to raise it)")


# -- FIFOs and other files that are not regular ---------------------------------------------


def finishes(step, seconds: float = 10.0):
    """Run `step()` in a thread; its result (or exception) if it ends within `seconds`."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = step()
        except BaseException as err:  # noqa: BLE001 - handed back to the test
            outcome["error"] = err

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    return worker.is_alive(), outcome


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "trace.json"
    os.mkfifo(path)
    yield path
    try:  # a reader stuck in open() on the old code: give it a writer, then an end
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
    except OSError:
        pass


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("read", [load_trace, lambda p: list(load_traces(p)), read_any],
                         ids=["load_trace", "validate (load_traces)", "import (read_any)"])
def test_a_fifo_named_on_the_command_line_is_refused_without_waiting(fifo, read):
    hung, outcome = finishes(lambda: read(fifo))
    assert not hung, "reading a FIFO hung"
    error = outcome.get("error")
    assert isinstance(error, TraceError), outcome
    assert str(error) == (f"{fifo}: is a named pipe (FIFO), not a file: orchviz reads traces only "
                          "from regular files")


def test_a_device_is_refused_without_being_read():
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero here")
    hung, outcome = finishes(lambda: load_trace("/dev/zero"))
    assert not hung and isinstance(outcome.get("error"), TraceError)
    assert "is a character device, not a file" in str(outcome["error"])


# -- numbers that are not finite -------------------------------------------------------------


@pytest.mark.parametrize("literal", [b"Infinity", b"-Infinity", b"NaN", b"1e400", b"-1e400"])
def test_a_time_that_is_not_finite_is_refused_naming_its_place(literal):
    data = orjson.dumps(minimal(t=123456789)).replace(b"123456789", literal)
    error = refusal(data)
    assert error.place == "events[1].t"
    assert error.problem == f"{literal.decode()} is not a finite number, which a trace cannot hold"


@pytest.mark.parametrize("where, place", [
    ({"tokens": 123456789}, "events[1].tokens"),
    ({"usage": {"steps": [1, 2, 123456789]}}, "events[1].usage.steps[2]"),
])
def test_an_extra_key_that_is_not_finite_is_refused_naming_its_place(where, place):
    data = orjson.dumps(minimal(**where)).replace(b"123456789", b"1e999")
    assert refusal(data).place == place


@pytest.mark.parametrize("part, place", [("rewards", "rewards.team"), ("costs", "costs.usd")])
def test_rewards_and_costs_that_are_not_finite_are_refused(part, place):
    raw = minimal()
    raw[part]["team" if part == "rewards" else "usd"] = 123456789
    assert refusal(orjson.dumps(raw).replace(b"123456789", b"NaN")).place == place


def test_a_line_of_a_pool_names_its_line(tmp_path):
    pool = tmp_path / "pool.jsonl"
    pool.write_bytes(orjson.dumps(minimal()) + b"\n"
                     + orjson.dumps(minimal(t=123456789)).replace(b"123456789", b"Infinity"))
    errors: list[TraceError] = []
    assert len(list(load_traces(pool, on_error=errors.append))) == 1
    assert [e.place for e in errors] == ["line 2: events[1].t"]


def test_a_built_trace_with_an_infinity_is_refused_too():
    with pytest.raises(TraceError) as caught:
        trace_from_dict(minimal(t=float("inf")), "<built>")
    assert caught.value.place == "events[1].t" and "not a finite number" in caught.value.problem
    with pytest.raises(TraceError) as caught:
        trace_from_dict(minimal(cost_usd=[1.0, float("nan")]), "<built>")
    assert caught.value.place == "events[1].cost_usd"


def test_strings_that_spell_numbers_are_only_strings():
    raw = minimal(content="Infinity NaN 1e400 null", note="null")
    trace = trace_from_json(orjson.dumps(raw), "words.json")
    assert trace.events[1].content == "Infinity NaN 1e400 null"


# -- keys that come twice ------------------------------------------------------------------------


@pytest.mark.parametrize("before, after, place", [
    (b'"trace_id":"t"', b'"trace_id":"t","trace_id":"u"', "trace_id"),
    (b'"t":1,', b'"t":1,"t":2,', "events[1].t"),
    (b'"agent":"a"}', b'"agent":"a","agent" : "b"}', "events[0].agent"),
    (b'"wall_clock_s":2', b'"wall_clock_s":2,"wall_clock_s":3', "costs.wall_clock_s"),
    (b'"rewards":{}', b'"rewards":{"team":1,"team":0}', "rewards.team"),
], ids=["top level", "event", "with spaces", "costs", "rewards"])
def test_a_key_twice_in_one_object_is_refused_naming_its_place(before, after, place):
    data = orjson.dumps(minimal())
    assert data.count(before) >= 1
    error = refusal(data.replace(before, after, 1))
    assert error.place == place
    assert error.problem.startswith(f"the key {place.rsplit('.', 1)[-1]!r} comes twice")


def test_a_key_twice_inside_an_extra_value_is_refused():
    data = orjson.dumps(minimal(usage={"in": 1, "out": 2})).replace(b'"out":2', b'"out":2,"in":5')
    assert refusal(data).place == "events[1].usage.in"


def test_a_key_twice_hidden_by_an_escaped_colon_is_still_found():
    data = orjson.dumps(minimal(content="a:b")).replace(b'"a:b"', b'"a\\u003ab"')
    assert trace_from_json(data, "escaped.json").events[1].content == "a:b"
    twice = data.replace(b'"t":1,', b'"t":1,"t":2,')
    assert refusal(twice).place == "events[1].t"


@pytest.mark.parametrize("indent", [None, 2])
def test_colons_quotes_and_nulls_inside_strings_are_no_duplicates(indent):
    raw = minimal(content='{"a": 1, "a": 2} "t": null :: \\": x', extra=[None, {"k": None}])
    data = json.dumps(raw, indent=indent).encode()
    trace = trace_from_json(data, "strings.json")
    assert trace.to_dict() == raw


def test_a_realistic_trace_loads_and_writes_back_unchanged(tmp_path):
    raw = synth_trace(30, 600, seed=4)
    path = tmp_path / "synth.json"
    path.write_bytes(orjson.dumps(raw, option=orjson.OPT_INDENT_2))
    assert json.loads(dump_trace(load_trace(path))) == raw


# -- nesting that would make an importer quadratic -------------------------------------------------


def nested_spans(depth: int) -> bytes:
    """An Inspect log whose one agent span holds `depth` spans nested one in another, with a
    model call in each: every call is `depth` spans away from its agent at worst."""
    stamp = "2024-01-01T00:00:00Z"
    events = [{"event": "span_begin", "id": "s0", "type": "agent", "name": "solver",
               "timestamp": stamp}]
    for k in range(1, depth + 1):
        events += [{"event": "span_begin", "id": f"s{k}", "parent_id": f"s{k - 1}",
                    "type": "step", "name": f"step {k}", "timestamp": stamp},
                   {"event": "model", "span_id": f"s{k}", "timestamp": stamp,
                    "output": {"completion": f"call {k}"}}]
    log = {"eval": {"task": "deep", "eval_id": "d"}, "samples": [{"id": 1, "events": events}]}
    return json.dumps(log).encode()


def test_deeply_nested_spans_import_in_linear_work():
    from test_analysis_scaling import lines_run

    small, large = nested_spans(300), nested_spans(600)
    work = [lines_run(lambda data=data: import_inspect(data, name="deep.json"))
            for data in (small, large)]
    assert work[1] / work[0] < 2.4
    (trace,) = import_inspect(small, name="deep.json")
    assert {e.agent for e in trace.events if e.type == "message"} == {"solver"}
