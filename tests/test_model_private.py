"""A trace's own state beside its fields (reader warnings, hash, source, analysis) belongs to
that trace alone, whichever way it was made."""

from __future__ import annotations

import copy
import pickle

from factories import example_trace
import msgspec

from viz_app.analysis import analyze
from viz_app.io.native import trace_from_dict
from viz_app.model import Trace, TraceWarning


def test_traces_built_from_the_same_data_share_no_state():
    data = example_trace("t-1").to_dict()
    first, second = trace_from_dict(data, "a"), trace_from_dict(data, "b")
    first._warnings.append(TraceWarning(code="skipped", message="a record was skipped"))
    first._sha256 = "a" * 64
    assert second.reader_warnings == [] and second.sha256 != first.sha256
    assert analyze(first) is not analyze(second) and analyze(first).trace is first
    assert (second.source, second.source_format) == ("b", "orchviz")


def test_a_copied_or_pickled_trace_keeps_its_own_state():
    trace = example_trace("t-2")
    trace._warnings.append(TraceWarning(code="skipped", message="a record was skipped"))
    for other in (copy.deepcopy(trace),
                  pickle.loads(pickle.dumps(trace))):
        assert other.reader_warnings == trace.reader_warnings
        assert other.sha256 == trace.sha256 and other.events_by_id.keys() == \
            trace.events_by_id.keys()
        other._warnings.clear()
        assert len(trace.reader_warnings) == 1


def test_a_trace_made_without_validation_has_its_defaults():
    built = msgspec.structs.replace(example_trace("t-3"), trace_id="t-4")
    assert (built.reader_warnings, built.source, built.source_format) == ([], "", "orchviz")
