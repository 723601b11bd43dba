"""Smoke tests for the test infrastructure itself (no orchviz app needed)."""

from __future__ import annotations

import os
import struct
import subprocess
import sys

import pytest

from conftest import _kill_group, free_port, shot, wait_http


def png_size(path) -> tuple[int, int]:
    data = path.read_bytes()[:24]
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def static_site(tmp_path):
    """Serve a tmp dir with ``python -m http.server`` on a free loopback port."""
    (tmp_path / "index.html").write_text(
        "<!doctype html><html><head><title>orchviz infra</title></head>"
        "<body><h1 id='hello'>orchviz infra check 42</h1></body></html>",
        encoding="utf-8",
    )
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port),
         "--bind", "127.0.0.1", "--directory", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        if not wait_http(f"{base}/index.html", timeout=20):
            pytest.fail("python -m http.server did not come up")
        yield base
    finally:
        _kill_group(proc)


@pytest.mark.browser
def test_chromium_renders_local_page_and_screenshots(page, static_site, artifacts):
    page.goto(f"{static_site}/index.html")
    assert page.title() == "orchviz infra"
    assert page.inner_text("#hello") == "orchviz infra check 42"
    path = shot(page, "infra-static-page")
    assert path.parent == artifacts
    assert path.is_file()
    assert png_size(path) == (1600, 1000)


@pytest.mark.postgres
def test_postgres_select_1(postgres_url):
    sqlalchemy = pytest.importorskip("sqlalchemy")
    assert postgres_url.startswith("postgresql+psycopg://")
    engine = sqlalchemy.create_engine(postgres_url)
    try:
        with engine.connect() as conn:
            assert conn.execute(sqlalchemy.text("select 1")).scalar_one() == 1
            db = conn.execute(sqlalchemy.text("select current_database()")).scalar_one()
            assert db == "orchviz_test"
    finally:
        engine.dispose()


@pytest.mark.parametrize("ci, outcome", [("", "1 skipped"), ("true", "1 failed")])
def test_a_missing_shared_reference_skips_locally_and_fails_under_ci(tmp_path, ci, outcome):
    from conftest import REPO_ROOT

    test = "tests/test_roundtrip.py::test_the_packaged_schema_is_the_reference_schema"
    env = {**os.environ, "CI": ci, "ORCHVIZ_TEST_REFERENCE": str(tmp_path / "not-there")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-n", "0", test], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert outcome in done.stdout, done.stdout[-2000:]
    assert done.returncode == (1 if ci else 0)
