"""A label: one saved answer with its provenance (who, how they were identified, when, under
which rubric and trace version, from where), and the pure helpers over labels: the current label
of each reviewer, progress over a trace's targets, labels from import records. No SQL here: the
store (`viz_app.store.labels`) keeps them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from operator import attrgetter
from typing import Any, Literal, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from viz_app.analysis import analyze
from viz_app.errors import LabelError
from viz_app.labels.rubric import LabelTarget, Rubric, check_answer, counted
from viz_app.model import Trace

Identity = Literal["oidc", "self-declared", "cli", "import", ""]
"""How a reviewer was identified when a label was saved: `oidc` (signed in through the app's
OpenID Connect login: verified), `self-declared` (a name typed in the app: not verified), `cli`
(a command's argument), `import` (a field of an imported file); '' before 0.2."""



class Reviewer(BaseModel):
    """Who is answering, and how orchviz knows it: the name every label they save records."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="The reviewer's name or e-mail.")
    via: Identity = Field(description="How the name was learnt (see `Label.identified_by`).")


Mapping_ = Literal["", "certain", "uncertain"]
"""How sure a published annotation's mapping onto a rubric question is ('' for a person)."""

LabelRecord = Mapping[str, Any]
"""A label as exports read it: a dict of FIELDS, `event_id` None for the trace itself."""


class Label(BaseModel):
    """One saved answer, with who gave it, when, and under which rubric and trace version."""

    model_config = ConfigDict(frozen=True)

    label_id: str = Field(description="Unique id: random for a save, derived from the content "
                          "of an imported record that has none.")
    trace_id: str = Field(description="The trace labelled.")
    trace_sha256: str = Field(description="`Trace.sha256` of the trace the label was made on.")
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
    source: Literal["human", "import", "adjudication"] = Field(
        "human", description="Saved in the app or CLI by a person (`human`), imported from a "
        "file (`import`), or a lead's final answer on a disputed target (`adjudication`; the "
        "reviewers' own labels stay).")
    origin: str = Field("", description="For an import: the file (or judge) it came from.")
    pair_trace_id: str | None = Field(None, description="For a judgement of two traces: the "
                                      "second trace (the label's trace is the first).")
    identified_by: Identity = Field("", description="How the reviewer was known: `oidc` (the "
                                    "app's OpenID Connect sign-in), `self-declared` (a name typed "
                                    "in the app, not verified), `cli` (a command's argument), "
                                    "`import` (a file's field); '' before 0.2.")
    created_at_given: str | None = Field(None, description="For an import: the `created_at` its "
                                         "record gave, as written, when orchviz stored another "
                                         "(normalised to UTC, or a time in the future set to "
                                         "the import's time); None otherwise.")
    mapping: Mapping_ = Field("", description="For a published annotation: `certain` when it "
                              "means what the question asks, `uncertain` when orchviz "
                              "interpreted it (why, at the head of the comment); '' for a "
                              "person's label.")
    campaign: str = Field("", description="The review campaign the label was saved in ('' "
                          "outside one).")
    suggestions_visible: bool | None = Field(None, description="Whether suggested answers were "
                                             "on screen when the label was made (None when not "
                                             "known: an import, a CLI save, before 0.3).")

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


FIELDS: tuple[str, ...] = tuple(Label.model_fields)
"""Every field of a label, in the order exports (and the labels table) write them."""

_ALL_FIELDS = frozenset(FIELDS)


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
    clamped: int = Field(0, description="Records dated in the future, stored at the import's "
                         "time (their own time kept in `created_at_given`).")

    @property
    def text(self) -> str:
        """'3 records, 2 new labels', and what happened to times in the future."""
        said = f"{self.read} records, {self.added} new labels"
        if self.clamped:
            said += (f"; {self.clamped} dated in the future, stored at the import's time "
                     "(their own time kept as created_at_given)")
        return said


TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
"""How labels record a time: ISO 8601 UTC with microseconds, so that text order is time order."""


def now() -> str:
    """The current time as labels record it (`TIME_FORMAT`)."""
    return datetime.now(UTC).strftime(TIME_FORMAT)


def now_after(last: str) -> str:
    """The current time (`now`), or one microsecond after `last` when the clock reads no later
    (set back, or the same microsecond): for a row appended after `last` that must read as the
    newer of the two."""
    current = now()
    if not last or current > last:
        return current
    return (datetime.strptime(last, TIME_FORMAT) + timedelta(microseconds=1)).strftime(
        TIME_FORMAT)


def imported_time(given: object, at: str) -> tuple[str, str | None]:
    """The `created_at` an imported label stores, and the given text to keep beside it
    (`created_at_given`, None when it is stored as given). `given` must be an ISO 8601 time
    (without an offset it is taken as UTC), else LabelError; it is stored in `TIME_FORMAT`.
    A time after `at` (the moment of the import) is clamped to `at`: a label cannot have been
    made later than it was imported, and a record dated 2099 must not stay the newest of its
    reviewer until 2099."""
    if given is None or given == "":
        return at, None
    try:
        parsed = datetime.fromisoformat(given) if isinstance(given, str) else None
    except ValueError:
        parsed = None
    if parsed is None:
        shown = given if len(str(given)) <= 60 else str(given)[:59] + "…"
        raise LabelError(f"created_at {shown!r} is not an ISO 8601 time "
                         "(such as 2026-01-31T12:00:00Z)")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    utc = parsed.astimezone(UTC).replace(tzinfo=None)
    stored = min(utc.isoformat(timespec="microseconds") + "Z", at)  # isoformat pads the year
    return stored, None if stored == given else given


def trace_sha256(trace: Trace) -> str:
    """The hash a label records for its trace: `Trace.sha256`, where it is defined."""
    return trace.sha256


ANSWER_KEY: tuple[str, ...] = ("source", "reviewer", "trace_id", "event_id", "question",
                               "pair_trace_id")
"""The fields that make labels answers to one question: a label is replaced by a newer one with
the same values of all of them. `source` is among them, so an imported label (however it is
dated, whatever reviewer it names) never replaces a label a person saved, nor the reverse: each
source has its own current answer."""

NEWER_KEY: tuple[str, ...] = ("created_at", "label_id")
"""What makes a label newer than another of the same answer key: its time, then its id."""

T = TypeVar("T")


def newest_per_answer(items: Iterable[T], key: Callable[[T], tuple],
                      newer: Callable[[T], tuple]) -> list[T]:
    """The newest item per answer key (`ANSWER_KEY`, read by `key`; newest by `NEWER_KEY`,
    read by `newer`), in the order each key was first seen. The one definition of a current
    label: `current_labels` applies it to labels, the store to its rows."""
    found: dict[tuple, T] = {}
    for item in items:
        k = key(item)
        held = found.get(k)
        if held is None or newer(item) > newer(held):
            found[k] = item
    return list(found.values())


def current_labels(labels: Iterable[Label]) -> list[Label]:
    """The current labels: the newest per source, reviewer, target and question (ties broken by
    label id), sorted by target (see `ANSWER_KEY`)."""
    newest = newest_per_answer(labels, attrgetter(*ANSWER_KEY), attrgetter(*NEWER_KEY))
    return sorted(newest, key=lambda x: (x.trace_id, x.event_id, x.question, x.reviewer,
                                         x.source))


def derived_label_id(record: Mapping[str, Any]) -> str:
    """A label id from a record's content, so the same record always gets the same id."""
    content = {k: v for k, v in record.items() if k != "label_id"}
    canonical = orjson.dumps(content, option=orjson.OPT_SORT_KEYS)
    return "imp-" + hashlib.sha256(canonical).hexdigest()[:40]


REQUIRED_IMPORT_KEYS = ("trace_id", "event_id", "question", "value", "reviewer")


def label_from_record(record: Mapping[str, Any], rubric: Rubric, traces: Mapping[str, Trace],
                      origin: str, at: str | None = None) -> Label:
    """A label from an import record in the jsonl export's shape; LabelError when the record
    lacks a key, names an unknown trace, event or question, gives a value the rubric refuses or
    a `created_at` that is no time. The label's source is always `import` (whatever the record
    says) and its origin the record's or `origin`; the reward is always the rubric's; times and
    hashes are filled in when missing, and a time after `at` (the import's moment, default now)
    is set to `at` (see `imported_time`)."""
    if not isinstance(record, Mapping):
        raise LabelError("a label record is a JSON object")
    missing = [k for k in REQUIRED_IMPORT_KEYS if k not in record]
    if missing:
        raise LabelError(f"the record lacks {', '.join(missing)}")
    trace = traces.get(record["trace_id"]) if isinstance(record["trace_id"], str) else None
    if trace is None:
        raise LabelError(f"no trace {record['trace_id']!r} among the traces given (--traces)")
    reviewer = record["reviewer"]
    if not isinstance(reviewer, str) or not reviewer.strip():
        raise LabelError("reviewer must be a non-empty string")
    event_id = record["event_id"] or None
    reward = check_answer(rubric, analyze(trace), record["question"], event_id, record["value"],
                          record.get("answers"))
    created_at, given = imported_time(record.get("created_at"), at or now())
    try:
        return _imported_label(record, rubric, trace, event_id, reward, reviewer.strip(),
                               created_at, given, origin)
    except ValidationError as err:
        first = err.errors()[0]
        raise LabelError(f"{'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def _imported_label(record: Mapping[str, Any], rubric: Rubric, trace: Trace,
                    event_id: str | None, reward: float | None, reviewer: str, created_at: str,
                    given: str | None, origin: str) -> Label:
    seconds = record.get("seconds_spent")
    return Label(
        label_id=str(record.get("label_id") or derived_label_id(record)),
        trace_id=trace.trace_id, trace_sha256=record.get("trace_sha256") or trace_sha256(trace),
        event_id=event_id or "", question=record["question"], value=record["value"],
        reward=reward, reviewer=reviewer, created_at=created_at,
        rubric_version=record.get("rubric_version") or rubric.version,
        rubric_sha256=record.get("rubric_sha256") or rubric.sha256,
        comment=record.get("comment") or "",
        seconds_spent=float(seconds) if isinstance(seconds, (int, float)) else None,
        source="import", origin=record.get("origin") or origin, identified_by="import",
        created_at_given=given,
        mapping=record["mapping"] if record.get("mapping") in ("certain", "uncertain") else "")


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
