"""Pools on local storage: what goes in comes back, one trace opens alone, bad shards are named."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from factories import (DEMO_DIR, PREMATURE_ID, as_trace, copy_demos, demo_paths, demo_trace,
                       reference_validator, write_json)
from viz_app.cli import main
from viz_app.errors import TraceError
from viz_app.io import pool
from viz_app.io.native import dump_trace, load_trace
from viz_app.io.pool import PoolError, Shard
from viz_app.synth import hostile_trace, synth_trace

VALIDATOR = reference_validator()


def demo_traces():
    return [load_trace(path) for path in demo_paths()]


def synth_traces(count: int = 6):
    topologies = ["hierarchical", "swarm", "debate", "centralized", "harness", "mixed"]
    return [as_trace(synth_trace(5 + i, 60 + 7 * i, topologies[i % len(topologies)], seed=i))
            for i in range(count)]


def read_all(location: str) -> tuple[list[tuple[Shard, int, object]], list[TraceError]]:
    errors: list[TraceError] = []
    rows = [(shard, row, trace) for shard in pool.shards(location)
            for row, trace in pool.read_shard(shard, errors.append)]
    return rows, errors


# -- round trip -------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt,compress", [("parquet", True), ("jsonl", True), ("jsonl", False)],
                         ids=["parquet", "jsonl.gz", "jsonl"])
def test_a_pool_gives_back_every_trace_it_was_written_from(fmt, compress, tmp_path):
    traces = demo_traces() + synth_traces() + [as_trace(hostile_trace())]
    result = pool.write_pool(traces, str(tmp_path / "pool"), format=fmt, compress=compress,
                             shard_rows=7, row_group_rows=3)
    assert result.traces == len(traces) and not result.skipped
    assert len(result.shards) == 3 and result.shards == pool.shards(str(tmp_path / "pool"))
    rows, errors = read_all(str(tmp_path / "pool"))
    assert not errors
    back = [trace for _, _, trace in rows]
    assert [t.to_dict() for t in back] == [t.to_dict() for t in traces]
    for trace in back:
        VALIDATOR.validate(orjson.loads(dump_trace(trace)))


def test_a_parquet_pool_keeps_each_traces_hash_and_format(tmp_path):
    traces = demo_traces()
    pool.write_pool(traces, str(tmp_path / "pool"))
    rows, _ = read_all(str(tmp_path / "pool"))
    assert [t.sha256 for _, _, t in rows] == [t.sha256 for t in traces]
    assert {t.source_format for _, _, t in rows} == {"orchviz"}


def test_every_written_shard_and_row_locates_its_trace(tmp_path):
    traces = synth_traces(10)
    pool.write_pool(traces, str(tmp_path / "pool"), shard_rows=4, row_group_rows=2)
    rows, _ = read_all(str(tmp_path / "pool"))
    for shard, row, trace in rows:
        assert pool.read_trace(shard, row).to_dict() == trace.to_dict()
        assert pool.find_trace(str(tmp_path / "pool"), trace.trace_id) == (shard, row)


def test_parquet_columns_are_the_schemas_top_level_fields(tmp_path):
    pool.write_pool(demo_traces()[:2], str(tmp_path / "pool"))
    table = pq.read_table(tmp_path / "pool" / "part-00000.parquet")
    assert table.column_names[:9] == list(pool.FIELDS)
    assert table.column("trace_id").to_pylist() == [t.trace_id for t in demo_traces()[:2]]
    assert json.loads(table.column("events")[0].as_py()) == demo_traces()[0].to_dict()["events"]


# -- one trace alone --------------------------------------------------------------------------


def test_opening_a_trace_reads_only_its_row_group(tmp_path):
    """Every other row group's bytes are overwritten: the trace still opens, and reading the
    whole shard names each spoiled row group."""
    traces = synth_traces(12)
    pool.write_pool(traces, str(tmp_path / "pool"), row_group_rows=3)
    path = tmp_path / "pool" / "part-00000.parquet"
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 4
    data = bytearray(path.read_bytes())
    for group in (0, 1, 3):
        for column in range(meta.num_columns):
            chunk = meta.row_group(group).column(column)
            start = chunk.dictionary_page_offset if chunk.has_dictionary_page \
                else chunk.data_page_offset
            data[start:start + chunk.total_compressed_size] = b"\xff" * chunk.total_compressed_size
    path.write_bytes(bytes(data))
    shard = pool.shards(str(tmp_path / "pool"))[0]
    assert pool.read_trace(shard, 7).to_dict() == traces[7].to_dict()
    rows, errors = read_all(str(tmp_path / "pool"))
    assert [row for _, row, _ in rows] == [6, 7, 8]
    assert [e.place for e in errors] == ["rows 0-2", "rows 3-5", "rows 9-11"]


def test_show_finds_a_trace_by_id_without_reading_other_shards(tmp_path):
    pool.write_pool(demo_traces(), str(tmp_path / "pool"), shard_rows=3)
    for other in sorted((tmp_path / "pool").glob("part-*.parquet"))[1:]:
        other.write_bytes(b"spoiled")
    first = pool.shards(str(tmp_path / "pool"))[0]
    wanted = demo_traces()[1]
    assert pool.find_trace(str(tmp_path / "pool"), wanted.trace_id) == (first, 1)
    assert pool.trace_by_id(str(tmp_path / "pool"), wanted.trace_id).sha256 == wanted.sha256


def test_a_jsonl_trace_is_read_by_its_row(tmp_path):
    traces = synth_traces(5)
    pool.write_pool(traces, str(tmp_path / "pool"), format="jsonl")
    shard = pool.shards(str(tmp_path / "pool"))[0]
    assert pool.read_trace(shard, 3).to_dict() == traces[3].to_dict()
    with pytest.raises(TraceError, match=r"row 9: the shard has fewer rows"):
        pool.read_trace(shard, 9)


def test_a_row_beyond_the_shard_is_named(tmp_path):
    pool.write_pool(demo_traces()[:2], str(tmp_path / "pool"))
    shard = pool.shards(str(tmp_path / "pool"))[0]
    with pytest.raises(TraceError, match=r"part-00000\.parquet: row 5: the shard has 2 rows"):
        pool.read_trace(shard, 5)


# -- what a pool is ---------------------------------------------------------------------------


def test_a_bare_folder_of_shards_is_a_pool_and_a_folder_of_trace_files_is_not(tmp_path):
    bare = tmp_path / "bare"
    (bare / "step=2").mkdir(parents=True)
    traces = synth_traces(3)
    (bare / "step=2" / "b.jsonl.gz").write_bytes(gzip.compress(dump_trace(traces[2], indent=False)))
    (bare / "a.jsonl").write_bytes(b"\n".join(dump_trace(t, indent=False) for t in traces[:2]))
    (bare / "_SUCCESS").write_bytes(b"")
    assert pool.is_pool(str(bare))
    assert [(Path(s.url).name, s.format, s.compressed) for s in pool.shards(str(bare))] == [
        ("a.jsonl", "jsonl", False), ("b.jsonl.gz", "jsonl", True)]
    rows, errors = read_all(str(bare))
    assert not errors and [t.trace_id for _, _, t in rows] == [t.trace_id for t in traces]
    assert pool.find_trace(str(bare), traces[2].trace_id)[1] == 0
    assert not pool.is_pool(str(DEMO_DIR))
    assert not pool.is_pool(str(tmp_path / "missing"))


def test_a_folder_without_shards_is_refused_in_one_sentence(tmp_path):
    with pytest.raises(PoolError, match="is not a pool"):
        pool.shards(str(tmp_path))


def test_a_pool_is_written_only_where_nothing_is(tmp_path):
    copy_demos(tmp_path / "busy")
    with pytest.raises(PoolError, match="is not empty"):
        pool.write_pool(demo_traces(), str(tmp_path / "busy"))


def test_a_trace_id_written_twice_is_skipped_and_said(tmp_path):
    traces = demo_traces()
    result = pool.write_pool(traces + [traces[0]], str(tmp_path / "pool"))
    assert result.traces == len(traces)
    assert len(result.skipped) == 1 and repr(traces[0].trace_id) in result.skipped[0]


def test_a_foreign_shard_with_nested_events_is_read(tmp_path):
    """Parquet written by something else, events as a list of structs: null fields absent."""
    raw = json.loads((DEMO_DIR / "01_centralized_research_faithful.json").read_text("utf-8"))
    events = raw.pop("events")
    keys = sorted({key for event in events for key in event})
    table = pa.table({**{k: [v if isinstance(v, str) else json.dumps(v)] for k, v in raw.items()},
                      "events": [[{key: event.get(key) for key in keys} for event in events]]})
    (tmp_path / "foreign").mkdir()
    pq.write_table(table, tmp_path / "foreign" / "rollouts.parquet")
    rows, errors = read_all(str(tmp_path / "foreign"))
    assert not errors
    assert rows[0][2].to_dict()["events"] == events


# -- bad shards -------------------------------------------------------------------------------


def test_bad_shards_are_named_with_shard_and_row_counted_and_the_rest_read(tmp_path):
    good = synth_traces(4)
    location = tmp_path / "pool"
    pool.write_pool(good[:2], str(tmp_path / "a"))
    location.mkdir()
    (tmp_path / "a" / "part-00000.parquet").rename(location / "a-good.parquet")
    # a truncated Parquet file
    pool.write_pool(good[2:3], str(tmp_path / "b"))
    whole = (tmp_path / "b" / "part-00000.parquet").read_bytes()
    (location / "b-truncated.parquet").write_bytes(whole[:len(whole) // 2])
    # a row that does not validate, between two that do
    rows = [orjson.loads(dump_trace(t)) for t in good[2:4]]
    broken = dict(rows[0], trace_id="broken", events=[{"id": "e1", "t": -1, "type": "spawn",
                                                        "agent": "a"}])
    table = pa.table({name: [None if r.get(name) is None else
                             r[name] if isinstance(r[name], str) else json.dumps(r[name])
                             for r in (rows[0], broken, rows[1])] for name in pool.FIELDS})
    pq.write_table(table, location / "c-one-bad-row.parquet")
    # a shard of another schema
    pq.write_table(pa.table({"prompt": ["hi"], "reward": [1.0]}), location / "d-other.parquet")
    # a bad gzip stream after one good line
    line = gzip.compress(dump_trace(good[0], indent=False) + b"\n")
    (location / "e-bad.jsonl.gz").write_bytes(line + b"\x1f\x8b\x08\x00garbage" * 20)

    found, errors = read_all(str(location))
    assert [(Path(s.url).name, row) for s, row, _ in found] == [
        ("a-good.parquet", 0), ("a-good.parquet", 1), ("c-one-bad-row.parquet", 0),
        ("c-one-bad-row.parquet", 2), ("e-bad.jsonl.gz", 0)]
    named = [(Path(e.file).name, e.place.split(":")[0]) for e in errors]
    assert named == [("b-truncated.parquet", "rows 0 onward"),
                     ("c-one-bad-row.parquet", "row 1"),
                     ("d-other.parquet", "row 0"),
                     ("e-bad.jsonl.gz", "row 1 onward")]
    assert "events[0].t" in str(errors[1]) and "must not be negative" in str(errors[1])
    assert "no column 'trace_id'" in str(errors[2])
    assert "gzip" in str(errors[3])


class CountingGzip(gzip.GzipFile):
    """A gzip stream that counts the reads made of it (of any kind)."""

    reads = 0

    def read(self, *args):
        CountingGzip.reads += 1
        return super().read(*args)

    def read1(self, *args):
        CountingGzip.reads += 1
        return super().read1(*args)

    def readline(self, *args):
        CountingGzip.reads += 1
        return super().readline(*args)


def test_blank_lines_cost_a_few_large_reads_not_one_each(tmp_path, monkeypatch):
    """A 1 MB gzip of blank lines once took 337 s of CPU to index: a read per line."""
    (tmp_path / "p").mkdir()
    line = dump_trace(synth_traces(1)[0], indent=False)
    (tmp_path / "p" / "s.jsonl.gz").write_bytes(gzip.compress(b"\n" * 30_000_000 + line + b"\n"))
    monkeypatch.setattr(pool.gzip, "GzipFile", CountingGzip)
    CountingGzip.reads = 0
    found, errors = read_all(str(tmp_path / "p"))
    assert [row for _, row, _ in found] == [30_000_000] and errors == []
    assert CountingGzip.reads < 100


def test_junk_lines_are_named_once_and_a_shard_of_junk_is_given_up(tmp_path):
    (tmp_path / "p").mkdir()
    line = dump_trace(synth_traces(1)[0], indent=False)
    junk = b"not a trace\n\n" * 200_000
    (tmp_path / "p" / "s.jsonl.gz").write_bytes(gzip.compress(line + b"\n" + junk + line))
    found, errors = read_all(str(tmp_path / "p"))
    assert [row for _, row, _ in found] == [0]
    named, gave_up = errors  # one sentence for the run read so far, one for giving up
    assert named.place.startswith("rows 1 onward: ") and \
        named.problem == "the lines are not JSON objects, so not traces"
    assert gave_up.problem == ("1000 lines in a row held no trace, so the rest of the shard "
                               "was skipped")


def test_a_line_that_is_not_json_is_named_by_row_and_line(tmp_path):
    (tmp_path / "p").mkdir()
    lines = [dump_trace(t, indent=False) for t in synth_traces(2)]
    (tmp_path / "p" / "s.jsonl").write_bytes(lines[0] + b"\n{not json\n" + lines[1] + b"\n")
    found, errors = read_all(str(tmp_path / "p"))
    assert [row for _, row, _ in found] == [0, 2]
    assert len(errors) == 1 and errors[0].place == "row 1: line 2, column 2"


# -- the command line -------------------------------------------------------------------------


def test_pool_write_then_show_prints_the_trace(tmp_path, capsys):
    target = str(tmp_path / "pool")
    assert main(["pool", "write", str(DEMO_DIR), "-o", target, "--shard-rows", "5"]) == 0
    captured = capsys.readouterr()
    assert "wrote 12 traces in 3 shards" in captured.err
    assert main(["pool", "show", target, PREMATURE_ID]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown == demo_trace().to_dict()


def test_pool_write_names_each_unreadable_file_and_writes_the_rest(tmp_path, capsys):
    source = copy_demos(tmp_path / "src", ["10_review_premature_stop"])
    (source / "broken.json").write_text('{"trace_id": "x", "events": [', "utf-8")
    write_json(source, {"trace_id": "y"}, "incomplete.json")
    assert main(["pool", "write", str(source), "-o", str(tmp_path / "pool")]) == 1
    err = capsys.readouterr().err
    assert "broken.json" in err and "incomplete.json" in err and "wrote 1 trace in 1 shard" in err
    assert main(["pool", "show", str(tmp_path / "pool"), PREMATURE_ID]) == 0


def test_pool_show_of_an_unknown_id_is_one_line(tmp_path, capsys):
    pool.write_pool(demo_traces()[:1], str(tmp_path / "pool"))
    assert main(["pool", "show", str(tmp_path / "pool"), "nope"]) == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        f"orchviz: {tmp_path / 'pool'}: the pool holds no trace with id 'nope'"]


def test_a_large_row_group_is_read_a_few_rows_at_a_time(tmp_path, monkeypatch):
    traces = synth_traces(20)
    pool.write_pool(traces, str(tmp_path / "pool"), row_group_rows=20)
    monkeypatch.setattr(pool, "STREAM_ABOVE", 0)
    rows, errors = read_all(str(tmp_path / "pool"))
    assert not errors and [t.to_dict() for _, _, t in rows] == [t.to_dict() for t in traces]
    shard = pool.shards(str(tmp_path / "pool"))[0]
    assert pool.read_trace(shard, 17).to_dict() == traces[17].to_dict()


def test_an_id_lookup_naming_a_file_outside_the_pool_is_refused(tmp_path):
    pool.write_pool(demo_traces()[:1], str(tmp_path / "pool"))
    pq.write_table(pa.table({"trace_id": [PREMATURE_ID], "shard": ["../elsewhere.parquet"],
                             "row": [0]}), tmp_path / "pool" / pool.IDS)
    with pytest.raises(PoolError, match="names a shard that is not one"):
        pool.find_trace(str(tmp_path / "pool"), PREMATURE_ID)


def test_an_interrupted_write_leaves_no_manifest(tmp_path):
    def traces():
        yield from demo_traces()[:3]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pool.write_pool(traces(), str(tmp_path / "pool"))
    assert not (tmp_path / "pool" / pool.MANIFEST).exists()


def test_pool_write_copies_a_pool_with_a_bad_shard_into_a_new_one(tmp_path, capsys):
    pool.write_pool(demo_traces(), str(tmp_path / "old"), shard_rows=5)
    (tmp_path / "old" / "part-00001.parquet").write_bytes(b"PAR1 truncated")
    assert main(["pool", "write", str(tmp_path / "old"), "-o", str(tmp_path / "new"),
                 "--format", "jsonl"]) == 1
    err = capsys.readouterr().err
    assert "part-00001.parquet: rows 0 onward" in err and "wrote 7 traces in 1 shard" in err
    rows, errors = read_all(str(tmp_path / "new"))
    assert not errors
    expected = [t for i, t in enumerate(demo_traces()) if not 5 <= i < 10]
    assert [t.to_dict() for _, _, t in rows] == [t.to_dict() for t in expected]


def test_a_shard_the_manifest_lists_but_is_gone_is_named_and_the_rest_read(tmp_path):
    pool.write_pool(demo_traces(), str(tmp_path / "pool"), shard_rows=5)
    (tmp_path / "pool" / "part-00001.parquet").unlink()
    rows, errors = read_all(str(tmp_path / "pool"))
    assert len(rows) == 7
    assert [(Path(e.file).name, e.place) for e in errors] == [("part-00001.parquet",
                                                               "rows 0 onward")]


def test_a_manifest_naming_a_file_outside_the_pool_is_refused(tmp_path):
    pool.write_pool(demo_traces()[:1], str(tmp_path / "pool"))
    manifest = tmp_path / "pool" / pool.MANIFEST
    manifest.write_bytes(orjson.dumps({"shards": [{"path": "../../etc/x.parquet"}]}))
    with pytest.raises(PoolError, match="names a shard that is not one"):
        pool.shards(str(tmp_path / "pool"))


@pytest.fixture
def linked_pool(tmp_path):
    """A pool folder of one shard and a symbolic link to a shard outside it."""
    pool.write_pool(synth_traces(2), str(tmp_path / "pool"))
    pool.write_pool(synth_traces(3)[2:], str(tmp_path / "elsewhere"))
    (tmp_path / "pool" / "orchviz-pool.json").unlink()
    (tmp_path / "pool" / "part-00001.parquet").symlink_to(
        tmp_path / "elsewhere" / "part-00000.parquet")
    yield tmp_path / "pool"
    pool.follow_symlinks(False)


def test_a_shard_linked_from_outside_the_pool_is_refused_in_one_sentence(linked_pool, tmp_path,
                                                                        capsys):
    code = main(["pool", "ls", str(linked_pool), "--db", str(tmp_path / "l.db")])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1
    assert err == (f"orchviz: {linked_pool}/part-00001.parquet: is a symbolic link to "
                   f"{tmp_path / 'elsewhere' / 'part-00000.parquet'}, outside the pool's folder; "
                   "it was not read (--follow-symlinks reads it)\n")


def test_follow_symlinks_reads_a_shard_linked_from_outside(linked_pool, tmp_path, capsys):
    assert main(["pool", "ls", str(linked_pool), "--db", str(tmp_path / "l.db"), "--json",
                 "--follow-symlinks", "--workers", "1"]) == 0
    assert json.loads(capsys.readouterr().out)["count"] == 3


def test_a_link_inside_the_pool_folder_is_read(tmp_path):
    pool.write_pool(synth_traces(2), str(tmp_path / "pool"))
    (tmp_path / "pool" / "orchviz-pool.json").unlink()
    (tmp_path / "pool" / "again.parquet").symlink_to(tmp_path / "pool" / "part-00000.parquet")
    assert len(pool.shards(str(tmp_path / "pool"))) == 2
