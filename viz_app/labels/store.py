"""The label store: every answer a reviewer saves, kept forever (append-only).

A save adds a row; nothing is updated or deleted. The *current* label of a reviewer on a target
and question is their newest row, and the older rows are its history. The table lives in the one
orchviz database (`viz_app.db`): SQLite in WAL mode by default, any SQLAlchemy URL for a team.
Every row is checked against the rubric and the trace before it is written (`LabelError`
otherwise); imported rows get a `label_id` derived from their content, so importing the same file
twice adds nothing.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Iterator, Mapping
from datetime import UTC, datetime
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import (Column, Engine, Float, Index, String, Table, Text, func, insert, inspect,
                        select)
from sqlalchemy import text as sql_text
from sqlalchemy.exc import IntegrityError

from viz_app import db
from viz_app.analysis import analyze
from viz_app.labels.rubric import (LabelError, LabelTarget, Rubric, asked, check_answer, counted,
                                   default_rubric, targets)
from viz_app.model import Trace

LABELS_SCHEMA_VERSION = 2
"""Version of the `labels` table, kept in `orchviz_schema` under the name `labels`."""

labels_table = Table(
    "labels", db.metadata,
    Column("label_id", String(64), primary_key=True),
    Column("trace_id", String(512), nullable=False),
    Column("trace_sha256", String(64), nullable=False),
    Column("event_id", String(512), nullable=False),
    Column("question", String(64), nullable=False),
    Column("value", Text, nullable=False),
    Column("reward", Float, nullable=True),
    Column("reviewer", String(256), nullable=False),
    Column("created_at", String(32), nullable=False),
    Column("rubric_version", String(64), nullable=False),
    Column("rubric_sha256", String(64), nullable=False),
    Column("comment", Text, nullable=False),
    Column("seconds_spent", Float, nullable=True),
    Column("source", String(16), nullable=False),
    Column("origin", Text, nullable=False),
    Column("pair_trace_id", String(512), nullable=True),
    Index("labels_by_target", "trace_id", "event_id", "question", "reviewer"),
)
"""One row per save. `value` is the answer as JSON; `event_id` is '' for the trace itself;
`pair_trace_id` names the second trace of a pairwise judgement (None for any other label)."""

FIELDS = tuple(str(c.name) for c in labels_table.columns)
"""Every field of a label, in the order exports write them."""

LabelRecord = Mapping[str, Any]
"""A label as exports read it: a dict of FIELDS, `event_id` None for the trace itself."""


class Label(BaseModel):
    """One saved answer, with who gave it, when, and under which rubric and trace version."""

    model_config = ConfigDict(frozen=True)

    label_id: str = Field(description="Unique id: random for a save, derived from the content "
                          "of an imported record that has none.")
    trace_id: str = Field(description="The trace labelled.")
    trace_sha256: str = Field(description="SHA-256 of the trace file the label was made on.")
    event_id: str = Field(description="The event labelled; '' for the trace itself.")
    question: str = Field(description="The rubric question answered.")
    value: Any = Field(description="The answer: a scale point, category, tags, text or event id.")
    reward: float | None = Field(description="The answer's reward in [-1, 1] under the rubric.")
    reviewer: str = Field(description="Who answered.")
    created_at: str = Field(description="When, as ISO 8601 UTC with microseconds.")
    rubric_version: str = Field(description="Version of the rubric the question came from.")
    rubric_sha256: str = Field(description="SHA-256 of that rubric.")
    comment: str = Field("", description="The reviewer's free-text note on the target.")
    seconds_spent: float | None = Field(None, description="Time spent on the target, if known.")
    source: Literal["human", "import"] = Field("human", description="Saved in the app or CLI by "
                                               "a person, or imported from a file.")
    origin: str = Field("", description="For an import: the file (or judge) it came from.")
    pair_trace_id: str | None = Field(None, description="For a judgement of two traces: the "
                                      "second trace (the label's trace is the first).")

    @property
    def target(self) -> tuple[str, str]:
        """(trace id, event id) of what was labelled."""
        return self.trace_id, self.event_id

    def to_row(self) -> dict[str, Any]:
        """The label as a database row (its value as JSON text)."""
        row = self.model_dump()
        row["value"] = orjson.dumps(self.value).decode()
        return row

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> Label:
        """A label from a record of our own table (see `LabelStore.current_records`), not
        validated again: it was validated when saved."""
        label = cls.__new__(cls)  # what model_construct does, at a fraction of its cost
        object.__setattr__(label, "__dict__", {**record, "event_id": record["event_id"] or ""})
        object.__setattr__(label, "__pydantic_fields_set__", _ALL_FIELDS)
        object.__setattr__(label, "__pydantic_extra__", None)
        object.__setattr__(label, "__pydantic_private__", None)
        return label

    def to_record(self) -> dict[str, Any]:
        """The label as an export record: every field, `event_id` None for the trace itself."""
        return {**self.__dict__, "event_id": self.event_id or None}


_ALL_FIELDS = frozenset(FIELDS)
_ID, _TRACE, _EVENT, _QUESTION, _REVIEWER, _CREATED, _PAIR = (
    FIELDS.index(n) for n in ("label_id", "trace_id", "event_id", "question", "reviewer",
                              "created_at", "pair_trace_id"))


class Progress(BaseModel):
    """How far one reviewer (or anyone) is with one trace."""

    trace_id: str
    labelled: int = Field(description="Targets whose required questions all have an answer.")
    total: int = Field(description="Targets with a required question.")
    next_target: str | None = Field(description="Key of the first target not yet labelled "
                                    "('' for the trace itself); None when all are.")

    @property
    def text(self) -> str:
        """'3 of 5 targets labelled'."""
        return f"{self.labelled} of {self.total} targets labelled"

    @property
    def done(self) -> bool:
        """Whether every counted target is labelled."""
        return self.labelled >= self.total


class ImportReport(BaseModel):
    """What an import did."""

    read: int = Field(description="Records read.")
    added: int = Field(description="Labels added (records already present are not).")


def _record(row: Iterable[Any]) -> dict[str, Any]:
    """An export record from a row of the labels table."""
    record = dict(zip(FIELDS, row))
    record["value"] = orjson.loads(record["value"])
    record["event_id"] = record["event_id"] or None
    return record


def now() -> str:
    """The current time as labels record it: ISO 8601 UTC with microseconds, so that text order
    is time order."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def trace_sha256(trace: Trace) -> str:
    """The hash a label records for its trace: of the file it came from, else of its JSON."""
    if trace.sha256:
        return trace.sha256
    return hashlib.sha256(orjson.dumps(trace.to_dict(), option=orjson.OPT_SORT_KEYS)).hexdigest()


def current_labels(labels: Iterable[Label]) -> list[Label]:
    """The newest label per reviewer, target and question (ties broken by label id)."""
    newest: dict[tuple[str, str, str, str], Label] = {}
    for label in labels:
        key = (label.reviewer, label.trace_id, label.event_id, label.question,
               label.pair_trace_id)
        held = newest.get(key)
        if held is None or (label.created_at, label.label_id) > (held.created_at, held.label_id):
            newest[key] = label
    return sorted(newest.values(), key=lambda x: (x.trace_id, x.event_id, x.question, x.reviewer))


def derived_label_id(record: Mapping[str, Any]) -> str:
    """A label id from a record's content, so the same record always gets the same id."""
    content = {k: v for k, v in record.items() if k != "label_id"}
    canonical = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    return "imp-" + hashlib.sha256(canonical).hexdigest()[:40]


REQUIRED_IMPORT_KEYS = ("trace_id", "event_id", "question", "value", "reviewer")


def label_from_record(record: Mapping[str, Any], rubric: Rubric, traces: Mapping[str, Trace],
                      origin: str) -> Label:
    """A label from an import record in the jsonl export's shape; LabelError when the record
    lacks a key, names an unknown trace, event or question, or gives a value the rubric refuses.
    The reward is always the rubric's, times and hashes are filled in when missing."""
    if not isinstance(record, Mapping):
        raise LabelError("a label record is a JSON object")
    missing = [k for k in REQUIRED_IMPORT_KEYS if k not in record]
    if missing:
        raise LabelError(f"the record lacks {', '.join(missing)}")
    trace = traces.get(record["trace_id"])
    if trace is None:
        raise LabelError(f"no trace {record['trace_id']!r} among the traces given (--traces)")
    reviewer = record["reviewer"]
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise LabelError("reviewer must be a non-empty string")
    event_id = record["event_id"] or None
    reward = check_answer(rubric, analyze(trace), record["question"], event_id, record["value"],
                          record.get("answers"))
    seconds = record.get("seconds_spent")
    return Label(
        label_id=str(record.get("label_id") or derived_label_id(record)),
        trace_id=trace.trace_id, trace_sha256=record.get("trace_sha256") or trace_sha256(trace),
        event_id=event_id or "", question=record["question"], value=record["value"],
        reward=reward, reviewer=reviewer.strip(), created_at=record.get("created_at") or now(),
        rubric_version=record.get("rubric_version") or rubric.version,
        rubric_sha256=record.get("rubric_sha256") or rubric.sha256,
        comment=record.get("comment") or "",
        seconds_spent=float(seconds) if isinstance(seconds, (int, float)) else None,
        source="import", origin=record.get("origin") or origin)


def _add_pair_column(conn) -> None:
    """Schema 2: the nullable `pair_trace_id` column, for pairwise judgements (`create_all` does
    not alter an existing table; old rows are not pairs)."""
    columns = {c["name"] for c in inspect(conn).get_columns("labels")}
    if "pair_trace_id" not in columns:
        conn.execute(sql_text("ALTER TABLE labels ADD COLUMN pair_trace_id VARCHAR(512)"))


MIGRATIONS = {2: _add_pair_column}
"""For each labels schema version, the step that brings a database of the version before it up."""


class LabelStore:
    """The labels in one database, checked against one rubric."""

    def __init__(self, url: str, rubric: Rubric | None = None):
        self.url = url
        self.rubric = rubric or default_rubric()
        self.engine: Engine = db.connect(url)
        self._record_schema()

    def _record_schema(self) -> None:
        info = db.schema_info
        with self.engine.begin() as conn:
            found = conn.execute(select(info.c.version).where(info.c.name == "labels")).scalar()
            if found is None:
                try:
                    with conn.begin_nested():
                        conn.execute(info.insert().values(name="labels",
                                                          version=LABELS_SCHEMA_VERSION))
                except IntegrityError:
                    pass  # another process recorded it first
            elif found > LABELS_SCHEMA_VERSION:
                raise RuntimeError(f"the labels were written by a newer orchviz (labels schema "
                                   f"{found}); this one knows {LABELS_SCHEMA_VERSION}")
            elif found < LABELS_SCHEMA_VERSION:
                for version in range(found + 1, LABELS_SCHEMA_VERSION + 1):
                    MIGRATIONS[version](conn)
                conn.execute(info.update().where(info.c.name == "labels")
                             .values(version=LABELS_SCHEMA_VERSION))


    # -- writing ----------------------------------------------------------------------------

    def save(self, trace: Trace, question: str, value: Any, reviewer: str,
             event_id: str | None = None, *, comment: str = "",
             seconds_spent: float | None = None) -> Label:
        """Save one answer as a new label (LabelError when the rubric or trace refuses it)."""
        return self.save_target(trace, event_id, {question: value}, reviewer, comment=comment,
                                seconds_spent=seconds_spent)[0]

    def save_target(self, trace: Trace, event_id: str | None, answers: Mapping[str, Any],
                    reviewer: str, *, comment: str = "",
                    seconds_spent: float | None = None) -> list[Label]:
        """Save a reviewer's answers on one target together (one transaction). Follow-up
        questions are checked against the other answers; None answers are skipped."""
        reviewer = (reviewer or "").strip()
        if not reviewer:
            raise LabelError("a label needs a reviewer name")
        given = {q: v for q, v in answers.items() if v is not None}
        if not given:
            raise LabelError("nothing to save: no question was answered")
        analysis = analyze(trace)
        stamp, sha = now(), trace_sha256(trace)
        made: list[Label] = []
        for question, value in given.items():
            if not asked(self.rubric.question(question), given):
                raise LabelError(f"{question} is asked only when "
                                 f"{self.rubric.question(question).ask_when.question} is one of "
                                 f"{self.rubric.question(question).ask_when.values}")
            reward = check_answer(self.rubric, analysis, question, event_id, value, given)
            made.append(Label(
                label_id=uuid.uuid4().hex, trace_id=trace.trace_id, trace_sha256=sha,
                event_id=event_id or "", question=question, value=value, reward=reward,
                reviewer=reviewer, created_at=stamp, rubric_version=self.rubric.version,
                rubric_sha256=self.rubric.sha256, comment=comment or "",
                seconds_spent=seconds_spent, source="human", origin=""))
        with self.engine.begin() as conn:
            conn.execute(insert(labels_table), [m.to_row() for m in made])
        return made

    def add(self, labels: Iterable[Label], chunk: int = 5000) -> int:
        """Write labels already checked, skipping any whose label_id is stored; returns how many
        were added. All of them go in one transaction: a crash adds none."""
        rows = [label.to_row() for label in labels]
        if not rows:
            return 0
        added = 0
        with self.engine.begin() as conn:
            for start in range(0, len(rows), chunk):
                added += self._insert_new(conn, rows[start:start + chunk])
        return added

    def _insert_new(self, conn, rows: list[dict[str, Any]]) -> int:
        dialect = self.engine.dialect.name
        if dialect in ("sqlite", "postgresql"):
            module = __import__(f"sqlalchemy.dialects.{dialect}", fromlist=["insert"])
            statement = module.insert(labels_table).on_conflict_do_nothing(
                index_elements=["label_id"]).returning(labels_table.c.label_id)
            return len(conn.execute(statement, rows).all())  # rowcount is -1 for batches
        ids = [r["label_id"] for r in rows]
        held = set(conn.execute(select(labels_table.c.label_id)
                                .where(labels_table.c.label_id.in_(ids))).scalars())
        fresh = [r for r in rows if r["label_id"] not in held]
        if fresh:
            conn.execute(insert(labels_table), fresh)
        return len(fresh)

    def import_records(self, records: Iterable[Mapping[str, Any]], traces: Mapping[str, Trace],
                       origin: str) -> ImportReport:
        """Import label records (the jsonl export's shape) all or nothing: every record is
        checked first, and the first bad one raises LabelError naming its place."""
        labels: list[Label] = []
        for number, record in enumerate(records, 1):
            try:
                labels.append(label_from_record(record, self.rubric, traces, origin))
            except LabelError as err:
                raise LabelError(f"{origin}: record {number}: {err}") from None
        return ImportReport(read=len(labels), added=self.add(labels))

    # -- reading ----------------------------------------------------------------------------

    @staticmethod
    def _filtered(query, trace_id: str | None, reviewer: str | None):
        if trace_id is not None:
            query = query.where(labels_table.c.trace_id == trace_id)
        if reviewer is not None:
            query = query.where(labels_table.c.reviewer == reviewer)
        return query

    def all(self, trace_id: str | None = None, reviewer: str | None = None) -> Iterator[Label]:
        """Every stored label (the whole history), oldest first."""
        query = self._filtered(select(*labels_table.columns), trace_id, reviewer)
        query = query.order_by(labels_table.c.created_at, labels_table.c.label_id)
        with self.engine.connect() as conn:
            for row in conn.execute(query):
                yield Label.from_record(_record(row))

    def current_records(self, trace_id: str | None = None,
                        reviewer: str | None = None) -> list[dict[str, Any]]:
        """The current labels as export records (dicts of every field, `event_id` None for the
        trace itself), newest per reviewer, target and question, sorted by target. This is
        what exports read: it builds no objects beyond the rows it returns."""
        c = labels_table.c
        query = self._filtered(select(*labels_table.columns), trace_id, reviewer)
        query = query.order_by(c.trace_id, c.event_id, c.question, c.reviewer)  # by the index
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        # A dict keeps each key where it was first seen, so the rows stay in target order.
        newest: dict[tuple, Any] = {}
        for row in rows:
            key = (row[_REVIEWER], row[_TRACE], row[_EVENT], row[_QUESTION], row[_PAIR])
            held = newest.get(key)
            if held is None or (row[_CREATED], row[_ID]) > (held[_CREATED], held[_ID]):
                newest[key] = row
        return [_record(row) for row in newest.values()]

    def current(self, trace_id: str | None = None, reviewer: str | None = None) -> list[Label]:
        """The current labels: newest per reviewer, target and question, sorted by target."""
        return [Label.from_record(r) for r in self.current_records(trace_id, reviewer)]

    def history(self, trace_id: str, event_id: str | None = None, question: str | None = None,
                reviewer: str | None = None) -> list[Label]:
        """Every label ever saved on a trace (or one target of it), oldest first."""
        found = self.all(trace_id, reviewer)
        return [x for x in found if (event_id is None or x.event_id == (event_id or ""))
                and (question is None or x.question == question)]

    def count(self) -> int:
        """How many label rows are stored (history included)."""
        with self.engine.connect() as conn:
            return conn.execute(select(func.count()).select_from(labels_table)).scalar_one()

    def reviewers(self) -> list[str]:
        """Everyone who has saved a label, sorted."""
        with self.engine.connect() as conn:
            return sorted(conn.execute(select(labels_table.c.reviewer).distinct()).scalars())

    def answers(self, trace_id: str, reviewer: str) -> dict[str, dict[str, Label]]:
        """A reviewer's current labels on a trace: target key -> question -> label."""
        found: dict[str, dict[str, Label]] = {}
        for label in self.current(trace_id, reviewer):
            found.setdefault(label.event_id, {})[label.question] = label
        return found

    def progress(self, trace: Trace, reviewer: str | None = None) -> Progress:
        """How many of a trace's targets are labelled, by one reviewer or (None) by anyone."""
        return progress_of(targets(self.rubric, analyze(trace)), trace.trace_id,
                           self.current(trace.trace_id, reviewer))

    def answered(self, reviewer: str | None = None) -> dict[str, dict[str, set[str]]]:
        """For each trace id, target key -> the questions with a label, by one reviewer or
        (None) by anyone. Cheap: no trace is loaded; the library's `IndexRow.labelled` turns it
        into "n of m"."""
        c = labels_table.c
        query = select(c.trace_id, c.event_id, c.question).distinct().where(
            c.pair_trace_id.is_(None))  # a judgement of two traces is no target of either
        if reviewer is not None:
            query = query.where(c.reviewer == reviewer)
        found: dict[str, dict[str, set[str]]] = {}
        with self.engine.connect() as conn:
            for trace_id, event_id, question in conn.execute(query):
                found.setdefault(trace_id, {}).setdefault(event_id, set()).add(question)
        return found


def progress_of(found: list[LabelTarget], trace_id: str, labels: Iterable[Label]) -> Progress:
    """Progress over a trace's targets given current labels: a target is labelled when each of
    its required questions has an answer."""
    answered: dict[str, set[str]] = {}
    for label in labels:
        answered.setdefault(label.event_id, set()).add(label.question)
    counted_targets = [t for t in found if counted(t)]
    done = [t for t in counted_targets if set(t.required) <= answered.get(t.key, set())]
    pending = [t for t in counted_targets if t not in done]
    return Progress(trace_id=trace_id, labelled=len(done), total=len(counted_targets),
                    next_target=pending[0].key if pending else None)


def open_store(url: str, rubric: Rubric | None = None) -> LabelStore:
    """A label store on a SQLAlchemy URL (see `viz_app.settings.database_url` for paths)."""
    return LabelStore(url, rubric)
