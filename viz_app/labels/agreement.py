"""How much reviewers agree: Krippendorff's alpha per question, and the targets they disagree on
most; and how far each producer of suggestions (the rules, a judge model) agrees with the labels
reviewers made without suggestions in view (`suggestion_agreement`: alpha, Cohen's kappa,
bootstrap 95 % intervals over targets, confusion matrices; docs/suggestions.md, Agreement).

Alpha is computed over reviewers x targets from the current labels (one answer per reviewer,
target and question), at the ordinal level for scales and the nominal level for categories,
booleans and event pointers. Tags and free text have no alpha here.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import krippendorff
import numpy as np
from pydantic import BaseModel, Field

from viz_app.labels.disagreement import disputed, modal_spread
from viz_app.labels.rubric import ORDINAL_KINDS, Question, Rubric
from viz_app.labels.label import LabelRecord
from viz_app.labels.suggestion import Suggestion

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


def coder(label: LabelRecord) -> str:
    """Who gave an answer, as agreement counts reviewers: the reviewer's name, with
    ' (imported)' for an imported label, since a name's own saves and the labels imported under
    it are two current answers (docs/labels.md). Adjudications are no rater (`rated`)."""
    return label["reviewer"] if label.get("source", "human") == "human" \
        else f"{label['reviewer']} (imported)"


def rated(label: LabelRecord) -> bool:
    """Whether a label is a rater's answer: a reviewer's own or an imported one, not a lead's
    adjudication, which is made after reading the dispute and would count as agreeing with
    one side."""
    return label.get("source", "human") != "adjudication"


def question_agreement(question: Question, labels: Iterable[LabelRecord],
                       worst: int = 10) -> QuestionAgreement:
    """Alpha and the most disputed targets for one question, from current label records
    (adjudications left out: see `rated`)."""
    by_target: dict[tuple[str, str], dict[str, Any]] = defaultdict(dict)
    for label in labels:
        if label["question"] == question.id and rated(label):
            target = (label["trace_id"], label["event_id"] or "")
            by_target[target][coder(label)] = label["value"]
    reviewers = sorted({r for answers in by_target.values() for r in answers})
    shared = {t: a for t, a in by_target.items() if len(a) >= 2}
    level = "ordinal" if question.kind in ORDINAL_KINDS else "nominal"
    alpha, note = _alpha(question, shared, reviewers, level)
    disputes = [Disagreement(trace_id=t[0], event_id=t[1], answers=a,
                             spread=modal_spread(question, list(a.values())))
                for t, a in shared.items() if disputed(question, list(a.values())) is not None
                ] if question.kind in MEASURED_KINDS and worst else []
    disputes.sort(key=lambda d: (-d.spread, d.trace_id, d.event_id))
    return QuestionAgreement(question=question.id, level=level, alpha=alpha,
                             reviewers=len(reviewers), targets=len(by_target),
                             shared_targets=len(shared), note=note,
                             disagreements=disputes[:worst])


PAIRWISE_VOTES = [-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0]
"""A pairwise judgement as an ordinal vote: + for the pair's first trace, - for its second, its
size the strength (none given: 1), 0 for about the same."""


def pairwise_agreement(labels: Iterable[LabelRecord]) -> QuestionAgreement | None:
    """Alpha (ordinal, over the votes of `PAIRWISE_VOTES`) of the pairwise judgements among
    current label records, each pair a target; None when there is none."""
    from viz_app.labels.pairs import PAIRWISE_QUESTION, preference_of

    by_pair: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for label in labels:
        if label["question"] == PAIRWISE_QUESTION and rated(label) \
                and label.get("pair_trace_id"):
            found = preference_of(label)
            size = 0.0 if found.chosen is None else float(found.strength or 1)
            by_pair[found.pair][coder(label)] = size if found.chosen == found.first else -size
    if not by_pair:
        return None
    reviewers = sorted({r for votes in by_pair.values() for r in votes})
    shared = [votes for votes in by_pair.values() if len(votes) >= 2]
    alpha, note = None, ""
    if not shared:
        note = "no pair has judgements from two reviewers yet"
    elif len({v for votes in shared for v in votes.values()}) < 2:
        note = "every reviewer gave the same judgement everywhere (alpha is undefined)"
    else:
        matrix = np.full((len(reviewers), len(shared)), np.nan)
        for j, votes in enumerate(shared):
            for reviewer, vote in votes.items():
                matrix[reviewers.index(reviewer), j] = vote
        alpha = float(krippendorff.alpha(reliability_data=matrix, value_domain=PAIRWISE_VOTES,
                                         level_of_measurement="ordinal"))
    return QuestionAgreement(question=PAIRWISE_QUESTION, level="ordinal", alpha=alpha,
                             reviewers=len(reviewers), targets=len(by_pair),
                             shared_targets=len(shared), note=note, disagreements=[])


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


# -- producers against blind human labels ----------------------------------------------------

REVIEWERS = "reviewers"
"""The rater name of the human-vs-human rows of a `SuggestionAgreement`."""

RESAMPLES = 1000
"""Bootstrap resamples (of targets) behind each 95 % interval."""

KAPPA_MISSING = "Cohen's kappa needs scikit-learn: pip install 'orchviz[agreement]'"


class Interval(BaseModel):
    """A statistic with its bootstrap 95 % interval (percentiles 2.5 and 97.5 over resampled
    targets; None where too few resamples give a value)."""

    value: float | None
    low: float | None = None
    high: float | None = None


class AgreementRow(BaseModel):
    """Agreement of one rater with the blind human labels on one question: a producer
    (`rules`, `judge (model)`) against every blind reviewer's answer on the targets it
    suggested an answer for, or the reviewers among themselves (`rater` = "reviewers")."""

    question: str
    rater: str = Field(description="The producer, or 'reviewers' for human against human.")
    versions: list[str] = Field(default_factory=list, description="The producer versions "
                                "whose suggestions were compared (the newest on each target).")
    level: str = Field(description="ordinal (scales) or nominal.")
    targets: int = Field(description="Targets with a compared pair of answers.")
    pairs: int = Field(description="Pairs of answers compared: (suggestion, reviewer) per "
                       "target and reviewer, or (reviewer, reviewer) per target and pair.")
    alpha: Interval = Field(description="Krippendorff's alpha over the pairs.")
    kappa: Interval = Field(description="Cohen's kappa over the pairs (linearly weighted for "
                            "a scale; for reviewers, each pair counted both ways).")
    labels: list[str] = Field(default_factory=list, description="The answers, in rubric "
                              "order: the rows and columns of `confusion`.")
    confusion: list[list[int]] = Field(default_factory=list, description="Rows: the "
                                       "reviewer's answer; columns: the producer's (or the "
                                       "other reviewer's).")
    note: str = Field("", description="Why a statistic is missing, when one is.")


class SuggestionAgreement(BaseModel):
    """How far each producer agrees with blind human labels, beside how far the reviewers agree
    with each other, per question (`ws.suggestions.agreement`)."""

    rows: list[AgreementRow]
    blind_labels: int = Field(description="Current labels made without suggestions in view "
                              "(of the questions in `rows`, as the counts below).")
    left_out_visible: int = Field(description="Labels made with suggestions in view (left out).")
    left_out_unknown: int = Field(description="Labels whose visibility is not recorded, made "
                                  "after the target's first suggestion (left out).")
    left_out_other: int = Field(0, description="Adjudications (a lead's final answer, not an "
                                "independent reviewer), left out.")
    resamples: int
    seed: int


def _when(stamp: str) -> datetime:
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def blind_labels(labels: Iterable[LabelRecord], suggestions: Iterable[Suggestion]
                 ) -> tuple[list[LabelRecord], Counter]:
    """The labels made without suggestions in view, and how many were left out why
    (`visible`, `unknown`, `adjudication`). A label records `suggestions_visible`; where it
    does not (None: a CLI save, an import, a label from before 0.3) it counts as blind when it
    was made before the first suggestion on its target was stored (so none could have been
    shown), or when it was imported (made outside orchviz, where none of its suggestions could
    be seen). A lead's adjudication is never counted: it is made after reading the dispute."""
    first: dict[tuple[str, str], datetime] = {}
    for s in suggestions:
        if not s.created_at:
            continue
        key, at = (s.trace_id, s.event_id), _when(s.created_at)
        if key not in first or at < first[key]:
            first[key] = at
    kept: list[LabelRecord] = []
    left: Counter = Counter()
    for label in labels:
        source = label.get("source", "human")
        visible = label.get("suggestions_visible")
        if source == "adjudication":
            left["adjudication"] += 1
        elif visible is True:
            left["visible"] += 1
        elif visible is False or source == "import":
            kept.append(label)
        else:
            since = first.get((label["trace_id"], label["event_id"] or ""))
            if since is None or not label.get("created_at") or _when(label["created_at"]) < since:
                kept.append(label)
            else:
                left["unknown"] += 1
    return kept, left


def _rater(suggestion: Suggestion) -> str:
    p = suggestion.producer
    return f"{p.name} ({p.model})" if p.model else p.name


Pair = tuple[tuple[str, str], Any, Any]
"""(target, first answer, second answer): the reviewer's then the producer's, or two
reviewers'."""


def _stats(question: Question, pairs: list[Pair], units: dict[tuple[str, str], list[list[Any]]],
           resamples: int, seed: int, symmetric: bool
           ) -> tuple[Interval, Interval, list[str], list[list[int]], str]:
    """Alpha over `units` (per target, the lists of answers that are alpha's units) and kappa
    over `pairs`, each with a bootstrap interval over targets, and the confusion matrix of the
    pairs (both ways when `symmetric`).

    The values come from `krippendorff.alpha` and scikit-learn's `cohen_kappa_score`; the
    resamples are computed from per-target coincidence and confusion matrices summed with the
    resample's counts (the same formulas, vectorised: a thousand resamples of a thousand
    targets in well under a second, where calling the libraries a thousand times took
    tens of seconds). Without scikit-learn (the `agreement` extra) kappa is missing and the
    note says so; alpha needs only `krippendorff`."""
    try:
        from sklearn.metrics import cohen_kappa_score
    except ImportError:
        cohen_kappa_score = None

    ordinal = question.kind in ORDINAL_KINDS
    values = sorted(c.value for c in question.choices) if ordinal else \
        [c.value for c in question.choices]
    order = {repr(v): i for i, v in enumerate(values)}
    shown = [str(v) for v in values]
    if not ordinal:  # an event pointer, or an answer no longer in the rubric
        for value in (x for p in pairs for x in p[1:]):
            if repr(value) not in order:
                order[repr(value)] = len(order)
                shown.append(str(value))
    size = len(order)

    def code(value: Any) -> int:
        """The answer's row in the matrices (-1: not on the scale, left out)."""
        return order.get(repr(value), -1)

    targets = sorted(units)
    index = {t: i for i, t in enumerate(targets)}
    cells = size * size
    coded = np.array([(index[t], code(a), code(b)) for t, a, b in pairs], dtype=np.int64) \
        .reshape(-1, 3)
    coded = coded[(coded[:, 1] >= 0) & (coded[:, 2] >= 0)]
    first, second = coded[:, 1].tolist(), coded[:, 2].tolist()
    confusions = np.bincount(coded[:, 0] * cells + coded[:, 1] * size + coded[:, 2],
                             minlength=len(targets) * cells).reshape(len(targets), size, size)
    owners, entries = [], []  # each unit's target, and (unit, answer) for its answers
    for target, target_units in units.items():
        for unit in target_units:
            found = [c for c in map(code, unit) if c >= 0]
            if len(found) >= 2:
                entries.extend((len(owners), c) for c in found)
                owners.append(index[target])
    counts = np.zeros((0, size))
    coincidences = np.zeros((len(targets), size, size))
    if owners:
        at = np.array(entries, dtype=np.int64)
        counts = np.bincount(at[:, 0] * size + at[:, 1], minlength=len(owners) * size) \
            .reshape(len(owners), size).astype(float)
        per_unit = counts[:, :, None] * counts[:, None, :]
        per_unit[:, np.arange(size), np.arange(size)] -= counts
        per_unit /= (counts.sum(axis=1) - 1)[:, None, None]
        flat = per_unit.reshape(len(owners), cells)
        coincidences = np.stack([np.bincount(owners, weights=flat[:, i],
                                             minlength=len(targets)) for i in range(cells)],
                                axis=1).reshape(len(targets), size, size)
    total = confusions.sum(axis=0)
    confusion = (total + total.T) if symmetric else total
    if not first:
        return Interval(value=None), Interval(value=None), shown, \
            confusion.astype(int).tolist(), "no target has a blind answer to compare with"

    domain = np.array(values, dtype=float) if ordinal else np.arange(size, dtype=float)
    alpha = math.nan
    if len(np.flatnonzero(counts.sum(axis=0))) >= 2:
        alpha = float(krippendorff.alpha(value_counts=counts, value_domain=domain,
                                         level_of_measurement="ordinal" if ordinal
                                         else "nominal"))
    a, b = (first + second, second + first) if symmetric else (first, second)
    kappa = math.nan
    if cohen_kappa_score is not None and len(set(a) | set(b)) >= 2:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            kappa = float(cohen_kappa_score(a, b, labels=list(range(size)),
                                            weights="linear" if ordinal else None,
                                            replace_undefined_by=math.nan))
    alphas = kappas = np.array([])
    if len(targets) >= 2 and resamples > 0:
        alphas, kappas = _resampled(coincidences, confusions, resamples, seed, ordinal,
                                    symmetric)
    notes = []
    if cohen_kappa_score is None:
        kappas = np.array([])
        notes.append(KAPPA_MISSING)
    if math.isnan(alpha) or (math.isnan(kappa) and cohen_kappa_score is not None):
        notes.append("every answer compared is the same one (alpha or kappa is undefined)")
    if len(targets) < 2:
        notes.append("one target: no interval")
    return _interval(alpha, alphas), _interval(kappa, kappas), shown, \
        confusion.astype(int).tolist(), "; ".join(notes)


def _resampled(coincidences: np.ndarray, confusions: np.ndarray, resamples: int, seed: int,
               ordinal: bool, symmetric: bool, chunk: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """Alpha and kappa of each bootstrap resample of the targets: a resample's matrices are
    the per-target matrices summed with the number of times it drew each target (a matrix
    product, `chunk` resamples at a time to bound memory)."""
    count, size = len(coincidences), coincidences.shape[-1]
    flat_o = coincidences.reshape(count, size * size)
    flat_c = confusions.reshape(count, size * size)
    rng = np.random.default_rng(seed)
    alphas, kappas = [], []
    for start in range(0, resamples, chunk):
        drawn = rng.integers(0, count, (min(chunk, resamples - start), count))
        rows = len(drawn)
        weights = np.bincount((np.arange(rows)[:, None] * count + drawn).ravel(),
                              minlength=rows * count).reshape(rows, count).astype(float)
        alphas.append(_alpha_of((weights @ flat_o).reshape(-1, size, size), ordinal))
        sampled = (weights @ flat_c).reshape(-1, size, size)
        if symmetric:
            sampled = sampled + sampled.transpose(0, 2, 1)
        kappas.append(_kappa_of(sampled, ordinal))
    return np.concatenate(alphas), np.concatenate(kappas)


def _alpha_of(coincidences: np.ndarray, ordinal: bool) -> np.ndarray:
    """Krippendorff's alpha of each coincidence matrix in a stack (as `krippendorff.alpha`
    computes it: 1 - (n - 1) * sum(o * d) / sum(n_c * n_k * d); nominal d = [c != k],
    ordinal d = (sum of n_g from c to k - (n_c + n_k) / 2) ** 2)."""
    size = coincidences.shape[-1]
    n_v = coincidences.sum(axis=-1)
    n = n_v.sum(axis=-1)
    if ordinal:
        low = np.minimum.outer(np.arange(size), np.arange(size))
        high = np.maximum.outer(np.arange(size), np.arange(size))
        cumulative = np.cumsum(n_v, axis=-1)
        between = cumulative[..., high] - cumulative[..., low] + n_v[..., low]
        distance = (between - (n_v[..., low] + n_v[..., high]) / 2) ** 2
    else:
        distance = np.broadcast_to(1 - np.eye(size), coincidences.shape)
    observed = (coincidences * distance).sum(axis=(-1, -2))
    expected = (n_v[..., :, None] * n_v[..., None, :] * distance).sum(axis=(-1, -2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1 - (n - 1) * observed / expected, np.nan)


def _kappa_of(confusions: np.ndarray, ordinal: bool) -> np.ndarray:
    """Cohen's kappa of each confusion matrix in a stack (as scikit-learn computes it;
    linear weights |i - j| for a scale)."""
    size = confusions.shape[-1]
    weights = np.abs(np.subtract.outer(np.arange(size), np.arange(size))).astype(float) \
        if ordinal else 1 - np.eye(size)
    columns, rows = confusions.sum(axis=-2), confusions.sum(axis=-1)
    total = confusions.sum(axis=(-1, -2))
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = columns[..., :, None] * rows[..., None, :] / total[..., None, None]
        disagreement = (weights * expected).sum(axis=(-1, -2))
        return np.where(disagreement > 0,
                        1 - (weights * confusions).sum(axis=(-1, -2)) / disagreement, np.nan)


def _interval(value: float, samples: np.ndarray) -> Interval:
    """The value with the 2.5 and 97.5 percentiles of its resamples (none when fewer than half
    of them give one)."""
    if math.isnan(value):
        return Interval(value=None)
    found = samples[~np.isnan(samples)]
    if len(found) < max(10, len(samples) // 2):
        return Interval(value=value)
    low, high = np.percentile(found, [2.5, 97.5])
    return Interval(value=value, low=float(low), high=float(high))


def suggestion_agreement(rubric: Rubric, labels: Iterable[LabelRecord],
                         suggestions: Iterable[Suggestion], *, question: str | None = None,
                         resamples: int = RESAMPLES, seed: int = 0,
                         silence: Mapping[str, Mapping[str, Any]] | None = None,
                         unseen: Iterable[Suggestion] = ()) -> SuggestionAgreement:
    """For each question (or the one named) and each producer, agreement of its suggestions
    with the blind human labels (`blind_labels`), and of the reviewers with each other on the
    same labels: Krippendorff's alpha and Cohen's kappa over pairs of answers on one target,
    each with a bootstrap 95 % interval (targets resampled `resamples` times, seeded), and a
    confusion matrix. A producer's newest suggestion on a target counts, compared with every
    blind reviewer's current answer there, on the same version of the trace.

    `silence` gives, per producer name, the answer its silence stands for on each question
    (the rules suggest only faults: `rules.FINE`): on a trace version the producer is known to
    have run on (it made a suggestion there), a blind-labelled target it said nothing about
    counts as that answer.

    `unseen` are answers measured like suggestions but never shown to a reviewer (a reward
    model's held-out answers, `viz_app.reward`): they take no part in deciding which labels
    are blind."""
    suggestions = list(suggestions)
    unseen = list(unseen)
    ran: dict[str, set[tuple[str, str]]] = defaultdict(set)
    quiet: dict[str, Mapping[str, Any]] = {}
    for suggestion in suggestions:
        answers = (silence or {}).get(suggestion.producer.name)
        if answers is not None:
            ran[_rater(suggestion)].add((suggestion.trace_id, suggestion.trace_sha256))
            quiet[_rater(suggestion)] = answers
    questions = [rubric.question(question)] if question else \
        [q for q in rubric.questions if q.kind in MEASURED_KINDS]
    asked = {q.id for q in questions}
    blind, left = blind_labels((x for x in labels if x["question"] in asked), suggestions)
    suggestions += unseen
    blind_of: dict[str, list[LabelRecord]] = defaultdict(list)
    for label in blind:
        blind_of[label["question"]].append(label)
    suggested: dict[str, list[Suggestion]] = defaultdict(list)
    for suggestion in suggestions:
        if suggestion.question in asked:
            suggested[suggestion.question].append(suggestion)
    rows: list[AgreementRow] = []
    for q in questions:
        if q.kind not in MEASURED_KINDS:
            rows.append(AgreementRow(question=q.id, rater=REVIEWERS, level="nominal", targets=0,
                                     pairs=0, alpha=Interval(value=None),
                                     kappa=Interval(value=None),
                                     note=f"no agreement for {q.kind} answers"))
            continue
        silent = {rater: (answers[q.id], ran[rater]) for rater, answers in quiet.items()
                  if q.id in answers}
        rows.extend(_question_rows(q, blind_of[q.id], suggested[q.id], resamples, seed,
                                   silent))
    return SuggestionAgreement(rows=rows, blind_labels=len(blind),
                               left_out_visible=left["visible"],
                               left_out_unknown=left["unknown"],
                               left_out_other=left["adjudication"], resamples=resamples,
                               seed=seed)


def _question_rows(q: Question, blind: list[LabelRecord], suggestions: list[Suggestion],
                   resamples: int, seed: int,
                   silent: Mapping[str, tuple[Any, set[tuple[str, str]]]],
                   reviewers: bool = True) -> list[AgreementRow]:
    level = "ordinal" if q.kind in ORDINAL_KINDS else "nominal"
    human: dict[tuple[str, str], dict[str, tuple[str, Any]]] = defaultdict(dict)
    for label in blind:  # the blind labels of this question
        target = (label["trace_id"], label["event_id"] or "")
        human[target][coder(label)] = (label.get("trace_sha256", ""), label["value"])
    newest: dict[str, dict[tuple[str, str], Suggestion]] = defaultdict(dict)
    for s in suggestions:  # the suggestions on this question
        held = newest[_rater(s)].get((s.trace_id, s.event_id))
        if held is None or (s.created_at, s.producer.version) >= (held.created_at,
                                                                  held.producer.version):
            newest[_rater(s)][(s.trace_id, s.event_id)] = s
    rows = []
    for rater in sorted(set(newest) | set(silent)):
        pairs, other_version, quiet = [], 0, 0
        for target, s in newest[rater].items():
            for _, (sha, value) in sorted(human.get(target, {}).items()):
                if sha and s.trace_sha256 and sha != s.trace_sha256:
                    other_version += 1
                    continue
                pairs.append((target, value, s.value))
        if rater in silent:
            fine, ran = silent[rater]
            for target, answers in human.items():
                if target in newest[rater]:
                    continue
                found = [(target, value, fine) for _, (sha, value) in sorted(answers.items())
                         if (target[0], sha) in ran]
                quiet += bool(found)
                pairs += found
        units: dict[tuple[str, str], list[list[Any]]] = defaultdict(list)
        for target, human_value, value in pairs:
            units[target].append([human_value, value])
        alpha, kappa, shown, confusion, note = _stats(q, pairs, units, resamples, seed, False)
        if other_version:
            note = (note + "; " if note else "") + f"{other_version} answers on another " \
                "version of the trace left out"
        if quiet:
            note = (note + "; " if note else "") + f"silent on {quiet} targets of traces it " \
                f"ran on, read as {silent[rater][0]!r}"
        rows.append(AgreementRow(
            question=q.id, rater=rater, level=level, targets=len({t for t, _, _ in pairs}),
            pairs=len(pairs), alpha=alpha, kappa=kappa, labels=shown, confusion=confusion,
            note=note,
            versions=sorted({s.producer.version for s in newest[rater].values()})))
    if not reviewers:
        return rows
    pairs, units = [], {}
    for target, answers in human.items():
        names = sorted(answers)
        if len(names) < 2:
            continue
        units[target] = [[answers[n][1] for n in names]]
        pairs += [(target, answers[a][1], answers[b][1])
                  for i, a in enumerate(names) for b in names[i + 1:]]
    alpha, kappa, shown, confusion, note = _stats(q, pairs, units, resamples, seed, True)
    rows.append(AgreementRow(question=q.id, rater=REVIEWERS, level=level,
                             targets=len({t for t, _, _ in pairs}), pairs=len(pairs),
                             alpha=alpha, kappa=kappa, labels=shown, confusion=confusion,
                             note=note))
    return rows


# -- each producer version over time ----------------------------------------------------------


class VersionPoint(BaseModel):
    """One version of one producer on one question: its agreement with the blind labels, placed
    in time at the moment its first suggestion was stored."""

    question: str
    rater: str = Field(description="The producer (a judge with its model), as in AgreementRow.")
    version: str = Field(description="The producer's version; for a judge, the version and "
                         "its prompt's hash (`1 · 3f2a...`): a new prompt is a new version.")
    created_at: str = Field(description="When its first suggestion was stored (ISO 8601 UTC).")
    targets: int
    pairs: int
    alpha: Interval
    kappa: Interval
    note: str = ""


class VersionShift(BaseModel):
    """A version whose alpha falls outside the previous version's 95 % interval."""

    question: str
    rater: str
    version: str
    previous: str
    alpha: float
    interval: Interval = Field(description="The previous version's alpha and interval.")
    direction: str = Field(description="`below` or `above` the interval.")

    @property
    def text(self) -> str:
        """One sentence for a lead."""
        return (f"{self.rater} {short_version(self.version)} on {self.question}: alpha "
                f"{self.alpha:.2f} is {self.direction} the previous version's "
                f"({short_version(self.previous)}) 95 % interval [{self.interval.low:.2f}, "
                f"{self.interval.high:.2f}]")


class AgreementHistory(BaseModel):
    """Each producer version's agreement with blind labels, oldest version first per producer
    and question, and the versions that moved outside their predecessor's interval."""

    points: list[VersionPoint]
    shifts: list[VersionShift]
    blind_labels: int
    resamples: int
    seed: int


def short_version(version: str) -> str:
    """A version as people read it: a hash cut to 12 characters (each part of a judge's)."""
    return " · ".join(part[:12] for part in version.split(" · "))


def _version(suggestion: Suggestion) -> str:
    p = suggestion.producer
    return f"{p.version} · {p.prompt_sha256}" if p.prompt_sha256 else p.version


def agreement_history(rubric: Rubric, labels: Iterable[LabelRecord],
                      suggestions: Iterable[Suggestion], *, question: str | None = None,
                      resamples: int = RESAMPLES, seed: int = 0,
                      silence: Mapping[str, Mapping[str, Any]] | None = None,
                      unseen: Iterable[Suggestion] = ()) -> AgreementHistory:
    """Each version of each producer measured alone against the blind labels (the blind labels
    are decided with every suggestion, as `suggestion_agreement` does; a version's silence
    counts only on the traces that version ran on), for each question (or the one named):
    alpha and kappa with bootstrap 95 % intervals, placed at the time the version's first
    suggestion was stored. A version whose alpha lies outside its predecessor's interval (the
    previous version of the same producer, on the same question, that has an interval) is a
    `VersionShift`: a lead learns that a retrained model or a new prompt moved. `unseen` as
    in `suggestion_agreement`."""
    suggestions = list(suggestions)
    questions = [rubric.question(question)] if question else \
        [q for q in rubric.questions if q.kind in MEASURED_KINDS]
    asked = {q.id for q in questions if q.kind in MEASURED_KINDS}
    blind, _ = blind_labels((x for x in labels if x["question"] in asked), suggestions)
    suggestions += list(unseen)
    blind_of: dict[str, list[LabelRecord]] = defaultdict(list)
    for label in blind:
        blind_of[label["question"]].append(label)
    by_version: dict[tuple[str, str], list[Suggestion]] = defaultdict(list)
    for s in suggestions:
        by_version[(_rater(s), _version(s))].append(s)
    born = {key: min((s.created_at for s in found), default="")
            for key, found in by_version.items()}
    points: list[VersionPoint] = []
    for q in (q for q in questions if q.id in asked):
        for (rater, version), found in sorted(by_version.items(),
                                              key=lambda kv: (kv[0][0], born[kv[0]], kv[0][1])):
            mine = [s for s in found if s.question == q.id]
            answers = (silence or {}).get(found[0].producer.name)
            silent = {}
            if answers is not None and q.id in answers:
                silent[rater] = (answers[q.id], {(s.trace_id, s.trace_sha256) for s in found})
            if not mine and not silent:
                continue
            rows = _question_rows(q, blind_of[q.id], mine, resamples, seed, silent,
                                  reviewers=False)
            for row in rows:
                if row.pairs:
                    points.append(VersionPoint(
                        question=q.id, rater=rater, version=version,
                        created_at=born[(rater, version)], targets=row.targets, pairs=row.pairs,
                        alpha=row.alpha, kappa=row.kappa, note=row.note))
    return AgreementHistory(points=points, shifts=version_shifts(points),
                            blind_labels=len(blind), resamples=resamples, seed=seed)


def version_shifts(points: Iterable[VersionPoint]) -> list[VersionShift]:
    """The versions whose alpha lies outside the interval of the version before them (of the
    same producer and question, in time order; a version without an interval is compared with
    none, and the next one is compared with the last that had one)."""
    shifts: list[VersionShift] = []
    last: dict[tuple[str, str], VersionPoint] = {}
    for point in sorted(points, key=lambda p: (p.question, p.rater, p.created_at, p.version)):
        key = (point.question, point.rater)
        before = last.get(key)
        value = point.alpha.value
        if before is not None and value is not None:
            low, high = before.alpha.low, before.alpha.high
            if low is not None and high is not None and not low <= value <= high:
                shifts.append(VersionShift(question=point.question, rater=point.rater,
                                           version=point.version, previous=before.version,
                                           alpha=value, interval=before.alpha,
                                           direction="below" if value < low else "above"))
        if point.alpha.low is not None:
            last[key] = point
    return shifts
