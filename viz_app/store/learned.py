"""The learned producer's models (`viz_app.suggest.learned.LearnedModel`), each stored once under
the hash of its training set: its training set and report as JSON, never a pickled object."""

from __future__ import annotations

import orjson
from sqlalchemy import Engine, insert, select

from viz_app.labels.label import now
from viz_app.store.tables import learned_models_table
from viz_app.suggest.learned import LearnedModel, LearnedReport

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
    m = row._mapping
    report = orjson.loads(m["report"])
    return LearnedModel(
        model_id=m["model_id"], question=m["question"], campaign=m["campaign"],
        features_version=m["features_version"], sklearn_version=m["sklearn_version"],
        report=LearnedReport.model_validate(report) if report else None,
        created_by=m["created_by"], created_at=m["created_at"], **orjson.loads(m["training"]))


class LearnedModelStore:
    """The learned models in one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def add(self, model: LearnedModel) -> bool:
        """Store a model unless one with its id (the same training set) is stored; whether it
        was added."""
        with self.engine.begin() as conn:
            held = conn.execute(select(learned_models_table.c.model_id).where(
                learned_models_table.c.model_id == model.model_id)).first()
            if held is not None:
                return False
            conn.execute(insert(learned_models_table), [_row(model, now())])
        return True

    def all(self, question: str | None = None) -> list[LearnedModel]:
        """Stored models (of one question, or all), newest first."""
        c = learned_models_table.c
        query = select(learned_models_table)
        if question is not None:
            query = query.where(c.question == question)
        query = query.order_by(c.created_at.desc(), c.model_id)
        with self.engine.connect() as conn:
            return [_model(row) for row in conn.execute(query)]

    def newest(self, questions: list[str] | None = None) -> list[LearnedModel]:
        """The newest model of each question (of those named, or every question with one)."""
        found: dict[str, LearnedModel] = {}
        for model in self.all():
            if model.question not in found and (questions is None or model.question in questions):
                found[model.question] = model
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
