"""The compiled read path (`viz_app.io.decode`): plain text decodes to the trace's structs in C,
anything else goes to the general path, and either way the same trace loads, or is refused,
exactly as before."""

from __future__ import annotations

import copy
import hashlib
import json
import random

import orjson
import pytest

from factories import demo_paths, example_dict, reference_validator
from test_roundtrip import MUTATIONS, references_resolve
from viz_app import TraceError
from viz_app.analysis import analyze
import msgspec

from viz_app.io.decode import decode
from viz_app.io.native import _built, trace_from_dict, trace_from_json
from viz_app.model import OTHER, Event, Trace
from viz_app.synth import synth_trace

VALIDATOR = reference_validator()


def plain(**event_keys) -> dict:
    """The reference example, its first event given `event_keys`."""
    raw = example_dict()
    raw["events"][0].update(event_keys)
    return raw


def refusal(data: bytes, read=trace_from_json) -> TraceError:
    with pytest.raises(TraceError) as caught:
        read(data, "t.json")
    return caught.value


# -- what takes the compiled path ------------------------------------------------------------


@pytest.mark.parametrize("path", demo_paths(), ids=lambda p: p.stem)
def test_every_demo_trace_takes_the_compiled_path_and_loads_as_before(path):
    data = path.read_bytes()
    assert isinstance(decode(data), Trace)
    loaded = trace_from_json(data, str(path))
    assert loaded.to_dict() == json.loads(data)
    assert loaded.sha256 == hashlib.sha256(data).hexdigest()


def test_the_extension_keys_orchviz_reads_take_the_compiled_path():
    raw = plain(content="hi", end_t=5, tokens=3, cost_usd=0.5, model="m", llm_call_id=7,
                response_id="r", prompt_token_ids=[1, 2])
    record = decode(orjson.dumps(raw))
    assert record is not None
    assert record.events[0].extras == {k: raw["events"][0][k] for k in (
        "content", "end_t", "tokens", "cost_usd", "model", "llm_call_id", "response_id",
        "prompt_token_ids")}


@pytest.mark.parametrize("key, value", [
    ("usage", {"in": 1}), ("tokens", "12"), ("end_t", None), ("content", ["a"]),
    ("decision", 3), ("tokens", True)],
    ids=["unknown key", "tokens as text", "null end_t", "content as a list", "decision as a number",
         "tokens as a boolean"])
def test_other_extra_keys_take_the_general_path_and_are_kept_as_they_came(key, value):
    raw = plain(**{key: value})
    data = orjson.dumps(raw)
    assert decode(data) is None
    trace = trace_from_json(data, "t.json")
    assert trace.events[0].extras[key] == value
    assert trace.to_dict() == raw
    assert trace.events[0].other == {key: value}


@pytest.mark.parametrize("change", [
    lambda r: r["events"][0].update(t=0),
    lambda r: r["events"][0].update(t=2.5e-7),
    lambda r: r["events"][0].update(t=2**63 - 1),  # beyond 64 bits: refused (test_hostile_numbers)
    lambda r: r["events"][0].update(role="", to="", tool="", content_ref="", trusted=False),
    lambda r: r["events"][0].update(agent="代理 🤖", content="ünïcødé \u2028 \"q\" \\ :"),
    lambda r: r["events"][0].update(end_t=1e-300, tokens=0, cost_usd=0.0),
    lambda r: r.update(edges=[]),
    lambda r: r.update(metrics={}, rewards={"team": -1, "x": 1e308}),
    lambda r: r["costs"].update(usd=-3.5, tool_calls=0),
    lambda r: r.pop("system") and r.pop("topology") and r.pop("metrics"),
], ids=["t zero", "t tiny", "t at 64 bits", "empty optional strings", "unicode", "zeros",
        "no edges", "negative and huge rewards", "extra cost channels", "only required keys"])
def test_schema_accepted_edge_cases_take_the_compiled_path_unchanged(change):
    raw = example_dict()
    change(raw)
    assert VALIDATOR.is_valid(raw)
    data = json.dumps(raw, ensure_ascii=False).encode()
    assert decode(data) is not None
    loaded = trace_from_json(data, "t.json").to_dict()
    assert loaded == raw
    assert [type(e["t"]) for e in loaded["events"]] == [type(e["t"]) for e in raw["events"]]


def test_a_key_twice_is_never_decoded_by_the_compiled_path():
    data = orjson.dumps(plain(content="x")).replace(b'"content":"x"', b'"content":"x","content":"y"')
    assert decode(data) is None
    assert refusal(data).problem.startswith("the key 'content' comes twice")


def test_an_escaped_colon_sends_the_text_to_the_general_path():
    data = orjson.dumps(plain(content="a:b")).replace(b'"a:b"', b'"a\\u003ab"')
    assert decode(data) is None
    assert trace_from_json(data, "t.json").events[0].content == "a:b"


def test_colons_inside_strings_and_keys_are_no_duplicates_to_the_compiled_path():
    raw = plain(content='{"a": 1, "a": 2} :: "t": x', role="r:1")
    assert decode(json.dumps(raw, indent=2).encode()) is not None


def test_a_number_beyond_the_finite_is_refused_on_the_compiled_path_too():
    data = orjson.dumps(plain(tokens=5)).replace(b'"tokens":5', b'"tokens":1e400')
    assert decode(data) is None
    error = refusal(data)
    assert (error.place, error.problem) == ("events[0].tokens",
                                            "1e400 is not a finite number, which a trace cannot hold")


@pytest.mark.parametrize("change, place, problem", [
    (lambda r: r["events"].append(dict(r["events"][0])), "events[8].id", "duplicate event id"),
    (lambda r: r["edges"].append({"src": "e1", "dst": "nowhere", "type": "causal"}),
     "edges[8].dst", "the edge points at 'nowhere'"),
], ids=["duplicate event id", "edge to no event"])
def test_references_are_checked_on_the_compiled_path(change, place, problem):
    raw = example_dict()
    change(raw)
    data = orjson.dumps(raw)
    assert decode(data) is not None  # the schema holds: orchviz's own rules refuse it
    error = refusal(data)
    assert error.place == place and error.problem.startswith(problem)


@pytest.mark.parametrize("seed", range(300))
def test_bytes_load_exactly_when_the_schema_accepts_them(seed):
    """The mutation corpus of test_roundtrip, read as bytes: through the compiled path where
    it decodes, else the general one."""
    rng = random.Random(seed)
    raw = example_dict()
    for _ in range(rng.randint(1, 2)):
        try:
            rng.choice(MUTATIONS)(raw, rng)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            pass
    schema_ok = VALIDATOR.is_valid(raw)
    data = orjson.dumps(raw)
    try:
        trace_from_json(data, "<mutant>")
        loaded = True
    except TraceError:
        loaded = False
    assert loaded == (schema_ok and references_resolve(raw)), raw
    try:
        trace_from_dict(copy.deepcopy(raw), "<mutant>")
        expected = None
    except TraceError as err:
        expected = str(err)
    if expected is not None:  # the same sentence as the dict path says
        with pytest.raises(TraceError) as caught:
            trace_from_json(data, "<mutant>")
        assert str(caught.value).split(": ", 1)[1] == expected.split(": ", 1)[1]


# -- the compiled path and the general path build the same trace -------------------------------


def general(raw: dict) -> Trace:
    """The trace the general path builds of a parsed object (pydantic validates, msgspec builds)."""
    return trace_from_dict(copy.deepcopy(raw), "t.json")


def test_the_compiled_path_reads_as_the_general_path_reads():
    data = orjson.dumps(plain(end_t=-1, tokens=-2, cost_usd=0.25, decision="stop"))
    record, model = decode(data), general(orjson.loads(data))
    for r, m in zip(record.events, model.events):
        for name in ("id", "t", "type", "agent", "role", "from_", "to", "tool", "content_ref",
                     "trusted", "content", "end_t", "tokens", "cost_usd", "model", "decision",
                     "finish", "text", "extras"):
            assert getattr(r, name) == getattr(m, name), name
    assert (record.system, record.topology, record.metrics) == (model.system, model.topology,
                                                                model.metrics)


def test_a_trace_hashes_alike_on_either_path_without_bytes():
    record = decode(orjson.dumps(example_dict()))
    assert record.sha256 == general(example_dict()).sha256
    assert record.to_dict() == example_dict()


def test_the_compiled_path_builds_the_trace_validation_builds():
    raw = synth_trace(6, 80, "hierarchical", seed=3)
    built, validated = decode(orjson.dumps(raw)), general(raw)
    assert built == validated == _built(raw)
    assert built.to_dict() == validated.to_dict() == raw
    assert all(type(e) is Event for e in built.events)


def test_each_event_has_the_same_fields_and_extras_on_either_path():
    """Events of every shape in one trace (optional schema keys and extension keys given or
    not): each event the compiled path decodes holds the same fields, and gives the same
    extras in the same order, as the general path's."""
    raw = example_dict()
    first = raw["events"][0]
    optional = {"role": "r", "from": "a", "to": "b", "tool": "t", "content_ref": "ref",
                "trusted": False}
    extension = {"content": "x: y", "end_t": 9, "tokens": 2.5, "model": "m", "call_id": 3,
                 "prompt_token_ids": [1]}
    raw["events"] = []
    for n in range(64):
        event = {key: first[key] for key in ("t", "type", "agent")}
        event["id"] = f"e{n}"
        event.update((k, v) for i, (k, v) in enumerate(optional.items()) if n >> i & 1)
        event.update((k, v) for i, (k, v) in enumerate(extension.items()) if (n + i) % 3)
        raw["events"].append(event)
    raw["edges"] = [{"src": "e0", "dst": "e1", "type": "causal"}]
    built, validated = decode(orjson.dumps(raw)), general(raw)
    assert built == validated
    for b, v, given in zip(built.events, validated.events, raw["events"]):
        assert msgspec.structs.astuple(b) == msgspec.structs.astuple(v)
        assert list(b.extras.items()) == list(v.extras.items())
        assert b.to_dict() == v.to_dict() == given


def test_the_analysis_is_the_same_on_either_path():
    raw = synth_trace(30, 600, "swarm", seed=5)
    assert analyze(decode(orjson.dumps(raw))).figures == analyze(general(raw)).figures


# -- other keys -----------------------------------------------------------------------------------


def test_other_keys_are_kept_in_one_field_the_file_never_names():
    raw = plain(kind="step", content=123, inferred_by={"rule": "r"})
    trace = trace_from_json(orjson.dumps(raw), "t.json")
    event = trace.events[0]
    assert event.other == {"kind": "step", "content": 123, "inferred_by": {"rule": "r"}}
    assert event.content is None and event.extras["content"] == 123
    assert OTHER not in event.to_dict() and event.to_dict() == raw["events"][0]


def test_events_differing_only_in_other_keys_are_not_equal():
    a = trace_from_json(orjson.dumps(plain(kind="a")), "t.json")
    b = trace_from_json(orjson.dumps(plain(kind="b")), "t.json")
    assert a.events[0] != b.events[0] and a != b
    assert a == trace_from_json(orjson.dumps(plain(kind="a")), "t.json")


def test_an_event_naming_the_field_of_other_keys_takes_the_general_path_and_is_kept():
    raw = plain(**{OTHER: {"x": 1}, "kind": "k"})
    data = orjson.dumps(raw)
    assert decode(data) is None
    assert trace_from_json(data, "t.json").to_dict() == raw


def test_an_event_built_from_its_keys_sorts_them_as_a_reader_does():
    keys = {"id": "e", "t": 1, "type": "message", "agent": "a", "from": "b", "tokens": "3",
            "end_t": 2, "prompt_token_ids": [1, True], "kind": "k"}
    event = Event.of(**keys)
    assert (event.from_, event.end_t, event.tokens) == ("b", 2.0, None)
    assert event.other == {"tokens": "3", "prompt_token_ids": [1, True], "kind": "k"}
    assert event.to_dict() == keys and hash(event) != hash(Event.of(id="f", t=1, type="message",
                                                                      agent="a"))


def test_the_colon_count_is_the_texts_and_stops_at_any_escape_that_may_spell_one():
    from viz_app.io.decode import _colons_unless_escaped

    pick = random.Random(7)
    pieces = ["a", ":", "::", "\\u003a", "\\\\u003a", "\\", "\\u0030", "\\u00e9", "é",
              '\\"', "\\n", " "]
    texts = [orjson.dumps({"k:" * pick.randrange(3): "".join(
        pick.choice(pieces) for _ in range(pick.randrange(12)))}) for _ in range(400)]
    texts += [b"", b"{}", b"\\u003", b"x\\u003", b"\\u00", b'"\\u003a"']
    found = [_colons_unless_escaped(t) for t in texts]
    assert found == [None if b"\\u003" in t else t.count(b":") for t in texts]
    assert None in found and any(found)


def test_a_large_texts_colons_counted_a_piece_at_a_time_are_its_own():
    """Escapes and colons on either side of every border between pieces are counted and found
    as in one pass over the whole text."""
    from viz_app.io.decode import PIECE, _colons_unless_escaped

    text = bytearray(b"x" * (3 * PIECE + 7))
    for border in (PIECE, 2 * PIECE, 3 * PIECE):
        text[border - 2:border + 2] = b"::::"
    plain_text = bytes(text)
    assert _colons_unless_escaped(plain_text) == 12
    for start in range(PIECE - 6, PIECE + 2):  # an escape cut by the border at every point
        escaped = bytearray(plain_text)
        escaped[start:start + 6] = b"\\u003a"
        assert _colons_unless_escaped(bytes(escaped)) is None, start
    assert _colons_unless_escaped(plain_text[:-3] + b"\\u00") == 12  # too short to spell one


def test_a_large_trace_written_back_in_pieces_has_the_colons_written_back_at_once():
    from viz_app.io.decode import _ENCODER, WRITTEN_IN_PIECES, _colons_written_back, colons

    record = decode(orjson.dumps(synth_trace(40, 3000, "hierarchical", seed=2)))
    assert colons(_ENCODER.encode(record)) == _colons_written_back(
        record, WRITTEN_IN_PIECES) > 3000


def test_a_key_twice_in_a_large_trace_is_never_decoded_by_the_compiled_path():
    from viz_app.io.decode import WRITTEN_IN_PIECES

    raw = synth_trace(40, 6000, "hierarchical", seed=2)
    raw["events"][-1]["model"] = "m"
    data = orjson.dumps(raw)
    assert len(data) > WRITTEN_IN_PIECES and decode(data) is not None
    twice = data.replace(b'"model":"m"', b'"model":"m","model":"n"')
    assert decode(twice) is None
    assert refusal(twice).place == "events[5999].model"


def test_a_pools_rows_are_proved_free_of_keys_given_twice_as_a_file_is(tmp_path):
    """A pool's reader counts the colons of a row group's JSON columns at once: a key given
    twice in any of them is still refused with the file's sentence, colons inside strings are
    none, and an escaped colon still goes to the general path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from viz_app.io import pool

    traces = [trace_from_dict(plain(content=text), f"t{i}") for i, text in
              enumerate(["x", "x", 'a "b": 1, "c":: d', "a:b", "x"])]
    for i, trace in enumerate(traces):
        trace.trace_id = f"t{i}"
    location = tmp_path / "pool"
    pool.write_pool(traces, str(location), row_group_rows=8)
    shard = pool.shards(str(location))[0]
    table = pq.read_table(shard.url)
    events = table.column("events").to_pylist()
    events[1] = events[1].replace('"content":"x"', '"content":"x","content":"y"')
    events[3] = events[3].replace('"a:b"', '"a\\u003ab"')
    rewards = table.column("rewards").to_pylist()
    rewards[4] = rewards[4][:-1] + ', "' + rewards[4][2:rewards[4].index('"', 2)] + '": 0}'
    for name, values in (("events", events), ("rewards", rewards)):
        table = table.set_column(table.schema.get_field_index(name), name,
                                 pa.array(values, pa.string()))
    pq.write_table(table, shard.url)
    errors = []
    read = dict(pool.read_shard(shard, on_error=errors.append))
    assert sorted(read) == [0, 2, 3]
    assert read[3].events[0].content == "a:b"
    assert [(e.place.split(":")[0], "comes twice" in e.problem) for e in errors] == [
        ("row 1", True), ("row 4", True)]


# -- provenance ---------------------------------------------------------------------------------


def test_a_label_saved_on_a_trace_the_compiled_path_read_records_the_hash_of_its_file(tmp_path):
    """The hash a label records is of the file's bytes as they were read, not of the trace
    written again: here a large file (its proof made a piece at a time), written as no orjson
    writer would write it."""
    from factories import PREMATURE, PREMATURE_ID, make_workspace
    from viz_app.io.decode import WRITTEN_IN_PIECES
    from viz_app.io.native import dump_trace
    from viz_app.labels.label import Reviewer

    raw = json.loads(PREMATURE.read_bytes())
    raw["events"][0]["content"] = "a: b, " * (WRITTEN_IN_PIECES // 6 + 1)
    data = json.dumps(raw, indent=3).encode()
    assert len(data) > WRITTEN_IN_PIECES and decode(data) is not None
    (tmp_path / "library").mkdir()
    (tmp_path / "library" / "big.json").write_bytes(data)
    ws = make_workspace(tmp_path, traces=[tmp_path / "library"])
    trace = ws.library.trace(PREMATURE_ID)
    exact = hashlib.sha256(data).hexdigest()
    assert trace.sha256 == exact != hashlib.sha256(dump_trace(trace)).hexdigest()
    saved = ws.labelling.save_answers(trace, "e13", {"stopping_correctness": "premature",
                                           "stop_should_have_been": "e15"},
                            Reviewer(name="ann", via="cli"))
    assert saved and {label.trace_sha256 for label in saved} == {exact}
    assert {label.trace_sha256 for label in ws.labelling.all(PREMATURE_ID)} == {exact}
