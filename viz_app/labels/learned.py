"""The learned producer's models as data (`viz_app.suggest.learned` trains and runs them,
`viz_app.store.learned` keeps them): the team's answer per target a model learnt from, what was
left out and why, the cross-validated report, the model itself (its training set, never a
pickled object) and the hash that names it. Pure: no scikit-learn and no SQL, so the store,
below the producers, reads and checks them without importing a producer.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson
from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError
from viz_app.labels.agreement import AgreementRow
from viz_app.labels.attention import LEARNED
from viz_app.labels.suggestion import Producer



MIN_PER_ANSWER = 8
"""Targets each answer needs to be learnt (and to appear in held-out folds)."""

CALIBRATION_FOLDS = 3
"""Folds of `CalibratedClassifierCV` inside each fit."""

SETTINGS = {"estimator": "StandardScaler+LogisticRegression(C=1, class_weight=balanced)",
            "calibration": f"sigmoid, {CALIBRATION_FOLDS} folds, ensemble=False",
            "min_per_answer": MIN_PER_ANSWER}
"""The fitting settings, part of the training set's hash."""

class LearnError(OrchvizError, ValueError):
    """A model that cannot be trained or used as asked (too few labels, no scikit-learn)."""



class Truth(BaseModel):
    """The team's answer on one target, and the labels it comes from."""

    trace_id: str
    trace_sha256: str
    event_id: str
    value: Any
    basis: str = Field(description="`adjudication`, `agreed` (2+ blind reviewers) or `single` "
                       "(one blind reviewer).")
    label_ids: list[str]


class LeftOut(BaseModel):
    """Labels and targets not learnt from, by why."""

    disputed: int = Field(0, description="Targets whose blind reviewers disagree, not "
                          "adjudicated.")
    visible: int = Field(0, description="Labels made with suggestions in view.")
    unknown: int = Field(0, description="Labels of unknown visibility made after a suggestion "
                         "on their target existed.")
    imported: int = Field(0, description="Imported labels.")
    adjudication_visible: int = Field(0, description="Adjudications made with suggestions in "
                                      "view.")
    missing_trace: int = Field(0, description="Targets whose trace the workspace cannot read.")
    other_version: int = Field(0, description="Targets labelled on another version of the "
                               "trace than the one read now.")
    not_a_target: int = Field(0, description="Targets the question is no longer asked about.")
    rare_answers: dict[str, int] = Field(default_factory=dict, description="Answer -> "
                                         "targets, for answers given fewer than "
                                         "MIN_PER_ANSWER times.")

    def text(self) -> str:
        """The reasons that apply, as one phrase."""
        parts = [f"{self.disputed} disputed and not adjudicated" if self.disputed else "",
                 f"{self.visible} made with suggestions in view" if self.visible else "",
                 f"{self.unknown} of unknown visibility" if self.unknown else "",
                 f"{self.imported} imported" if self.imported else "",
                 f"{self.adjudication_visible} adjudications made with suggestions in view"
                 if self.adjudication_visible else "",
                 f"{self.missing_trace} whose trace is not found (name its folder with "
                 "--traces)" if self.missing_trace else "",
                 f"{self.other_version} on another version of the trace"
                 if self.other_version else "",
                 f"{self.not_a_target} no longer a target of the question"
                 if self.not_a_target else "",
                 ", ".join(f"{n} answered {plain_answer(v)}" for v, n in self.rare_answers.items())
                 + " (too rare to learn)" if self.rare_answers else ""]
        return ", ".join(p for p in parts if p) or "nothing"


class LearnedReport(BaseModel):
    """A model's cross-validated agreement with held-out blind human labels."""

    folds: int
    targets: int = Field(description="Targets learnt from (and each answered once held out).")
    answers: dict[str, int] = Field(description="Answer -> targets learnt from.")
    bases: dict[str, int] = Field(description="`adjudication`, `agreed`, `single` -> targets.")
    left_out: LeftOut
    learned: AgreementRow = Field(description="The held-out answers against every blind "
                                  "reviewer's answer on those targets.")
    reviewers: AgreementRow = Field(description="The reviewers among themselves on the same "
                                    "targets, for comparison.")
    accuracy: float = Field(description="Share of held-out answers equal to the team's.")
    mean_confidence: float = Field(description="Mean confidence of the held-out answers "
                                   "(near `accuracy` when calibrated).")
    brier: float = Field(description="Multi-class Brier score of the held-out probabilities "
                         "(0 is perfect).")


class LearnedModel(BaseModel):
    """A trained model: its training set (feature rows, answers, the labels behind them), its
    settings and its report; the producer fits the estimator from them on use
    (`viz_app.suggest.learned.estimator`)."""

    model_id: str = Field(description="SHA-256 of the training set (`training_sha256`).")
    question: str
    campaign: str = Field("", description="The campaign whose labels it learnt from ('' for "
                          "every label).")
    features_version: str = Field(description="The features' version it learnt from "
                                  "(`viz_app.suggest.features.FEATURES_VERSION`).")
    sklearn_version: str = ""
    kind: str = Field(description="The kind of target the question is asked about.")
    features: list[str]
    answers: list[Any] = Field(description="The answers it can give, in the estimator's class "
                               "order.")
    rows: list[Truth]
    x: list[list[float]]
    y: list[int] = Field(description="Each row's answer, an index into `answers`.")
    report: LearnedReport | None = None
    created_by: str = ""
    created_at: str = ""

    @property
    def version(self) -> str:
        """The producer version its suggestions carry: the first 16 hex digits of its id."""
        return self.model_id[:16]

    @property
    def producer(self) -> Producer:
        """What its suggestions name as their producer."""
        return Producer(name=LEARNED, version=self.version)



def training_sha256(question: str, campaign: str, rows: Sequence[Truth],
                    features: str) -> str:
    """The hash that names a model: its question, campaign, the labels and trace versions it
    learnt from with their answers, the features' version and the fitting settings. The same
    labels give the same hash; one more label (even one agreeing with the rest) another.
    `features` is the features' version it is hashed under."""
    body = {"question": question, "campaign": campaign, "features": features,
            "settings": SETTINGS,
            "rows": sorted([r.trace_id, r.trace_sha256, r.event_id, r.label_ids,
                            orjson.dumps(r.value, option=orjson.OPT_SORT_KEYS).decode()]
                           for r in rows)}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()


def plain_answer(answer: str) -> str:
    """An answer kept as JSON text, as a reader writes it (`premature`, `3`)."""
    value = orjson.loads(answer)
    return value if isinstance(value, str) else answer
