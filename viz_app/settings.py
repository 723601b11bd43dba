"""Where the app finds its traces, label store and rubric: one place, read from the environment
that `orchviz app` sets (so the app, the CLI and tests agree)."""

from __future__ import annotations

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

    @classmethod
    def from_env(cls) -> Settings:
        """Settings from ORCHVIZ_TRACES, ORCHVIZ_DB, ORCHVIZ_UPLOADS and ORCHVIZ_RUBRIC."""
        traces = os.environ.get("ORCHVIZ_TRACES")
        folders = [Path(p) for p in traces.split(os.pathsep) if p] if traces else [DEMO_TRACES]
        rubric = os.environ.get("ORCHVIZ_RUBRIC")
        return cls(traces=folders, db_url=database_url(os.environ.get("ORCHVIZ_DB", "orchviz.db")),
                   uploads=Path(os.environ.get("ORCHVIZ_UPLOADS", "uploads")).resolve(),
                   rubric=Path(rubric) if rubric else None)

    def to_env(self) -> dict[str, str]:
        """The environment variables that reproduce these settings in another process."""
        env = {"ORCHVIZ_TRACES": os.pathsep.join(str(p.resolve()) for p in self.traces),
               "ORCHVIZ_DB": self.db_url}
        if self.uploads is not None:
            env["ORCHVIZ_UPLOADS"] = str(self.uploads)
        if self.rubric is not None:
            env["ORCHVIZ_RUBRIC"] = str(self.rubric.resolve())
        return env
