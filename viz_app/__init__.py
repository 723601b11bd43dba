"""orchviz: browse, label and present orchestration traces of LLM multi-agent systems.

The library API::

    from viz_app import load_trace, analyze, TraceError
    trace = load_trace("demo_traces/01_centralized_research_faithful.json")
    print(analyze(trace).figures.depth)
"""

from viz_app.analysis import Analysis, analyze, figures
from viz_app.errors import TraceError
from viz_app.io import dump_trace, load_trace, load_traces, write_trace
from viz_app.model import Edge, Event, Trace, TraceWarning

__version__ = "0.1.0"

__all__ = ["Analysis", "Edge", "Event", "Trace", "TraceError", "TraceWarning", "analyze",
           "dump_trace", "figures", "load_trace", "load_traces", "write_trace", "__version__"]
