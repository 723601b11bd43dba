"""`orchviz app`: start the Streamlit app on the packaged entry."""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tomllib
from pathlib import Path

from pydantic import ValidationError

from viz_app.cli.traces import add_traces_option
from viz_app.cli.workspace import store_options
from viz_app.errors import OrchvizError
from viz_app.settings import DEMO_TRACES, ModelEndpoint, ReplayLimits, Settings, database_url

PACKAGE = Path(__file__).resolve().parent.parent


def register(verbs: argparse._SubParsersAction) -> None:
    """Add the `app` verb."""
    p = verbs.add_parser("app", help="start the browser app",
                         description="Start orchviz's Streamlit app on your traces and label store.")
    add_traces_option(p, help="a folder (or file) of traces to list (default: the demo "
                      "traces)")
    store_options(p)
    p.add_argument("--uploads", default="uploads", help="folder for uploaded traces")
    p.add_argument("--follow", nargs="?", type=float, const=2.0, default=None,
                   metavar="SECONDS", help="follow a run while a trainer writes it: look for new "
                   "rollout files and lines every SECONDS (default 2) and list them as they "
                   "come; a half-written last line is waited for")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="localhost", help="address to listen on")
    p.add_argument("--secrets", default=None, metavar="FILE",
                   help="a Streamlit secrets.toml to use instead of .streamlit/secrets.toml; "
                   "with an [auth] section people sign in (OpenID Connect) and are recorded "
                   "by their e-mail (see docs/signin.md)")
    p.add_argument("--judge-url", metavar="URL", help="an OpenAI-compatible endpoint: with "
                   "--judge-model, the trace page's Continue from here asks it for the "
                   "orchestrator's next turns after an edited decision")
    p.add_argument("--judge-model", metavar="M", help="the model to ask at --judge-url")
    p.add_argument("--judge-key-env", metavar="VAR", default="OPENAI_API_KEY",
                   help="the environment variable holding its API key (default: "
                   "OPENAI_API_KEY; the key itself is never an argument)")
    p.add_argument("--judge-timeout", metavar="SECONDS", type=float, default=60.0,
                   help="how long one request may take (default: 60)")
    p.add_argument("--replay-turns", type=int, default=ReplayLimits().turns,
                   help="turns a continuation asks for at most (default: "
                   f"{ReplayLimits().turns})")
    p.add_argument("--replay-deadline", metavar="SECONDS", type=float,
                   default=ReplayLimits().deadline, help="how long a whole continuation may "
                   f"take (default: {ReplayLimits().deadline:g})")
    p.set_defaults(run=app)


def _endpoint(args: argparse.Namespace) -> tuple[ModelEndpoint | None, ReplayLimits]:
    """The judge's endpoint and the replay limits the options give; OrchvizError for half an
    endpoint or a limit out of range."""
    if bool(args.judge_url) != bool(args.judge_model):
        raise OrchvizError("--judge-url and --judge-model go together")
    try:
        endpoint = ModelEndpoint(url=args.judge_url, model=args.judge_model,
                                 key_env=args.judge_key_env, timeout=args.judge_timeout) \
            if args.judge_url else None
        limits = ReplayLimits(turns=args.replay_turns, deadline=args.replay_deadline)
    except ValidationError as err:
        first = err.errors()[0]
        raise OrchvizError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    return endpoint, limits


def streamlit_flags() -> list[str]:
    """The packaged `.streamlit/config.toml` as Streamlit command-line flags."""
    config = tomllib.loads((PACKAGE / "ui" / ".streamlit" / "config.toml").read_text("utf-8"))
    flags: list[str] = []
    for section, values in config.items():
        for key, value in values.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            flags.append(f"--{section}.{key}={text}")
    return flags


def secrets_flags(path: str | None) -> tuple[list[str], str]:
    """The Streamlit flag that reads secrets from `path` (none: Streamlit's own places,
    `~/.streamlit/secrets.toml` and `./.streamlit/secrets.toml`), and a few words on sign-in
    for the start line. Raises OrchvizError for a file that is missing, not TOML, or whose
    `[auth]` section lacks what Streamlit needs."""
    if path is None:
        return [], "sign-in: from .streamlit/secrets.toml if it has [auth]"
    file = Path(path).resolve()
    if file.suffix != ".toml":
        raise OrchvizError(f"{path}: a secrets file must be a .toml file (Streamlit reads no "
                           "other).")
    try:
        secrets = tomllib.loads(file.read_text("utf-8"))
    except OSError as err:
        raise OrchvizError(f"{path}: the secrets file cannot be read ({err.strerror}).") from err
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise OrchvizError(f"{path}: the secrets file is not valid TOML ({err}).") from err
    auth = secrets.get("auth")
    if not isinstance(auth, dict):
        return [f"--secrets.files={file}"], "sign-in: off (no [auth] in the secrets file)"
    missing = [key for key in AUTH_KEYS if key not in auth]
    if missing:
        raise OrchvizError(f"{path}: the [auth] section lacks {', '.join(missing)}.")
    if importlib.util.find_spec("authlib") is None:
        raise OrchvizError(f"{path} turns sign-in on, which needs Authlib: "
                           "pip install 'orchviz[auth]'.")
    return [f"--secrets.files={file}"], "sign-in: on (OpenID Connect)"


AUTH_KEYS = ("redirect_uri", "cookie_secret", "client_id", "client_secret", "server_metadata_url")
"""What an `[auth]` section holds for the unnamed provider that the app's Sign in button uses
(Streamlit's `st.login()`)."""


def app(args: argparse.Namespace) -> int:
    """Run Streamlit in this terminal until it is stopped: this process becomes Streamlit
    (`os.execve`), so a signal sent to `orchviz app` (SIGTERM from systemd, Docker or
    Kubernetes, Ctrl+C) reaches the server itself, which stops and frees its port; no child is
    left serving."""
    folders = args.traces or [str(DEMO_TRACES)]
    settings = Settings(traces=[Path(p) for p in folders if "://" not in p],
                        pools=[p for p in folders if "://" in p],  # s3://... : a pool by URL
                        db_url=database_url(args.db), uploads=Path(args.uploads).resolve(),
                        rubric=Path(args.rubric) if args.rubric else None)
    settings.endpoint, settings.replay = _endpoint(args)
    if args.follow is not None:
        if args.follow <= 0:
            raise OrchvizError("--follow takes a number of seconds above 0")
        settings.follow = args.follow
    secrets, sign_in = secrets_flags(args.secrets)
    env = {**os.environ, **settings.to_env(), "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false"}
    command = [sys.executable, "-m", "streamlit", "run", str(PACKAGE / "ui" / "app.py"),
               *streamlit_flags(), *secrets, f"--server.port={args.port}",
               f"--server.address={args.host}"]
    print(f"orchviz: http://{args.host}:{args.port}  (traces: "
          f"{', '.join(folders)}; labels: {settings.db_url}; {sign_in}"
          + (f"; following every {settings.follow:g} s" if settings.follow else "") + ")",
          flush=True)
    os.execve(sys.executable, command, env)
    return 0  # not reached: the process is Streamlit now
