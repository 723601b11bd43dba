"""orchviz: browse, label and present orchestration traces of LLM multi-agent systems.

The library API::

    from viz_app import load_trace, analyze, TraceError
    trace = load_trace("demo_traces/01_centralized_research_faithful.json")
    print(analyze(trace).figures.depth)

The face is lazy (`viz_app.face`): every process imports this package, and `orchviz --help` or a
verb that reads no trace should not pay for the model, the readers and the analysis."""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_app.face import lazy
from viz_app.version import __version__

if TYPE_CHECKING:  # the face: the library API, each name from its module
    from viz_app.analysis import Analysis, analyze, figures
    from viz_app.errors import TraceError
    from viz_app.io import dump_trace, load_trace, load_traces, write_trace
    from viz_app.model import Edge, Event, Trace, TraceWarning

__all__ = ["Analysis", "Edge", "Event", "Trace", "TraceError", "TraceWarning", "analyze",
           "dump_trace", "figures", "load_trace", "load_traces", "write_trace", "__version__"]

__getattr__, __dir__ = lazy(__name__, __file__)
