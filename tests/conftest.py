"""Shared pytest fixtures for orchviz: Chromium (Playwright), PostgreSQL,
the Streamlit app server and screenshot artifacts.

Missing infrastructure (browser, database server) makes tests *skip* locally
but *fail* under CI (``CI=true``), so CI can never go green by skipping.
"""

from __future__ import annotations

import glob
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS_DIR = REPO_ROOT / "test-artifacts"
# override only for testing the skip/fail path
CHROMIUM_PATH = os.environ.get("ORCHVIZ_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--no-first-run",
]
VIEWPORT = {"width": 1600, "height": 1000}

IN_CI = os.environ.get("CI") == "true"

TRAINERS = Path(__file__).resolve().parent / "trainers"


def pytest_ignore_collect(collection_path, config):
    """tests/trainers runs in an environment of its own (`bash .ci/trainers`, after this suite):
    the main suite leaves it out unless it is asked for by path (where, outside that
    environment, its modules skip with the reason)."""
    if Path(collection_path).resolve() != TRAINERS:
        return None
    asked = any(TRAINERS == p or TRAINERS in p.parents
                for p in (Path(a.split("::")[0]).resolve() for a in config.args))
    return None if asked else True


# --------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------


def need(reason: str) -> None:
    """Missing prerequisite: fail under CI, skip otherwise."""
    if IN_CI:
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def free_port() -> int:
    """A currently free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float, expect: str | None = None) -> bool:
    """Poll ``url`` until it answers 200 (and body contains ``expect``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                body = r.read().decode("utf-8", "replace")
                if r.status == 200 and (expect is None or expect in body):
                    return True
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.25)
    return False


def _log_tail(path: Path, n: int = 60) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return "<no log>"
    return "\n".join(lines[-n:])


def _kill_group(proc: subprocess.Popen, timeout: float = 10) -> None:
    """Terminate a process started with ``start_new_session=True``."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=5)


def shot(page, name: str) -> Path:
    """Save a full-viewport screenshot as ``test-artifacts/<name>.png``."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS_DIR / f"{name}.png"
    page.screenshot(path=str(path))
    return path


REVIEWER_COOKIE = "orchviz_reviewer"


def goto_as(page, url: str, reviewer: str, **goto) -> None:
    """Open a URL in a browser whose reviewer typed `reviewer` in the sidebar before: the app
    keeps the typed name in a cookie of its origin (a link never carries a name)."""
    from urllib.parse import quote, urlsplit

    parts = urlsplit(url)
    page.context.add_cookies([{"name": REVIEWER_COOKIE, "value": quote(reviewer),
                               "domain": parts.hostname, "path": "/"}])
    page.goto(url, **goto)


def wait_for_streamlit(page, timeout: float = 30_000, quiet_ms: int = 500) -> None:
    """Wait until the Streamlit app has rendered and finished its script run.

    Waits for ``[data-testid="stApp"]``, then until the "running" status
    widget has been absent for ``quiet_ms`` consecutive milliseconds.
    ``timeout`` is in milliseconds (Playwright convention).
    """
    deadline = time.monotonic() + timeout / 1000
    page.wait_for_selector('[data-testid="stApp"]', state="attached", timeout=timeout)
    # Streamlit sets data-test-script-state="running" on stApp while running
    # and shows stStatusWidget ("Running...") in the toolbar.
    running_js = """() => {
        const app = document.querySelector('[data-testid="stApp"]');
        if (app && app.getAttribute('data-test-script-state') === 'running') return true;
        const w = document.querySelector('[data-testid="stStatusWidget"]');
        if (w && w.offsetParent !== null && /running/i.test(w.innerText || '')) return true;
        if (document.querySelector('[data-testid="stSkeleton"]')) return true;
        return false;
    }"""
    quiet_since: float | None = None
    while True:
        now = time.monotonic()
        try:
            busy = bool(page.evaluate(running_js))
        except Exception:  # navigation in progress, context destroyed...
            busy = True
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = now
        elif (now - quiet_since) * 1000 >= quiet_ms:
            return
        if now > deadline:
            raise TimeoutError(
                f"Streamlit app still running after {timeout / 1000:.0f}s"
            )
        page.wait_for_timeout(100)


# --------------------------------------------------------------------------
# browser
# --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def chromium() -> Iterator[object]:
    """A Playwright ``Browser`` running Debian's /usr/bin/chromium headless."""
    if not (os.path.isfile(CHROMIUM_PATH) and os.access(CHROMIUM_PATH, os.X_OK)):
        need(f"Chromium not found at {CHROMIUM_PATH} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need("playwright is not installed (pip install -e '.[test]')")
    pw = sync_playwright().start()
    try:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM_PATH,
            headless=True,
            args=CHROMIUM_ARGS,
        )
    except Exception as exc:
        pw.stop()
        need(f"could not launch Chromium: {exc}")
    try:
        yield browser
    finally:
        try:
            browser.close()
        finally:
            pw.stop()


@pytest.fixture
def page(chromium) -> Iterator[object]:
    """A fresh page in a new 1600x1000 browser context."""
    context = chromium.new_context(viewport=VIEWPORT)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def browsers(chromium) -> Iterator[Callable[..., list]]:
    """`browsers(n, timeout=ms)`: n pages, each in a browser context of its own (one a person:
    their own cookies, so their own reviewer name) at 1600x1000 with `timeout` as its default;
    every context is closed when the test ends, whatever it did."""
    contexts: list = []

    def open_pages(n: int, timeout: float = 30_000) -> list:
        made = [chromium.new_context(viewport=VIEWPORT) for _ in range(n)]
        contexts.extend(made)
        pages = [context.new_page() for context in made]
        for page in pages:
            page.set_default_timeout(timeout)
        return pages

    try:
        yield open_pages
    finally:
        for context in contexts:
            context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    """``test-artifacts/`` at the repo root (gitignored) for screenshots."""
    ARTIFACTS_DIR.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS_DIR


# --------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------


def _pg_bindir() -> Path | None:
    cands = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in Path(p).parent.name.split(".")],
    )
    for c in reversed(cands):
        if os.access(os.path.join(c, "initdb"), os.X_OK):
            return Path(c)
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _as_user_cmd(user: str | None, argv: list[str]) -> list[str]:
    if user is None:
        return argv
    if shutil.which("runuser"):
        return ["runuser", "-u", user, "--", *argv]
    return ["su", user, "-s", "/bin/sh", "-c", " ".join(_shq(a) for a in argv)]


def _shq(s: str) -> str:
    import shlex

    return shlex.quote(s)


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    """SQLAlchemy URL (``postgresql+psycopg://...``) of a test database.

    Uses ``ORCHVIZ_TEST_POSTGRES_URL`` if set; otherwise starts a throwaway
    server from /usr/lib/postgresql/*/bin in a temp dir (as user ``postgres``
    when running as root), stopped at session end.
    """
    url = os.environ.get("ORCHVIZ_TEST_POSTGRES_URL")
    if url:
        yield url
        return

    missing = "no PostgreSQL server: set ORCHVIZ_TEST_POSTGRES_URL or install postgresql"
    bindir = _pg_bindir()
    if bindir is None:
        need(missing)

    user: str | None = None
    if os.geteuid() == 0:
        import pwd

        try:
            pwd.getpwnam("postgres")
        except KeyError:
            need(missing + " (running as root and no 'postgres' user for initdb)")
        user = "postgres"

    tmp = Path(tempfile.mkdtemp(prefix="orchviz-pg-"))
    datadir = tmp / "data"
    logfile = tmp / "server.log"
    pwfile = tmp / "pw"
    password = secrets.token_hex(12)
    pwfile.write_text(password + "\n")
    if user:
        shutil.chown(tmp, user=user)
        shutil.chown(pwfile, user=user)
    os.chmod(tmp, 0o700)
    db_user = "orchviz"
    port = free_port()

    def run(argv: list[str]) -> subprocess.CompletedProcess:
        return subprocess.run(
            _as_user_cmd(user, argv),
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(tmp),
        )

    r = run([
        str(bindir / "initdb"), "-D", str(datadir), "-U", db_user,
        "--pwfile", str(pwfile), "-A", "scram-sha-256", "-E", "UTF8",
        "--no-locale",
    ])
    if r.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        need(f"initdb failed: {r.stderr.strip()[-2000:]}")

    opts = f"-h 127.0.0.1 -p {port} -k {tmp} -c fsync=off -c full_page_writes=off"
    r = run([
        str(bindir / "pg_ctl"), "-D", str(datadir), "-l", str(logfile),
        "-o", opts, "-w", "-t", "60", "start",
    ])
    if r.returncode != 0:
        log = _log_tail(logfile)
        shutil.rmtree(tmp, ignore_errors=True)
        need(f"pg_ctl start failed: {r.stderr.strip()}\n{log}")

    try:
        env = dict(os.environ, PGPASSWORD=password)
        r = subprocess.run(
            [str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port),
             "-U", db_user, "orchviz_test"],
            capture_output=True, text=True, env=env, timeout=60,
        )
        if r.returncode != 0:
            pytest.fail(f"createdb failed: {r.stderr}", pytrace=False)
        yield f"postgresql+psycopg://{db_user}:{password}@127.0.0.1:{port}/orchviz_test"
    finally:
        run([str(bindir / "pg_ctl"), "-D", str(datadir), "-m", "fast", "-w", "stop"])
        shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------
# Streamlit app server
# --------------------------------------------------------------------------


class AppServers:
    """Starts ``python -m viz_app app`` servers and stops them all (whole process groups).

    ``start(workspace) -> base_url``, or ``start(traces_dirs, db_path, extra_args=()) ->
    base_url``: runs ``python -m viz_app app --traces DIR [--traces DIR...] --db DB --port P
    --host 127.0.0.1 *extra_args`` (for a Workspace: its folders, database, rubric and uploads
    folder) and waits for ``/_stcore/health``."""

    def __init__(self, tmp_path_factory) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.procs: list[subprocess.Popen] = []

    def start(
        self,
        traces_dirs: Sequence[Path] | object,
        db_path: Path | str | None = None,
        extra_args: Sequence[str] = (),
        timeout: float = 60,
    ) -> str:
        settings = getattr(traces_dirs, "settings", None)  # a Workspace
        if settings is not None:
            traces_dirs, db_path = settings.traces, settings.db_url
            extra_args = [*(["--rubric", settings.rubric] if settings.rubric else []),
                          "--uploads", settings.uploads, *extra_args]
        port = free_port()
        workdir = self.tmp_path_factory.mktemp("app")
        log_path = workdir / "app.log"
        cmd = [
            sys.executable, "-m", "viz_app", "app",
            *[arg for d in traces_dirs for arg in ("--traces", str(d))],
            "--db", str(db_path),
            "--port", str(port),
            "--host", "127.0.0.1",
            *[str(a) for a in extra_args],
        ]
        env = dict(os.environ)
        env.update(
            STREAMLIT_BROWSER_GATHER_USAGE_STATS="false",
            STREAMLIT_SERVER_HEADLESS="true",
            PYTHONUNBUFFERED="1",
        )
        # make the repo importable even without `pip install -e .`
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p
        )
        log = open(log_path, "wb")
        proc = subprocess.Popen(
            cmd,
            cwd=str(workdir),
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs.append(proc)
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(
                    f"app exited with code {proc.returncode}: {' '.join(cmd)}\n"
                    f"--- log tail ---\n{_log_tail(log_path)}",
                    pytrace=False,
                )
            if wait_http(f"{base}/_stcore/health", timeout=1, expect="ok"):
                return base
        _kill_group(proc)
        pytest.fail(
            f"app not healthy after {timeout:.0f}s: {' '.join(cmd)}\n"
            f"--- log tail ---\n{_log_tail(log_path)}",
            pytrace=False,
        )

    def stop_all(self) -> None:
        for p in self.procs:
            _kill_group(p)


@pytest.fixture
def app_server(tmp_path_factory) -> Iterator[Callable[..., str]]:
    """Factory ``start_app(workspace) -> base_url`` (see `AppServers.start`): every server it
    started is stopped when the test ends."""
    servers = AppServers(tmp_path_factory)
    try:
        yield servers.start
    finally:
        servers.stop_all()


@pytest.fixture(scope="module")
def module_app_server(tmp_path_factory) -> Iterator[Callable[..., str]]:
    """`app_server` for a module whose tests only look at one app (each in a browser context
    of its own, so a session of its own) or each act as a reviewer no other test names: one
    server start (about 3 s of CPU, and the first run of a page imports the app's modules)
    instead of one per test. Its servers stop when the module's last test ends."""
    servers = AppServers(tmp_path_factory)
    try:
        yield servers.start
    finally:
        servers.stop_all()


def hold_the_server_line(page) -> dict:
    """Route the app's WebSocket through the test: while `line["held"]` is true, what the page
    sends waits in `line["queue"]`; `release(line)` sends it on, in order."""
    line: dict = {"held": False, "queue": [], "server": None}

    def route(ws) -> None:
        server = ws.connect_to_server()
        line["server"] = server
        server.on_message(ws.send)
        ws.on_message(lambda m: line["queue"].append(m) if line["held"] else server.send(m))

    page.route_web_socket(re.compile(r".*/_stcore/stream"), route)
    return line


def release(line: dict) -> None:
    line["held"] = False
    while line["queue"]:
        line["server"].send(line["queue"].pop(0))
