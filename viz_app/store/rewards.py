"""The reward models (`viz_app.reward.train.RewardModel`), each stored once under the hash of
its training set: the training set, versions, weights' hash and report as JSON, never a
pickled object."""

from __future__ import annotations

import orjson
from sqlalchemy import Engine, insert, select

from viz_app.labels import now
from viz_app.reward.train import HeldOut, RewardModel, RewardReport
from viz_app.reward.model import TrainingSet
from viz_app.store.tables import reward_models_table


def _row(model: RewardModel, at: str) -> dict:
    training = {"training": model.training.model_dump(mode="json"),
                "settings": model.settings, "rubric_sha256": model.rubric_sha256,
                "answer_means": model.answer_means}
    report = {"report": model.report.model_dump(mode="json") if model.report else None,
              "held_out": [h.model_dump(mode="json") for h in model.held_out]}
    return {"model_id": model.model_id, "kind": model.kind, "campaign": model.campaign,
            "features_version": model.features_version,
            "versions": orjson.dumps(model.versions).decode(),
            "weights_sha256": model.weights_sha256,
            "decisions": len(model.training.examples),
            "training": orjson.dumps(training, option=orjson.OPT_NON_STR_KEYS).decode(),
            "report": orjson.dumps(report).decode(),
            "created_by": model.created_by, "created_at": model.created_at or at}


def _model(row) -> RewardModel:
    m = row._mapping
    training = orjson.loads(m["training"])
    report = orjson.loads(m["report"])
    return RewardModel(
        model_id=m["model_id"], kind=m["kind"], campaign=m["campaign"],
        features_version=m["features_version"], versions=orjson.loads(m["versions"]),
        weights_sha256=m["weights_sha256"],
        training=TrainingSet.model_validate(training["training"]),
        settings=training["settings"], rubric_sha256=training.get("rubric_sha256", ""),
        answer_means=training.get("answer_means", {}),
        report=RewardReport.model_validate(report["report"]) if report["report"] else None,
        held_out=[HeldOut.model_validate(h) for h in report["held_out"]],
        created_by=m["created_by"], created_at=m["created_at"])


class RewardModelStore:
    """The reward models in one database."""

    def __init__(self, engine: Engine):
        self.engine = engine

    def add(self, model: RewardModel) -> bool:
        """Store a model unless one with its id (the same training set) is stored; whether it
        was added."""
        with self.engine.begin() as conn:
            held = conn.execute(select(reward_models_table.c.model_id).where(
                reward_models_table.c.model_id == model.model_id)).first()
            if held is not None:
                return False
            conn.execute(insert(reward_models_table), [_row(model, now())])
        return True

    def all(self) -> list[RewardModel]:
        """Every stored model, newest first."""
        c = reward_models_table.c
        with self.engine.connect() as conn:
            return [_model(row) for row in conn.execute(
                select(reward_models_table).order_by(c.created_at.desc(), c.model_id))]

    def count(self) -> int:
        """How many models are stored (what a cached agreement figure is keyed by)."""
        from sqlalchemy import func

        with self.engine.connect() as conn:
            return int(conn.execute(select(func.count()).select_from(reward_models_table))
                       .scalar_one())

    def held_out(self) -> list[tuple[str, str, list[HeldOut]]]:
        """(version, created_at, held-out answers) of every stored model, oldest first, read
        without the training sets (what the Agreement page measures)."""
        c = reward_models_table.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.model_id, c.created_at, c.report)
                                .order_by(c.created_at, c.model_id)).all()
        return [(r.model_id[:16], r.created_at,
                 [HeldOut.model_validate(h) for h in orjson.loads(r.report)["held_out"]])
                for r in rows]

    def newest(self) -> RewardModel | None:
        found = self.all()
        return found[0] if found else None

    def find(self, version: str) -> RewardModel | None:
        """The model whose id starts with a version (16 hex digits, as scores carry)."""
        if not version or any(ch not in "0123456789abcdef" for ch in version.lower()):
            return None
        c = reward_models_table.c
        with self.engine.connect() as conn:
            row = conn.execute(select(reward_models_table).where(
                c.model_id.like(f"{version.lower()}%")).order_by(c.model_id)).first()
        return _model(row) if row is not None else None
