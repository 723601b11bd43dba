"""Rows into Arrow for Parquet and `datasets` folders: the faster conversion
(`viz_app.export.hf._array`) makes exactly what `pa.array` infers, for any JSON-like values, and
loses no key a chat message carries."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from viz_app.export.hf import _array, read_hf_rows, write_hf_inferred

scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                    st.floats(allow_nan=False), st.text(max_size=8))
keys = st.sampled_from(["role", "content", "name", "a", "b"])
json_like = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=12)
message = st.builds(lambda role, content: {"role": role, "content": content},
                    st.sampled_from(["user", "assistant"]), st.text(max_size=12))
odd_message = st.one_of(
    message,
    st.builds(lambda m, extra: {**m, "name": extra}, message, st.text(max_size=4)),
    st.builds(lambda m: {"content": m["content"], "role": m["role"]}, message),
    st.builds(lambda m: {**m, "content": None}, message),
    st.just({}))


def _same_as_pyarrow(values):
    try:
        expected = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as error:
        expected = type(error)
    try:
        found = _array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError) as error:
        found = type(error)
    if isinstance(expected, type) or isinstance(found, type):  # both fail (the column is
        assert isinstance(expected, type) and isinstance(found, type)  # then JSON text)
        return
    assert found.type == expected.type
    assert found.equals(expected)
    assert found.to_pylist() == expected.to_pylist()


@settings(max_examples=300, deadline=None)
@given(st.lists(json_like, max_size=6))
def test_any_json_like_column_converts_as_pyarrow_infers_it(values):
    _same_as_pyarrow(values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(keys, json_like, min_size=1, max_size=3), max_size=5),
       st.booleans())
def test_columns_of_objects_convert_as_pyarrow_infers_them(objects, same_keys):
    if same_keys and objects:  # every object with the first's keys, in its order
        objects = [{k: o.get(k) for k in objects[0]} for o in objects]
    _same_as_pyarrow(objects)
    _same_as_pyarrow([{"prompt": o, "n": 1} for o in objects])
    _same_as_pyarrow([[o, o] for o in objects])


@settings(max_examples=200, deadline=None)
@given(st.lists(odd_message, min_size=1, max_size=6),
       st.lists(st.lists(st.integers(0, 5), max_size=4), min_size=1, max_size=6),
       st.booleans())
def test_conversations_sharing_messages_convert_as_pyarrow_infers_them(pool, picks, nested):
    """Rows of one conversation share its message objects; messages of another shape (a key
    more, keys in another order, a null, no keys) are converted as pyarrow infers them too."""
    conversations = [[pool[i % len(pool)] for i in pick] for pick in picks]
    _same_as_pyarrow(conversations)
    if nested:
        _same_as_pyarrow([{"token_ids": [], "raw_content": c, "image_urls": []}
                          for c in conversations])


def _facts(count):
    return {"format": "agent-lightning", "framework": "Agent Lightning", "rows": count,
            "labels_read": 0, "labels_used": 0, "traces": 0, "rubric": None,
            "rubric_versions": [], "options": {}, "left_out": [], "notes": [], "agreement": [],
            "reviewers": []}


def test_every_key_of_a_message_survives_a_datasets_folder(tmp_path):
    shared = {"role": "user", "content": "Task: t1\n"}
    rows = [{"prompt": {"raw_content": [shared, {"role": "assistant", "content": "ok"}]}},
            {"prompt": {"raw_content": [shared, {"role": "assistant", "content": "go",
                                                 "name": "coder_1"}]}},
            {"prompt": {"raw_content": [{"content": "keys in another order", "role": "user"}]}}]
    write_hf_inferred(iter(rows), tmp_path / "out", _facts, batch_rows=2)
    _, back = read_hf_rows(tmp_path / "out")
    assert back[1]["prompt"]["raw_content"][1] == {"role": "assistant", "content": "go",
                                                   "name": "coder_1"}
    assert back[0]["prompt"]["raw_content"][1] == {"role": "assistant", "content": "ok",
                                                   "name": None}
    assert back[2]["prompt"]["raw_content"] == [{"role": "user",
                                                 "content": "keys in another order",
                                                 "name": None}]


def test_the_arrow_stream_file_ends_where_the_stream_does(tmp_path):
    """Its blocks are allocated ahead of each batch, and the file is cut back to the stream:
    nothing follows the end-of-stream marker, and it reads back whole."""
    rows = [{"prompt": "x" * (i * 1000), "n": i} for i in range(7)]
    write_hf_inferred(iter(rows), tmp_path / "out", _facts, batch_rows=2)
    data = (tmp_path / "out" / "arrow" / "data-00000-of-00001.arrow").read_bytes()
    assert data.endswith(b"\xff\xff\xff\xff\x00\x00\x00\x00")
    assert pa.ipc.open_stream(data).read_all().to_pylist() == rows
    sink = pa.BufferOutputStream()  # the same stream written in memory: the same bytes
    with pa.ipc.new_stream(sink, pa.ipc.open_stream(data).schema) as out:
        for batch in pa.ipc.open_stream(data):
            out.write_batch(batch)
    assert sink.getvalue().to_pybytes() == data
