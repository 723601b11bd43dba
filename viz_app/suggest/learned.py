"""A producer learned from the team's own labels: a calibrated classifier over the features of
each target (`viz_app.suggest.features`), fitted per question on blind human labels,
adjudications first, and measured by cross-validation against held-out human labels with the
agreement code the Agreement page uses (`viz_app.labels.agreement.suggestion_agreement`).

Pure apart from scikit-learn: label records and traces in, a `LearnedModel` out; the Workspace
stores it (`viz_app.store.learned`). scikit-learn is the optional extra `agreement`.

**What it learns from.** Per target of the question, one answer:

- a lead's **adjudication** replaces the reviewers' answers there (unless it was made with
  suggestions in view);
- else the **blind** answers of people (`source: human`, made without suggestions in view:
  `viz_app.labels.agreement.blind_labels`), when they all give the same answer;
- a target whose blind reviewers disagree and that is not adjudicated is **left out** (a
  disagreement is never turned into a confident label); so are imported labels and every
  suggestion (they are another producer's word, not the team's), labels of another version of
  the trace than the one the workspace reads, and labels of an answer given fewer than
  `MIN_PER_ANSWER` times (too few to learn or to test).

**How it is measured.** Folds of whole traces (`StratifiedGroupKFold`: targets of one trace are
never split between training and test): each fold's model answers the targets held out, and
those answers are compared with every blind reviewer's answer there, as the Agreement page
compares any producer: Krippendorff's alpha and Cohen's kappa with bootstrap 95 % intervals.

**How it is stored.** As its training set: the feature rows and answers, the settings and the
scikit-learn version, named by the SHA-256 of the training set. The estimator is fitted again,
deterministically, when the model is used: a fit on a few thousand rows takes a fraction of a
second, and reading a pickled object back from a shared database would run whatever code the
row holds.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import orjson

from viz_app.labels import (LabelRecord, Producer, Rubric, Suggestion,
                            SuggestionFailure, blind_labels, suggestion_agreement)
from viz_app.labels import (CALIBRATION_FOLDS, LEARNED, MIN_PER_ANSWER, LearnedModel,
                            LearnedReport, LearnError, LeftOut, Truth, plain_answer,
                            training_sha256)
from viz_app.model import Trace
from viz_app.text import brief
from viz_app.suggest.features import FEATURES_VERSION, FeatureRow, TraceFeatures, \
    feature_names, question_kind, question_rows, shown, vector

NAME = LEARNED
"""The producer's name (its version is its model's training-set hash)."""

MIN_TARGETS = 30
"""Labelled targets a question needs before a model is fitted."""

FOLDS = 5
"""Cross-validation folds (fewer when there are fewer traces)."""

TOP_FEATURES = 3
"""Features named in a suggestion's explanation."""

TRAINABLE_KINDS = ("categorical", "scale", "boolean")
"""Question kinds with one answer from a fixed list: what a classifier predicts."""

SKLEARN_MISSING = "the learned producer needs scikit-learn: pip install 'orchviz[agreement]'"


def require_sklearn():
    try:
        import sklearn
    except ImportError:
        raise LearnError(SKLEARN_MISSING) from None
    return sklearn


# -- what the model learns from -------------------------------------------------------------


def truths(question: str, labels: Iterable[LabelRecord], suggestions: Iterable[Suggestion]
           ) -> tuple[list[Truth], list[LabelRecord], LeftOut]:
    """The team's answer per target of one question (see the module's docstring), the blind
    human labels behind them (what held-out answers are compared with), and what was left
    out."""
    mine = [x for x in labels if x["question"] == question]
    left = LeftOut()
    adjudicated: dict[tuple[str, str], LabelRecord] = {}
    for x in mine:
        if x.get("source") != "adjudication":
            continue
        if x.get("suggestions_visible") is True:
            left.adjudication_visible += 1
            continue
        key = (x["trace_id"], x["event_id"] or "")
        if key not in adjudicated or x["created_at"] > adjudicated[key]["created_at"]:
            adjudicated[key] = x
    others = [x for x in mine if x.get("source") != "adjudication"]
    blind, counts = blind_labels(others, suggestions)
    left.visible, left.unknown = counts["visible"], counts["unknown"]
    human = [x for x in blind if x.get("source", "human") == "human"]
    left.imported = len(blind) - len(human)
    by_target: dict[tuple[str, str], list[LabelRecord]] = defaultdict(list)
    for x in human:
        by_target[(x["trace_id"], x["event_id"] or "")].append(x)
    found: list[Truth] = []
    for key in sorted(set(adjudicated) | set(by_target)):
        given = by_target.get(key, [])
        if key in adjudicated:
            x = adjudicated[key]
            found.append(Truth(trace_id=key[0], trace_sha256=x.get("trace_sha256", ""),
                               event_id=key[1], value=x["value"], basis="adjudication",
                               label_ids=sorted([x["label_id"], *(g["label_id"] for g in given)])))
            continue
        if len({orjson.dumps(g["value"], option=orjson.OPT_SORT_KEYS) for g in given}) > 1:
            left.disputed += 1
            continue
        found.append(Truth(trace_id=key[0], trace_sha256=given[0].get("trace_sha256", ""),
                           event_id=key[1], value=given[0]["value"],
                           basis="agreed" if len(given) > 1 else "single",
                           label_ids=sorted(g["label_id"] for g in given)))
    return found, human, left


# -- the model -------------------------------------------------------------------------------


def estimator(model: LearnedModel):
    """A model's calibrated classifier, fitted on its training set (once per model object)."""
    fitted = model.__dict__.get("_fitted")
    if fitted is None:
        fitted = fit(np.array(model.x, dtype=float), np.array(model.y))
        model.__dict__["_fitted"] = fitted
    return fitted


def fit(x: np.ndarray, y: np.ndarray):
    """A calibrated classifier fitted on rows `x` with answers `y`: standardised features, a
    class-balanced logistic regression, sigmoid calibration over `CALIBRATION_FOLDS` folds
    (fewer when an answer is that rare; none below 2, then the regression's own
    probabilities). One answer only: a constant."""
    require_sklearn()
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.dummy import DummyClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    counts = Counter(y.tolist())
    if len(counts) < 2:
        return DummyClassifier(strategy="most_frequent").fit(x, y)
    base = make_pipeline(StandardScaler(), LogisticRegression(
        C=1.0, class_weight="balanced", max_iter=2000))
    folds = min(CALIBRATION_FOLDS, min(counts.values()))
    if folds < 2:
        return base.fit(x, y)
    return CalibratedClassifierCV(base, method="sigmoid", cv=folds, ensemble=False).fit(x, y)


def _base(estimator):
    """The fitted pipeline under a calibrated classifier (or the estimator itself)."""
    calibrated = getattr(estimator, "calibrated_classifiers_", None)
    return calibrated[0].estimator if calibrated else estimator


def contributions(estimator, row: np.ndarray, answer: int) -> np.ndarray:
    """How much each feature pushes one row toward one answer: the logistic regression's
    coefficient for that answer times the standardised value (zeros for a constant model)."""
    pipeline = _base(estimator)
    steps = getattr(pipeline, "named_steps", None)
    if not steps:
        return np.zeros(len(row))
    scaler, regression = steps["standardscaler"], steps["logisticregression"]
    z = scaler.transform(row.reshape(1, -1))[0]
    classes = list(regression.classes_)
    if answer not in classes:
        return np.zeros(len(row))
    coef = regression.coef_
    if coef.shape[0] == 1:  # two answers: one row of coefficients, for the second
        weights = coef[0] if classes.index(answer) == 1 else -coef[0]
    else:
        weights = coef[classes.index(answer)]
    return weights * z


# -- training ----------------------------------------------------------------------------------


def feature_table(rubric: Rubric, question: str, truths_: Sequence[Truth],
                  traces: Mapping[str, Trace | None], left: LeftOut,
                  progress: Callable[[int, int, str], None] | None = None
                  ) -> tuple[list[Truth], list[FeatureRow]]:
    """The features of each labelled target, on the version of the trace it was labelled on;
    targets whose trace is missing, changed or no longer asks the question are counted in
    `left`."""
    kept: list[Truth] = []
    rows: list[FeatureRow] = []
    computed: dict[str, dict[str, FeatureRow]] = {}
    for done, truth in enumerate(truths_):
        if progress is not None:
            progress(done, len(truths_), truth.trace_id)
        trace = traces.get(truth.trace_id)
        if trace is None:
            left.missing_trace += 1
            continue
        if truth.trace_sha256 and trace.sha256 != truth.trace_sha256:
            left.other_version += 1
            continue
        if truth.trace_id not in computed:
            computed[truth.trace_id] = question_rows(trace, rubric, question)
        row = computed[truth.trace_id].get(truth.event_id)
        if row is None:
            left.not_a_target += 1
            continue
        kept.append(truth)
        rows.append(row)
    if progress is not None and truths_:
        progress(len(truths_), len(truths_), "")
    return kept, rows


def train(rubric: Rubric, question: str, labels: Iterable[LabelRecord],
          suggestions: Iterable[Suggestion], traces: Mapping[str, Trace | None], *,
          campaign: str = "", folds: int = FOLDS, resamples: int = 1000, seed: int = 0,
          created_by: str = "", created_at: str = "",
          progress: Callable[[int, int, str], None] | None = None) -> LearnedModel:
    """Fit and cross-validate a model for one question from current label records (every
    source: what is learnt from is chosen here), the stored suggestions (to tell which labels
    were blind) and the labelled traces by id (None where unreadable). LearnError, one
    sentence, when the question cannot be learnt or there are too few labels.
    `progress(done, total, trace_id)` is called as the targets' features are computed."""
    sklearn = require_sklearn()
    q = rubric.question(question)
    if q.kind not in TRAINABLE_KINDS or not q.choices:
        raise LearnError(f"{question} is a {q.kind} question: the learned producer predicts "
                         f"one answer from a fixed list ({', '.join(TRAINABLE_KINDS)} questions)")
    suggestions = list(suggestions)
    found, human, left = truths(question, labels, suggestions)
    kept, feature_rows = feature_table(rubric, question, found, traces, left, progress)
    codes = {orjson.dumps(c.value).decode(): i for i, c in enumerate(q.choices)}
    counts = Counter(orjson.dumps(t.value).decode() for t in kept)
    rare = {k: n for k, n in counts.items() if n < MIN_PER_ANSWER or k not in codes}
    left.rare_answers = {k: n for k, n in sorted(rare.items())}
    usable = [(t, r) for t, r in zip(kept, feature_rows)
              if orjson.dumps(t.value).decode() not in rare]
    answers_left = {orjson.dumps(t.value).decode() for t, _ in usable}
    if len(usable) < MIN_TARGETS or len(answers_left) < 2:
        raise LearnError(
            f"{question} has {len(usable)} usable labelled targets "
            f"({_answer_counts(counts, rare) or 'none'}); training needs at least {MIN_TARGETS}, "
            f"with at least {MIN_PER_ANSWER} of each of two answers or more (left out: "
            f"{left.text()})")
    rows = [t for t, _ in usable]
    names = feature_names(question_kind(rubric, question))
    x = np.array([vector(r, names) for _, r in usable], dtype=float)
    used_codes = sorted({codes[orjson.dumps(t.value).decode()] for t in rows})
    answers = [q.choices[i].value for i in used_codes]
    y = np.array([used_codes.index(codes[orjson.dumps(t.value).decode()]) for t in rows])
    model = LearnedModel(
        model_id=training_sha256(question, campaign, rows, FEATURES_VERSION),
        question=question, features_version=FEATURES_VERSION,
        campaign=campaign, sklearn_version=sklearn.__version__,
        kind=question_kind(rubric, question), features=names, answers=answers, rows=rows,
        x=x.tolist(), y=y.tolist(), created_by=created_by, created_at=created_at)
    model.report = cross_validate(rubric, model, human, left, folds=folds,
                                  resamples=resamples, seed=seed)
    return model


def _answer_counts(counts: Counter, rare: Mapping[str, int]) -> str:
    return ", ".join(f"{plain_answer(k)} {n}" + (" (too rare)" if k in rare else "")
                     for k, n in counts.most_common())


def cross_validate(rubric: Rubric, model: LearnedModel, human: Sequence[LabelRecord],
                   left: LeftOut, *, folds: int = FOLDS, resamples: int = 1000,
                   seed: int = 0) -> LearnedReport:
    """Each target answered by a model fitted without its trace, compared with the blind
    human labels there (`suggestion_agreement`, the Agreement page's figures)."""
    from sklearn.model_selection import StratifiedGroupKFold

    x, y = np.array(model.x, dtype=float), np.array(model.y)
    groups = np.array([r.trace_id for r in model.rows])
    splits = min(folds, len(set(groups.tolist())), min(Counter(y.tolist()).values()))
    if splits < 2:
        raise LearnError(f"{model.question}: cross-validation needs labelled targets of at "
                         f"least 2 traces with each answer spread over 2 folds or more")
    probabilities = np.zeros((len(y), len(model.answers)))
    splitter = StratifiedGroupKFold(n_splits=splits, shuffle=True, random_state=seed)
    for train_at, test_at in splitter.split(x, y, groups):
        fitted = fit(x[train_at], y[train_at])
        probabilities[np.ix_(test_at, fitted.classes_)] = fitted.predict_proba(x[test_at])
    predicted = probabilities.argmax(axis=1)
    confidence = probabilities.max(axis=1)
    held_out = [Suggestion(trace_id=r.trace_id, trace_sha256=r.trace_sha256,
                           event_id=r.event_id, question=model.question,
                           value=model.answers[p], confidence=float(min(1.0, max(0.0, c))),
                           producer=model.producer)
                for r, p, c in zip(model.rows, predicted, confidence)]
    targets = {(r.trace_id, r.event_id) for r in model.rows}
    compared = [x_ for x_ in human if (x_["trace_id"], x_["event_id"] or "") in targets]
    found = suggestion_agreement(rubric, compared, held_out, question=model.question,
                                 resamples=resamples, seed=seed)
    by_rater = {row.rater: row for row in found.rows}
    onehot = np.eye(len(model.answers))[y]
    return LearnedReport(
        folds=splits, targets=len(model.rows),
        answers={str(model.answers[k]): n for k, n in sorted(Counter(y.tolist()).items())},
        bases=dict(Counter(r.basis for r in model.rows)), left_out=left,
        learned=by_rater[NAME], reviewers=by_rater["reviewers"],
        accuracy=float((predicted == y).mean()), mean_confidence=float(confidence.mean()),
        brier=float(((probabilities - onehot) ** 2).sum(axis=1).mean()))


# -- suggesting ----------------------------------------------------------------------------------


def worse_than_chance(report: LearnedReport | None) -> str | None:
    """Why a model's own held-out folds say it must not be offered: its held-out answers agree
    with the team's below chance (Krippendorff's alpha under 0); None otherwise."""
    alpha = report.learned.alpha.value if report is not None else None
    if alpha is None or alpha >= 0:
        return None
    return (f"agrees with the team worse than chance on its own held-out folds (alpha "
            f"{alpha:+.2f}, accuracy {report.accuracy:.2f} at a mean confidence of "
            f"{report.mean_confidence:.2f})")


def model_problem(model: LearnedModel, rubric: Rubric | None = None) -> str | None:
    """Why a stored model cannot be trusted, in words for a sentence; None when it is what
    training made. A model is refitted from its stored training set on use, so every part of
    it is checked: its rows against the hash that names it (an edited row changes it), its
    answers against its rows and the rubric's choices (answers flipped, or replaced by
    `<script>`), its features against those this version computes, its matrix's shape and
    numbers, and its held-out agreement (`worse_than_chance`)."""
    if training_sha256(model.question, model.campaign, model.rows,
                       FEATURES_VERSION) != model.model_id:
        return "its training rows do not give the hash that names it (the stored row was edited)"
    if len(model.x) != len(model.rows) or len(model.y) != len(model.rows):
        return "its feature matrix and its answers are not one row per target"
    if len(set(model.y)) < 2 or any(not 0 <= y < len(model.answers) for y in model.y):
        return "its answers' indexes do not fit its list of answers"
    if any(len(row) != len(model.features) or not all(map(math.isfinite, row))
           for row in model.x):
        return "its feature matrix is not one finite number per feature"
    for row, y in zip(model.rows, model.y):
        if orjson.dumps(model.answers[y]) != orjson.dumps(row.value):
            return (f"its answer for {row.trace_id} {row.event_id or '(the trace)'} is not "
                    "the one the team gave (the stored answers were edited)")
    if rubric is not None:
        if model.question not in rubric.questions_by_id:
            return f"its question {model.question!r} is not in the rubric"
        q = rubric.question(model.question)
        allowed = {orjson.dumps(c.value) for c in q.choices}
        odd = [a for a in model.answers if orjson.dumps(a) not in allowed]
        if odd:
            return (f"it answers {brief(repr(odd[0]), 60)}, which is no choice of "
                    f"{model.question}")
        if model.kind != question_kind(rubric, model.question) or \
                model.features != feature_names(model.kind):
            return "its features are not those this version computes for its question"
    return worse_than_chance(model.report)


class LearnedProducer:
    """Suggestions from stored models, one per question: on every target a model's question is
    asked about, its most probable answer with that probability as the confidence, and the
    features that pushed it there most as the explanation (feature names and numbers only: no
    trace text) with the events behind them as evidence."""

    def __init__(self, models: Sequence[LearnedModel], rubric: Rubric | None = None):
        if not models:
            raise LearnError("no learned model is stored: train one first with "
                             "`orchviz suggest train --question Q`")
        stale = [m for m in models if m.features_version != FEATURES_VERSION]
        if stale:
            names = ", ".join(f"{m.question} ({m.version})" for m in stale)
            raise LearnError(f"the stored model of {names} was fitted on features version "
                             f"{stale[0].features_version}, and this orchviz computes "
                             f"{FEATURES_VERSION}: train it again with `orchviz suggest train "
                             f"--question {stale[0].question}`")
        for model in models:  # checked before its estimator is fitted from what is stored
            problem = model_problem(model, rubric)
            if problem is not None:
                raise LearnError(f"the stored model of {model.question} ({model.version}) is "
                                 f"not used: {problem}; train it again with `orchviz suggest "
                                 f"train --question {model.question}`")
        self.models = list(models)

    @property
    def producer(self) -> Producer:
        """The first model's producer (what a failure on a whole trace is recorded under)."""
        return self.models[0].producer

    def produce(self, trace: Trace, rubric: Rubric
                ) -> tuple[list[Suggestion], list[SuggestionFailure]]:
        """Suggestions on one trace for each model's question the rubric asks."""
        computed = TraceFeatures(trace)
        made: list[Suggestion] = []
        for model in self.models:
            if model.question not in rubric.questions_by_id:
                continue
            rows = question_rows(trace, rubric, model.question, computed)
            if not rows:
                continue
            keys = list(rows)
            x = np.array([vector(rows[k], model.features) for k in keys], dtype=float)
            fitted = estimator(model)
            probabilities = fitted.predict_proba(x)
            classes = list(fitted.classes_)
            for k, key in enumerate(keys):
                best = int(probabilities[k].argmax())
                answer, p = int(classes[best]), float(probabilities[k][best])
                made.append(_suggestion(trace, model, key, rows[key], x[k], answer, p,
                                        contributions(fitted, x[k], answer)))
        return made, []


def _suggestion(trace: Trace, model: LearnedModel, key: str, row: FeatureRow,
                values: np.ndarray, answer: int, p: float, pushed: np.ndarray) -> Suggestion:
    order = [i for i in np.argsort(-pushed) if pushed[i] > 0][:TOP_FEATURES]
    named = [f"{shown(model.features[i], values[i])} (weight {pushed[i]:+.2f})" for i in order]
    evidence = [key] if key else []
    for i in order:
        evidence += row[model.features[i]].events if model.features[i] in row else ()
    value = model.answers[answer]
    because = "; ".join(named) if named else "no feature stands out (the answer most targets have)"
    return Suggestion(
        trace_id=trace.trace_id, trace_sha256=trace.sha256, event_id=key,
        question=model.question, value=value, confidence=round(min(1.0, max(0.0, p)), 4),
        producer=model.producer, evidence=tuple(dict.fromkeys(evidence)),
        explanation=f"{value}: {because}")
