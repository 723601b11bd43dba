"""Reading any supported file: native traces, or a foreign format converted by its importer.

One registry, `FORMATS`, names every format with its `detect` (a score from 0 to 1 over the
file's bytes and name) and its `read` (bytes and label -> traces). `detect_format` picks the
highest score; `read_any` reads with the chosen format; `read_folder` knows the folders that hold
many sessions (Claude Code projects, Codex rollout folders) and yields one trace per session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from viz_app.errors import TraceError
from viz_app.io import (agentlightning, agentops, art, claude_code, codex, inspect_ai, langfuse,
                        mast, openai_agents, openrlhf, otlp, rllm, rollouts, skyrl, trail, verl,
                        whowhen)
from viz_app.io.files import trace_files
from viz_app.io.native import DEFAULT_MAX_BYTES, Source, load_traces, read_source
from viz_app.io.records import first_value, head_has
from viz_app.model import Trace


@dataclass(frozen=True)
class Format:
    """A file format orchviz reads."""

    name: str
    """Short name, as `--from` takes it and `trace.source_format` reports it."""
    title: str
    """What a person calls it."""
    detect: Callable[[bytes, str], float]
    """How sure it is that bytes (with their file name) are in this format, from 0 to 1."""
    read: Callable[[bytes, str], list[Trace]]
    """Every trace in bytes of this format, named by a label."""
    labels: Callable[[Trace, set[str]], list[dict]] | None = None
    """For a dataset that publishes annotations: the label records (import shape) of those a
    trace carries, under the rubric questions given."""


def _detect_native(data: bytes, name: str) -> float:
    first = first_value(data)
    if isinstance(first, dict) and "events" in first and "trace_id" in first:
        return 1.0
    if isinstance(first, dict) and "events" in first and "edges" in first:
        return 0.8
    if first is None and head_has(data, b"trace_id", b"events"):
        return 0.7
    return 0.0


def _read_native(data: bytes, label: str) -> list[Trace]:
    return list(load_traces(data, name=label))


FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("orchviz", "orchviz trace (reference schema)", _detect_native, _read_native),
    Format(claude_code.NAME, "Claude Code session transcript", claude_code.detect,
           lambda data, label: claude_code.import_claude_code(data, name=label)),
    Format(openai_agents.NAME, "OpenAI Agents SDK trace export", openai_agents.detect,
           lambda data, label: openai_agents.import_openai_agents(data, name=label)),
    Format(otlp.NAME, "OpenTelemetry OTLP/JSON spans", otlp.detect,
           lambda data, label: otlp.import_otlp(data, name=label)),
    Format(codex.NAME, "Codex CLI rollout", codex.detect,
           lambda data, label: codex.import_codex(data, name=label)),
    Format(inspect_ai.NAME, "Inspect AI evaluation log", inspect_ai.detect,
           lambda data, label: inspect_ai.import_inspect(data, name=label)),
    Format(whowhen.NAME, "Who&When annotated run", whowhen.detect,
           lambda data, label: whowhen.import_whowhen(data, name=label),
           whowhen.annotation_records),
    Format(trail.NAME, "TRAIL annotated span tree", trail.detect,
           lambda data, label: trail.import_trail(data, name=label), trail.annotation_records),
    Format(agentops.NAME, "AgentOps trace export", agentops.detect,
           lambda data, label: agentops.import_agentops(data, name=label)),
    Format(langfuse.NAME, "Langfuse trace export", langfuse.detect,
           lambda data, label: langfuse.import_langfuse(data, name=label)),
    Format(agentlightning.NAME, "Agent Lightning rollout spans", agentlightning.detect,
           lambda data, label: agentlightning.import_agentlightning(data, name=label)),
    Format(mast.NAME, "MAST / MAD annotated run logs", mast.detect,
           lambda data, label: mast.import_mast(data, name=label), mast.annotation_records),
    Format(verl.NAME, "verl rollout dump ({step}.jsonl)", verl.detect,
           lambda data, label: verl.import_verl(data, name=label)),
    Format(openrlhf.NAME, "OpenRLHF rollout log (rollout_data_rank_*.jsonl)", openrlhf.detect,
           lambda data, label: openrlhf.import_openrlhf(data, name=label)),
    Format(art.NAME, "OpenPipe ART trajectory log (Parquet or JSONL)", art.detect,
           lambda data, label: art.import_art(data, name=label)),
    Format(skyrl.NAME, "SkyRL trajectory or evaluation dump", skyrl.detect,
           lambda data, label: skyrl.import_skyrl(data, name=label)),
    Format(rllm.NAME, "rLLM episodes", rllm.detect,
           lambda data, label: rllm.import_rllm(data, name=label)),
)}
"""Every format orchviz reads, by name."""


def published_label_records(trace: Trace, questions: set[str]) -> list[dict]:
    """The label records (import shape) of every published annotation a trace carries, mapped
    to the rubric's questions by the format that publishes them; whatever format the trace was
    read from (a native file written by `orchviz import` keeps its annotations)."""
    records: list[dict] = []
    for fmt in FORMATS.values():
        if fmt.labels is not None:
            records.extend(fmt.labels(trace, questions))
    return records


def detect_format(source: Source, name: str | None = None, *,
                  max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """The name of the format a file (or uploaded bytes) is in; TraceError when no format
    recognises it."""
    data, label = read_source(source, name, max_bytes)
    return choose_format(data, label)


def choose_format(data: bytes, label: str) -> str:
    """The best-scoring format for bytes already read; TraceError when none scores."""
    scores = {fmt.name: fmt.detect(data, label) for fmt in FORMATS.values()}
    best = max(scores, key=scores.__getitem__)
    if scores[best] <= 0:
        raise TraceError(label, "", "is in no format orchviz reads (tried "
                         + ", ".join(FORMATS) + f"); {what_it_holds(data)}; name a format "
                         "with --from")
    return best


def what_it_holds(data: bytes) -> str:
    """A few words on what a file holds, for a user to tell what it is when no format fits:
    the top-level keys of its JSON object (of its first line, of the first item of its list)."""
    head, _, rest = data.strip().partition(b"\n")
    lines = bool(rest.strip()) and first_value(head) is not None  # JSON Lines
    first = first_value(data)

    def keys(value: dict) -> str:
        names = [f"`{k}`" for k in list(value)[:12]]
        more = f" and {len(value) - 12} more" if len(value) > 12 else ""
        return ", ".join(names) + more if names else "none"

    if isinstance(first, dict):
        where = "its first line's top-level keys are" if lines else "its top-level keys are"
        return f"{where} {keys(first)}"
    if isinstance(first, list):
        head = next((item for item in first if isinstance(item, dict)), None)
        return f"it is a JSON list of {len(first)} items" + (
            f" whose first object has the keys {keys(head)}" if head is not None else "")
    if first is not None:
        return f"it holds a JSON {type(first).__name__}, not an object"
    return "it does not begin with a JSON value (or is too large to look at whole)"


def read_any(source: Source, *, name: str | None = None,
             on_error: Callable[[TraceError], None] | None = None,
             max_bytes: int = DEFAULT_MAX_BYTES, fmt: str | None = None,
             on_format: Callable[[str, str], None] | None = None) -> list[Trace]:
    """Every trace in a file of any supported format, converted on load.

    The format is detected unless `fmt` names it; `on_format(label, name)` hears which was
    chosen. A native JSONL pool reports bad lines to `on_error` as before. Raises TraceError for a
    file that cannot be read at all, or that is not in the named format.
    """
    if not isinstance(source, bytes) and Path(source).is_dir():
        return read_folder(source, fmt=fmt, on_format=on_format)
    data, label = read_source(source, name, max_bytes)
    chosen = fmt or choose_format(data, label)
    if chosen not in FORMATS:
        raise TraceError(label, "", f"unknown format {chosen!r}; expected one of "
                         + ", ".join(FORMATS))
    if on_format is not None:
        on_format(label, chosen)
    if chosen == "orchviz":
        return list(load_traces(data, name=label, on_error=on_error, max_bytes=max_bytes))
    return FORMATS[chosen].read(data, label)


def folder_format(folder: str | Path) -> str | None:
    """`claude_code` or `codex` when a folder holds many sessions of one of them, else None."""
    if claude_code.is_project(folder):
        return claude_code.NAME
    if codex.is_rollout_folder(folder):
        return codex.NAME
    return None


def read_folder(folder: str | Path, *, fmt: str | None = None,
                on_format: Callable[[str, str], None] | None = None,
                on_error: Callable[[TraceError], None] | None = None) -> list[Trace]:
    """Every trace in a folder: one per session of a Claude Code project folder (sub-agent
    files grouped with their session), one per root thread of a Codex rollout folder, else
    each trace file in it read on its own."""
    chosen = fmt or folder_format(folder)
    if on_format is not None and chosen in (claude_code.NAME, codex.NAME):
        on_format(str(folder), chosen)
    if chosen == claude_code.NAME:
        return claude_code.read_project(folder)
    if chosen == codex.NAME:
        return codex.read_rollouts(folder)
    traces: list[Trace] = []
    for path in trace_files([folder]):
        if claude_code.is_subagent_file(path) or codex.is_child_file(path):
            continue  # read with its session, or its root thread
        try:
            traces.extend(read_any(path, fmt=chosen, on_format=on_format, on_error=on_error))
        except TraceError as err:
            if on_error is None:
                raise
            on_error(err)
    return rollouts.join(traces)


def library_files(folders: Iterable[str | os.PathLike]) -> list[Path]:
    """Every trace file under the folders (missing folders are skipped, not errors: the uploads
    folder may not exist yet)."""
    existing = [Path(f) for f in folders if Path(f).exists()]
    return [p.resolve() for p in trace_files(existing)
            if not (claude_code.is_subagent_file(p) or codex.is_child_file(p))]


def holds_spans(path: str | os.PathLike) -> bool:
    """Whether a file's beginning is span data (OTLP, Agent Lightning), by its first 64 KB:
    what a pool written a file at a time asks of its sources before it holds rollouts back to
    join them with their spans (`rollouts.join_stream`)."""
    import gzip

    from viz_app.io.rollouts import SPAN_FORMATS

    try:
        opener = gzip.open if str(path).endswith(".gz") else open
        with opener(path, "rb") as stream:
            head = stream.read(65536)
        return choose_format(head, str(path)) in SPAN_FORMATS
    except (OSError, EOFError, TraceError):
        return False


def read_at(path: str | os.PathLike, position: int) -> Trace:
    """The trace at a position of a file, read again (raises TraceError when it cannot be)."""
    traces = read_any(Path(path), on_error=lambda _err: None)
    if not 0 <= position < len(traces):
        raise TraceError(str(path), f"trace {position + 1}",
                         f"the file now holds {len(traces)} traces; index it again")
    return traces[position]
