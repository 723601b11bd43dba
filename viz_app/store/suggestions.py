"""The suggestion store: producers' proposed answers, in their own table apart from labels (see
`viz_app.labels.suggestion`), and the targets a producer failed on."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable

import orjson
from sqlalchemy import Engine, func, insert, select

from viz_app.labels import Producer, Suggestion, SuggestionFailure, now
from viz_app.store.tables import suggestion_failures_table, suggestions_table


def _row(suggestion: Suggestion, at: str) -> dict:
    p = suggestion.producer
    return {"suggestion_id": suggestion.suggestion_id, "trace_id": suggestion.trace_id,
            "trace_sha256": suggestion.trace_sha256, "event_id": suggestion.event_id,
            "question": suggestion.question, "value": orjson.dumps(suggestion.value).decode(),
            "confidence": suggestion.confidence, "producer": p.name, "producer_version": p.version,
            "model": p.model, "prompt_sha256": p.prompt_sha256,
            "evidence": orjson.dumps(list(suggestion.evidence)).decode(),
            "explanation": suggestion.explanation, "created_at": suggestion.created_at or at}


def _suggestion(row) -> Suggestion:
    m = row._mapping
    return Suggestion(
        trace_id=m["trace_id"], trace_sha256=m["trace_sha256"], event_id=m["event_id"],
        question=m["question"], value=orjson.loads(m["value"]), confidence=m["confidence"],
        producer=Producer(name=m["producer"], version=m["producer_version"], model=m["model"],
                          prompt_sha256=m["prompt_sha256"]),
        evidence=tuple(orjson.loads(m["evidence"])), explanation=m["explanation"],
        created_at=m["created_at"])


class SuggestionStore:
    """The suggestions in one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def add(self, suggestions: Iterable[Suggestion]) -> int:
        """Store suggestions not stored yet (same producer version, trace version, target and
        question); returns how many were added."""
        at = now()
        rows = {r["suggestion_id"]: r for r in (_row(s, at) for s in suggestions)}
        if not rows:
            return 0
        with self.engine.begin() as conn:
            held = set()
            ids = list(rows)
            for start in range(0, len(ids), 500):
                held |= set(conn.execute(
                    select(suggestions_table.c.suggestion_id).where(
                        suggestions_table.c.suggestion_id.in_(ids[start:start + 500]))).scalars())
            fresh = [r for k, r in rows.items() if k not in held]
            if fresh:
                conn.execute(insert(suggestions_table), fresh)
        return len(fresh)

    def count(self) -> int:
        """How many suggestions are stored (only ever added: a new count is a new state)."""
        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(suggestions_table))
                       .scalar_one())

    def add_failure(self, failure: SuggestionFailure) -> None:
        """Record that a producer gave nothing usable on a target, and why."""
        p = failure.producer
        with self.engine.begin() as conn:
            conn.execute(insert(suggestion_failures_table).values(
                failure_id=uuid.uuid4().hex, trace_id=failure.trace_id,
                trace_sha256=failure.trace_sha256, event_id=failure.event_id,
                question=failure.question, producer=p.name, producer_version=p.version,
                model=p.model, prompt_sha256=p.prompt_sha256, error=failure.error,
                created_at=failure.created_at or now()))

    def all(self, trace_id: str | None = None, event_id: str | None = None,
            question: str | None = None, producer: str | None = None, *,
            questions: Collection[str] | None = None) -> list[Suggestion]:
        """Stored suggestions, filtered by trace, target ('' for the trace itself), question
        (or any of `questions`) and producer name, in the order they were stored."""
        c = suggestions_table.c
        query = select(suggestions_table)
        for column, wanted in ((c.trace_id, trace_id), (c.event_id, event_id),
                               (c.question, question), (c.producer, producer)):
            if wanted is not None:
                query = query.where(column == wanted)
        if questions is not None:
            query = query.where(c.question.in_(sorted(questions)))
        with self.engine.connect() as conn:
            rows = conn.execute(query.order_by(c.created_at, c.suggestion_id)).all()
        return [_suggestion(r) for r in rows]

    def ran_on(self, producer: str) -> set[tuple[str, str, str]]:
        """(producer, trace id, trace version) of every trace version the producer made a
        suggestion on, any question (where its silence may be read as an answer)."""
        c = suggestions_table.c
        with self.engine.connect() as conn:
            return {(producer, t, sha) for t, sha in conn.execute(
                select(c.trace_id, c.trace_sha256).where(c.producer == producer).distinct())}

    def failures(self, trace_id: str | None = None) -> list[SuggestionFailure]:
        """The recorded failures, oldest first."""
        c = suggestion_failures_table.c
        query = select(suggestion_failures_table).order_by(c.created_at)
        if trace_id is not None:
            query = query.where(c.trace_id == trace_id)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
        return [SuggestionFailure(
            trace_id=r.trace_id, trace_sha256=r.trace_sha256, event_id=r.event_id,
            question=r.question, error=r.error, created_at=r.created_at,
            producer=Producer(name=r.producer, version=r.producer_version, model=r.model,
                              prompt_sha256=r.prompt_sha256)) for r in rows]
