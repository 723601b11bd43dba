"""How far reviewers agree on corrections ("what it should have done"): who corrected a
decision, and how alike their corrections are (`correction_similarity`: the same action,
agent, role or recipient, and their words by rapidfuzz's token-set ratio), with a bootstrap
interval per question (`correction_agreements`, the Agreement page's corrections table).
Apart from `viz_app.labels.agreement`, whose alpha needs an answer from a fixed list.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from viz_app.labels.agreement import RESAMPLES, Interval, _interval, coder, rated
from viz_app.labels.label import LabelRecord
from viz_app.labels.rubric import Question, Rubric


class CorrectionAgreement(BaseModel):
    """Agreement on one correction question: the share of reviewers of its targets who wrote a
    correction, and how alike two reviewers' corrections of one target are, each with a
    bootstrap 95 % interval over targets."""

    question: str
    reviewers: int = Field(description="Reviewers who labelled a target the question is on.")
    targets: int = Field(description="Targets with a label of anyone (where a correction could "
                         "have been written).")
    corrected: Interval = Field(description="Share of (target, reviewer) who corrected.")
    compared_targets: int = Field(description="Targets two reviewers or more corrected.")
    similarity: Interval = Field(description="Mean similarity of two reviewers' corrections of "
                                 "one target, 0 to 1: 0 for different decisions (another "
                                 "action, agent, role or recipient), else rapidfuzz's "
                                 "normalised similarity of their words (1 with none to "
                                 "compare).")
    note: str = Field("", description="Why a figure is missing, when one is.")


def correction_similarity(a: Any, b: Any) -> float:
    """How alike two corrections are, 0 to 1 (see `CorrectionAgreement.similarity`)."""
    from rapidfuzz import fuzz

    if not isinstance(a, dict) or not isinstance(b, dict):
        return 0.0
    decision = ("action", "agent", "role", "to")
    if any(a.get(k) for k in decision) != any(b.get(k) for k in decision) or any(
            a.get(k) != b.get(k) for k in decision):
        return 0.0
    texts = (" ".join(str(a.get("text") or "").split()), " ".join(str(b.get("text") or "")
                                                                  .split()))
    if not any(texts):
        return 1.0
    return fuzz.ratio(*texts) / 100.0


def correction_agreement(question: Question, labels: Iterable[LabelRecord],
                         beside: Iterable[str] = (), *, resamples: int = RESAMPLES,
                         seed: int = 0) -> CorrectionAgreement:
    """Who corrected and how alike the corrections are, for one correction question, from
    current label records (adjudications left out). A reviewer counts on a target when they
    answered there the correction or a question asked `beside` it (on the same kind of target:
    they saw where a correction could go); their correction, or its absence, is theirs."""
    beside = set(beside) | ({question.ask_when.question} if question.ask_when else set())
    seen: dict[tuple[str, str], set[str]] = defaultdict(set)
    fixes: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    current = [r for r in labels if rated(r) and r["event_id"]]
    for label in current:
        target = (label["trace_id"], label["event_id"])
        if label["question"] == question.id:
            fixes[target][coder(label)] = label["value"]
    for label in current:  # a target where nobody corrected still counts, if it is one
        target = (label["trace_id"], label["event_id"])
        if label["question"] in beside:
            seen[target].add(coder(label))
    for target, who in fixes.items():
        seen[target].update(who)
    units = sorted(seen)
    reviewers = sorted({r for who in seen.values() for r in who})
    shares = np.array([len(fixes.get(t, {})) / len(seen[t]) for t in units], dtype=float)
    weights = np.array([len(seen[t]) for t in units], dtype=float)
    alike = []
    for t in units:
        given = list(fixes.get(t, {}).values())
        if len(given) >= 2:
            pairs = [correction_similarity(a, b) for i, a in enumerate(given)
                     for b in given[i + 1:]]
            alike.append(sum(pairs) / len(pairs))
    rng = np.random.default_rng(seed)
    note = ""
    if not units:
        return CorrectionAgreement(question=question.id, reviewers=0, targets=0,
                                   corrected=Interval(value=None), compared_targets=0,
                                   similarity=Interval(value=None),
                                   note="no target of this question is labelled yet")
    corrected = _boot(shares, weights, rng, resamples)
    if alike:
        similarity = _boot(np.array(alike), np.ones(len(alike)), rng, resamples)
    else:
        similarity, note = Interval(value=None), "no target has corrections from two reviewers"
    return CorrectionAgreement(question=question.id, reviewers=len(reviewers),
                               targets=len(units), corrected=corrected,
                               compared_targets=len(alike), similarity=similarity, note=note)


def _boot(values: np.ndarray, weights: np.ndarray, rng: np.random.Generator,
          resamples: int) -> Interval:
    """The weighted mean of per-target values with its bootstrap interval over targets."""
    value = float(np.average(values, weights=weights))
    picks = rng.integers(0, len(values), size=(resamples, len(values)))
    samples = (values[picks] * weights[picks]).sum(axis=1) / weights[picks].sum(axis=1)
    return _interval(value, samples)


def correction_agreements(rubric: Rubric, labels: Iterable[LabelRecord], *,
                          resamples: int = RESAMPLES, seed: int = 0
                          ) -> list[CorrectionAgreement]:
    """`correction_agreement` for every correction question of the rubric."""
    current = list(labels)
    return [correction_agreement(q, current, [o.id for o in rubric.questions
                                              if o.target == q.target and o.id != q.id],
                                 resamples=resamples, seed=seed)
            for q in rubric.questions if q.kind == "correction"]
