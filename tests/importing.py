"""Helpers for the importer tests: where the fixtures are, and what a trace looks like as an
orchestration (agents, spawns, delegations, returns, stops), checked against the reference
schema."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from viz_app.analysis import analyze
from viz_app.model import Trace

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "importers"
SCHEMA = json.loads((Path(__file__).resolve().parent.parent / "viz_app" / "trace_schema.json")
                    .read_text("utf-8"))


def assert_reference_valid(trace: Trace) -> None:
    """The trace, as orchviz writes it, validates against the reference JSON Schema."""
    jsonschema.Draft202012Validator(SCHEMA).validate(trace.to_dict())


def spawns(trace: Trace) -> list[tuple[str, str]]:
    """(parent, child) of every spawn, in time order."""
    return [(e.agent, e.to) for e in analyze(trace).order if e.type == "spawn"]


def delegations(trace: Trace) -> list[tuple[str, str]]:
    """(from, to) of every delegate decision, in time order."""
    return [(e.agent, e.to) for e in analyze(trace).order if e.decision == "delegate"]


def returns(trace: Trace) -> list[tuple[str, str]]:
    """(from, to) of every return, in time order."""
    return [(e.from_ or e.agent, e.to) for e in analyze(trace).order if e.type == "return"]


def stop_agents(trace: Trace) -> list[str]:
    """Who stops, per explicit stop decision (empty when the stop is only inferred)."""
    return [s.agent for s in analyze(trace).stops if not s.inferred]


def warning_codes(trace: Trace) -> list[str]:
    """The codes of the trace's warnings."""
    return [w.code for w in analyze(trace).warnings]
