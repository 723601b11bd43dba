"""The committed demo traces are valid, self-consistent and cover every topology and review case."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

ROOT = Path(__file__).resolve().parent.parent
DEMO_DIR = ROOT / "demo_traces"
SCHEMA = json.loads((ROOT / "viz_app" / "trace_schema.json").read_text(encoding="utf-8"))
DEMO_FILES = sorted(DEMO_DIR.glob("*.json"))


def load(path: Path) -> dict:
    """Read one demo trace."""
    return json.loads(path.read_text(encoding="utf-8"))


def test_there_are_at_least_ten_demo_traces():
    assert len(DEMO_FILES) >= 10


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.name)
def test_demo_trace_validates_against_the_reference_schema(path):
    errors = list(Draft202012Validator(SCHEMA).iter_errors(load(path)))
    assert errors == []


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.name)
def test_demo_trace_event_ids_are_unique(path):
    ids = [e["id"] for e in load(path)["events"]]
    assert len(ids) == len(set(ids))


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.name)
def test_demo_trace_edges_point_at_existing_events(path):
    trace = load(path)
    ids = {e["id"] for e in trace["events"]}
    dangling = [e for e in trace["edges"] if e["src"] not in ids or e["dst"] not in ids]
    assert dangling == []


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.name)
def test_demo_trace_has_inline_content_on_every_event(path):
    assert all(isinstance(e.get("content"), str) and e["content"] for e in load(path)["events"])


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.name)
def test_demo_trace_end_times_never_precede_start_times(path):
    assert all(e.get("end_t", e["t"]) >= e["t"] for e in load(path)["events"])


@pytest.mark.parametrize("path", DEMO_FILES, ids=lambda p: p.name)
def test_demo_trace_file_is_under_200_kb(path):
    assert path.stat().st_size < 200 * 1024


def test_every_schema_topology_appears_in_the_demos():
    wanted = set(SCHEMA["properties"]["topology"]["enum"])
    assert wanted <= {load(p)["topology"] for p in DEMO_FILES}


def test_at_least_one_demo_has_no_explicit_stop_decision():
    def has_stop(trace: dict) -> bool:
        return any(e.get("decision") == "stop" for e in trace["events"])

    assert any(not has_stop(load(p)) for p in DEMO_FILES)


def test_the_review_cases_are_all_present():
    names = " ".join(p.name for p in DEMO_FILES)
    for case in ("dropped_finding", "premature_stop", "late_stop", "over_spawning"):
        assert case in names


def test_over_spawning_demo_spawns_twelve_agents():
    trace = load(DEMO_DIR / "12_review_over_spawning.json")
    assert sum(1 for e in trace["events"] if e["type"] == "spawn") == 12


def test_premature_stop_demo_has_a_return_after_the_stop():
    events = load(DEMO_DIR / "10_review_premature_stop.json")["events"]
    stop_t = next(e["t"] for e in events if e.get("decision") == "stop")
    assert any(e["type"] == "return" and e["t"] > stop_t for e in events)


def test_swarm_demo_has_at_least_thirty_workers():
    trace = load(DEMO_DIR / "04_swarm_parallel_audit.json")
    assert sum(1 for e in trace["events"] if e["type"] == "spawn") >= 30


def test_committed_demos_match_what_build_writes(tmp_path):
    import importlib.util

    spec = importlib.util.spec_from_file_location("demo_build", DEMO_DIR / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for written in module.build(tmp_path):
        assert written.read_text(encoding="utf-8") == (DEMO_DIR / written.name).read_text(encoding="utf-8")
