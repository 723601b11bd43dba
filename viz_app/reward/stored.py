"""A reward model as the store keeps it: `RewardModel` to and from the plain row of
`viz_app.store.RewardModelStore` (the training set, versions, weights' hash and report as
JSON-ready values, never a pickled object). The store only stores; what a row means is read
here, beside the model."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from viz_app.reward.model import TrainingSet
from viz_app.reward.train import HeldOut, RewardModel, RewardReport


def model_row(model: RewardModel) -> dict[str, Any]:
    """The row that stores a model (`created_at` '' is stamped by the store)."""
    return {
        "model_id": model.model_id, "kind": model.kind, "campaign": model.campaign,
        "features_version": model.features_version, "versions": model.versions,
        "weights_sha256": model.weights_sha256, "decisions": len(model.training.examples),
        "training": {"training": model.training.model_dump(mode="json"),
                     "settings": model.settings, "rubric_sha256": model.rubric_sha256,
                     "answer_means": model.answer_means},
        "report": {"report": model.report.model_dump(mode="json") if model.report else None,
                   "held_out": [h.model_dump(mode="json") for h in model.held_out]},
        "created_by": model.created_by, "created_at": model.created_at}


def stored_model(row: Mapping[str, Any]) -> RewardModel:
    """The model a stored row holds."""
    training, report = row["training"], row["report"]
    return RewardModel(
        model_id=row["model_id"], kind=row["kind"], campaign=row["campaign"],
        features_version=row["features_version"], versions=row["versions"],
        weights_sha256=row["weights_sha256"],
        training=TrainingSet.model_validate(training["training"]),
        settings=training["settings"], rubric_sha256=training.get("rubric_sha256", ""),
        answer_means=training.get("answer_means", {}),
        report=RewardReport.model_validate(report["report"]) if report["report"] else None,
        held_out=held_out_answers(report["held_out"]),
        created_by=row["created_by"], created_at=row["created_at"])


def held_out_answers(answers: Iterable[Mapping[str, Any]]) -> list[HeldOut]:
    """A stored model's held-out answers (`RewardModelStore.held_out`)."""
    return [HeldOut.model_validate(h) for h in answers]
