"""What the schema accepts loads; what orchviz writes validates; a round trip loses nothing."""

from __future__ import annotations

import copy
import hashlib
import json
import random

import orjson
import pytest

from conftest import need
from factories import REFERENCE, SCHEMA_PATH, as_trace, demo_paths, example_dict, reference_validator
from viz_app import TraceError, dump_trace, load_trace, write_trace
from viz_app.io.native import trace_from_dict
from viz_app.synth import hostile_trace, swarm_trace, synth_trace, tree_trace

VALIDATOR = reference_validator()


def roundtrip(raw: dict, tmp_path) -> dict:
    path = write_trace(as_trace(raw), tmp_path / "out.json")
    return json.loads(path.read_text("utf-8"))


def test_the_packaged_schema_is_the_reference_schema():
    if not (REFERENCE / "trace_schema.json").exists():
        need(f"the shared reference folder ({REFERENCE}) is not beside this checkout")
    assert SCHEMA_PATH.read_bytes() == (REFERENCE / "trace_schema.json").read_bytes()


@pytest.mark.parametrize("make", [example_dict, hostile_trace, lambda: tree_trace(3, 3),
                                  lambda: swarm_trace(8), lambda: synth_trace(40, 800, seed=3)],
                         ids=["example", "hostile", "tree", "swarm", "synth"])
def test_a_round_trip_loses_no_field(make, tmp_path):
    raw = make()
    assert roundtrip(raw, tmp_path) == raw


@pytest.mark.parametrize("path", demo_paths(), ids=lambda p: p.name)
def test_a_demo_trace_round_trips_and_validates(path, tmp_path):
    raw = json.loads(path.read_text("utf-8"))
    written = roundtrip(raw, tmp_path)
    assert written == raw
    VALIDATOR.validate(written)


def test_extra_event_keys_of_any_type_are_kept_as_they_came(tmp_path):
    raw = example_dict()
    raw["events"][0].update({"tokens": "lots", "end_t": -3, "content": {"parts": [1, 2]},
                             "decision": "ponder", "x-vendor": [None, True, 1.5]})
    trace = as_trace(raw)
    assert trace.events[0].tokens is None and trace.events[0].content is None
    assert roundtrip(raw, tmp_path) == raw


def test_a_gzip_trace_is_written_and_read_back(tmp_path):
    trace = as_trace(swarm_trace(4))
    path = write_trace(trace, tmp_path / "swarm.json.gz")
    assert load_trace(path).to_dict() == trace.to_dict()


def test_a_minimal_trace_with_only_required_keys_loads():
    raw = {"trace_id": "t", "task_id": "k", "events": [{"id": "a", "t": 0, "type": "message",
                                                        "agent": "solo"}],
           "edges": [], "rewards": {}, "costs": {"tokens": 0, "wall_clock_s": 0}}
    assert VALIDATOR.is_valid(raw)
    assert as_trace(raw).to_dict() == raw


def test_written_json_is_what_dump_trace_returns(tmp_path):
    trace = as_trace(example_dict())
    path = write_trace(trace, tmp_path / "t.json")
    assert path.read_bytes() == dump_trace(trace)


# -- the loader agrees with the reference schema on random mutations ------------------------

MUTATIONS = [
    lambda r, g: r["events"][g.randrange(len(r["events"]))].update(t=g.choice([-1, "1", None, 2.5, 1e9, True])),
    lambda r, g: r["events"][g.randrange(len(r["events"]))].update(type=g.choice(["spawn", "fork", "", 3])),
    lambda r, g: r["events"][g.randrange(len(r["events"]))].update(agent=g.choice(["", "x", 5, "<b>"])),
    lambda r, g: r["events"][g.randrange(len(r["events"]))].update(
        **{g.choice(["role", "from", "to", "tool", "content_ref"]): g.choice(["ok", 1, None, ""])}),
    lambda r, g: r["events"][g.randrange(len(r["events"]))].update(trusted=g.choice([True, "no", 0])),
    lambda r, g: r["events"][g.randrange(len(r["events"]))].pop(g.choice(["id", "t", "type", "agent", "role"]), None),
    lambda r, g: r["events"][g.randrange(len(r["events"]))].update(**{"x_" + str(g.random()): g.choice([1, "s", [], {}])}),
    lambda r, g: r["edges"][g.randrange(len(r["edges"]))].update(type=g.choice(["causal", "loop", 0])),
    lambda r, g: r["edges"][g.randrange(len(r["edges"]))].update(extra=1),
    lambda r, g: r.update(topology=g.choice(["swarm", "ring", None, 4])),
    lambda r, g: r.update(system=g.choice(["s", 1, None])),
    lambda r, g: r.update(**{g.choice(["notes", "version"]): "x"}),
    lambda r, g: r.pop(g.choice(["trace_id", "task_id", "events", "edges", "rewards", "costs", "metrics"]), None),
    lambda r, g: r["rewards"].update(**{g.choice(["team", "new"]): g.choice([0.5, "high", None, False])}),
    lambda r, g: r["costs"].update(**{g.choice(["tokens", "wall_clock_s", "messages", "usd"]): g.choice([-1, 3, "3"])}),
    lambda r, g: r.update(metrics=g.choice([{}, {"a": 1}, {"a": "b"}, []])),
    lambda r, g: r.update(events=g.choice([[], r["events"][:1], "events"])),
    lambda r, g: r.update(trace_id=g.choice(["", "ok", 7])),
]


def references_resolve(raw: dict) -> bool:
    """orchviz refuses, beyond the schema, duplicate event ids and edges to no event."""
    ids = [e["id"] for e in raw["events"]]
    return len(ids) == len(set(ids)) and all(
        edge["src"] in ids and edge["dst"] in ids for edge in raw["edges"])


@pytest.mark.parametrize("seed", range(300))
def test_the_loader_accepts_exactly_what_the_schema_accepts(seed):
    rng = random.Random(seed)
    raw = example_dict()
    for _ in range(rng.randint(1, 2)):
        try:
            rng.choice(MUTATIONS)(raw, rng)
        except (KeyError, IndexError, ValueError, TypeError, AttributeError):
            pass
    schema_ok = VALIDATOR.is_valid(raw)
    try:
        trace_from_dict(copy.deepcopy(raw), "<mutant>")
        loaded = True
    except TraceError:
        loaded = False
    if schema_ok:
        assert loaded == references_resolve(raw), raw
    else:
        assert not loaded, raw


# -- the trace's hash: one definition --------------------------------------------------------------


def test_a_trace_read_from_a_file_is_hashed_by_its_bytes(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(example_dict(), indent=1), "utf-8")
    assert load_trace(path).sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_trace_read_from_no_bytes_of_its_own_is_hashed_by_its_canonical_json():
    trace = as_trace(example_dict())
    canonical = orjson.dumps(trace.to_dict(), option=orjson.OPT_SORT_KEYS)
    assert trace.sha256 == hashlib.sha256(canonical).hexdigest()


def test_a_label_records_the_traces_hash():
    from viz_app.labels.label import trace_sha256

    trace = as_trace(example_dict())
    assert trace_sha256(trace) == trace.sha256 != ""
