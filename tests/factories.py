"""Fixture factories: traces and a Workspace to start from, so each test states only what it
changes.

    ws = make_workspace(tmp_path, traces=[premature()])       # a SQLite file in tmp_path
    ws = make_workspace(tmp_path, traces=[folder], db=postgres_url)
    ws.labelling.save(ws.library.trace(PREMATURE_ID), "aggregation_quality", 2, "ann", "e12")
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

from viz_app.io.native import load_trace, trace_from_dict, write_trace
from viz_app.labels.rubric import Rubric
from viz_app.model import Trace
from viz_app.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent
REFERENCE = Path(os.environ.get("ORCHVIZ_TEST_REFERENCE",  # overridden only to test need()
                               REPO.parent / "shared" / "reference" / "seed-artifact"))
"""The shared reference (schema, taxonomy) beside the checkout; tests that read it `need` it."""
EXAMPLE_PATH = REPO / "tests" / "fixtures" / "example_trace.json"
DEMO_DIR = REPO / "demo_traces"
SCHEMA_PATH = REPO / "viz_app" / "trace_schema.json"
APP = REPO / "viz_app" / "ui" / "app.py"
"""The Streamlit entry script (AppTest runs it; page paths are relative to its folder)."""
APP_PAGES = APP.parent / "app_pages"

PREMATURE = DEMO_DIR / "10_review_premature_stop.json"
"""Demo 10: an aggregate at e12 (inputs e10, e11) and a premature stop at e13."""
PREMATURE_ID = "demo-10-review-premature-stop"
DROPPED = DEMO_DIR / "09_review_dropped_finding.json"
"""Demo 9: an aggregate that drops a finding (e12), a stop at e13."""
DROPPED_ID = "demo-09-review-dropped-finding"


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
    from viz_app.synth import hostile_trace

    copy_demos(folder)
    (folder / "hostile.json").write_text(json.dumps(hostile_trace()), "utf-8")
    (folder / "broken.json").write_text('{"trace_id": "broken", "events": [', "utf-8")
    return folder


# -- traces -------------------------------------------------------------------------------------


def demo_trace(name: str = PREMATURE.stem) -> Trace:
    """A demo trace, loaded from its file (so it has the file's hash): by file stem, default
    demo 10 (see PREMATURE)."""
    return load_trace(DEMO_DIR / f"{name.removesuffix('.json')}.json")


def premature() -> Trace:
    """Demo 10, the trace most label tests work on: aggregate e12, premature stop e13."""
    return load_trace(PREMATURE)


def example_trace(trace_id: str | None = None, **changes) -> Trace:
    """The reference example trace, with another id and any top-level field changed."""
    raw = example_dict()
    if trace_id is not None:
        raw["trace_id"] = trace_id
    raw.update(changes)
    return as_trace(raw)


def event_edited(trace: Trace, event_id: str, trace_id: str | None = None, **keys) -> Trace:
    """The trace with one event's keys changed (and another id, if given), validated anew."""
    raw = trace.to_dict()
    if trace_id is not None:
        raw["trace_id"] = trace_id
    next(e for e in raw["events"] if e["id"] == event_id).update(keys)
    return as_trace(raw)


def copy_demos(folder: Path, names: Iterable[str] | None = None) -> Path:
    """A folder holding copies of the demo trace files (all, or those of the given stems)."""
    folder.mkdir(parents=True, exist_ok=True)
    wanted = None if names is None else {n.removesuffix(".json") for n in names}
    for path in demo_paths():
        if wanted is None or path.stem in wanted:
            shutil.copy(path, folder / path.name)
    return folder


# -- a workspace --------------------------------------------------------------------------------


def make_workspace(tmp_path: Path, traces: Sequence[str | os.PathLike | Trace | dict] = (),
                   rubric: str | os.PathLike | Rubric | None = None,
                   db: str | os.PathLike | None = None) -> Workspace:
    """A Workspace for one test: on a SQLite file in tmp_path (or the database `db` names, such
    as the PostgreSQL fixture's URL), listing `traces` (folders and files as they are; Trace
    objects and reference-schema dicts written as files into `tmp_path/traces`), its uploads
    folder in tmp_path, under a rubric (a file, a Rubric, or the default).

    Called twice with the same tmp_path it opens the same database again."""
    listed: list[Path] = []
    written = tmp_path / "traces"
    for item in traces:
        if isinstance(item, (Trace, dict)):
            trace = item if isinstance(item, Trace) else as_trace(item)
            write_trace(trace, written / f"{re.sub(r'[^A-Za-z0-9._-]+', '_', trace.trace_id)}.json")
            if written not in listed:
                listed.append(written)
        else:
            path = Path(item)
            if path not in listed:
                listed.append(path)
    return Workspace.open(db if db is not None else tmp_path / "orchviz.db", traces=listed,
                          rubric=rubric, uploads=tmp_path / "uploads")


def app_env(monkeypatch, workspace: Workspace) -> Workspace:
    """Point the app (run in this process by AppTest) at a workspace: the environment that
    `orchviz app` would set for it."""
    for name, value in workspace.settings.to_env().items():
        monkeypatch.setenv(name, value)
    if workspace.settings.rubric is None:
        monkeypatch.delenv("ORCHVIZ_RUBRIC", raising=False)
    return workspace


def live_charts(at) -> list[tuple[dict, dict]]:
    """What an AppTest run handed the live charts (`components.live_chart`, the timeline): each
    chart's header (revision, ring, tag) and its figure."""
    drawn = []
    for element in at.get("bidi_component"):
        proto = element.proto
        if proto.component_name != "orchviz.live_chart" or b"\n" not in proto.bytes:
            continue  # `load_ahead`'s mount: plotly.js fetched, nothing drawn
        head, figure = proto.bytes.split(b"\n", 1)
        drawn.append((json.loads(head), json.loads(figure)))
    return drawn


def charts_drawn(at) -> int:
    """Plotly figures an AppTest run drew: Streamlit's Plotly charts and the live charts."""
    return len(at.get("plotly_chart")) + len(live_charts(at))
