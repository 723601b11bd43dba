"""The trace library: every trace under the app's folders, indexed once in the database.

Each file is remembered by path, size and modification time, so a folder of thousands of traces is
parsed once and later starts list it at once. A file holds one trace (JSON) or a pool of them
(JSONL), so a row is keyed by its file and its position in that file. A file that fails to load gets
a row too, with its `TraceError` message: the library lists failures, it never hides them.

Files are read only through `viz_app.io.detect.read_any`, so every format an importer adds shows
up here with its `source_format`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field
from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Float,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    delete,
    select,
)

from viz_app.analysis import analyze
from viz_app.db import metadata
from viz_app.errors import TraceError
from viz_app.io import whowhen
from viz_app.io.claude_code import is_subagent_file
from viz_app.io.detect import read_any
from viz_app.io.files import TRACE_SUFFIXES, trace_files
from viz_app.labels.rubric import Rubric, counted, targets
from viz_app.model import Trace

SEARCH_TEXT_LIMIT = 200_000
"""Characters of event content kept per trace for search (agent names always fit before it)."""

trace_index = Table(
    "orchviz_trace_index", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("path", String(2048), nullable=False, index=True),
    Column("position", Integer, nullable=False),
    Column("size", BigInteger, nullable=False),
    Column("mtime_ns", BigInteger, nullable=False),
    Column("trace_id", String(512), index=True),
    Column("task_id", Text),
    Column("system", Text),
    Column("topology", String(64)),
    Column("source_format", String(64)),
    Column("events", Integer),
    Column("agents", Integer),
    Column("depth", Integer),
    Column("makespan_s", Float),
    Column("parallelism", Float),
    Column("tokens", Float),
    Column("cost_usd", Float),
    Column("sha256", String(64)),
    Column("warnings", Integer),
    Column("search_text", Text),
    Column("targets", Text),
    Column("rubric_sha", String(64)),
    Column("error", Text),
    Column("indexed_at", Float, nullable=False),
    UniqueConstraint("path", "position", name="uq_orchviz_trace_index_path_position"),
)
"""One row per trace of a file (position = its place in the file), or per failure (negative
position, `error` set, no trace id)."""


class IndexRow(BaseModel):
    """What the library shows of one trace, without parsing its file again."""

    path: str = Field(description="The file the trace is in.")
    position: int = Field(description="Its place among the traces of that file (0 for JSON).")
    trace_id: str = Field(description="The trace's id.")
    task_id: str = Field(description="The task the run attempted.")
    system: str = Field(description="The system that produced it ('' if not given).")
    topology: str = Field(description="Its topology ('' if not given).")
    source_format: str = Field(description="`orchviz`, or the importer that converted it.")
    events: int = Field(description="Number of events.")
    agents: int = Field(description="Number of agents.")
    depth: int = Field(description="Depth of the spawn tree.")
    makespan_s: float = Field(description="From the first event to the end of the last.")
    parallelism: float = Field(description="Sum of agent lifetimes over the makespan.")
    tokens: float = Field(description="Tokens the run used.")
    cost_usd: float = Field(description="What the run cost in dollars.")
    sha256: str = Field(description="Hash of the trace's bytes (labels record it).")
    warnings: int = Field(description="How many structural warnings loading it gave.")
    targets: dict[str, list[str]] | None = Field(
        None, description="What the rubric asks to label in it: target key ('' for the trace) "
        "-> the questions that must be answered; None when indexed without a rubric.")

    def labelled(self, answered: dict[str, set[str]]) -> int:
        """How many of its targets have every required question answered (`answered`: target
        key -> questions with a current label, as `LabelStore.answered` gives for a trace)."""
        return sum(1 for key, required in (self.targets or {}).items()
                   if set(required) <= answered.get(key, set()))


class IndexFailure(BaseModel):
    """A file (or a line of a pool) that could not be loaded, with the reason."""

    path: str = Field(description="The file that failed.")
    error: str = Field(description="The TraceError message: file, place and problem.")


class IndexResult(BaseModel):
    """The library after indexing: its traces, its failures, and what indexing had to do."""

    rows: list[IndexRow] = Field(default_factory=list, description="Every loaded trace.")
    failures: list[IndexFailure] = Field(default_factory=list, description="Every failure.")
    parsed: int = Field(0, description="Files read this time (new or changed).")
    skipped: int = Field(0, description="Files unchanged since they were indexed: not read.")
    removed: int = Field(0, description="Files indexed before that are gone now.")


Progress = Callable[[int, int, str], None]
"""Called as `progress(done, total, path)` while files are indexed."""


def library_files(folders: Iterable[str | os.PathLike]) -> list[Path]:
    """Every trace file under the folders (missing folders are skipped, not errors: the uploads
    folder may not exist yet)."""
    existing = [Path(f) for f in folders if Path(f).exists()]
    return [p.resolve() for p in trace_files(existing) if not is_subagent_file(p)]


def index_folders(engine: Engine, folders: Iterable[str | os.PathLike],
                  progress: Progress | None = None, rubric: Rubric | None = None) -> IndexResult:
    """Bring the index up to date with the folders and return their traces and failures.

    Files whose size and modification time are unchanged are not read again; new and changed
    files are read with `read_any`; rows of files that disappeared from these folders are dropped.
    With a rubric, each row records the trace's targets under it, so the library can say "2 of 5
    labelled" without loading the trace; files indexed under another rubric are read again.
    """
    folders = [Path(f).resolve() for f in folders]
    files = library_files(folders)
    known = _known_files(engine, rubric.sha256 if rubric is not None else None)
    present = {str(p) for p in files}
    stale = [path for path in known if _under(path, folders) and path not in present]
    result = IndexResult()
    if stale:
        with engine.begin() as conn:
            for path in stale:
                conn.execute(delete(trace_index).where(trace_index.c.path == path))
        result.removed = len(stale)
    todo = []
    for path in files:
        stat = _stat(path)
        if stat is not None and known.get(str(path)) == stat:
            result.skipped += 1
        else:
            todo.append((path, stat))
    for done, (path, stat) in enumerate(todo, start=1):
        if progress is not None:
            progress(done - 1, len(todo), str(path))
        _index_file(engine, path, stat, rubric)
        result.parsed += 1
    if progress is not None and todo:
        progress(len(todo), len(todo), "")
    result.rows, result.failures = listing(engine, files)
    return result


def index_file(engine: Engine, path: str | os.PathLike, rubric: Rubric | None = None) -> None:
    """(Re-)index one file now, whatever the index remembers of it."""
    path = Path(path).resolve()
    _index_file(engine, path, _stat(path), rubric)


def listing(engine: Engine, files: Sequence[Path]) -> tuple[list[IndexRow], list[IndexFailure]]:
    """The indexed traces and failures of these files, in file order then position."""
    wanted = {str(p): i for i, p in enumerate(files)}
    columns = [trace_index.c[name] for name in IndexRow.model_fields] + [trace_index.c.error]
    with engine.connect() as conn:
        records = conn.execute(select(*columns)).mappings().all()
    records = sorted((r for r in records if r["path"] in wanted),
                     key=lambda r: (wanted[r["path"]], r["position"]))
    rows = [IndexRow.model_validate({**{k: r[k] for k in IndexRow.model_fields},
                                     "targets": json.loads(r["targets"]) if r["targets"] else None})
            for r in records if r["error"] is None]
    failures = [IndexFailure(path=r["path"], error=r["error"]) for r in records
                if r["error"] is not None]
    return rows, failures


def search(rows: Sequence[IndexRow], query: str, engine: Engine | None = None) -> list[IndexRow]:
    """The rows matching every word of the query, case-insensitively.

    A word matches a row's id, task, system, topology or format; with the engine, it also matches
    the agent names, roles, tools and event content kept in the index.
    """
    terms = query.lower().split()
    if not terms:
        return list(rows)
    if engine is None:
        return [r for r in rows if all(t in _summary(r) for t in terms)]
    hits = _matching_keys(engine, terms)
    return [r for r in rows if (r.path, r.position) in hits]


def find_trace(engine: Engine, trace_id: str) -> tuple[Path, int] | None:
    """Where the index found a trace: (file, position in it), or None when it has no such id."""
    with engine.connect() as conn:
        found = conn.execute(
            select(trace_index.c.path, trace_index.c.position)
            .where(trace_index.c.trace_id == trace_id, trace_index.c.error.is_(None))
            .order_by(trace_index.c.indexed_at.desc(), trace_index.c.path)).first()
    return (Path(found.path), int(found.position)) if found is not None else None


def read_indexed(path: str | os.PathLike, position: int) -> Trace:
    """The trace at a position of a file, read again (raises TraceError when it cannot be)."""
    traces = read_any(Path(path), on_error=lambda _err: None)
    if not 0 <= position < len(traces):
        raise TraceError(str(path), f"trace {position + 1}",
                         f"the file now holds {len(traces)} traces; index it again")
    return traces[position]


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str) -> str:
    """A file name that is safe to write: its last path part, plain characters, a trace ending."""
    base = _UNSAFE_NAME.sub("_", Path(name.replace("\\", "/")).name).strip("._") or "upload"
    if not base.lower().endswith(TRACE_SUFFIXES):
        base += ".json"
    return base[-180:]


def save_upload(uploads_dir: str | os.PathLike, name: str, data: bytes) -> Path:
    """Save uploaded bytes into the uploads folder under a safe name, and return the path.

    The same bytes under the same name reuse the file already saved; different bytes under a name
    already taken get a new name (`name-<hash>.json`), so an upload never overwrites another.
    """
    folder = Path(uploads_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / safe_file_name(name)
    if target.exists():
        if target.read_bytes() == data:
            return target
        digest = hashlib.sha256(data).hexdigest()[:12]
        suffix = next(s for s in sorted(TRACE_SUFFIXES, key=len, reverse=True)
                      if target.name.lower().endswith(s))
        target = folder / f"{target.name[:-len(suffix)]}-{digest}{suffix}"
        if target.exists() and target.read_bytes() == data:
            return target
    partial = target.with_name(f".{target.name}.part")
    partial.write_bytes(data)
    partial.replace(target)
    return target


# -- indexing one file ---------------------------------------------------------------------


def _stat(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime_ns


def _known_files(engine: Engine, rubric_sha: str | None) -> dict[str, tuple[int, int]]:
    """Path -> (size, mtime) of the files indexed, leaving out those whose traces were indexed
    under another rubric (their targets are out of date). A failed file is kept: it has none."""
    with engine.connect() as conn:
        found = conn.execute(select(trace_index.c.path, trace_index.c.size,
                                    trace_index.c.mtime_ns, trace_index.c.rubric_sha,
                                    trace_index.c.error)).all()
    known: dict[str, tuple[int, int]] = {}
    outdated = {r.path for r in found if r.error is None and r.rubric_sha != rubric_sha}
    for r in found:
        if r.path not in outdated:
            known[r.path] = (int(r.size), int(r.mtime_ns))
    return known


def _under(path: str, folders: Sequence[Path]) -> bool:
    return any(path == str(f) or path.startswith(str(f) + os.sep) for f in folders)


def _index_file(engine: Engine, path: Path, stat: tuple[int, int] | None,
                rubric: Rubric | None) -> None:
    errors: list[TraceError] = []
    try:
        traces = read_any(path, on_error=errors.append)
    except TraceError as err:
        traces, errors = [], [err]
    except Exception as err:  # an importer's bug must not stop the rest of the library
        traces, errors = [], [TraceError(str(path), "", f"could not be read ({err!r})")]
    for trace in traces:  # a published annotation arrives with its run, as imported labels
        if trace.source_format == whowhen.NAME:
            try:
                whowhen.import_annotation(trace, engine.url.render_as_string(hide_password=False))
            except Exception as err:  # the run still lists; the failure is listed beside it
                errors.append(TraceError(str(path), "annotation", f"its labels were not "
                                         f"imported ({err})"))
    size, mtime = stat if stat is not None else (-1, -1)
    now = time.time()
    records = [{**_trace_record(trace, rubric), "position": i} for i, trace in enumerate(traces)]
    records += [{"position": -1 - i, "error": str(err)} for i, err in enumerate(errors)]
    with engine.begin() as conn:
        conn.execute(delete(trace_index).where(trace_index.c.path == str(path)))
        if records:
            conn.execute(trace_index.insert(), [
                {**_EMPTY, **r, "path": str(path), "size": size, "mtime_ns": mtime,
                 "indexed_at": now} for r in records])


_EMPTY = {c.name: None for c in trace_index.columns if c.name != "id"}


def _trace_record(trace: Trace, rubric: Rubric | None) -> dict:
    figures = analyze(trace).figures
    found = None if rubric is None else {
        t.key: t.required for t in targets(rubric, analyze(trace)) if counted(t)}
    return {
        "trace_id": trace.trace_id, "task_id": trace.task_id, "system": trace.system or "",
        "topology": trace.topology or "", "source_format": trace.source_format,
        "events": figures.events, "agents": figures.agents, "depth": figures.depth,
        "makespan_s": figures.makespan_s, "parallelism": figures.parallelism,
        "tokens": figures.tokens, "cost_usd": figures.cost_usd, "sha256": trace.sha256,
        "warnings": len(trace.warnings), "search_text": search_text(trace), "error": None,
        "targets": None if found is None else json.dumps(found),
        "rubric_sha": None if rubric is None else rubric.sha256,
    }


def search_text(trace: Trace) -> str:
    """The lower-cased text a search looks in: ids, task, system, agent names, roles, tools, then
    event content up to SEARCH_TEXT_LIMIT characters."""
    analysis = analyze(trace)
    head = [trace.trace_id, trace.task_id, trace.system or "", trace.topology or "",
            trace.source_format]
    head += analysis.agents
    head += sorted({analysis.role_of(a) for a in analysis.agents})
    head += sorted({e.tool for e in trace.events if e.tool})
    text = "\n".join(head)
    budget = max(0, SEARCH_TEXT_LIMIT - len(text))
    parts = []
    for event in analysis.order:
        if budget <= 0:
            break
        piece = event.text[:budget]
        parts.append(piece)
        budget -= len(piece) + 1
    return (text + "\n" + "\n".join(parts)).lower()


def _summary(row: IndexRow) -> str:
    return " ".join((row.trace_id, row.task_id, row.system, row.topology,
                     row.source_format)).lower()


def _matching_keys(engine: Engine, terms: Sequence[str]) -> set[tuple[str, int]]:
    conditions = [trace_index.c.search_text.like(f"%{_like_escape(t)}%", escape="\\")
                  for t in terms]
    with engine.connect() as conn:
        found = conn.execute(select(trace_index.c.path, trace_index.c.position)
                             .where(and_(trace_index.c.error.is_(None), *conditions))).all()
    return {(r.path, int(r.position)) for r in found}


def _like_escape(term: str) -> str:
    return term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
