"""Where the app finds its traces, label store and rubric: one place, read from the environment
that `orchviz app` sets (so the app, the CLI and tests agree)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pydantic import BaseModel, Field

DEMO_TRACES = Path(__file__).resolve().parent.parent / "demo_traces"
"""The demo traces beside the package in a checkout (the default library)."""


def database_url(value: str | os.PathLike) -> str:
    """A SQLAlchemy URL from a URL or a plain path (taken as a SQLite file)."""
    text = str(value)
    if "://" in text:
        return text
    return f"sqlite:///{Path(text).expanduser().resolve()}"


class ModelEndpoint(BaseModel):
    """An OpenAI-compatible chat completions endpoint: the judge's, which also continues a trace
    from an edited decision (`viz_app.branch`). The key is read from an environment variable,
    never held here."""

    url: str = Field(description="The API's base URL (https://api.openai.com/v1, a vLLM or "
                     "Ollama server's /v1, a gateway).")
    model: str = Field(description="The model's name at that endpoint.")
    key_env: str = Field("OPENAI_API_KEY", description="The environment variable holding the "
                         "API key (a local server that needs none gets a placeholder).")
    timeout: float = Field(60.0, gt=0, description="Seconds one request may take.")


class ReplayLimits(BaseModel):
    """How far a continuation from an edited decision may go (`viz_app.branch`)."""

    turns: int = Field(4, ge=1, le=50, description="The orchestrator's turns asked for after the "
                       "edited decision, at most (fewer when it decides to stop).")
    deadline: float = Field(120.0, gt=0, description="Seconds the whole continuation may take, "
                            "every request included.")
    reply_bytes: int = Field(262_144, ge=1024, description="Bytes one reply of the endpoint may "
                             "hold; a longer one is a failure, never read whole.")
    max_tokens: int = Field(1024, ge=16, description="Tokens one turn may be (sent as "
                            "`max_completion_tokens`).")


class Settings(BaseModel):
    """What one running app works on."""

    traces: list[Path] = Field(description="Folders (or files) whose traces the library lists.")
    db_url: str = Field(description="SQLAlchemy URL of the label store and trace index.")
    uploads: Path | None = Field(None, description="Folder where uploaded traces are saved (the "
                                 "app's; None for a command, which lists only what it is given).")
    rubric: Path | None = Field(None, description="A rubric file overriding the default one.")
    pools: list[str] = Field(default_factory=list, description="Pools named by URL (s3://, "
                             "gs://, hf://...): listed through their index (a local pool folder "
                             "may be given in `traces`).")
    endpoint: ModelEndpoint | None = Field(None, description="The judge's endpoint, when one is "
                                           "configured: it suggests labels and continues a "
                                           "trace from an edited decision.")
    replay: ReplayLimits = Field(default_factory=ReplayLimits, description="Limits of a "
                                 "continuation from an edited decision.")
    follow: float | None = Field(None, gt=0, description="Seconds between two looks at the "
                                 "folders for what a trainer wrote since (`--follow`): the "
                                 "library lists new rollouts as they come; None looks when a "
                                 "page is drawn.")

    @classmethod
    def from_env(cls) -> Settings:
        """Settings from ORCHVIZ_TRACES, ORCHVIZ_DB, ORCHVIZ_UPLOADS, ORCHVIZ_RUBRIC,
        ORCHVIZ_POOLS (a JSON list of URLs: they hold the `:` that separates ORCHVIZ_TRACES),
        ORCHVIZ_JUDGE (the judge's endpoint as JSON: url, model, key_env, timeout),
        ORCHVIZ_REPLAY (replay limits as JSON: turns, deadline, reply_bytes, max_tokens) and
        ORCHVIZ_FOLLOW (seconds between looks for new rollouts)."""
        traces = os.environ.get("ORCHVIZ_TRACES")
        pools = json.loads(os.environ.get("ORCHVIZ_POOLS") or "[]")
        folders = [Path(p) for p in traces.split(os.pathsep) if p] if traces else \
            ([] if pools else [DEMO_TRACES])
        rubric = os.environ.get("ORCHVIZ_RUBRIC")
        return cls(traces=folders, db_url=database_url(os.environ.get("ORCHVIZ_DB", "orchviz.db")),
                   uploads=Path(os.environ.get("ORCHVIZ_UPLOADS", "uploads")).resolve(),
                   rubric=Path(rubric) if rubric else None, pools=[str(p) for p in pools],
                   endpoint=ModelEndpoint.model_validate_json(os.environ["ORCHVIZ_JUDGE"])
                   if os.environ.get("ORCHVIZ_JUDGE") else None,
                   replay=ReplayLimits.model_validate_json(os.environ["ORCHVIZ_REPLAY"])
                   if os.environ.get("ORCHVIZ_REPLAY") else ReplayLimits(),
                   follow=float(os.environ["ORCHVIZ_FOLLOW"])
                   if os.environ.get("ORCHVIZ_FOLLOW") else None)

    def to_env(self) -> dict[str, str]:
        """The environment variables that reproduce these settings in another process."""
        env = {"ORCHVIZ_TRACES": os.pathsep.join(str(p.resolve()) for p in self.traces),
               "ORCHVIZ_DB": self.db_url}
        if self.uploads is not None:
            env["ORCHVIZ_UPLOADS"] = str(self.uploads)
        if self.rubric is not None:
            env["ORCHVIZ_RUBRIC"] = str(self.rubric.resolve())
        if self.pools:
            env["ORCHVIZ_POOLS"] = json.dumps(self.pools)
        if self.endpoint is not None:
            env["ORCHVIZ_JUDGE"] = self.endpoint.model_dump_json()
        if self.replay != ReplayLimits():
            env["ORCHVIZ_REPLAY"] = self.replay.model_dump_json()
        if self.follow is not None:
            env["ORCHVIZ_FOLLOW"] = f"{self.follow:g}"
        return env
