"""Fixture factories: traces to start from, so each test states only what it changes."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from viz_app.io.native import trace_from_dict
from viz_app.model import Trace

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO.parent / "shared" / "reference" / "seed-artifact"
EXAMPLE_PATH = REPO / "tests" / "fixtures" / "example_trace.json"
DEMO_DIR = REPO / "demo_traces"
SCHEMA_PATH = REPO / "viz_app" / "trace_schema.json"


def example_dict() -> dict:
    """A fresh copy of the reference example trace, to be changed by a test."""
    return copy.deepcopy(json.loads(EXAMPLE_PATH.read_text("utf-8")))


def as_trace(raw: dict, name: str = "<test>") -> Trace:
    """A dict in the reference schema, validated into a Trace."""
    return trace_from_dict(raw, name)


def write_json(folder: Path, raw, name: str = "trace.json") -> Path:
    """Write an object as a JSON file and return its path."""
    path = folder / name
    path.write_text(json.dumps(raw), "utf-8")
    return path


def demo_paths() -> list[Path]:
    """Every demo trace file."""
    return sorted(DEMO_DIR.glob("*.json"))


def reference_validator():
    """A jsonschema validator for the reference schema (the one every written trace must pass)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(SCHEMA_PATH.read_text("utf-8")))


def review_library(folder: Path) -> Path:
    """A library folder holding the demo traces, the hostile trace and a truncated file."""
    import shutil

    from viz_app.synth import hostile_trace

    folder.mkdir(parents=True, exist_ok=True)
    for path in demo_paths():
        shutil.copy(path, folder / path.name)
    (folder / "hostile.json").write_text(json.dumps(hostile_trace()), "utf-8")
    (folder / "broken.json").write_text('{"trace_id": "broken", "events": [', "utf-8")
    return folder
