"""Pools on object storage: an S3-compatible server (moto's server mode) on 127.0.0.1, reached
through s3fs exactly as a user's bucket is."""

from __future__ import annotations

import json
import secrets

import pytest

from conftest import free_port, need
from factories import DEMO_DIR, PREMATURE_ID, demo_paths, demo_trace
from viz_app.cli import main
from viz_app.io import pool
from viz_app.io.native import load_trace


@pytest.fixture(scope="module")
def s3_endpoint():
    """The URL of a moto S3 server started for these tests, stopped after them."""
    try:
        import s3fs  # noqa: F401
        from moto.server import ThreadedMotoServer
    except ImportError as err:
        need(f"the S3 tests need s3fs and moto[server] (pip install -e '.[test]'): {err}")
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def bucket(s3_endpoint, monkeypatch):
    """A new bucket; credentials and fsspec's S3 configuration only for this test."""
    import fsspec
    import s3fs

    for key, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(key, raising=False)
    saved = dict(fsspec.config.conf.get("s3", {}))
    s3fs.S3FileSystem.clear_instance_cache()
    name = f"pool-{secrets.token_hex(4)}"
    s3fs.S3FileSystem(endpoint_url=s3_endpoint).mkdir(name)
    yield name
    fsspec.config.conf["s3"] = saved
    s3fs.S3FileSystem.clear_instance_cache()


def test_pool_write_to_s3_then_read_back_through_s3fs(bucket, s3_endpoint, capsys):
    target = f"s3://{bucket}/pool"
    assert main(["pool", "write", str(DEMO_DIR), "-o", target, "--shard-rows", "5",
                 "--row-group-rows", "2", "--storage-option", f"endpoint_url={s3_endpoint}"]) == 0
    assert "wrote 12 traces in 3 shards" in capsys.readouterr().err
    assert pool.is_pool(target)
    found = pool.shards(target)
    assert [s.url for s in found] == [f"{target}/part-0000{i}.parquet" for i in range(3)]
    traces = [load_trace(p) for p in demo_paths()]
    errors = []
    back = [t for shard in found for _, t in pool.read_shard(shard, errors.append)]
    assert not errors
    assert [t.to_dict() for t in back] == [t.to_dict() for t in traces]
    assert [t.sha256 for t in back] == [t.sha256 for t in traces]
    assert pool.read_trace(found[1], 3).to_dict() == traces[8].to_dict()


def test_pool_show_finds_a_trace_on_s3(bucket, s3_endpoint, capsys):
    target = f"s3://{bucket}/pool"
    option = ["--storage-option", f"endpoint_url={s3_endpoint}"]
    assert main(["pool", "write", str(DEMO_DIR), "-o", target, *option]) == 0
    capsys.readouterr()
    assert main(["pool", "show", target, PREMATURE_ID, *option]) == 0
    assert json.loads(capsys.readouterr().out) == demo_trace().to_dict()


def test_the_endpoint_may_come_from_the_environment(bucket, s3_endpoint, monkeypatch):
    """AWS_ENDPOINT_URL, which botocore (under s3fs) reads, with no option given."""
    import s3fs

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    s3fs.S3FileSystem.clear_instance_cache()
    target = f"s3://{bucket}/jsonl-pool"
    traces = [load_trace(p) for p in demo_paths()[:4]]
    result = pool.write_pool(traces, target, format="jsonl", shard_rows=3)
    assert [s.url for s in result.shards] == [f"{target}/part-00000.jsonl.gz",
                                              f"{target}/part-00001.jsonl.gz"]
    assert pool.trace_by_id(target, traces[3].trace_id).to_dict() == traces[3].to_dict()


def test_a_missing_bucket_is_one_sentence_and_is_not_created(s3_endpoint, bucket, capsys):
    import s3fs

    target = f"s3://no-such-{bucket}/pool"
    option = ["--storage-option", f"endpoint_url={s3_endpoint}"]
    assert main(["pool", "write", str(DEMO_DIR), "-o", target, *option]) == 1
    assert main(["pool", "show", target, PREMATURE_ID, *option]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"orchviz: {target}: cannot be written (The specified bucket does not exist)",
                     f"orchviz: {target}: is not a pool (no orchviz-pool.json and no .parquet, "
                     ".jsonl or .jsonl.gz shards)"]
    assert not s3fs.S3FileSystem(endpoint_url=s3_endpoint).exists(f"no-such-{bucket}")


def test_an_interrupted_write_leaves_nothing_on_s3(bucket, s3_endpoint, monkeypatch):
    import s3fs

    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_endpoint)
    s3fs.S3FileSystem.clear_instance_cache()

    def traces():
        yield from (load_trace(p) for p in demo_paths()[:3])
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        pool.write_pool(traces(), f"s3://{bucket}/pool")
    assert s3fs.S3FileSystem(endpoint_url=s3_endpoint).find(f"{bucket}/pool") == []


def test_a_pool_on_s3_is_copied_to_a_folder(bucket, s3_endpoint, tmp_path, capsys):
    option = ["--storage-option", f"endpoint_url={s3_endpoint}"]
    import fsspec
    import s3fs

    assert main(["pool", "write", str(DEMO_DIR), "-o", f"s3://{bucket}/pool", *option]) == 0
    fsspec.config.conf.pop("s3", None)  # as in a new process: the option is the only endpoint
    s3fs.S3FileSystem.clear_instance_cache()
    assert main(["pool", "write", f"s3://{bucket}/pool", "-o", str(tmp_path / "copy"),
                 *option]) == 0
    assert "wrote 12 traces in 1 shard" in capsys.readouterr().err
    copied = pool.trace_by_id(str(tmp_path / "copy"), PREMATURE_ID)
    assert copied.to_dict() == demo_trace().to_dict() and copied.sha256 == demo_trace().sha256


def test_an_endpoint_that_cannot_be_reached_is_one_sentence_within_seconds(bucket, tmp_path,
                                                                           capsys):
    """Nothing listens on the port: botocore's defaults and s3fs's retries once held `pool ls`
    for minutes (417 s against an endpoint that did not answer) and ended in a traceback."""
    import time

    nowhere = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    code = main(["pool", "ls", f"s3://{bucket}/pool", "--db", str(tmp_path / "l.db"),
                 "--storage-option", f"endpoint_url={nowhere}"])
    err = capsys.readouterr().err
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"orchviz: s3://{bucket}/pool") and "Could not connect" in err
    assert time.monotonic() - started < 60
    fs, _ = pool._fs(f"s3://{bucket}/pool")
    said = fs._prepare_config_kwargs()  # what botocore is given, and s3fs's own retries
    attempts = said["retries"].get("max_attempts") or said["retries"]["total_max_attempts"] - 1
    assert (said["connect_timeout"], said["read_timeout"], attempts, fs.retries) == (5, 30, 2, 1)
