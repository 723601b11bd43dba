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

    @classmethod
    def from_env(cls) -> Settings:
        """Settings from ORCHVIZ_TRACES, ORCHVIZ_DB, ORCHVIZ_UPLOADS, ORCHVIZ_RUBRIC and
        ORCHVIZ_POOLS (a JSON list of URLs: they hold the `:` that separates ORCHVIZ_TRACES)."""
        traces = os.environ.get("ORCHVIZ_TRACES")
        pools = json.loads(os.environ.get("ORCHVIZ_POOLS") or "[]")
        folders = [Path(p) for p in traces.split(os.pathsep) if p] if traces else \
            ([] if pools else [DEMO_TRACES])
        rubric = os.environ.get("ORCHVIZ_RUBRIC")
        return cls(traces=folders, db_url=database_url(os.environ.get("ORCHVIZ_DB", "orchviz.db")),
                   uploads=Path(os.environ.get("ORCHVIZ_UPLOADS", "uploads")).resolve(),
                   rubric=Path(rubric) if rubric else None, pools=[str(p) for p in pools])

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
        return env
