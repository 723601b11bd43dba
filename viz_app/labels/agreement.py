"""How much reviewers agree: Krippendorff's alpha per question, and the targets they disagree on
most.

Alpha is computed over reviewers x targets from the current labels (one answer per reviewer,
target and question), at the ordinal level for scales and the nominal level for categories,
booleans and event pointers. Tags and free text have no alpha here.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

import krippendorff
import numpy as np
from pydantic import BaseModel, Field

from viz_app.labels.rubric import ORDINAL_KINDS, Question, Rubric
from viz_app.labels.label import LabelRecord

MEASURED_KINDS = ("scale", "categorical", "boolean", "event")
"""Question kinds that get an alpha."""


class Disagreement(BaseModel):
    """One target and what each reviewer answered on it."""

    trace_id: str
    event_id: str = Field(description="'' for the trace itself.")
    answers: dict[str, Any] = Field(description="Reviewer -> answer.")
    spread: float = Field(description="0 when all agree, up to 1: for a scale the range over the "
                          "scale's span, else the share of reviewers not giving the modal answer.")


class QuestionAgreement(BaseModel):
    """Agreement on one question."""

    question: str
    level: str = Field(description="ordinal or nominal.")
    alpha: float | None = Field(description="Krippendorff's alpha; None when it cannot be "
                                "computed (see `note`).")
    reviewers: int = Field(description="Reviewers who answered it at least once.")
    targets: int = Field(description="Targets answered by anyone.")
    shared_targets: int = Field(description="Targets answered by two reviewers or more.")
    note: str = Field("", description="Why alpha is missing, when it is.")
    disagreements: list[Disagreement] = Field(description="Shared targets, most disputed first.")


def _code(question: Question, value: Any, codes: dict[str, int]) -> float:
    """The number alpha sees for an answer: the choice's rank for a scale, else a category code."""
    if question.kind in ORDINAL_KINDS:
        return float(value)
    key = repr(value)
    if key not in codes:
        codes[key] = len(codes)
    return float(codes[key])


def _spread(question: Question, answers: list[Any]) -> float:
    if question.kind in ORDINAL_KINDS:
        points = [c.value for c in question.choices]
        span = (max(points) - min(points)) or 1
        return (max(answers) - min(answers)) / span
    modal = Counter(map(repr, answers)).most_common(1)[0][1]
    return 1 - modal / len(answers)


def coder(label: LabelRecord) -> str:
    """Who gave an answer, as agreement counts reviewers: the reviewer's name, with
    ' (imported)' for an imported label, since a name's own saves and the labels imported under
    it are two current answers (docs/labels.md)."""
    return label["reviewer"] if label.get("source", "human") == "human" \
        else f"{label['reviewer']} (imported)"


def question_agreement(question: Question, labels: Iterable[LabelRecord],
                       worst: int = 10) -> QuestionAgreement:
    """Alpha and the most disputed targets for one question, from current label records."""
    by_target: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for label in labels:
        if label["question"] == question.id:
            target = (label["trace_id"], label["event_id"] or "")
            by_target[target][coder(label)] = label["value"]
    reviewers = sorted({r for answers in by_target.values() for r in answers})
    shared = {t: a for t, a in by_target.items() if len(a) >= 2}
    level = "ordinal" if question.kind in ORDINAL_KINDS else "nominal"
    alpha, note = _alpha(question, shared, reviewers, level)
    disputes = [Disagreement(trace_id=t[0], event_id=t[1], answers=a,
                             spread=_spread(question, list(a.values())))
                for t, a in shared.items()] if question.kind in MEASURED_KINDS else []
    disputes.sort(key=lambda d: (-d.spread, d.trace_id, d.event_id))
    return QuestionAgreement(question=question.id, level=level, alpha=alpha,
                             reviewers=len(reviewers), targets=len(by_target),
                             shared_targets=len(shared), note=note,
                             disagreements=[d for d in disputes if d.spread > 0][:worst])


def _alpha(question: Question, shared: dict, reviewers: list[str],
           level: str) -> tuple[float | None, str]:
    if question.kind not in MEASURED_KINDS:
        return None, f"no alpha for {question.kind} answers"
    if not shared:
        return None, "no target has answers from two reviewers yet"
    codes: dict[str, int] = {}
    matrix = np.full((len(reviewers), len(shared)), np.nan)
    for j, answers in enumerate(shared.values()):
        for reviewer, value in answers.items():
            matrix[reviewers.index(reviewer), j] = _code(question, value, codes)
    values = set(matrix[~np.isnan(matrix)].tolist())
    if len(values) < 2:
        return None, "every reviewer gave the same answer everywhere (alpha is undefined)"
    domain = sorted(float(c.value) for c in question.choices) if level == "ordinal" else None
    alpha = krippendorff.alpha(reliability_data=matrix, value_domain=domain,
                               level_of_measurement=level)
    if alpha is None or math.isnan(alpha):
        return None, "alpha is undefined for these answers"
    return float(alpha), ""


def agreement(rubric: Rubric, labels: Iterable[LabelRecord],
              worst: int = 10) -> list[QuestionAgreement]:
    """Agreement on every question of the rubric, from current label records
    (`LabelStore.current_records`: one answer per source, reviewer, target and question)."""
    current = list(labels)
    return [question_agreement(q, current, worst) for q in rubric.questions]
