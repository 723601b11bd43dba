"""Bad input raises TraceError, and nothing else, naming the file, the place and the problem."""

from __future__ import annotations

import gzip
import json

import pytest

from factories import example_dict, write_json
from viz_app import TraceError, load_trace, load_traces


def load_error(path, **kwargs) -> TraceError:
    with pytest.raises(TraceError) as caught:
        load_trace(path, **kwargs)
    assert str(path) in str(caught.value), "the message names the file"
    return caught.value


def write_bytes(tmp_path, data: bytes, name: str = "bad.json"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_text_that_is_not_json_names_line_and_column(tmp_path):
    err = load_error(write_bytes(tmp_path, b'{"trace_id": "a",\n  nonsense }'))
    assert err.place == "line 2, column 3"
    assert "not valid JSON" in err.problem


def test_truncated_file_says_it_looks_truncated(tmp_path):
    data = json.dumps(example_dict()).encode()[:-40]
    err = load_error(write_bytes(tmp_path, data))
    assert err.place.startswith("line 1, column")
    assert "truncated" in err.problem


def test_empty_file_says_it_is_empty(tmp_path):
    err = load_error(write_bytes(tmp_path, b"  \n"))
    assert err.problem == "the file is empty"


def test_bytes_that_are_not_utf8_name_the_byte(tmp_path):
    data = json.dumps(example_dict()).encode().replace(b"orchestrator", b"orch\xffstrator", 1)
    err = load_error(write_bytes(tmp_path, data))
    assert "not UTF-8" in err.problem
    assert "0xff" in err.problem
    assert err.place.startswith("line 1, byte")


def test_a_top_level_array_is_refused(tmp_path):
    err = load_error(write_json(tmp_path, [example_dict()]))
    assert err.place == "top level"
    assert "is an array" in err.problem


def test_a_missing_required_key_is_named(tmp_path):
    raw = example_dict()
    del raw["costs"]["wall_clock_s"]
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "costs"
    assert "'wall_clock_s' is missing" in err.problem


def test_a_missing_event_key_names_the_event(tmp_path):
    raw = example_dict()
    del raw["events"][2]["agent"]
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "events[2]"
    assert "'agent'" in err.problem


def test_empty_events_are_refused(tmp_path):
    raw = example_dict()
    raw["events"], raw["edges"] = [], []
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "events"
    assert "at least one event" in err.problem


def test_an_unknown_event_type_lists_the_known_ones(tmp_path):
    raw = example_dict()
    raw["events"][4]["type"] = "teleport"
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "events[4].type"
    assert "unknown event type 'teleport'" in err.problem
    assert "orchestrator_decision" in err.problem


def test_an_unknown_edge_type_is_named(tmp_path):
    raw = example_dict()
    raw["edges"][1]["type"] = "wormhole"
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "edges[1].type"
    assert "unknown edge type 'wormhole'" in err.problem


def test_an_unknown_topology_is_named(tmp_path):
    raw = example_dict()
    raw["topology"] = "blob"
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "topology"


@pytest.mark.parametrize("field,value,expected", [
    ("t", "4", "expected a number, got a string"),
    ("t", True, "expected a number, got true or false"),
    ("agent", 7, "expected a string, got a number"),
    ("trusted", "yes", "expected true or false, got a string"),
])
def test_a_wrong_value_type_names_the_field_and_both_types(tmp_path, field, value, expected):
    raw = example_dict()
    raw["events"][4][field] = value
    err = load_error(write_json(tmp_path, raw))
    assert err.place == f"events[4].{field}"
    assert err.problem == expected


def test_a_reward_that_is_not_a_number_is_refused(tmp_path):
    raw = example_dict()
    raw["rewards"]["team"] = "high"
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "rewards.team"


def test_a_negative_time_is_refused(tmp_path):
    raw = example_dict()
    raw["events"][3]["t"] = -1
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "events[3].t"
    assert "negative" in err.problem


def test_a_negative_cost_is_refused(tmp_path):
    raw = example_dict()
    raw["costs"]["tokens"] = -5
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "costs.tokens"
    assert "negative" in err.problem


def test_a_duplicate_event_id_names_both_places(tmp_path):
    raw = example_dict()
    raw["events"][5]["id"] = "e2"
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "events[5].id"
    assert "duplicate event id 'e2'" in err.problem and "events[1]" in err.problem


def test_an_edge_to_no_event_is_refused(tmp_path):
    raw = example_dict()
    raw["edges"][3]["dst"] = "e99"
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "edges[3].dst"
    assert "'e99'" in err.problem


def test_an_unknown_top_level_key_is_refused(tmp_path):
    raw = example_dict()
    raw["comments"] = "nice run"
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "comments"
    assert "top level" in err.problem


def test_pathological_nesting_in_the_json_is_refused(tmp_path):
    err = load_error(write_bytes(tmp_path, b"[" * 50_000 + b"]" * 50_000))
    assert "too deeply" in err.problem


def test_pathological_nesting_inside_an_event_is_refused(tmp_path):
    raw = example_dict()
    deep: list = []
    for _ in range(250):
        deep = [deep]
    raw["events"][0]["payload"] = deep
    err = load_error(write_json(tmp_path, raw))
    assert err.place == "events[0].payload"
    assert "levels deep" in err.problem


def test_a_file_over_the_size_limit_is_refused_before_reading(tmp_path):
    path = write_json(tmp_path, example_dict())
    err = load_error(path, max_bytes=100)
    assert "over the" in err.problem and "limit" in err.problem


def test_a_gzip_file_over_the_limit_once_decompressed_is_refused(tmp_path):
    path = write_bytes(tmp_path, gzip.compress(b" " * 5000), "big.json.gz")
    err = load_error(path, max_bytes=1000)
    assert "once decompressed" in err.problem


def test_a_gzip_bomb_is_refused_with_its_real_size_and_the_limit_and_is_not_inflated(tmp_path):
    """Issue 39: the refusal said "the file is 1.0 MB" of a 10 kB file that inflates to 100 MB."""
    bomb = gzip.compress(b" " * 100_000_000, compresslevel=9)
    path = write_bytes(tmp_path, bomb, "bomb.json.gz")
    err = load_error(path, max_bytes=1_000_000)
    assert err.problem == (f"is {len(bomb) / 1e3:.1f} kB of gzip that inflates past the 1 MB "
                           "limit once decompressed (inflating stopped there; set "
                           "ORCHVIZ_MAX_BYTES to raise it)")


def test_a_missing_file_is_a_trace_error(tmp_path):
    err = load_error(tmp_path / "nowhere.json")
    assert "cannot be read" in err.problem


def test_a_bad_line_of_a_pool_names_its_line(tmp_path):
    good = json.dumps(example_dict())
    path = write_bytes(tmp_path, f"{good}\n{{\"trace_id\": 1}}\n".encode(), "pool.jsonl")
    with pytest.raises(TraceError) as caught:
        list(load_traces(path))
    assert caught.value.place.startswith("line 2")


def test_a_pool_reports_bad_lines_and_still_loads_the_others(tmp_path):
    good = example_dict()
    other = example_dict()
    other["trace_id"] = "second"
    lines = [json.dumps(good), "not json", json.dumps(other)]
    path = write_bytes(tmp_path, "\n".join(lines).encode(), "pool.jsonl")
    errors: list[TraceError] = []
    loaded = list(load_traces(path, on_error=errors.append))
    assert [t.trace_id for t in loaded] == ["demo-trace-001", "second"]
    assert len(errors) == 1 and errors[0].place.startswith("line 2")


def test_uploaded_bytes_are_reported_by_their_name():
    with pytest.raises(TraceError) as caught:
        load_trace(b"[1, 2]", name="upload.json")
    assert str(caught.value).startswith("upload.json: top level:")


@pytest.mark.parametrize("limit", [200 * 1024 * 1024, 1024 * 1024, 1_000_000])
def test_a_size_over_the_limit_never_reads_as_under_it(limit):
    """The default limit is 200 MiB: a gzip bomb just over it once read "209.7 MB, over the
    210 MB limit". The size is rounded up and the limit down."""
    from viz_app.io.native import limit_mb, size_mb

    shown, allowed = float(size_mb(limit + 1, limit).split()[0]), float(limit_mb(limit).split()[0])
    assert shown > allowed and allowed <= limit / 1e6 < shown


def test_a_gzip_bomb_just_over_the_limit_says_a_size_over_it(tmp_path):
    path = write_bytes(tmp_path, gzip.compress(b" " * (1024 * 1024 + 1)), "bomb.json.gz")
    err = load_error(path, max_bytes=1024 * 1024)
    assert "of gzip that inflates past the 1 MB limit" in err.problem  # not "the file is"
