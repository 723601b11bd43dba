"""Readers and writers: the native format, and (in their own modules) foreign formats."""

from viz_app.io.native import (
    DEFAULT_MAX_BYTES,
    dump_trace,
    load_trace,
    load_traces,
    trace_from_dict,
    write_trace,
)

__all__ = ["DEFAULT_MAX_BYTES", "dump_trace", "load_trace", "load_traces", "trace_from_dict",
           "write_trace"]
