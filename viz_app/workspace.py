"""The Workspace: the one front door to orchviz's data.

A Workspace holds what one team works on together: the folders of traces (and the uploads
folder), the database (trace index, labels, bookmarks, behind one migration history), and the
rubric that labels are checked against. The CLI, every page of the app and the tests go through
it, so a rule such as "which trace comes next for this reviewer" or "what a save must contain"
is written once, here. The reviewer is always an argument: a Workspace is shared by everyone who
uses it, and knows nobody.

    ws = Workspace.open("orchviz.db", traces=["demo_traces"])
    library = ws.update_index()
    trace = ws.trace(library.rows[0].trace_id)
    ws.save_answers(trace, "e12", {"aggregation_quality": 2}, Reviewer(name="ann", via="cli"))
"""

from __future__ import annotations

import os
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field
from sqlalchemy import Engine

from viz_app.errors import LabelError, OrchvizError, RubricError, TraceError
from viz_app.export import FORMATS, ExportInput, ExportResult, write_export
from viz_app.export.bookmarks import bookmark_records
from viz_app.export.consensus import ExportOptions
from viz_app.io.detect import published_label_records, read_any, read_at
from viz_app.io.files import trace_files
from viz_app.io.records import json_values
from viz_app.io.trace_cache import MAX_TRACES, TraceCache, TraceSource, file_stamp
from viz_app.labels.bookmark import Bookmark
from viz_app.labels.agreement import (AgreementHistory, SuggestionAgreement,
                                      agreement_history, question_agreement,
                                      suggestion_agreement)
from viz_app.labels.attention import (LEARNED, contest, contests, earlier_reviewers,
                                      first_answers, latest_version, uncertainty)
from viz_app.labels.campaign import (SPREAD, Campaign, CampaignProgress, CampaignSpec,
                                     CampaignStatus, Claim,
                                     Disagreement, PlannedTarget, ReviewerStatus,
                                     campaign_questions,
                                     filter_rows, find_disagreements, gold_accuracy,
                                     gold_answers, label_target, plan_targets, sample_rows,
                                     unindexed)
from viz_app.labels.label import ImportReport, Label, LabelRecord, Progress, Reviewer, now
from viz_app.labels.pairs import Preference, judgement, judgement_label, preference_of
from viz_app.labels.suggestion import Suggestion, SuggestionFailure
from viz_app.labels.rubric import (LabelTarget, Rubric, asked, default_rubric, load_rubric,
                                   pointer_optional, targets)
from viz_app.analysis import Analysis, analyze
from viz_app.model import Trace
from viz_app.settings import ModelEndpoint, ReplayLimits, Settings, database_url
from viz_app.store.bookmarks import BookmarkStore
from viz_app.store.campaigns import CampaignStore, pool_conditions, pool_rows, pool_sample
from viz_app.store.database import connect
from viz_app.store.index import IndexFailure, IndexProgress, IndexResult, IndexRow, TraceIndex
from viz_app.store.labels import LabelStore
from viz_app.store.members import Member, MemberStore
from viz_app.store.pool_index import Condition, PoolIndex, PoolUpdate, default_index_path

if TYPE_CHECKING:
    from viz_app.branch import Branch, Replacement
    from viz_app.io.pool import Shard
from viz_app.store.learned import LearnedModelStore
from viz_app.store.suggestions import SuggestionStore
from viz_app.suggest import SuggestError, produce
from viz_app.suggest.rules import PRODUCER as RULES

BRANCHES = "branches"
"""The uploads folder's subfolder where continued traces are saved (`Workspace.continue_from`)."""


class TraceSet(BaseModel):
    """The traces read from a workspace's folders (`Workspace.read_traces`), and the files
    that gave none."""

    traces: dict[str, Trace] = Field(default_factory=dict, description="Every trace read, by "
                                     "id (when two files hold one id, the first file's).")
    unread: list[IndexFailure] = Field(default_factory=list, description="Every file (or line "
                                       "of a pool) that held no trace orchviz reads, with why.")


ANSWER_FIRST = "Nothing was saved: pick an answer first: "
"""How a save that lacks a required answer begins its sentence (the questions follow)."""


def answers_to_save(rubric: Rubric, target: LabelTarget,
                    values: Mapping[str, Any], analysis: Analysis | None = None
                    ) -> dict[str, Any]:
    """The answers a save of `values` on a target stores, by the rules of a save: every
    required question has an answer (empty answers count as none), tags are saved even when
    empty, and a follow-up question is kept only when the answer it follows asks it (and then
    it must be answered, unless it points later than the trace's last event: `pointer_optional`,
    given the trace's `analysis`). LabelError says what is missing."""
    questions = [rubric.question(q) for q in target.questions]
    answers = {q.id: values[q.id] for q in questions if q.kind != "tags"
               and values.get(q.id) not in (None, "")}
    missing = [q.prompt for q in questions if q.id in target.required and q.id not in answers]
    if missing:
        raise LabelError(ANSWER_FIRST + "; ".join(missing))
    for q in questions:
        if q.kind == "tags" and q.id in values:
            answers[q.id] = list(values[q.id] or [])
    for q in questions:
        if q.ask_when is None:
            continue
        if not asked(q, answers):
            answers.pop(q.id, None)
        elif q.id not in answers and not (q.optional or pointer_optional(
                rubric, q, answers, analysis, target.event_id)):
            raise LabelError(ANSWER_FIRST + q.prompt)
    return answers


def _uncertain(rubric: Rubric, planned: Sequence[PlannedTarget],
               suggestions: Sequence[Suggestion]) -> dict[tuple[str, str], float]:
    """The learned producer's doubt on each planned target; LabelError saying what to run when
    it has none to give (naming the campaign's questions that are no follow-up)."""
    asked = {q for t in planned for q in t.questions}
    named = [q.id for q in rubric.questions if q.id in asked and q.ask_when is None] or \
        sorted(asked)
    mine = [s for s in suggestions if s.question in asked]
    if latest_version(mine, LEARNED) is None:
        raise LabelError(f"the learned producer has suggested no answer to {', '.join(named)} "
                         f"yet, so there is nothing to order by: run `orchviz suggest train "
                         f"--question {named[0]}` then `orchviz suggest --producer learned "
                         "--traces DIR`, or choose another --order")
    found = uncertainty(planned, mine, LEARNED)
    if not found:
        raise LabelError(f"the learned producer's latest models of {', '.join(named)} "
                         f"suggested nothing on this campaign's {len(planned)} targets, so "
                         "there is nothing to order by: run `orchviz suggest --producer learned "
                         "--traces DIR` over these traces, or choose another --order")
    return found


def _contested(rubric: Rubric, planned: Sequence[PlannedTarget],
               suggestions: Sequence[Suggestion], first: Mapping[Any, Any],
               silence: Mapping[str, Mapping[str, Any]],
               ran_on: Collection[tuple[str, str, str]] = ()) -> dict[tuple[str, str], float]:
    """How contested each planned target is; LabelError when nothing could ever be (no
    producer suggested on these targets' questions, or none disagrees and no target has a
    second reviewer to follow a first)."""
    asked = {q for t in planned for q in t.questions}
    traces = {(t.trace_id, t.trace_sha256) for t in planned}
    if not any(s.question in asked and (s.trace_id, s.trace_sha256) in traces
               for s in suggestions):
        named = [q.id for q in rubric.questions if q.id in asked and q.ask_when is None] or \
            sorted(asked)
        raise LabelError(f"no producer has suggested an answer to {', '.join(named)} "
                         f"on this campaign's {len(planned)} targets, so nothing can be "
                         "contested: run `orchviz suggest --traces DIR` (and a judge or the "
                         "learned producer) first, or choose another --order")
    found = contests(rubric, planned, suggestions, first, silence, ran_on)
    if not found and all(t.required < 2 for t in planned):
        raise LabelError(f"nothing is contested on this campaign's {len(planned)} targets "
                         "yet, and with one reviewer per target no second review can follow a "
                         "first reviewer who contests a producer: give --per-target 2 or "
                         "--agreement-share F, or run a second producer first")
    return found


class SuggestReport(BaseModel):
    """What one run of a producer over some traces did."""

    producer: str = Field(description="`rules`, `judge` or `learned`.")
    traces: int = Field(0, description="Traces the producer ran on.")
    suggestions: int = Field(0, description="Suggestions it made.")
    added: int = Field(0, description="Suggestions stored now (the rest were stored before: "
                       "same producer version, trace version, target and question).")
    skipped: int = Field(0, description="Questions on targets the producer (a judge) had "
                         "answered before on the same trace version, as the same version, "
                         "and was not asked again.")
    failures: list[SuggestionFailure] = Field(default_factory=list,
                                              description="Targets it gave nothing usable on.")

    @property
    def text(self) -> str:
        """One line for people."""
        return (f"{self.producer}: {self.traces} traces, {self.suggestions} suggestions "
                f"({self.added} new), {len(self.failures)} failures"
                + (f", {self.skipped} answered before and not asked again"
                   if self.skipped else ""))


def read_label_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """Label records from a file in the jsonl export's shape (JSON Lines, or a JSON array):
    what a campaign's gold answers are read from; TraceError naming the line that is not JSON,
    LabelError when a record is not an object."""
    values = json_values(Path(path).read_bytes(), str(path))
    if len(values) == 1 and isinstance(values[0][1], list):
        values = [(1, v) for v in values[0][1]]
    for line, value in values:
        if not isinstance(value, dict):
            raise LabelError(f"{path}: line {line}: a label record is a JSON object")
    return [v for _, v in values]


class Workspace:
    """Settings, database, rubric, trace index and stores, opened together."""

    def __init__(self, settings: Settings, *, rubric: Rubric | None = None):
        self.settings = settings
        self.engine: Engine = connect(settings.db_url)
        self.index = TraceIndex(self.engine)
        self.bookmarks = BookmarkStore(self.engine)
        self._rubric: Rubric | None = rubric
        self._pool_indexes: dict[str, PoolIndex] = {}
        self.trace_cache = TraceCache(prepare=self._prepare)
        self._targets: dict[tuple[str, str, str], list[LabelTarget]] = {}
        self._targets_lock = threading.Lock()
        """Traces read once per version for every page, and read ahead (`load`, `read_ahead`)."""
        self._measured: dict[tuple, Any] = {}
        """Agreement figures by what they were computed from (`_measure`)."""
        self.rubric_error: RubricError | None = None
        if rubric is None:
            try:
                self._rubric = load_rubric(settings.rubric)
            except RubricError as err:  # the library still lists; labelling says why it cannot
                self.rubric_error = err

    @classmethod
    def open(cls, db: str | os.PathLike, *, traces: Sequence[str | os.PathLike] = (),
             rubric: str | os.PathLike | Rubric | None = None,
             uploads: str | os.PathLike | None = None) -> Workspace:
        """A Workspace on a database (a SQLAlchemy URL or a SQLite file's path), listing the
        given folders or files of traces, under a rubric (a file, a Rubric, or the default)."""
        given = rubric if isinstance(rubric, Rubric) else None
        settings = Settings(
            traces=[Path(t) for t in traces], db_url=database_url(db),
            uploads=Path(uploads).resolve() if uploads is not None else None,
            rubric=Path(rubric) if rubric is not None and given is None else None)
        return cls(settings, rubric=given)

    @classmethod
    def from_env(cls) -> Workspace:
        """The Workspace that `orchviz app` describes in the environment (see Settings)."""
        return cls(Settings.from_env())

    # -- the rubric and the label store ---------------------------------------------------------

    @property
    def rubric(self) -> Rubric:
        """The rubric labels are checked against; RubricError when its file cannot be used."""
        if self._rubric is None:
            assert self.rubric_error is not None
            raise self.rubric_error
        return self._rubric

    @property
    def labels(self) -> LabelStore:
        """The label store under the workspace's rubric; RubricError when it cannot be used."""
        return LabelStore(self.engine, self.rubric)

    # -- traces -----------------------------------------------------------------------------------

    @property
    def folders(self) -> list[Path]:
        """The folders the library lists: the configured ones (pools left out: they have their
        own index), then the uploads folder."""
        uploads = [self.settings.uploads] if self.settings.uploads is not None else []
        pools = set(self.pools)
        return [*(t for t in self.settings.traces if str(t) not in pools), *uploads]

    # -- pools ------------------------------------------------------------------------------------

    @cached_property
    def pools(self) -> list[str]:
        """The configured locations that are pools (docs/pools.md): every URL of
        `settings.pools`, and each of `settings.traces` that `io.pool.is_pool` calls one and
        that has orchviz's manifest or Parquet shards (a folder of JSON Lines files alone stays
        a library folder, as before pools)."""
        from viz_app.io.pool import is_pool, read_manifest, shards

        found = list(self.settings.pools)
        for location in map(str, self.settings.traces):
            try:
                if is_pool(location) and (read_manifest(location) is not None or any(
                        s.format == "parquet" for s in shards(location))):
                    found.append(location)
            except OrchvizError:
                continue
        return found

    def pool_index(self, location: str | None = None) -> PoolIndex:
        """The index of a pool (default: the first), beside the label database
        (`default_index_path`); OrchvizError when the workspace has no such pool."""
        if location is None:
            if not self.pools:
                raise OrchvizError("this workspace lists no pool (give one with --traces)")
            location = self.pools[0]
        if location not in self._pool_indexes:
            self._pool_indexes[location] = PoolIndex(
                default_index_path(location, self.settings.db_url), location)
        return self._pool_indexes[location]

    def update_pool_index(self, location: str | None = None, *, workers: int | None = None,
                          ray: str | None = None, progress: IndexProgress | None = None,
                          rebuild: bool = False, wait: bool = True) -> PoolUpdate:
        """Bring a pool's index up to date (new and changed shards read on every core, or on
        Ray), with each trace's targets under the rubric. While another process (or the app)
        updates it, wait for that update to finish, or with `wait=False` raise IndexBusy."""
        from viz_app.io.pool import shards

        index = self.pool_index(location)
        return index.update(shards(index.location), rubric=self._rubric, workers=workers,
                            ray=ray, progress=progress, rebuild=rebuild, wait=wait)

    def sample_pool(self, n: int, *, seed: int = 0, filters: Sequence[Condition] = (),
                    search: str = "", stratify: str | None = None,
                    location: str | None = None) -> list[str]:
        """Trace ids of `n` traces of a pool (default: the first) drawn from those a filter and
        search select, at random or evenly over the strata of a field (`PoolIndex.sample`): the
        same for the same seed and index. What a review campaign is made from."""
        return self.pool_index(location).sample(n, seed=seed, filters=filters, search=search,
                                                stratify=stratify)

    def pool_locate(self, trace_id: str) -> tuple[Shard, int] | None:
        """Where a trace of one of the pools is (its shard and row), by the pools' indexes;
        None when no pool's index knows the id."""
        for location in self.pools:
            found = self.pool_index(location).locate(trace_id)
            if found is not None:
                return found
        return None

    def pool_trace(self, trace_id: str) -> tuple[str, Trace] | None:
        """A trace of one of the pools, by id through their indexes (reading only its row
        group), with the pool it is in; None when no pool's index knows the id."""
        from viz_app.io.pool import read_trace

        for location in self.pools:
            found = self.pool_index(location).locate(trace_id)
            if found is not None:
                return location, read_trace(*found)
        return None

    def update_index(self, progress: IndexProgress | None = None) -> IndexResult:
        """Bring the trace index up to date and return the library. Each trace's targets are
        recorded under the rubric (left out when the rubric file is wrong). Indexing writes no
        label: a run's published annotation becomes labels only when asked
        (`import_published_labels`, which `orchviz import --db` calls)."""
        return self.index.update(self.folders, rubric=self._rubric, progress=progress)

    def find(self, trace_id: str) -> tuple[Path, int] | None:
        """Where a trace is (file, position in it), bringing the index up to date once when it
        does not know the id yet (a trace added since)."""
        found = self.index.find(trace_id)
        if found is None:
            self.update_index()
            found = self.index.find(trace_id)
        return found

    def trace(self, trace_id: str) -> Trace:
        """A trace of the library (or of a pool) by id; TraceError when there is none or it
        cannot be read."""
        if self.pools:
            pooled = self.pool_trace(trace_id)
            if pooled is not None:
                return pooled[1]
        found = self.find(trace_id)
        if found is None:
            raise TraceError(trace_id, "", "no trace with this id in the library")
        return read_at(*found)

    def _prepare(self, trace: Trace) -> None:
        """What every page of a trace draws from, computed before a page gets the trace (a read
        ahead does it on its own thread): the analysis, its figures and the rubric's targets."""
        analysis = analyze(trace)
        analysis.communication  # noqa: B018
        analysis.figures  # noqa: B018
        if self._rubric is not None:
            self.targets(trace)

    def trace_source(self, trace_id: str) -> TraceSource | None:
        """Where a trace of the library or of a pool is, with how to tell its version and read
        it; None when no index knows the id."""
        from viz_app.io.pool import read_trace
        from viz_app.store.pool_index import shard_stamp

        pooled = self.pool_locate(trace_id)
        if pooled is not None:
            shard, row = pooled
            return TraceSource(("pool", shard.url, row), lambda: shard_stamp(shard),
                               lambda: read_trace(shard, row))
        found = self.find(trace_id)
        if found is None:
            return None
        path, position = found
        return TraceSource(("file", str(path), position), lambda: file_stamp(path),
                           lambda: read_at(path, position))

    def load(self, trace_id: str) -> Trace | None:
        """A trace of the library or of a pool by id, analysed, read once per version of its
        file and kept (a few, for everyone: `trace_cache`); None when no index knows the id.
        TraceError (or OSError) when it cannot be read. Treat it as read-only: it is shared."""
        source = self.trace_source(trace_id)
        return self.trace_cache.get(source) if source is not None else None

    def read_ahead(self, trace_ids: Callable[[], Iterable[str | None]],
                   then: Callable[[Trace], object] | None = None, *,
                   after: float = 0.0) -> bool:
        """Read the traces `trace_ids()` names (it is called on the background thread: finding
        what comes next may ask the database) while the caller goes on, so that `load` finds
        them ready; `then(trace)` runs there on each; it begins `after` seconds from now. Never
        raises and never waits: a trace that cannot be read is read again by `load`, which
        says why."""
        return self.trace_cache.ahead(lambda: [self.trace_source(t) for t in trace_ids() if t],
                                      then, after=after)

    def source_name(self, trace: Trace) -> str:
        """Where a trace was read from, as anyone who sees it may read it: its file relative to
        the library folder (or uploads folder) it is in, its shard relative to its pool, else
        the file's name alone. Never the server's full path: a page shows it to every viewer."""
        source = trace.source
        if not source:
            return ""
        if "://" in source:  # a shard in object storage: relative to its pool's URL
            for location in self.pools:
                if source.startswith(location.rstrip("/") + "/"):
                    return source[len(location.rstrip("/")) + 1:]
            return source.rstrip("/").rsplit("/", 1)[-1]
        path = Path(source).resolve()
        roots = [*self.settings.traces, *self.settings.pools,
                 *([self.settings.uploads] if self.settings.uploads else [])]
        for root in roots:
            root = Path(root).resolve()
            if root != path and root in path.parents:
                return path.relative_to(root).as_posix()
        return path.name

    def read_traces(self, progress: IndexProgress | None = None) -> TraceSet:
        """Every trace under the workspace's folders (files as named, folders searched, globs
        expanded; not the uploads), read now rather than indexed: what a command reads its
        `--traces` with. A file that holds no trace is listed in `unread`, not raised;
        TraceError when a folder or file named does not exist."""
        for path in self.settings.traces:
            if not path.exists() and not any(ch in str(path) for ch in "*?["):
                raise TraceError(str(path), "", "no such file or folder")
        files = trace_files(self.settings.traces)
        found = TraceSet()
        for done, path in enumerate(files):
            if progress is not None:
                progress(done, len(files), str(path))
            errors: list[TraceError] = []
            try:
                traces = read_any(path, on_error=errors.append)
            except TraceError as err:
                traces, errors = [], [err]
            except Exception as err:  # an importer's bug must not stop the other files
                traces, errors = [], [TraceError(str(path), "", f"could not be read ({err!r})")]
            for trace in traces:
                found.traces.setdefault(trace.trace_id, trace)
            found.unread += [IndexFailure(path=str(path), error=str(e)) for e in errors]
        if progress is not None and files:
            progress(len(files), len(files), "")
        return found

    def search(self, rows: Sequence[IndexRow], query: str) -> list[IndexRow]:
        """The rows matching every word of a query (ids, task, agents, tools, content)."""
        return self.index.search(rows, query)

    # -- progress ---------------------------------------------------------------------------------

    def targets(self, trace: Trace) -> list[LabelTarget]:
        """What the rubric asks to label in a trace, in time order: found once per version of
        the trace and of the rubric, for everyone (a 20,000-event trace's take a tenth of a
        second), and found ahead with the trace when it is read ahead."""
        rubric = self.rubric
        key = (trace.source, trace.sha256, rubric.sha256)
        with self._targets_lock:
            found = self._targets.get(key)
        if found is None:
            found = targets(rubric, analyze(trace))
            with self._targets_lock:
                self._targets[key] = found
                while len(self._targets) > 2 * MAX_TRACES:
                    self._targets.pop(next(iter(self._targets)))
        return list(found)

    def progress(self, trace: Trace, reviewer: str | None = None) -> Progress:
        """How many of a trace's targets are labelled, by one reviewer or (None) by anyone."""
        return self.labels.progress(trace, reviewer)

    def answered(self, reviewer: str | None = None) -> dict[str, dict[str, set[str]]]:
        """Trace id -> target key -> questions answered, by a reviewer or (None) by anyone;
        empty when the rubric cannot be used."""
        if self._rubric is None:
            return {}
        return self.labels.answered(reviewer)

    def labelled_text(self, row: IndexRow, answered: Mapping[str, dict[str, set[str]]]) -> str:
        """What the library says of a trace's labels: '2 of 5' (targets with every required
        question answered, of those the rubric asks for), or a bare count when the row was
        indexed without a rubric."""
        found = answered.get(row.trace_id, {})
        if row.targets is None:
            return f"{len(found)} labelled"
        return f"{row.labelled(found)} of {len(row.targets)}"

    def next_unlabelled(self, reviewer: str, after: str | None,
                        rows: Sequence[IndexRow] | None = None) -> str | None:
        """The first trace after `after` (library order, wrapping) that the reviewer has not
        fully labelled, or None when every one is. Traces indexed with their targets are judged
        without being loaded."""
        rows = list(rows if rows is not None else self.update_index().rows)
        ids = [r.trace_id for r in rows]
        start = ids.index(after) + 1 if after in ids else 0
        answered = self.answered(reviewer)
        ordered = rows[start:] + rows[:start]
        for row in ordered:
            if row.trace_id == after:
                continue
            if row.trace_id not in answered:
                return row.trace_id
            if row.targets is not None and row.labelled(answered[row.trace_id]) < len(row.targets):
                return row.trace_id
        for row in ordered:  # rows indexed without their targets (the rubric file was wrong then)
            if row.trace_id == after or row.targets is not None:
                continue
            try:
                if not self.progress(read_at(row.path, row.position), reviewer).done:
                    return row.trace_id
            except OrchvizError:  # a file that changed or vanished since it was indexed
                continue
        return None

    # -- saving -----------------------------------------------------------------------------------

    def save_answers(self, trace: Trace, target: LabelTarget | str | None,
                     values: Mapping[str, Any], reviewer: Reviewer, *, comment: str = "",
                     seconds_spent: float | None = None,
                     suggestions_visible: bool | None = None) -> list[Label]:
        """Save a reviewer's answers on one target of a trace, together.

        The rules of a save (`answers_to_save`): every required question of the target has an
        answer (empty answers count as none), tags are saved even when empty, and a follow-up
        question is kept only when the answer it follows asks it (and then it must be
        answered). LabelError says what is missing or refused; nothing is saved then.
        `suggestions_visible` records whether suggested answers were on screen."""
        found = self._target(trace, target)
        answers = answers_to_save(self.rubric, found, values, analyze(trace))
        self.check_version(trace.trace_id, trace.sha256)
        return self.labels.save_target(trace, found.event_id, answers, reviewer.name,
                                       comment=comment, seconds_spent=seconds_spent,
                                       identified_by=reviewer.via,
                                       suggestions_visible=suggestions_visible)

    def check_version(self, trace_id: str, judged: str) -> None:
        """Refuse a save (LabelError, one sentence: nothing is saved, the answers stay in the
        reviewer's form) when the trace's file changed since the page read the version judged
        (`judged`, its SHA-256) and the library holds no file of that version any more: a
        label must name the version it judged, and the reviewer must see the one the library
        now holds before judging it. A trace the library does not list is not checked."""
        try:
            current = self.load(trace_id)
        except (OrchvizError, OSError):
            return
        if current is None or current.sha256 == judged or judged in self.versions().get(
                trace_id, frozenset()):
            return
        raise LabelError(f"the file of {trace_id} changed since this page read it (you judged "
                         f"version {judged[:12]}, the library now holds {current.sha256[:12]}):"
                         " nothing was saved and your answers stay in the form; reload the "
                         "trace to judge the version the library holds")

    def _target(self, trace: Trace, target: LabelTarget | str | None) -> LabelTarget:
        if isinstance(target, LabelTarget):
            return target
        key = target or ""
        for found in self.targets(trace):
            if found.key == key:
                return found
        raise LabelError(f"trace {trace.trace_id} has no target {key or '(the trace)'!r} "
                         f"under rubric {self.rubric.name}")

    def save_preference(self, a: Trace, b: Trace, chosen: str | None, reviewer: Reviewer,
                        reason: str, strength: int | None = None) -> Preference:
        """Save a reviewer's judgement of two traces (which is better, why, by how much)."""
        label = judgement_label(self.rubric, a, b, chosen, reviewer.name, reason, strength,
                                identified_by=reviewer.via)
        self.labels.add([label])
        return preference_of(label.to_record())

    def judgement(self, a: str, b: str, reviewer: str) -> Preference | None:
        """A reviewer's current judgement of two traces, if they gave one."""
        first = min(a, b)
        return judgement(self.labels.current_records(trace_id=first, reviewer=reviewer),
                         a, b, reviewer)

    # -- importing --------------------------------------------------------------------------------

    def import_labels(self, records: Iterable[Mapping[str, Any]], traces: Mapping[str, Trace],
                      origin: str) -> ImportReport:
        """Import label records (the jsonl export's shape) all or nothing, checked against the
        workspace's rubric; LabelError names the first bad record. Imported labels are
        `source: import` and never become a person's current answer (see docs/labels.md); a
        record dated in the future is stored at the import's time (`ImportReport.clamped`)."""
        return self.labels.import_records(records, traces, origin)

    def import_published_labels(self, traces: Iterable[Trace]) -> int:
        """Store the annotations that runs arrive with (Who&When's, TRAIL's, MAST's) as
        imported labels under the workspace's rubric (each dataset's mapping, in
        docs/importers.md); returns how many were added (0 when already there)."""
        questions = set(self.rubric.questions_by_id)
        added = 0
        for trace in traces:
            records = published_label_records(trace, questions)
            if records:
                added += self.import_labels(records, {trace.trace_id: trace},
                                            records[0]["origin"]).added
        return added

    # -- exporting --------------------------------------------------------------------------------

    def export(self, format: str, output: str | os.PathLike, *,
               traces: Mapping[str, Trace] | None = None, reviewer: str | None = None,
               campaign: str | None = None, adjudicated_only: bool = False,
               from_scores: bool = False, options: ExportOptions | None = None,
               hf_dataset: bool = False, other_versions: str | None = None) -> ExportResult:
        """Write the current labels (or, for `bookmarks`, the current bookmarks) in one of
        `viz_app.export.FORMATS`, by one reviewer or (None) by everyone; a training format
        chooses its rows by `options` (`viz_app.export.consensus`) and, with `hf_dataset`, is
        written as a `datasets` folder. A format that needs the traces reads them from `traces`,
        else from the workspace's folders; what it cannot place or would not use (labels on a
        trace not given, disputed targets) is in `left_out`. `campaign` keeps the labels of one
        review campaign; `adjudicated_only` keeps only adjudicated labels (a lead's final
        answers). Retracted labels are never exported."""
        found = FORMATS.get(format)
        if found is None:
            raise OrchvizError(f"unknown export format {format!r} (known: {', '.join(FORMATS)})")
        labels: list[LabelRecord] = []
        if found.reads == "bookmarks":
            given = ExportInput(labels=[], traces={}, rubric=None,
                                bookmarks=bookmark_records(self.bookmarks.records(), reviewer))
        elif found.reads == "suggestions":
            if campaign is not None or reviewer is not None:
                raise OrchvizError("the suggestions export takes every stored suggestion: it "
                                   "has no reviewer or campaign to choose by")
            given = ExportInput(labels=[], traces={}, rubric=None,
                                suggestions=self.suggestion_store.all())
        else:
            if found.needs_traces and traces is None:
                if not self.settings.traces:
                    raise OrchvizError(f"the {format} export needs the traces: name their "
                                       "folders (--traces)")
                traces = self.read_traces().traces
            if campaign is not None:
                self.campaign(campaign)
            labels = self.labels.current_records(reviewer=reviewer, campaign=campaign,
                                                 adjudicated_only=adjudicated_only)
            if found.needs_traces and traces is not None and self.pools:
                traces = {**traces, **self._pooled(labels, traces)}
            given = ExportInput(labels=labels, rubric=self.rubric, from_scores=from_scores,
                                traces=traces if found.needs_traces and traces is not None
                                else {}, options=options or ExportOptions(),
                                versions=self.versions(), other_versions=other_versions)
        written = write_export(format, given, output, hf_dataset=hf_dataset)
        if written.rows is not None:
            count = written.rows
        elif found.counts_rows:
            count = sum(len(p.read_bytes().splitlines()) for p in written.paths)
        else:
            count = len(labels)
        return ExportResult(format=format, output=Path(output), written=written.paths,
                            count=count, left_out=written.left_out, notes=written.notes,
                            hf_dataset=hf_dataset, empty=written.empty)

    def versions(self) -> dict[str, frozenset[str]]:
        """The versions (SHA-256) of each trace of the library as its files hold them now, by
        id (two files may hold one id): what a label's `trace_sha256` is compared with to
        tell a label made on another version of its trace."""
        found: dict[str, set[str]] = {}
        for row in self.update_index().rows if self.folders else ():
            found.setdefault(row.trace_id, set()).add(row.sha256)
        return {trace_id: frozenset(shas) for trace_id, shas in found.items()}

    def _pooled(self, labels: Sequence[LabelRecord], known: Mapping[str, Trace]
                ) -> dict[str, Trace]:
        """The traces of the pools that labels are on and `known` lacks, each read alone (its
        row group) through the pools' indexes: what an export of a pool's labels reads."""
        wanted = {r["trace_id"] for r in labels} | {
            r["pair_trace_id"] for r in labels if r.get("pair_trace_id")}
        found: dict[str, Trace] = {}
        for trace_id in sorted(wanted - set(known)):
            pooled = self.pool_trace(trace_id)
            if pooled is not None:
                found[trace_id] = pooled[1]
        return found

    # -- case studies -----------------------------------------------------------------------------

    def case_study(self, trace: Trace, viewer: str | None = None, *, lead: bool = True
                   ) -> tuple[list[LabelRecord], list[Bookmark]]:
        """A trace's current labels (its own and the judgements it is part of) and bookmarks:
        what a report and a presentation show. A lead (and the CLI) gets every label; anyone
        else (`lead=False`) the labels `labels_in_view` lets `viewer` see on the trace itself,
        blind: no campaign's answers, adjudications or gold before their own save there."""
        records = [r for r in self.labels.current_records()
                   if trace.trace_id in (r["trace_id"], r.get("pair_trace_id"))] \
            if self._rubric is not None else []
        if not lead:
            seen = {x.label_id for x in self.labels_in_view(trace.trace_id, viewer)}
            records = [r for r in records if r["label_id"] in seen
                       or r["trace_id"] != trace.trace_id]  # judgements of pairs stay
        return records, self.bookmarks.current(trace.trace_id)

    def sealed_targets(self, trace_id: str) -> set[str]:
        """The targets of a trace (event id, '' for the trace) that a campaign holds: others'
        answers there, adjudications included, are shown to a reviewer only after their own
        save in a campaign (`labels_in_view`), whatever a page's blind toggle says."""
        return self.campaign_store.target_keys(trace_id)

    def labels_in_view(self, trace_id: str, viewer: str | None, *, blind: bool = True
                       ) -> list[Label]:
        """The current labels on a trace that a reviewer may be shown, decided here and not by
        a page: their own; others' on a target of a campaign (`sealed_targets`) only once the
        viewer saved their own answer there in a campaign; others' on any other target once
        the viewer saved their own there, or at once with `blind` off. A viewer of None (not
        identified) sees no one's."""
        current = self.labels.current(trace_id)
        if not viewer:
            return []
        sealed = self.sealed_targets(trace_id)
        opened = self._unsealed(current, sealed, viewer)

        def shown(label: Label) -> bool:
            if label.reviewer == viewer and label.source == "human":
                return True
            return label.event_id in opened or (not blind and label.event_id not in sealed)

        return [x for x in current if shown(x)]

    def unsealed(self, trace_id: str, viewer: str) -> set[str]:
        """The targets of a trace (event id, '' for the trace) where a reviewer has saved
        their own answer, so others' answers and suggestions may be shown to them blind-first:
        on a target a campaign holds, only a save in a campaign counts."""
        return self._unsealed(self.labels.current(trace_id), self.sealed_targets(trace_id),
                              viewer)

    @staticmethod
    def _unsealed(current: Sequence[Label], sealed: set[str], viewer: str) -> set[str]:
        mine = [x for x in current if x.reviewer == viewer and x.source == "human"]
        return {x.event_id for x in mine if x.campaign or x.event_id not in sealed}

    # -- review campaigns -------------------------------------------------------------------------

    @property
    def campaign_store(self) -> CampaignStore:
        """The campaigns, their targets and slots (pages call the methods below instead)."""
        return CampaignStore(self.engine)

    def may_lead(self, person: Reviewer) -> bool:
        """Whether a person may act as a lead (create campaigns, adjudicate, retract, add
        members). Signed in (`via` oidc): when the members table names them lead. Otherwise
        (a name typed in the app, a command's argument) everyone may: such names are not
        verified, and a person alone on a laptop leads their own database."""
        return person.via != "oidc" or self.role(person.name) == "lead"

    def _lead(self, person: Reviewer, doing: str) -> None:
        if not self.may_lead(person):
            raise LabelError(f"{person.name} is not a lead of this workspace, so cannot {doing} "
                             f"(a lead can add them: orchviz campaign members add {person.name} "
                             "--role lead)")

    def create_campaign(self, spec: CampaignSpec, lead: Reviewer, *,
                        gold_records: Iterable[Mapping[str, Any]] | None = None,
                        progress: IndexProgress | None = None) -> Campaign:
        """Create a campaign over the library: the traces the spec's filter keeps, sampled as
        it says, each target with the campaign's questions that apply; gold items from
        `gold_records` (else the spec's gold file) and the spec's earlier campaign's
        adjudicated answers, drawn from the filtered traces and mixed in. Over a pool (the
        spec's, or the first when the folders hold no trace) the filter and sample run in its
        index (`store.campaigns.pool_sample`). A question the index does not place
        (`labels.campaign.unindexed`: asked only where nothing must be answered) takes its
        targets from the sampled traces, read (`Workspace.targets`). Pins the workspace's
        rubric. One transaction: LabelError (and nothing stored) when the name is taken or no
        target is chosen."""
        self._lead(lead, "create a campaign")
        rubric = self.rubric
        questions = campaign_questions(rubric, spec.questions)
        library = self.update_index(progress).rows
        pool = self._campaign_pool(spec, library)
        if pool is not None:  # drawn in the pool's index (docs/pools.md), the sample too
            rows = chosen = pool_sample(self.pool_index(pool), spec.filter, spec.sample)
        else:
            rows = self.search(library, spec.filter.text) if spec.filter.text.strip() \
                else library
            rows = filter_rows(rows, spec.filter)
            chosen = sample_rows(rows, spec.sample)
        records: list[Mapping[str, Any]] = []
        if gold_records is not None:
            records += list(gold_records)
        elif spec.gold:
            records += read_label_records(spec.gold)
        if spec.gold_campaign:
            self.campaign(spec.gold_campaign)
            records += self.labels.current_records(campaign=spec.gold_campaign,
                                                   adjudicated_only=True)
        gold = gold_answers(records, questions, rubric)
        gold_rows = rows
        if pool is not None and gold:  # the gold items among the pool's filtered traces
            filters, search = pool_conditions(spec.filter)
            gold_rows = pool_rows(self.pool_index(pool), sorted({t for t, _ in gold}), filters,
                                  search)
        store = self.campaign_store
        flags = store.suggestion_counts() if spec.order == "suggestions" else None
        read = self._targets_of(len(chosen), progress) if unindexed(rubric, spec.questions) \
            else None
        planned = plan_targets(chosen, rubric, spec, gold, library=gold_rows, flags=flags,
                               sampled=True, targets_of=read,
                               urgency=self._urgency(spec.order, rubric, questions))
        made = (lambda done, total: progress(done, total, "targets")) if progress else None
        return store.create(spec, rubric_version=rubric.version, rubric_sha256=rubric.sha256,
                            questions=questions, created_by=lead.name, planned=planned,
                            progress=made)

    def _urgency(self, order: str, rubric: Rubric, questions: Sequence[str]) -> Any:
        """For the `uncertain` and `contested` orders, the function that gives the planned
        targets their urgencies (`viz_app.labels.attention`), from the suggestions on the
        campaign's questions, refusing in one sentence (a LabelError, nothing stored) when
        there is nothing to order by; None for other orders."""
        if order not in ("uncertain", "contested"):
            return None
        store = self.suggestion_store
        if order == "uncertain":
            learned = store.all(producer=LEARNED, questions=questions)
            return lambda planned: _uncertain(rubric, planned, learned)
        suggestions = store.all(questions=questions)
        ran_on = store.ran_on(RULES.name)
        records = self.labels.current_records()
        first, earlier = first_answers(records), earlier_reviewers(records)
        from viz_app.suggest.rules import FINE

        def contested(planned: Sequence[PlannedTarget]) -> dict[tuple[str, str], float]:
            found = _contested(rubric, planned, suggestions, first, {RULES.name: FINE},
                               ran_on)
            for t in planned:  # those who answered a contested target before never get it
                if (t.trace_id, t.event_id) in found:
                    t.kept_from = sorted(earlier.get((t.trace_id, t.trace_sha256, t.event_id),
                                                     ()))
            return found

        return contested

    def _campaign_pool(self, spec: CampaignSpec, library: Sequence[IndexRow]) -> str | None:
        """The pool a campaign draws from: the spec's (LabelError when the workspace lists no
        such pool), else the first pool when the folders hold no trace, else None (the
        folders)."""
        if spec.pool is not None:
            if spec.pool not in self.pools:
                raise LabelError(f"this workspace lists no pool {spec.pool!r} (its pools: "
                                 f"{', '.join(self.pools) or 'none'})")
            return spec.pool
        return self.pools[0] if self.pools and not library else None

    def _targets_of(self, total: int, progress: IndexProgress | None) -> Any:
        """Reads a row's trace (of the folders or a pool) and gives its targets, each trace
        once: how a campaign finds the targets of questions the index does not record
        (`progress(done, total, "reading")` as it reads `total` traces, gold items aside)."""
        seen: dict[str, list[LabelTarget]] = {}

        def targets_of(row: Any) -> list[LabelTarget]:
            if row.trace_id not in seen:
                if progress is not None:
                    progress(min(len(seen), total), total, "reading")
                path = getattr(row, "path", None)
                trace = read_at(path, row.position) if path is not None else \
                    self.trace(row.trace_id)
                seen[row.trace_id] = self.targets(trace)
                if progress is not None and len(seen) == total:
                    progress(total, total, "reading")
            return seen[row.trace_id]

        return targets_of

    def close_campaign(self, name: str, lead: Reviewer) -> Campaign:
        """Close a campaign (a lead's call): no reviewer claims a target of it any more; its
        status says when it was closed. LabelError when the person is no lead or there is no
        such campaign."""
        self._lead(lead, "close a campaign")
        return self.campaign_store.close(name)

    def campaigns(self) -> list[Campaign]:
        """Every campaign, oldest first."""
        return self.campaign_store.all()

    def campaign(self, name: str) -> Campaign:
        """The campaign of this name; LabelError when there is none."""
        return self.campaign_store.get(name)

    def claim_next(self, campaign: str, reviewer: Reviewer) -> Claim | None:
        """The next target reserved for this reviewer (the one they hold, renewed, if any),
        or None when nothing is left for them. A claim never says whether its target is gold,
        nor what anyone else answered. A campaign sampled per training step whose queue is
        empty for them first samples the steps a trainer wrote since (`top_up_campaign`)."""
        claim = self.campaign_store.claim_next(campaign, reviewer)
        if claim is None and self.campaign(campaign).spec.sample.kind == "per_step" \
                and self.top_up_campaign(campaign):
            claim = self.campaign_store.claim_next(campaign, reviewer)
        return claim

    def top_up_campaign(self, name: str) -> int:
        """Keep sampling a per-step campaign as a trainer's steps arrive: each training step of
        the library (its filter applied) gets whole groups until it has the spec's N (a new
        step its N, a step still being written the groups it lacked), their targets added to
        the open campaign. Returns how many targets were added (0 for a closed campaign or
        another kind of sample)."""
        from viz_app.labels.campaign import per_step_rows

        found = self.campaign(name)
        spec = found.spec
        if found.closed_at is not None or spec.sample.kind != "per_step":
            return 0
        library = self.update_index().rows
        rows = self.search(library, spec.filter.text) if spec.filter.text.strip() else library
        rows = filter_rows(rows, spec.filter)
        held = {t.trace_id for t in self.campaign_store.targets(found)}
        taken: dict[int, set[str]] = defaultdict(set)
        for row in rows:
            if row.trace_id in held and row.rollout_step is not None:
                taken[row.rollout_step].add(row.rollout_group)
        chosen = per_step_rows(rows, spec.sample.n or 1, spec.sample.seed, taken)
        if not chosen:
            return 0
        planned = plan_targets(chosen, self.rubric, spec, sampled=True)
        return self.campaign_store.add_targets(found, planned)

    def upcoming_trace(self, campaign: str, reviewer: str) -> str | None:
        """The trace of the target this reviewer will most likely be given after the one they
        hold (`CampaignStore.upcoming`: nothing is reserved): what the review page reads ahead."""
        return self.campaign_store.upcoming(campaign, reviewer)

    def renew(self, claim: Claim) -> Claim:
        """Extend a claim's reservation by the campaign's lease; LabelError when it went to
        someone else, ClaimError when the store did not issue it as given."""
        return self.campaign_store.renew(claim)

    def skip(self, claim: Claim, reason: str) -> None:
        """Put a claimed target back for others, with why; it is not offered to this reviewer
        again. ClaimError when the store did not issue the claim as given."""
        self.campaign_store.skip(claim, reason)

    def release(self, claim: Claim) -> bool:
        """Give a claimed target back to the queue now, unanswered and not skipped (its
        reviewer left it, say to work under another name); False when it was no longer
        theirs."""
        return self.campaign_store.release(claim)

    def submit(self, claim: Claim, answers: Mapping[str, Any], *, comment: str = "",
               seconds_spent: float | None = None,
               suggestions_visible: bool = False, judged: str | None = None) -> list[Label]:
        """Save a reviewer's answers on their claimed target and complete their slot, in one
        transaction; `judged`, the SHA-256 of the trace the page showed, refuses the save
        when the file changed since (`check_version`). The claim must be one the store issued, as it issued it (its slot,
        target, trace, event, questions, campaign and token: ClaimError otherwise); the
        answers follow the rules of a save (`answers_to_save`) and the campaign's pinned
        rubric, and answer only the claim's questions. LabelError, and nothing saved, when
        they do not, or when the reservation expired and the target went to someone else."""
        held = self.campaign_store.check(claim)
        found = self.campaign_store.get(held.campaign, count=False)
        rubric = self._pinned(found)
        foreign = [q for q, v in answers.items() if q not in held.questions and v is not None]
        if foreign:
            raise LabelError(f"{foreign[0]} is not asked on this target of campaign "
                             f"{found.name!r} (it asks {', '.join(held.questions)}); nothing "
                             "was saved")
        event_id = held.event_id or None
        trace = self.trace(held.trace_id)
        if judged is not None and judged != trace.sha256:
            self.check_version(trace.trace_id, judged)
        values = answers_to_save(rubric, label_target(rubric, event_id, held.questions),
                                 answers, analyze(trace))
        made = self.labels.checked(trace, event_id, values,
                                   claim.reviewer.name, comment=comment,
                                   seconds_spent=seconds_spent,
                                   identified_by=claim.reviewer.via, campaign=found.name,
                                   suggestions_visible=suggestions_visible)
        raise_to = None
        if found.order == "contested":  # a first reviewer at odds with a producer: ask again soon
            raise_to = self._contested_again(found, held, trace, made)
        return self.campaign_store.submit(claim, made, raise_to=raise_to)

    def _contested_again(self, campaign: Campaign, held: Any, trace: Trace,
                         made: Sequence[Label]) -> float | None:
        """The priority the target's other open slots move to when its first reviewer in the
        campaign (these labels, or an earlier save) and the producers disagree (below every
        priority the campaign was created with, the most contested first), else None."""
        from viz_app.suggest.rules import FINE

        earlier = [r for r in self.labels.current_records(trace.trace_id,
                                                          campaign=campaign.name)
                   if (r["event_id"] or "") == held.event_id]
        first = first_answers(earlier + [x.to_record() for x in made])
        target = PlannedTarget(trace_id=trace.trace_id, trace_sha256=trace.sha256,
                               event_id=held.event_id, questions=held.questions)
        found = contest(self.rubric, target, self.suggestion_store.all(trace.trace_id),
                        first, {RULES.name: FINE})
        return None if found is None else -1.0 - found

    def _pinned(self, campaign: Campaign) -> Rubric:
        rubric = self.rubric
        if rubric.sha256 != campaign.rubric_sha256:
            raise LabelError(f"campaign {campaign.name!r} was created under rubric "
                             f"{campaign.rubric_version} ({campaign.rubric_sha256[:12]}), not "
                             f"the {rubric.version} ({rubric.sha256[:12]}) this workspace uses: "
                             "open it with that rubric (--rubric)")
        return rubric

    def campaign_progress(self, name: str, reviewer: str) -> CampaignProgress:
        """How far a campaign and one reviewer in it are (counts only, safe to show any
        reviewer: no answers, no gold)."""
        found = self.campaign(name)
        store = self.campaign_store
        counts = store.progress(found)
        mine = store.reviewer_counts(found, only=reviewer).get(reviewer, {})
        return CampaignProgress(name=found.name, targets=counts["targets"],
                                complete=counts["complete"], slots=counts["slots"],
                                saved=counts["saved"], reviewer=reviewer,
                                reviewer_saved=mine.get("saved", 0),
                                reviewer_skipped=mine.get("skipped", 0))

    def campaign_status(self, name: str) -> CampaignStatus:
        """Where a campaign stands, for its leads: targets, complete, in progress, each
        reviewer's saves and gold accuracy, alpha per question over its (unretracted) labels,
        and its disagreements no adjudication settled yet."""
        found = self.campaign(name)
        store = self.campaign_store
        counts = store.progress(found)
        records = self.labels.current_records(campaign=found.name)
        human = [r for r in records if r["source"] == "human"]
        gold_rows = store.targets(found, gold_only=True)
        scores = gold_accuracy(self.rubric, gold_rows, human)
        people = store.reviewer_counts(found)
        reviewers = [ReviewerStatus(reviewer=r, saved=people.get(r, {}).get("saved", 0),
                                    leased=people.get(r, {}).get("leased", 0),
                                    skipped=people.get(r, {}).get("skipped", 0),
                                    gold_seen=scores.get(r, (0, 0))[0],
                                    gold_correct=scores.get(r, (0, 0))[1])
                     for r in sorted(set(people) | set(scores))]
        known = self.rubric.questions_by_id
        alpha = [question_agreement(known[q], human) for q in found.questions if q in known]
        unresolved = [d for d in self._disagreements(found, records, SPREAD) if not d.resolved]
        return CampaignStatus(name=found.name, gold=len(gold_rows), reviewers=reviewers,
                              agreement=alpha, unresolved=unresolved,
                              closed_at=found.closed_at, **counts)

    def disagreements(self, name: str, spread: float = SPREAD) -> list[Disagreement]:
        """The targets of a campaign whose reviewers disagree (a scale: answers further apart
        than `spread` of its span; anything else: any difference), with each reviewer's
        answers and any adjudicated answer: for its leads only."""
        found = self.campaign(name)
        return self._disagreements(found, self.labels.current_records(campaign=found.name),
                                   spread)

    def _disagreements(self, found: Campaign, records: Sequence[Mapping[str, Any]],
                       spread: float) -> list[Disagreement]:
        keys = {(r["trace_id"], r["event_id"] or "") for r in records}
        rows = [t for t in self.campaign_store.targets(found)
                if (t.trace_id, t.event_id) in keys]
        return find_disagreements(self.rubric, rows, records, spread)

    def adjudicate(self, name: str, trace_id: str, event_id: str | None,
                   answers: Mapping[str, Any], lead: Reviewer, reason: str) -> list[Label]:
        """A lead's final answers on a target of a campaign, with why: new labels (`source:
        adjudication`, the reason as their comment); the reviewers' own labels stay.
        LabelError when the person is no lead, there is no reason, the campaign has no such
        target, or an answer is refused."""
        self._lead(lead, "adjudicate")
        if not (reason or "").strip():
            raise LabelError("an adjudication needs a reason")
        found = self.campaign(name)
        self._pinned(found)
        target = self.campaign_store.target(found, trace_id, event_id)
        given = {q: v for q, v in answers.items() if v is not None and v != ""}
        foreign = [q for q in given if q not in target.questions]
        if foreign:
            raise LabelError(f"{foreign[0]} is not asked on this target of campaign "
                             f"{found.name!r} (it asks {', '.join(target.questions)})")
        made = self.labels.checked(self.trace(trace_id), event_id, given, lead.name,
                                   comment=reason.strip(), identified_by=lead.via,
                                   source="adjudication", campaign=found.name)
        self.labels.add(made)
        return made

    def retract(self, label_ids: Iterable[str], lead: Reviewer, reason: str,
                campaign: str = "") -> int:
        """A lead's retraction of labels (a trial run, a reviewer who misread the rubric):
        appended rows, so the history stays while agreement and every export leave the labels
        out. Returns how many labels were newly retracted."""
        self._lead(lead, "retract labels")
        if campaign:
            self.campaign(campaign)
        return self.labels.retract(label_ids, lead.name, lead.via, reason, campaign)

    def add_member(self, email: str, role: str, by: Reviewer) -> Member:
        """Make someone a lead or a reviewer (or change their role). Only a lead may (see
        `may_lead`: without sign-in, anyone)."""
        self._lead(by, "add members")
        return MemberStore(self.engine).add(email, role, by.name)

    def members(self) -> list[Member]:
        """Every member and their role."""
        return MemberStore(self.engine).all()

    def role(self, email: str) -> str | None:
        """A member's role, `lead` or `reviewer`; None for someone not a member."""
        return MemberStore(self.engine).role(email)

    # -- branches ---------------------------------------------------------------------------

    def correction_at(self, trace: Trace, event_id: str, reviewer: str) -> Replacement | None:
        """The decision a reviewer's saved correction at an event gives, as a replacement to
        continue from (their current answers on that target, through
        `viz_app.labels.correction.corrected_decision`); None when they corrected nothing
        there."""
        from viz_app.branch import replacement_from
        from viz_app.labels.correction import corrected_decision

        answers = {label.question: label.value
                   for label in self.labels.current(trace.trace_id, reviewer)
                   if label.event_id == event_id}
        if not answers:
            return None
        try:
            decision = corrected_decision(self.rubric, trace, event_id, answers)
        except LabelError:  # an answer saved under another rubric: no correction to start from
            return None
        return replacement_from(decision) if decision is not None else None

    def continue_from(self, trace: Trace, event_id: str, replacement: Replacement, *,
                      endpoint: ModelEndpoint | None = None, limits: ReplayLimits | None = None,
                      output: str | os.PathLike | None = None, by: Reviewer | None = None
                      ) -> tuple[Branch, Path]:
        """Continue a trace from an edited decision (`viz_app.branch.continue_from`) with the
        configured endpoint (or the one given) and save the branch: as `output`, or in the
        uploads folder's `branches/`, where the library lists it; `by` is who wrote the
        decision. BranchError, saying what failed and that nothing was saved, when no branch
        was made."""
        from viz_app.branch import BranchError, continue_from
        from viz_app.io.native import write_trace

        endpoint = endpoint or self.settings.endpoint
        if endpoint is None:
            raise BranchError("no model endpoint is configured to continue the trace (start the "
                              "app with --judge-url and --judge-model); nothing was saved")
        if output is None and self.settings.uploads is None:
            raise BranchError("say where the branch goes (an output file); nothing was saved")
        branch = continue_from(trace, event_id, replacement, endpoint,
                               limits or self.settings.replay, by=by.name if by else "")
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", branch.trace.trace_id)[:150] + ".json"
        path = write_trace(branch.trace, output if output is not None else
                           self.settings.uploads / BRANCHES / name)  # type: ignore[operator]
        if output is None:
            self.update_index()
        return branch, path

    # -- suggestions ------------------------------------------------------------------------------

    @property
    def suggestion_store(self) -> SuggestionStore:
        """The producers' suggestions and failures (pages and verbs call the methods below)."""
        return SuggestionStore(self.engine)

    def suggest(self, traces: Iterable[Trace] | Mapping[str, Trace], producer: str = "rules",
                judge: Any = None, progress: IndexProgress | None = None,
                learned: Any = None) -> SuggestReport:
        """Run a producer (`rules`; `judge` with a `viz_app.suggest.judge.JudgeProducer`
        given as `judge`; `learned`, the newest stored model of each question unless a
        `viz_app.suggest.learned.LearnedProducer` is given as `learned`) over traces under the
        workspace's rubric and store what it suggests;
        a suggestion stored before (same producer version, trace version, target and question)
        is not stored again, and a judge is not asked again where it made one (a failure is
        asked again). Targets it failed on are recorded as failures, never as suggestions.
        `progress(done, total, trace_id)` is called as traces are done."""
        if producer == "rules":
            maker: Any = "rules"
        elif producer == "judge":
            if judge is None:
                raise SuggestError("the judge producer needs a judge: give --judge-url and "
                                   "--judge-model")
            maker = judge
        elif producer == "learned":
            maker = learned if learned is not None else self.learned_producer()
        else:
            raise SuggestError(f"unknown producer {producer!r} (known: rules, judge, learned)")
        items = list(traces.values() if isinstance(traces, Mapping) else traces)
        store, rubric = self.suggestion_store, self.rubric
        report = SuggestReport(producer=producer)
        for done, trace in enumerate(items):
            if progress is not None:
                progress(done, len(items), trace.trace_id)
            answered = self._answered(trace, maker)
            report.skipped += len(answered)
            try:
                made, failed = produce(trace, rubric, maker, answered)
            except OrchvizError:
                raise
            except Exception as err:  # one trace a producer trips on must not stop the rest
                failed = [SuggestionFailure(
                    trace_id=trace.trace_id, trace_sha256=trace.sha256, event_id="", question="",
                    producer=RULES if maker == "rules" else maker.producer,
                    error=f"the {producer} producer failed on this trace ({err!r})")]
                made = []
            report.traces += 1
            report.suggestions += len(made)
            report.added += store.add(made)
            for failure in failed:
                store.add_failure(failure)
            report.failures += failed
        if progress is not None and items:
            progress(len(items), len(items), "")
        return report

    @cached_property
    def rewards(self) -> Any:
        """The reward models trained on this workspace's labels (`viz_app.workspace_rewards`)."""
        from viz_app.workspace_rewards import Rewards

        return Rewards(self)

    @property
    def learned_models(self) -> LearnedModelStore:
        """The learned producer's stored models."""
        return LearnedModelStore(self.engine)

    def learned_producer(self, questions: Sequence[str] | None = None) -> Any:
        """The learned producer of the newest stored model of each question (of those named);
        LearnError when none is stored (or scikit-learn is missing)."""
        from viz_app.suggest.learned import LearnedProducer, _sklearn

        _sklearn()
        for q in questions or ():
            self.rubric.question(q)
        return LearnedProducer(self.learned_models.newest(list(questions) if questions
                                                          else None), self.rubric)

    def train_producer(self, question: str, campaign: str | None = None, *,
                       folds: int | None = None, resamples: int = 1000, seed: int = 0,
                       created_by: str = "", progress: IndexProgress | None = None
                       ) -> tuple[Any, bool]:
        """Fit the learned producer's model for one question from the team's blind labels
        (adjudications first; of one campaign, or all), cross-validate it against held-out
        human labels and store it under its training set's hash
        (`viz_app.suggest.learned.train`; docs/suggestions.md). Returns the model and whether
        it was stored now (False: the same training set was trained before). LearnError, one
        sentence, when there are too few labels. `progress(done, total, trace_id)` is called
        as the labelled targets' traces are read and their features computed."""
        from viz_app.suggest.learned import FOLDS, train

        self.rubric.question(question)  # LabelError naming the questions there are
        if campaign is not None:
            self.campaign(campaign)  # one sentence when there is no such campaign
        records = [r for r in self.labels.current_records(campaign=campaign)
                   if r["question"] == question]
        traces: dict[str, Trace | None] = {}
        ids = list(dict.fromkeys(r["trace_id"] for r in records))
        for done, trace_id in enumerate(ids):
            if progress is not None:
                progress(done, 2 * len(ids), trace_id)
            try:
                traces[trace_id] = self.trace(trace_id)
            except OrchvizError:
                traces[trace_id] = None
        model = train(self.rubric, question, records,
                      self.suggestion_store.all(question=question), traces,
                      campaign=campaign or "", folds=folds or FOLDS, resamples=resamples,
                      seed=seed, created_by=created_by, created_at=now(),
                      progress=None if progress is None else
                      lambda done, total, trace_id: progress(
                          len(ids) + round(done * len(ids) / max(1, total)), 2 * len(ids),
                          trace_id))
        return model, self.learned_models.add(model)

    def _answered(self, trace: Trace, maker: Any) -> set[tuple[str, str]]:
        """(event id or '', question) a judge answered before on this trace version, as the
        same producer (version, model and prompt hash, its examples included), among the
        questions it asks now; empty for any other producer."""
        producer = getattr(maker, "producer", None)
        judged = getattr(maker, "judged", None)
        if producer is None or judged is None or producer.name != "judge":
            return set()
        asked = set(judged(self.rubric))
        return {(s.event_id, s.question)
                for s in self.suggestion_store.all(trace_id=trace.trace_id, producer="judge")
                if s.trace_sha256 == trace.sha256 and s.producer == producer
                and s.question in asked}

    def judge_examples(self, k: int, questions: Sequence[str] | None = None) -> list[Any]:
        """Up to `k` few-shot examples per judged question (or per question named) for a
        judge, from the leads' current adjudicated answers (`judge.choose_examples`), each with
        its target's context as the judge's prompt shows it. An answer on a trace the library
        no longer holds, or on another version of it, is left out. LabelError when no
        question has one."""
        from viz_app.suggest.judge import (JUDGED_KINDS, MAX_INPUTS, TEXT_LIMIT, Example,
                                           choose_examples)
        from viz_app.suggest.context import target_context

        rubric = self.rubric
        wanted = [q.id for q in rubric.questions if q.kind in JUDGED_KINDS
                  and q.ask_when is None and (questions is None or q.id in questions)]
        records = self.labels.current_records(adjudicated_only=True)
        found: list[Example] = []
        for record in choose_examples(records, wanted, k):
            try:
                trace = self.trace(record["trace_id"])
            except OrchvizError:
                continue
            if record.get("trace_sha256") and record["trace_sha256"] != trace.sha256:
                continue
            analysis = analyze(trace)
            key = record["event_id"] or ""
            target = next((t for t in targets(rubric, analysis) if t.key == key), None)
            if target is None:
                continue
            found.append(Example(question=rubric.question(record["question"]),
                                 context=target_context(analysis, target,
                                                        text_limit=TEXT_LIMIT,
                                                        max_inputs=MAX_INPUTS),
                                 value=record["value"]))
        if k > 0 and not found:
            raise LabelError(f"few-shot examples come from adjudicated labels, and none of "
                             f"{', '.join(wanted)} has one on a trace of this library yet (a "
                             "lead adjudicates a campaign's disagreements on the Adjudicate "
                             "page); run without --few-shot")
        return found

    def suggestions(self, trace_id: str, event_id: str | None = None,
                    question: str | None = None, producer: str | None = None
                    ) -> list[Suggestion]:
        """The stored suggestions on one trace: on one event (`''` for the trace itself) or
        all (None), for one question or all, by one producer or all."""
        return self.suggestion_store.all(trace_id=trace_id, event_id=event_id,
                                         question=question, producer=producer)

    def agreement_history(self, question: str | None = None, *, resamples: int = 1000,
                          seed: int = 0) -> AgreementHistory:
        """Each producer version's agreement with the blind labels, in the order the versions
        came (alpha and kappa with bootstrap 95 % intervals, each version alone), and the
        versions whose alpha left their predecessor's interval
        (`viz_app.labels.agreement.agreement_history`; docs/suggestions.md)."""
        from viz_app.suggest.rules import FINE

        if question is not None:
            self.rubric.question(question)
        return self._measure(("history", question, resamples, seed), lambda: agreement_history(
            self.rubric, self.labels.current_records(), self.suggestion_store.all(),
            question=question, resamples=resamples, seed=seed, silence={RULES.name: FINE},
            unseen=self.rewards.held_out_suggestions()))

    MEASURED_KEPT = 16
    """Agreement figures kept per workspace (`_measure`)."""

    def _measure(self, key: tuple, compute: Callable[[], Any]) -> Any:
        """An agreement figure computed once per state of its data: labels, retractions and
        suggestions are only ever appended, so their row counts change with every write that
        could change it (the Agreement page reruns on each click; a thousand resamples of ten
        thousand targets take seconds). The bootstrap is seeded, so a kept figure is the one a
        new computation would give. Shared by every session, as the workspace is."""
        stamp = (*self.labels.revision(), self.suggestion_store.count(),
                 self.rewards.store.count())
        full = (*key, self.rubric.sha256, stamp)
        found = self._measured.get(full)
        if found is None:
            found = compute()
            if len(self._measured) >= self.MEASURED_KEPT:
                self._measured.pop(next(iter(self._measured)), None)
            self._measured[full] = found
        return found

    def suggestion_agreement(self, question: str | None = None, *, resamples: int = 1000,
                             seed: int = 0) -> SuggestionAgreement:
        """How far each producer's suggestions agree with the current human labels made
        without suggestions in view, beside how far the reviewers agree with each other, per
        question (or the one named): alpha, kappa, bootstrap 95 % intervals, confusion
        matrices (`viz_app.labels.agreement.suggestion_agreement`; docs/suggestions.md). The
        rules' silence on a target of a trace they ran on reads as `rules.FINE`."""
        from viz_app.suggest.rules import FINE

        if question is not None:
            self.rubric.question(question)  # LabelError naming the questions there are
        return self._measure(("suggestions", question, resamples, seed),
                             lambda: suggestion_agreement(
                                 self.rubric, self.labels.current_records(),
                                 self.suggestion_store.all(), question=question,
                                 resamples=resamples, seed=seed, silence={RULES.name: FINE},
                                 unseen=self.rewards.held_out_suggestions()))
