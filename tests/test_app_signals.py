"""What the app tells a reviewer when orchviz cannot do something: a database that fails while
they save is one sentence on the page, the app keeps running and their answer stays in the
form; a page that cannot reach its database says so in one sentence; the packaged Streamlit
configuration shows users no exception details."""

from __future__ import annotations

import logging
import tomllib
import traceback

from streamlit.testing.v1 import AppTest

from factories import APP, PREMATURE, PREMATURE_ID, app_env, make_workspace
from viz_app.cli.app import PACKAGE, streamlit_flags
from viz_app.workspace import Workspace

QUALITY = "aggregation_quality"


def read_only(workspace: Workspace) -> Workspace:
    """The same workspace on its SQLite file opened read-only: reading works, every write
    fails (SQLite's `mode=ro`; root may write any file, but not through this connection)."""
    path = workspace.settings.db_url.removeprefix("sqlite:///")
    url = f"sqlite:///file:{path}?mode=ro&uri=true"
    return Workspace(workspace.settings.model_copy(update={"db_url": url}))


def open_trace_as(reviewer: str) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.query_params["trace"] = PREMATURE_ID
    at.run()
    at.text_input(key="_reviewer_box").input(reviewer).run()
    return at


def errors_of(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def test_saving_into_a_failing_database_says_so_once_and_keeps_the_answer(tmp_path,
                                                                          monkeypatch):
    log: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = log.append
    monkeypatch.setattr(logging.getLogger("viz_app.store.failures"), "handlers", [handler])
    workspace = make_workspace(tmp_path, traces=[PREMATURE])
    workspace.library.update_index()  # the library is indexed: opening the page writes nothing
    app_env(monkeypatch, read_only(workspace))
    trace = workspace.library.trace(PREMATURE_ID)
    at = open_trace_as("ann")
    assert not at.exception and errors_of(at) == []
    answer = f"ann:{PREMATURE_ID}:{trace.sha256[:12]}:e12:{QUALITY}"
    at.radio(key=answer).set_value(2)
    next(b for b in at.button if b.label == "Save").click().run()
    assert not at.exception, at.exception
    [said] = errors_of(at)
    assert said.endswith("is read\\-only, so nothing was saved")  # one sentence (Markdown-escaped)
    assert "Traceback" not in said and "INSERT" not in said
    assert at.radio(key=answer).value == 2  # the answer is still in the form
    assert workspace.labelling.count() == 0
    at.run()  # the app keeps running
    assert not at.exception and at.radio(key=answer).value == 2
    # the server's log keeps what the page leaves out: the failed save once (beside it, the
    # reviewer's draft the form tried to keep, a write of its own that failed the same way)
    logged = ["".join(traceback.format_exception(*r.exc_info)) for r in log if r.exc_info]
    [details] = [d for d in logged if "INSERT INTO labels" in d]
    assert "attempt to write a readonly database" in details
    assert all("INSERT INTO labels" in d or "drafts" in d for d in logged)


def test_a_page_whose_database_cannot_be_reached_says_so_in_one_sentence(tmp_path,
                                                                        monkeypatch):
    from conftest import free_port

    app_env(monkeypatch, make_workspace(tmp_path, traces=[PREMATURE]))
    monkeypatch.setenv("ORCHVIZ_DB", f"postgresql+psycopg://orchviz:secret@127.0.0.1:"
                                     f"{free_port()}/orchviz")  # nobody listens there
    at = AppTest.from_file(str(APP), default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    [said] = errors_of(at)
    assert "cannot be reached" in said and "so nothing was saved" in said
    assert "secret" not in said


def test_the_packaged_config_shows_users_no_exception_details():
    config = tomllib.loads((PACKAGE / "ui" / ".streamlit" / "config.toml").read_text("utf-8"))
    assert config["client"]["showErrorDetails"] == "none"
    assert "--client.showErrorDetails=none" in streamlit_flags()


def test_the_app_does_not_collect_garbage_after_every_key_press():
    # Streamlit's default full collection after each run cost 100-200 ms of a core per key
    # press once a trace is loaded (bench/bench_labelling.py)
    assert "--runner.postScriptGC=false" in streamlit_flags()


# -- SIGTERM ------------------------------------------------------------------------------------


def _port_is_free(port: int) -> bool:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def test_sigterm_to_orchviz_app_stops_the_server_and_frees_its_port(tmp_path):
    """As systemd, Docker and Kubernetes stop a service: SIGTERM to the process they started
    (not to its group). The server must not outlive it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from conftest import REPO_ROOT, free_port, wait_http

    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT),
                                                         os.environ.get("PYTHONPATH", "")])}
    log = tmp_path / "app.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "viz_app", "app", "--traces", str(PREMATURE),
             "--db", str(tmp_path / "orchviz.db"), "--uploads", str(tmp_path / "uploads"),
             "--port", str(port), "--host", "127.0.0.1"],
            cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert wait_http(f"http://127.0.0.1:{port}/_stcore/health", 60, expect="ok"), \
            log.read_text()
        os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not _port_is_free(port):
            time.sleep(0.1)
        assert _port_is_free(port), "the server still holds the port 5 s after SIGTERM"
        assert proc.wait(timeout=5) is not None
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the group
        except ProcessLookupError:
            pass
        proc.wait(timeout=10)
