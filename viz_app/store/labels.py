"""The label store: every answer a reviewer saves, kept forever (append-only).

A save adds a row; nothing is updated or deleted. The *current* label of a reviewer on a target
and question is their newest row of one source, and the older rows are its history: what a person
saved (`human`) and what was imported under a name (`import`) are kept apart, so an imported row
never replaces a person's answer (`viz_app.labels.label.ANSWER_KEY`). Every row is checked against
the rubric and the trace before it is written (`LabelError` otherwise); imported rows get a
`label_id` derived from their content, so importing the same file twice adds nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from operator import itemgetter
from typing import Any, Literal

import orjson
from sqlalchemy import Engine, func, insert, select

from viz_app.analysis import analyze
from viz_app.errors import LabelError
from viz_app.labels import (ANSWER_KEY, FIELDS, NEWER_KEY, Identity, ImportReport, Label, Progress,
                            Rubric, asked, check_answer, label_from_record, newest_per_answer, now,
                            progress_of, targets, trace_sha256)
from viz_app.model import Trace
from viz_app.store.tables import labels_table, retractions_table

Source = Literal["human", "import", "adjudication"]
"""Where a label came from (`Label.source`)."""

_ANSWER = itemgetter(*(FIELDS.index(n) for n in ANSWER_KEY))
_NEWER = itemgetter(*(FIELDS.index(n) for n in NEWER_KEY))


def _record(row: Iterable[Any]) -> dict[str, Any]:
    """An export record from a row of the labels table."""
    record = dict(zip(FIELDS, row))
    record["value"] = orjson.loads(record["value"])
    record["event_id"] = record["event_id"] or None
    return record


class LabelStore:
    """The labels in one database, checked against one rubric."""

    def __init__(self, engine: Engine, rubric: Rubric):
        self.engine = engine
        self.rubric = rubric

    # -- writing ----------------------------------------------------------------------------

    def save(self, trace: Trace, question: str, value: Any, reviewer: str,
             event_id: str | None = None, *, comment: str = "",
             seconds_spent: float | None = None, identified_by: Identity = "cli") -> Label:
        """Save one answer as a new label (LabelError when the rubric or trace refuses it)."""
        return self.save_target(trace, event_id, {question: value}, reviewer, comment=comment,
                                seconds_spent=seconds_spent, identified_by=identified_by)[0]

    def save_target(self, trace: Trace, event_id: str | None, answers: Mapping[str, Any],
                    reviewer: str, *, comment: str = "",
                    seconds_spent: float | None = None,
                    identified_by: Identity = "cli",
                    suggestions_visible: bool | None = None) -> list[Label]:
        """Save a reviewer's answers on one target together (one transaction). Follow-up
        questions are checked against the other answers; None answers are skipped."""
        made = self.checked(trace, event_id, answers, reviewer, comment=comment,
                            seconds_spent=seconds_spent, identified_by=identified_by,
                            suggestions_visible=suggestions_visible)
        with self.engine.begin() as conn:
            conn.execute(insert(labels_table), [m.to_row() for m in made])
        return made

    def checked(self, trace: Trace, event_id: str | None, answers: Mapping[str, Any],
                reviewer: str, *, comment: str = "", seconds_spent: float | None = None,
                identified_by: Identity = "cli", source: Source = "human",
                campaign: str = "", suggestions_visible: bool | None = None) -> list[Label]:
        """The labels a save of these answers would add, each checked against the rubric and
        the trace (LabelError otherwise), none stored: what `save_target` writes, and what a
        campaign's submit and a lead's adjudication write in their own transaction."""
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
                seconds_spent=seconds_spent, source=source, origin="",
                identified_by=identified_by, campaign=campaign,
                suggestions_visible=suggestions_visible))
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
        checked first, and the first bad one raises LabelError naming its place. Every label is
        `source: import`; one dated after this moment is stored at it (`label_from_record`)."""
        labels: list[Label] = []
        at = now()
        for number, record in enumerate(records, 1):
            try:
                labels.append(label_from_record(record, self.rubric, traces, origin, at))
            except LabelError as err:
                raise LabelError(f"{origin}: record {number}: {err}") from None
        clamped = sum(1 for x in labels if x.created_at_given is not None and x.created_at == at)
        return ImportReport(read=len(labels), added=self.add(labels), clamped=clamped)

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

    def current_records(self, trace_id: str | None = None, reviewer: str | None = None, *,
                        campaign: str | None = None, include_retracted: bool = False,
                        adjudicated_only: bool = False) -> list[dict[str, Any]]:
        """The current labels as export records (dicts of every field, `event_id` None for the
        trace itself), newest per source, reviewer, target and question (the rule of
        `viz_app.labels.label.current_labels`, applied to rows), sorted by target. This is what
        exports read: it builds no objects beyond the rows it returns.

        A label a lead retracted is left out (after the newest is chosen: a retracted answer
        does not bring back the one it replaced), unless `include_retracted` (history views).
        `campaign` keeps the labels saved in one review campaign (its reviewers' and its
        adjudications); `adjudicated_only` keeps only adjudications (`source: adjudication`),
        what a trainer reads from a settled campaign."""
        c = labels_table.c
        query = self._filtered(select(*labels_table.columns), trace_id, reviewer)
        if campaign is not None:
            query = query.where(c.campaign == campaign)
        if adjudicated_only:
            query = query.where(c.source == "adjudication")
        query = query.order_by(c.trace_id, c.event_id, c.question, c.reviewer)  # by the index
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            retracted = set() if include_retracted else self._retracted(conn)
        current = newest_per_answer(rows, _ANSWER, _NEWER)
        if retracted:
            current = [row for row in current if row[0] not in retracted]
        # each key stays where it was first seen, so the rows stay in target order
        return [_record(row) for row in current]

    def current(self, trace_id: str | None = None, reviewer: str | None = None, *,
                campaign: str | None = None, include_retracted: bool = False,
                adjudicated_only: bool = False) -> list[Label]:
        """The current labels: newest per reviewer, target and question, sorted by target,
        retracted ones left out (see `current_records`)."""
        return [Label.from_record(r) for r in self.current_records(
            trace_id, reviewer, campaign=campaign, include_retracted=include_retracted,
            adjudicated_only=adjudicated_only)]

    # -- retractions --------------------------------------------------------------------------

    @staticmethod
    def _retracted(conn) -> set[str]:
        return set(conn.execute(select(retractions_table.c.label_id).distinct()).scalars())

    def retracted(self) -> set[str]:
        """The ids of every label a lead retracted."""
        with self.engine.connect() as conn:
            return self._retracted(conn)

    def revision(self) -> tuple[int, int]:
        """(labels, retractions) stored: both are only ever appended, so every write that can
        change the current labels changes this (what cached agreement figures are keyed by)."""
        with self.engine.connect() as conn:
            return tuple(int(conn.execute(select(func.count()).select_from(t)).scalar_one())
                         for t in (labels_table, retractions_table))  # type: ignore[return-value]

    def retract(self, label_ids: Iterable[str], lead: str, identified_by: Identity,
                reason: str, campaign: str = "") -> int:
        """Append a retraction of each stored label not retracted yet (one transaction);
        returns how many were added. LabelError when there is no reason, or an id names no
        stored label. Nothing is deleted: `all` and `history` still give the labels."""
        reason = (reason or "").strip()
        if not reason:
            raise LabelError("a retraction needs a reason")
        if not (lead or "").strip():
            raise LabelError("a retraction needs the lead's name")
        ids = list(dict.fromkeys(label_ids))
        if not ids:
            return 0
        stamp = now()
        with self.engine.begin() as conn:
            known: set[str] = set()
            for start in range(0, len(ids), 500):
                known |= set(conn.execute(select(labels_table.c.label_id).where(
                    labels_table.c.label_id.in_(ids[start:start + 500]))).scalars())
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise LabelError(f"no label {unknown[0]!r} to retract; nothing was retracted")
            fresh = [i for i in ids if i not in self._retracted(conn)]
            if fresh:
                conn.execute(insert(retractions_table), [
                    {"retraction_id": uuid.uuid4().hex, "label_id": i, "lead": lead.strip(),
                     "identified_by": identified_by, "reason": reason, "campaign": campaign,
                     "created_at": stamp} for i in fresh])
        return len(fresh)

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
        """A reviewer's current answers on a trace, as they saved them (`source: human`; labels
        imported under their name are not theirs to edit): target key -> question -> label. A
        judgement of this trace against another is no answer about it (as in `answered`): a
        form would read it as the run's answers saved, and its reason as their note."""
        found: dict[str, dict[str, Label]] = {}
        for label in self.current(trace_id, reviewer):
            if label.source == "human" and label.pair_trace_id is None:
                found.setdefault(label.event_id, {})[label.question] = label
        return found

    def progress(self, trace: Trace, reviewer: str | None = None) -> Progress:
        """How many of a trace's targets are labelled, by one reviewer or (None) by anyone."""
        return progress_of(targets(self.rubric, analyze(trace)), trace.trace_id,
                           self.current(trace.trace_id, reviewer))

    def answered(self, reviewer: str | None = None) -> dict[str, dict[str, set[str]]]:
        """For each trace id, target key -> the questions with a label, by one reviewer or
        (None) by anyone. Cheap: no trace is loaded; the library's `LibraryRow.labelled` turns it
        into "n of m"."""
        c = labels_table.c
        query = select(c.trace_id, c.event_id, c.question).distinct().where(
            c.pair_trace_id.is_(None),  # a judgement of two traces is no target of either
            c.label_id.not_in(select(retractions_table.c.label_id)))
        if reviewer is not None:
            query = query.where(c.reviewer == reviewer)
        found: dict[str, dict[str, set[str]]] = {}
        with self.engine.connect() as conn:
            for trace_id, event_id, question in conn.execute(query):
                found.setdefault(trace_id, {}).setdefault(event_id, set()).add(question)
        return found
