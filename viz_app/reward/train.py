"""Training the reward model on the team's labels, and measuring it on labels it did not see.

**What it learns from.** Per question of a sub-decision whose answers carry rewards
(`decisions.reward_questions`: spawn O1, delegation O2, message O3, aggregate O4, stop O5 in the
default rubric), the team's answer on each target, chosen as the learned producer chooses it
(`viz_app.suggest.learned.truths`: an adjudication first, else the blind human answers when
they agree; disputed targets, imported labels, suggestions and labels made with suggestions in
view are left out), its reward the rubric's reward of that answer. And every decision pair of
the decision-pairs export (`viz_app.export.decision_pairs`: a corrected decision against the one
made, at the same node) as a preference.

**How it is measured.** Folds of whole traces (`GroupKFold`: no trace's decisions are split
between fitting and testing; pairs go with their trace): each decision held out is scored by a
model fitted without its trace. Then, per sub-decision:

- *pairwise accuracy over answers*: of two held-out targets whose team rewards differ, how
  often the one the team rated higher scores higher (a tie in score counts a half);
- *pairwise accuracy over decision pairs*: how often the chosen side scores above the rejected;
- *alpha*: each held-out score read as the answer whose reward is nearest, compared with every
  blind reviewer's answer there (`suggestion_agreement`, the Agreement page's figures:
  Krippendorff's alpha and Cohen's kappa, bootstrap 95 % intervals over targets), beside the
  reviewers among themselves.

Every figure has a bootstrap 95 % interval over traces, and beside it the same figure of a
baseline that reads no decision (a model of the decision text's length alone, fitted on the
same folds): a figure the baseline matches is no figure."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson
from pydantic import BaseModel, Field

from viz_app.labels import (AgreementRow, LabelRecord, Producer, Question, Rubric, Suggestion,
                            blind_labels, reward_of, suggestion_agreement)
from viz_app.model import Trace
from viz_app.reward.decisions import (ANY, Decision, pair_decisions,
                                      reward_questions, trace_decisions)
from viz_app.reward.model import (FEATURES_VERSION, SETTINGS, Example, Pair, RewardError,
                                  TrainingSet, _sklearn, fit_heads, score_with,
                                  training_sha256, weights_sha256)

NAME = "reward-model"
"""The producer name the reward model's answers carry on the Agreement page."""

FOLDS = 5
MIN_REWARDS = 8
"""Answered decisions (or pairs) a training set needs at the least."""


class Interval(BaseModel):
    value: float | None = None
    low: float | None = None
    high: float | None = None

    def text(self) -> str:
        if self.value is None:
            return "-"
        if self.low is None:
            return f"{self.value:.3f}"
        return f"{self.value:.3f} [{self.low:.3f}, {self.high:.3f}]"


class SubDecisionReport(BaseModel):
    """The held-out figures of one sub-decision."""

    sub_decision: str
    questions: list[str] = Field(default_factory=list)
    answered: int = Field(0, description="Answered decisions learnt from (each scored once "
                          "held out).")
    pairs: int = Field(0, description="Decision pairs learnt from.")
    pairwise_answers: Interval = Field(default_factory=Interval, description="Held-out "
                                       "pairwise accuracy over answered decisions whose team "
                                       "rewards differ.")
    pairwise_answers_baseline: Interval = Field(default_factory=Interval)
    pairwise_pairs: Interval = Field(default_factory=Interval, description="Held-out share "
                                     "of decision pairs whose chosen side scores higher.")
    pairwise_pairs_baseline: Interval = Field(default_factory=Interval)
    agreement: list[AgreementRow] = Field(default_factory=list, description="Per question: "
                                          "the held-out answers against every blind reviewer "
                                          "(rater `reward-model`), the baseline's, and the "
                                          "reviewers among themselves.")


class RewardReport(BaseModel):
    folds: int
    traces: int
    answered: int
    pairs: int
    left_out: dict[str, str] = Field(default_factory=dict, description="Per question, what "
                                     "was not learnt from and why.")
    sub_decisions: list[SubDecisionReport]


class HeldOut(BaseModel):
    """A held-out score of one answered target, kept for the Agreement page."""

    trace_id: str
    trace_sha256: str
    event_id: str
    question: str
    score: float
    value: Any


class RewardModel(BaseModel):
    """A trained reward model: its training set, settings, versions, held-out report; the
    weights are fitted from them on use (`heads`), and checked against `weights_sha256`."""

    model_id: str = Field(description="SHA-256 of the training set and settings.")
    kind: str = "sklearn"
    campaign: str = ""
    rubric_sha256: str = ""
    features_version: str = FEATURES_VERSION
    versions: dict[str, str] = Field(default_factory=dict, description="orchviz, "
                                     "scikit-learn, NumPy, SciPy versions of the fit.")
    settings: dict[str, Any] = Field(default_factory=lambda: dict(SETTINGS))
    training: TrainingSet
    weights_sha256: str = ""
    answer_means: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="Per question, each answer's mean held-out score: "
        "how a score is read as an answer (`nearest_answer`).")
    report: RewardReport | None = None
    held_out: list[HeldOut] = Field(default_factory=list)
    created_by: str = ""
    created_at: str = ""

    @property
    def version(self) -> str:
        """What every score carries: the first 16 hex digits of the model's id."""
        return self.model_id[:16]

    def heads(self):
        """The fitted heads (fitted once per object), checked against the stored weights."""
        found = self.__dict__.get("_heads")
        if found is None:
            found = fit_heads(self.training)
            if self.weights_sha256 and weights_sha256(found) != self.weights_sha256:
                raise RewardError(
                    f"reward model {self.version} refits to other weights than it was trained "
                    f"with (trained with {_versions_text(self.versions)}, loaded with "
                    f"{_versions_text(library_versions())}): train it again with this "
                    "installation, `orchviz reward train`")
            self.__dict__["_heads"] = found
        return found

    def score(self, decisions: Sequence[Decision]) -> np.ndarray:
        return score_with(self.heads(), decisions)


def library_versions() -> dict[str, str]:
    import scipy
    import sklearn

    from viz_app.version import __version__

    return {"orchviz": __version__, "scikit-learn": sklearn.__version__,
            "numpy": np.__version__, "scipy": scipy.__version__}


def _versions_text(versions: Mapping[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in versions.items()) or "unknown versions"


# -- the training set ----------------------------------------------------------------------------


class _Built(BaseModel):
    data: TrainingSet
    traces: list[str] = Field(description="Each example's trace id (the folds' groups).")
    answered: list[tuple[int, str, str, str, Any]] = Field(
        default_factory=list, description="(example, question, trace sha, value) per answered "
        "target.")
    pair_traces: list[str] = Field(default_factory=list)
    left_out: dict[str, str] = Field(default_factory=dict)


def build_training_set(rubric: Rubric, labels: Sequence[LabelRecord],
                       suggestions: Sequence[Suggestion], traces: Mapping[str, Trace | None],
                       pair_rows: Iterable[Mapping[str, Any]] = ()) -> _Built:
    """The examples, rewards and pairs of a store's labels (see the module's docstring)."""
    from viz_app.suggest import truths

    asked = reward_questions(rubric)
    examples: list[Example] = []
    groups: list[str] = []
    rewards: dict[int, float] = {}
    answered: list[tuple[int, str, str, str, Any]] = []
    left: dict[str, str] = {}
    decisions_of: dict[str, dict[str, Decision]] = {}
    at_target: dict[tuple[str, str], int] = {}
    for qid, question in asked.items():
        found, _, lost = truths(qid, labels, suggestions)
        missing = other = 0
        for truth in found:
            trace = traces.get(truth.trace_id)
            if trace is None:
                missing += 1
                continue
            if truth.trace_sha256 and truth.trace_sha256 != trace.sha256:
                other += 1
                continue
            if truth.trace_id not in decisions_of:
                decisions_of[truth.trace_id] = {d.event_id: d for d in
                                                trace_decisions(trace, rubric)}
            decision = decisions_of[truth.trace_id].get(truth.event_id)
            reward = reward_of(question, truth.value)
            if decision is None or reward is None:
                other += 1
                continue
            key = (truth.trace_id, truth.event_id)
            if key not in at_target:
                at_target[key] = len(examples)
                examples.append(Example(sub_decision=decision.sub_decision, text=decision.text,
                                        context=decision.context,
                                        structure=list(decision.structure),
                                        trace_id=truth.trace_id, event_id=truth.event_id))
                groups.append(truth.trace_id)
            i = at_target[key]
            # a target two questions reward: the mean of their rewards
            rewards[i] = reward if i not in rewards else (rewards[i] + reward) / 2
            answered.append((i, qid, trace.sha256, truth.event_id, truth.value))
        text = lost.text()
        extra = [f"{missing} whose trace is not found" if missing else "",
                 f"{other} on another version of the trace or no longer a decision"
                 if other else ""]
        text = ", ".join(p for p in [text if text != "nothing" else "", *extra] if p)
        if text:
            left[qid] = text
    pairs: list[Pair] = []
    pair_traces: list[str] = []
    for row in pair_rows:
        sub = row.get("sub_decision") or ANY
        prompt, chosen, rejected = (_plain(row.get(k)) for k in ("prompt", "chosen",
                                                                  "rejected"))
        if not chosen or not rejected:
            continue
        c, r = pair_decisions(prompt, chosen, rejected, sub)
        for d in (c, r):
            examples.append(Example(sub_decision=d.sub_decision, text=d.text,
                                    context=d.context, trace_id=row.get("trace_id", ""),
                                    event_id=row.get("event_id", "")))
            groups.append(row.get("trace_id", ""))
        weight = row.get("weight")
        pairs.append(Pair(chosen=len(examples) - 2, rejected=len(examples) - 1,
                          weight=float(weight) if isinstance(weight, (int, float)) else 1.0))
        pair_traces.append(row.get("trace_id", ""))
    return _Built(data=TrainingSet(examples=examples, rewards=rewards, pairs=pairs),
                  traces=groups, answered=answered, pair_traces=pair_traces, left_out=left)


def _plain(value: Any) -> str:
    """A prompt or side of the export: its text, or a message list's contents joined."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(str(m.get("content", "")) for m in value if isinstance(m, dict))
    return ""


# -- measuring -----------------------------------------------------------------------------------


def _bootstrap(correct: np.ndarray, a: np.ndarray, b: np.ndarray, n_groups: int,
               resamples: int, seed: int) -> Interval:
    """Pairwise accuracy (`correct` per pair of items in groups `a` and `b`) with a bootstrap
    95 % interval over groups (traces)."""
    if len(correct) == 0:
        return Interval()
    value = float(correct.mean())
    if resamples <= 0 or n_groups < 2:
        return Interval(value=value)
    rng = np.random.default_rng(seed)
    found = []
    for _ in range(resamples):
        w = np.bincount(rng.integers(0, n_groups, n_groups), minlength=n_groups).astype(float)
        weight = w[a] * w[b]
        total = weight.sum()
        if total > 0:
            found.append(float((correct * weight).sum() / total))
    if not found:
        return Interval(value=value)
    low, high = np.percentile(found, [2.5, 97.5])
    return Interval(value=value, low=float(low), high=float(high))


def answer_pairs(scores: np.ndarray, truth: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                  np.ndarray]:
    """(correct, i, j) for every pair i < j of items whose truths differ: 1 when the higher
    truth scores higher, 0.5 on a tie in score."""
    i, j = np.triu_indices(len(truth), k=1)
    differ = truth[i] != truth[j]
    i, j = i[differ], j[differ]
    sign_truth = np.sign(truth[i] - truth[j])
    diff = scores[i] - scores[j]
    correct = np.where(np.abs(diff) < 1e-12, 0.5, (np.sign(diff) == sign_truth).astype(float))
    return correct, i, j


def nearest_answer(question: Question, score: float,
                   means: Mapping[str, float] | None = None) -> Any:
    """The answer a score reads as: the answer whose decisions scored nearest it on average
    when they were held out (`means`, `RewardModel.answer_means`: a regression pulls a new
    decision's score towards the middle, so neither the rewards nor the scores of the
    decisions it was fitted on are the right cut points), else the answer whose reward is
    nearest; the first on a tie."""
    choices = [c for c in question.choices if c.reward is not None]
    if means:
        known = [c for c in choices if _key(c.value) in means]
        if known:
            return min(known, key=lambda c: abs(means[_key(c.value)] - score)).value
    return min(choices, key=lambda c: abs(c.reward - score)).value


def _key(value: Any) -> str:
    return orjson.dumps(value).decode()


def _length_baseline(data: TrainingSet, train_at: np.ndarray, test_at: Sequence[int]
                     ) -> np.ndarray:
    """A model that reads only the decision's length (log words) per sub-decision: what a
    figure must beat."""
    from sklearn.linear_model import Ridge

    def feature(i: int) -> list[float]:
        e = data.examples[i]
        return [math.log1p(len(e.text.split()))]

    scores = np.zeros(len(test_at))
    subs = {data.examples[i].sub_decision for i in test_at}
    train_set = set(int(i) for i in train_at)
    for sub in subs:
        rows = [i for i in data.rewards if i in train_set and data.examples[i].sub_decision == sub]
        pair_rows = [p for p in data.pairs if p.chosen in train_set
                     and data.examples[p.chosen].sub_decision == sub]
        x = [feature(i) + [1.0] for i in rows] + \
            [[feature(p.chosen)[0] - feature(p.rejected)[0], 0.0] for p in pair_rows]
        y = [data.rewards[i] for i in rows] + [p.margin for p in pair_rows]
        at = [k for k, i in enumerate(test_at) if data.examples[i].sub_decision == sub]
        if not x:
            continue
        fitted = Ridge(alpha=1.0, fit_intercept=False).fit(np.array(x), np.array(y))
        scores[at] = np.array([feature(test_at[k]) + [1.0] for k in at]) @ fitted.coef_
    return scores


def cross_validate(rubric: Rubric, built: _Built, human: Sequence[LabelRecord], *,
                   folds: int = FOLDS, resamples: int = 1000, seed: int = 0,
                   version: str = "") -> tuple[RewardReport, list[HeldOut],
                                               dict[str, dict[str, float]]]:
    """Held-out scores of every example (folds of whole traces), the figures of the module's
    docstring, and per question each answer's mean held-out score (how a score reads as an
    answer)."""
    from sklearn.model_selection import GroupKFold

    data = built.data
    groups = np.array(built.traces)
    names = sorted(set(built.traces))
    splits = min(folds, len(names))
    if splits < 2:
        raise RewardError("held-out figures need labelled decisions on at least 2 traces")
    model_scores = np.zeros(len(data.examples))
    base_scores = np.zeros(len(data.examples))
    fold_of = np.zeros(len(data.examples), dtype=int)
    for k, (train_at, test_at) in enumerate(GroupKFold(n_splits=splits).split(
            groups, groups=groups)):
        keep = set(int(i) for i in train_at)
        part = TrainingSet(examples=data.examples,
                           rewards={i: r for i, r in data.rewards.items() if i in keep},
                           pairs=[p for p in data.pairs if p.chosen in keep])
        heads = fit_heads(part)
        tested = [int(i) for i in test_at]
        model_scores[tested] = score_with(heads, [data.examples[i].decision() for i in tested])
        base_scores[tested] = _length_baseline(data, train_at, tested)
        fold_of[tested] = k
    # a fold's scores are read as answers by the other folds' held-out scores (no answer of
    # the fold itself is used to read it)
    means_of: dict[int, dict[str, dict[str, float]]] = {}
    base_means_of: dict[int, dict[str, dict[str, float]]] = {}
    everything = set(range(len(data.examples)))
    for k in range(splits):
        others = {i for i in everything if fold_of[i] != k}
        means = _means_of_scores(model_scores, built.answered, others)
        base_means = _means_of_scores(base_scores, built.answered, others)
        for i in everything - others:
            means_of[i], base_means_of[i] = means, base_means
    held_means = _means_of_scores(model_scores, built.answered, everything)
    group_of = {name: k for k, name in enumerate(names)}
    asked = reward_questions(rubric)
    reports = []
    held: list[HeldOut] = []
    for (i, qid, sha, event_id, value) in built.answered:
        held.append(HeldOut(trace_id=data.examples[i].trace_id, trace_sha256=sha,
                            event_id=event_id, question=qid, score=float(model_scores[i]),
                            value=nearest_answer(asked[qid], float(model_scores[i]),
                                                 means_of.get(i, {}).get(qid))))
    subs = sorted({asked[q].sub_decision for _, q, *_ in built.answered}
                  | {data.examples[p.chosen].sub_decision for p in data.pairs})
    for sub in subs:
        report = SubDecisionReport(sub_decision=sub, questions=sorted(
            {q for _, q, *_ in built.answered if asked[q].sub_decision == sub}))
        items = sorted(i for i in data.rewards if data.examples[i].sub_decision == sub)
        report.answered = len(items)
        if items:
            truth = np.array([data.rewards[i] for i in items])
            g = np.array([group_of[data.examples[i].trace_id] for i in items])
            for scores, field in ((model_scores, "pairwise_answers"),
                                  (base_scores, "pairwise_answers_baseline")):
                correct, a, b = answer_pairs(scores[items], truth)
                setattr(report, field, _bootstrap(correct, g[a], g[b], len(names),
                                                  resamples, seed))
        mine = [p for p in data.pairs if data.examples[p.chosen].sub_decision == sub]
        report.pairs = len(mine)
        if mine:
            g = np.array([group_of[data.examples[p.chosen].trace_id] for p in mine])
            for scores, field in ((model_scores, "pairwise_pairs"),
                                  (base_scores, "pairwise_pairs_baseline")):
                diff = np.array([scores[p.chosen] - scores[p.rejected] for p in mine])
                correct = np.where(np.abs(diff) < 1e-12, 0.5, (diff > 0).astype(float))
                setattr(report, field, _bootstrap(correct, g, g, len(names), resamples, seed))
        for qid in report.questions:
            report.agreement += _agreement(rubric, qid, built, held, base_scores,
                                           base_means_of, human, resamples, seed, version)
        reports.append(report)
    return RewardReport(folds=splits, traces=len(names), answered=len(data.rewards),
                        pairs=len(data.pairs), left_out=built.left_out,
                        sub_decisions=reports), held, held_means


def held_out_suggestions(held: Iterable[HeldOut], version: str, name: str = NAME,
                         created_at: str = "") -> list[Suggestion]:
    """Held-out scores as suggestions of a producer (the answer nearest each score), the form
    the agreement code compares with blind labels."""
    return [Suggestion(trace_id=h.trace_id, trace_sha256=h.trace_sha256, event_id=h.event_id,
                       question=h.question, value=h.value, confidence=1.0,
                       producer=Producer(name=name, version=version), created_at=created_at)
            for h in held]


def _means_of_scores(scores: np.ndarray, answered: Sequence[tuple[int, str, str, str, Any]],
                     keep: set[int]) -> dict[str, dict[str, float]]:
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (i, q, _, _, value) in answered:
        if i in keep:
            sums[q][_key(value)].append(float(scores[i]))
    return {q: {v: float(np.mean(f)) for v, f in a.items()} for q, a in sums.items()}


def _agreement(rubric: Rubric, qid: str, built: _Built, held: Sequence[HeldOut],
               base_scores: np.ndarray, base_means_of: Mapping[int, dict],
               human: Sequence[LabelRecord], resamples: int, seed: int,
               version: str) -> list[AgreementRow]:
    asked = reward_questions(rubric)
    mine = [h for h in held if h.question == qid]
    base = []
    for (i, q, sha, event_id, _value) in built.answered:
        if q == qid:
            base.append(HeldOut(trace_id=built.data.examples[i].trace_id, trace_sha256=sha,
                                event_id=event_id, question=q, score=float(base_scores[i]),
                                value=nearest_answer(asked[q], float(base_scores[i]),
                                                     base_means_of.get(i, {}).get(q))))
    targets = {(h.trace_id, h.event_id) for h in mine}
    compared = [x for x in human if x["question"] == qid
                and (x["trace_id"], x["event_id"] or "") in targets]
    found = suggestion_agreement(rubric, compared, [
        *held_out_suggestions(mine, version or "held-out"),
        *held_out_suggestions(base, "baseline", name="length-baseline")],
        question=qid, resamples=resamples, seed=seed)
    return list(found.rows)


def train(rubric: Rubric, labels: Sequence[LabelRecord], suggestions: Sequence[Suggestion],
          traces: Mapping[str, Trace | None], *, pair_rows: Iterable[Mapping[str, Any]] = (),
          campaign: str = "", folds: int = FOLDS, resamples: int = 1000, seed: int = 0,
          created_by: str = "", created_at: str = "",
          progress: Callable[[str], None] | None = None) -> RewardModel:
    """Fit the reward model on current label records (every source: what is learnt from is
    chosen here), the stored suggestions (to tell which labels were blind), the labelled
    traces by id (None where unreadable) and the decision-pairs export's rows; measure it on
    held-out traces. RewardError, one sentence, when there is too little to learn from."""
    _sklearn()
    labels = list(labels)
    suggestions = list(suggestions)
    if progress:
        progress("reading the labelled decisions")
    built = build_training_set(rubric, labels, suggestions, traces, pair_rows)
    data = built.data
    if len(data.rewards) + len(data.pairs) < MIN_REWARDS:
        left = "; ".join(f"{q}: {t}" for q, t in built.left_out.items()) or "nothing"
        raise RewardError(
            f"the reward model needs at least {MIN_REWARDS} answered decisions or decision "
            f"pairs of sub-decisions O1-O5, and the labels give {len(data.rewards)} answered "
            f"and {len(data.pairs)} pairs (left out: {left})")
    model_id = training_sha256(data, {"campaign": campaign, "rubric": rubric.sha256 or ""})
    if progress:
        progress("fitting")
    human = [x for x in blind_labels(labels, suggestions)[0]
             if x.get("source", "human") == "human"]
    model = RewardModel(model_id=model_id, campaign=campaign, rubric_sha256=rubric.sha256 or "",
                        versions=library_versions(), training=data, created_by=created_by,
                        created_at=created_at)
    model.weights_sha256 = weights_sha256(model.heads())
    if progress:
        progress("measuring on held-out traces")
    model.report, model.held_out, model.answer_means = cross_validate(
        rubric, built, human, folds=folds, resamples=resamples, seed=seed,
        version=model.version)
    return model


def report_lines(model: RewardModel) -> list[str]:
    """The report as the CLI prints it."""
    r = model.report
    lines = [f"reward model {model.version}: {r.answered} answered decisions and {r.pairs} "
             f"decision pairs on {r.traces} traces; held out in {r.folds} folds of whole "
             "traces (95% bootstrap intervals over traces; baseline: the decision's length "
             "alone)"] if r else [f"reward model {model.version}"]
    for s in (r.sub_decisions if r else []):
        lines.append(f"{s.sub_decision} ({', '.join(s.questions) or 'pairs only'}): "
                     f"{s.answered} answered, {s.pairs} pairs")
        if s.answered:
            lines.append(f"  pairwise accuracy over answers {s.pairwise_answers.text()}  "
                         f"(baseline {s.pairwise_answers_baseline.text()})")
        if s.pairs:
            lines.append(f"  pairwise accuracy over decision pairs {s.pairwise_pairs.text()}  "
                         f"(baseline {s.pairwise_pairs_baseline.text()})")
        for row in s.agreement:
            lines.append(f"  {row.question} {row.rater:<15} alpha "
                         f"{_stat(row.alpha)}  kappa {_stat(row.kappa)}  "
                         f"({row.targets} targets)")
    for q, text in (r.left_out.items() if r else ()):
        lines.append(f"left out of {q}: {text}")
    return lines


def _stat(found) -> str:
    if found.value is None:
        return "-"
    if found.low is None:
        return f"{found.value:.3f}"
    return f"{found.value:.3f} [{found.low:.3f}, {found.high:.3f}]"
