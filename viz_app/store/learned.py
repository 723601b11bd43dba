"""The learned producer's models (`viz_app.labels.learned.LearnedModel`), each stored once under
the hash of its training set: its training set and report as JSON, never a pickled object."""

from __future__ import annotations

import orjson
from pydantic import ValidationError
from sqlalchemy import Engine, delete, insert, select

from viz_app.labels import now
from viz_app.store.tables import learned_models_table
from viz_app.labels import LearnedModel, LearnedReport, LearnError, training_sha256

_BODY = ("kind", "features", "answers", "rows", "x", "y")
"""The fields of a model kept in its `training` column."""


def _row(model: LearnedModel, at: str) -> dict:
    body = model.model_dump(include=set(_BODY))
    return {"model_id": model.model_id, "question": model.question, "campaign": model.campaign,
            "features_version": model.features_version,
            "sklearn_version": model.sklearn_version, "targets": len(model.rows),
            "training": orjson.dumps(body).decode(),
            "report": orjson.dumps(model.report.model_dump() if model.report else None).decode(),
            "created_by": model.created_by, "created_at": model.created_at or at}


def _model(row) -> LearnedModel:
    """The model a row holds; LearnError, one sentence naming the row, when its JSON is broken
    or does not fit a model (a row edited by hand)."""
    m = row._mapping
    try:
        report = orjson.loads(m["report"]) if m["report"] else None
        training = orjson.loads(m["training"])
        if not isinstance(training, dict) or not set(training) <= set(_BODY):
            raise ValueError("its training column is not a model's training set")
        return LearnedModel(
            model_id=m["model_id"], question=m["question"], campaign=m["campaign"],
            features_version=m["features_version"], sklearn_version=m["sklearn_version"],
            report=LearnedReport.model_validate(report) if report else None,
            created_by=m["created_by"], created_at=m["created_at"], **training)
    except (ValueError, TypeError) as err:  # orjson's and pydantic's errors are ValueErrors
        why = "its JSON is broken" if isinstance(err, orjson.JSONDecodeError) else \
            "it does not hold a model's fields" if isinstance(err, ValidationError) else str(err)
        raise LearnError(f"the stored model of {m['question']} ({str(m['model_id'])[:16]}) "
                         f"cannot be read: {why}; train it again with `orchviz suggest train "
                         f"--question {m['question']}`") from None


class LearnedModelStore:
    """The learned models in one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def add(self, model: LearnedModel) -> bool:
        """Store a model unless one with its id (the same training set) is stored; whether it
        was added."""
        with self.engine.begin() as conn:
            held = conn.execute(select(learned_models_table).where(
                learned_models_table.c.model_id == model.model_id)).first()
            if held is not None:
                if _readable(held):
                    return False
                # a row edited since: the model trained again from the same labels replaces it
                conn.execute(delete(learned_models_table).where(
                    learned_models_table.c.model_id == model.model_id))
            conn.execute(insert(learned_models_table), [_row(model, now())])
        return True

    def all(self, question: str | None = None) -> list[LearnedModel]:
        """Stored models (of one question, or all), newest first; LearnError, one sentence
        naming it, when a row cannot be read (`listing` lists the others beside it)."""
        found = self.listing(question)
        for item in found:
            if isinstance(item, LearnError):
                raise item
        return found  # type: ignore[return-value]

    def listing(self, question: str | None = None) -> list[LearnedModel | LearnError]:
        """Stored models (of one question, or all), newest first, a row that cannot be read
        in its place as the LearnError that says so."""
        c = learned_models_table.c
        query = select(learned_models_table)
        if question is not None:
            query = query.where(c.question == question)
        query = query.order_by(c.created_at.desc(), c.model_id)
        with self.engine.connect() as conn:
            rows = list(conn.execute(query))
        found: list[LearnedModel | LearnError] = []
        for row in rows:
            try:
                found.append(_model(row))
            except LearnError as err:
                err.question = row._mapping["question"]  # type: ignore[attr-defined]
                found.append(err)
        return found

    def newest(self, questions: list[str] | None = None) -> list[LearnedModel]:
        """The newest model of each question (of those named, or every question with one);
        LearnError when the newest of one cannot be read (an older one is never used in its
        place unsaid)."""
        found: dict[str, LearnedModel] = {}
        seen: set[str] = set()
        for item in self.listing():
            question = item.question  # type: ignore[union-attr]
            if question in seen or (questions is not None and question not in questions):
                continue
            seen.add(question)
            if isinstance(item, LearnError):
                raise item
            found[question] = item
        return list(found.values())

    def find(self, version: str) -> LearnedModel | None:
        """The model whose id starts with a version (16 hex digits, as suggestions carry)."""
        if not version or any(ch not in "0123456789abcdef" for ch in version.lower()):
            return None
        c = learned_models_table.c
        with self.engine.connect() as conn:
            row = conn.execute(select(learned_models_table).where(
                c.model_id.like(f"{version.lower()}%")).order_by(c.model_id)).first()
        return _model(row) if row is not None else None


def _readable(row) -> bool:
    """Whether a row holds a model as training made it (read, and its rows give its hash)."""
    try:
        model = _model(row)
    except LearnError:
        return False
    return training_sha256(model.question, model.campaign, model.rows,
                           model.features_version) == model.model_id
