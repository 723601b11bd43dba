"""The default reward model: a linear model per sub-decision (and one pooled over all of them)
over the decision's words, its context's words and the trace's structure at that point,
fitted on the team's scalar answers (as rewards) and decision pairs (as preferences) at once.

**The fit.** A decision is a sparse row: hashed words and word pairs of the decision, hashed
words of the context before it (scikit-learn's `HashingVectorizer`, stateless: nothing to
store but its settings; binary and unnormalised, so the words both sides of a pair share
cancel exactly in their difference), the standardised structural figures
(`decisions.STRUCTURE`) and a bias. Each answered decision asks `w . x = r` (its reward, -1 to
1); each decision pair asks `w . (x_chosen - x_rejected) = margin`, weighted by the export's
`weight` (the bias cancels, so a pair says only which is better, as a Bradley-Terry model's
difference does). One ridge regression (`ridge`: no intercept, the bias column carries it; a
Cholesky solve of the smaller Gram matrix, deterministic) solves both. Scores are clipped to
[-1, 1].

**Stored as its training set**, as the learned producer's models are (`viz_app.suggest.
learned`): the decisions, the rewards and pairs, the settings and the versions of orchviz's
features, scikit-learn and NumPy. The model is fitted again when it is loaded (tens of
milliseconds for thousands of decisions), and the SHA-256 of the fitted weights is checked
against the one stored at training: another scikit-learn that fits other weights is said in one
sentence, never served silently. Nothing pickled is ever read back."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import orjson
from pydantic import BaseModel, Field

from viz_app.errors import OrchvizError
from viz_app.reward.decisions import ANY, STRUCTURE, SUB_DECISIONS, Decision

FEATURES_VERSION = "2"
"""Change it when `decisions` or the featurisation here reads a decision differently."""

HASH_BITS = 20
"""2**20 hashed word features: few collisions for the vocabulary of orchestration traces (a
word pair sharing a column with another in one decision is the one place the word-by-word
scoring, `Head.score`, and the hashed rows the fit reads differ)."""

SETTINGS = {"estimator": "ridge, alpha 1.0, no intercept: dual Cholesky up to 6000 rows, "
                         "else Ridge(solver=lsqr, tol=1e-6)",
            "hashing": f"HashingVectorizer(n_features=2**{HASH_BITS}, words+bigrams, "
                       "context words, binary, no norm)",
            "pair_margin": 1.0, "pair_weight": 1.0, "structure_weight": 1.0,
            "features": FEATURES_VERSION}
"""The fitting settings, part of the training set's hash."""

ALPHA = 1.0
DUAL_ROWS = 6000
"""Rows up to which the ridge is solved in its dual form (a Gram matrix of 288 MB at most)."""
PAIR_MARGIN = 1.0
SKLEARN_MISSING = ("the reward model needs scikit-learn: pip install 'orchviz[reward]' "
                   "(or 'orchviz[agreement]')")


class RewardError(OrchvizError, ValueError):
    """A reward model that cannot be trained, loaded or used as asked: one sentence."""


def _sklearn():
    try:
        import sklearn
    except ImportError:
        raise RewardError(SKLEARN_MISSING) from None
    return sklearn


class Example(BaseModel):
    """One decision of the training set (a labelled target, or one side of a pair)."""

    sub_decision: str
    text: str
    context: str = ""
    structure: list[float] = Field(default_factory=lambda: [0.0] * len(STRUCTURE))
    trace_id: str = ""
    event_id: str = ""

    def decision(self) -> Decision:
        return Decision(sub_decision=self.sub_decision, text=self.text, context=self.context,
                        structure=tuple(self.structure), event_id=self.event_id)


class Pair(BaseModel):
    """A preference between two examples: `chosen` should score above `rejected`, with the
    weight the export gives it (corrections and confirmations of a sub-decision weigh alike
    whatever their counts)."""

    chosen: int
    rejected: int
    margin: float = PAIR_MARGIN
    weight: float = 1.0


class TrainingSet(BaseModel):
    """What a model is fitted on: examples, a reward for some (the answered targets), and
    pairs of them."""

    examples: list[Example]
    rewards: dict[int, float] = Field(default_factory=dict, description="Example index -> "
                                      "the team's reward for it.")
    pairs: list[Pair] = Field(default_factory=list)


def _tokens(sub: str, text: str, context: str) -> list[str]:
    words = text.lower().split()
    found = [f"{sub}|{w}" for w in words]
    found += [f"{sub}|{a} {b}" for a, b in zip(words, words[1:])]
    found += [f"{sub}|ctx {w}" for w in context.lower().split()]
    return found


def _vectorizer():
    from sklearn.feature_extraction.text import HashingVectorizer

    return HashingVectorizer(n_features=2 ** HASH_BITS, analyzer=_identity,
                             alternate_sign=False, binary=True, norm=None)


def _identity(doc: list[str]) -> list[str]:
    return doc


class Head:
    """One fitted linear model: the weights over hashed words, structure and bias, and the
    same weights by word (`Lookup`), which scoring reads."""

    def __init__(self, weights: np.ndarray, mean: np.ndarray, scale: np.ndarray,
                 lookup: Lookup | None = None):
        self.weights = weights
        self.mean = mean
        self.scale = scale
        self.lookup = lookup or Lookup({}, {}, {})
        self.dense = weights[2 ** HASH_BITS:]  # the structure's weights, then the bias

    def score(self, d: Decision) -> float:
        """The decision's score: what `design(...) @ weights` gives, read word by word from
        the words the head was fitted on (a word it never saw weighs nothing), in a few
        microseconds a word instead of hashing every word again."""
        words = d.text.lower().split()
        found = self.lookup.words.get
        bigrams = self.lookup.bigrams.get
        context = self.lookup.context.get
        total = sum(found(w, 0.0) for w in set(words))
        total += sum(bigrams(b, 0.0) for b in set(zip(words, words[1:])))
        total += sum(context(w, 0.0) for w in set(d.context.lower().split()))
        structure = np.asarray(d.structure, dtype=float)
        if structure[-1] > 0:
            z = (structure - self.mean) / self.scale * SETTINGS["structure_weight"]
            total += float(z @ self.dense[:-1])
        return total + float(self.dense[-1])


class Lookup:
    """A head's weights by word: its words, word pairs and context words that carry one."""

    def __init__(self, words: dict[str, float], bigrams: dict[tuple[str, str], float],
                 context: dict[str, float]):
        self.words, self.bigrams, self.context = words, bigrams, context


def lookup_of(examples: Sequence[Example], sub: str, weights: np.ndarray) -> Lookup:
    """The weights of every word, word pair and context word of the examples a head was
    fitted on, read at the hashed column each falls in (`_tokens`)."""
    words: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    context: set[str] = set()
    for e in examples:
        mine = e.text.lower().split()
        words.update(mine)
        pairs.update(zip(mine, mine[1:]))
        context.update(e.context.lower().split())
    vectorizer = _vectorizer()
    made = []
    for keys, form in ((sorted(words), lambda w: f"{sub}|{w}"),
                       (sorted(pairs), lambda p: f"{sub}|{p[0]} {p[1]}"),
                       (sorted(context), lambda w: f"{sub}|ctx {w}")):
        if not keys:
            made.append({})
            continue
        columns = vectorizer.transform([[form(k)] for k in keys]).indices
        found = weights[columns]
        made.append({k: float(v) for k, v in zip(keys, found) if v != 0.0})
    return Lookup(*made)


def design(decisions: Sequence[Decision], sub: str, mean: np.ndarray, scale: np.ndarray,
           vectorizer=None):
    """The sparse rows of decisions read by the head of sub-decision `sub` (its words are
    hashed under that sub-decision's name)."""
    from scipy import sparse

    vectorizer = vectorizer or _vectorizer()
    words = vectorizer.transform([_tokens(sub, d.text, d.context) for d in decisions])
    structure = np.array([d.structure for d in decisions], dtype=float).reshape(
        len(decisions), len(STRUCTURE))
    present = structure[:, -1:] > 0
    z = np.where(present, (structure - mean) / scale, 0.0)
    dense = np.hstack([z * SETTINGS["structure_weight"], np.ones((len(decisions), 1))])
    return sparse.hstack([words, sparse.csr_matrix(dense)], format="csr")


def fit_head(examples: Sequence[Example], rewards: dict[int, float], pairs: Sequence[Pair],
             sub: str) -> Head | None:
    """The head of one sub-decision (`ANY`: every example, the pooled head) fitted on the
    examples it covers; None when it has nothing to learn from."""
    from scipy import sparse

    def mine(i: int) -> bool:
        return sub == ANY or examples[i].sub_decision == sub

    scalar = sorted(i for i in rewards if mine(i))
    paired = [p for p in pairs if mine(p.chosen) and mine(p.rejected)]
    if not scalar and not paired:
        return None
    used = sorted({*scalar, *(p.chosen for p in paired), *(p.rejected for p in paired)})
    structure = np.array([examples[i].structure for i in used], dtype=float)
    present = structure[structure[:, -1] > 0] if len(structure) else structure
    mean = present.mean(axis=0) if len(present) else np.zeros(len(STRUCTURE))
    scale = present.std(axis=0) if len(present) else np.ones(len(STRUCTURE))
    scale = np.where(scale > 1e-9, scale, 1.0)
    mean[-1], scale[-1] = 0.0, 1.0  # has_structure stays 0/1
    at = {i: k for k, i in enumerate(used)}
    x = design([examples[i].decision() for i in used], ANY if sub == ANY else sub, mean, scale)
    blocks, targets, weights = [], [], []
    if scalar:
        blocks.append(x[[at[i] for i in scalar]])
        targets += [rewards[i] for i in scalar]
        weights += [1.0] * len(scalar)
    if paired:
        chosen = x[[at[p.chosen] for p in paired]]
        rejected = x[[at[p.rejected] for p in paired]]
        blocks.append(chosen - rejected)
        targets += [p.margin for p in paired]
        weights += [SETTINGS["pair_weight"] * p.weight for p in paired]
    matrix = sparse.vstack(blocks, format="csr")
    weights_full = np.zeros(matrix.shape[1])
    used_columns = np.unique(matrix.indices)
    weights_full[used_columns] = ridge(matrix[:, used_columns], np.array(targets),
                                       np.array(weights))
    return Head(weights_full, mean, scale,
                lookup_of([examples[i] for i in used], ANY if sub == ANY else sub, weights_full))


def ridge(x, y: np.ndarray, sample_weight: np.ndarray) -> np.ndarray:
    """The ridge solution `argmin |W^1/2 (x w - y)|^2 + ALPHA |w|^2`, on the columns the rows
    use (a hashed column no row touches has weight 0 in any case): one Cholesky solve of the
    smaller Gram matrix (the columns', or the rows' in the dual form) while it has at most
    DUAL_ROWS sides; else scikit-learn's `lsqr`. All deterministic."""
    from scipy.linalg import solve

    root = np.sqrt(sample_weight)
    xw = x.multiply(root[:, None]).tocsr()
    yw = y * root
    if x.shape[1] <= min(x.shape[0], DUAL_ROWS):  # fewer columns than rows: the primal
        gram = (xw.T @ xw).toarray()
        gram[np.diag_indices_from(gram)] += ALPHA
        return solve(gram, np.asarray(xw.T @ yw).ravel(), assume_a="pos")
    if x.shape[0] <= DUAL_ROWS:
        gram = (xw @ xw.T).toarray()
        gram[np.diag_indices_from(gram)] += ALPHA
        return np.asarray(xw.T @ solve(gram, yw, assume_a="pos")).ravel()
    from sklearn.linear_model import Ridge

    return Ridge(alpha=ALPHA, solver="lsqr", tol=1e-6, fit_intercept=False).fit(xw, yw).coef_


def fit_heads(data: TrainingSet) -> dict[str, Head]:
    """A head per sub-decision with something to learn, and the pooled head (`ANY`)."""
    _sklearn()
    heads = {}
    for sub in (*SUB_DECISIONS, ANY):
        head = fit_head(data.examples, data.rewards, data.pairs, sub)
        if head is not None:
            heads[sub] = head
    return heads


def weights_sha256(heads: dict[str, Head]) -> str:
    """The fitted weights' hash, rounded to 1e-9 (what a deterministic refit must give)."""
    digest = hashlib.sha256()
    for sub in sorted(heads):
        head = heads[sub]
        digest.update(sub.encode())
        for part in (head.weights, head.mean, head.scale):
            digest.update(np.round(part, 9).astype("<f8").tobytes())
    return digest.hexdigest()


def score_with(heads: dict[str, Head], decisions: Sequence[Decision]) -> np.ndarray:
    """Each decision's reward by the head of its sub-decision (the pooled head where it has
    none), in [-1, 1]."""
    scores = np.zeros(len(decisions))
    for i, d in enumerate(decisions):
        head = heads.get(d.sub_decision) or heads.get(ANY)
        if head is not None:
            scores[i] = head.score(d)
    return np.clip(scores, -1.0, 1.0)


def score_hashed(heads: dict[str, Head], decisions: Sequence[Decision]) -> np.ndarray:
    """The same scores as `score_with` through the hashed rows themselves (`design`): what
    a test holds the word-by-word reading to (they differ only where a word the head never
    saw falls in a column a seen word took)."""
    scores = np.zeros(len(decisions))
    vectorizer = _vectorizer()
    by_head: dict[str, list[int]] = {}
    for i, d in enumerate(decisions):
        sub = d.sub_decision if d.sub_decision in heads else ANY
        by_head.setdefault(sub, []).append(i)
    for sub, at in by_head.items():
        head = heads.get(sub)
        if head is None:
            continue
        x = design([decisions[i] for i in at], sub, head.mean, head.scale, vectorizer)
        scores[at] = x @ head.weights
    return np.clip(scores, -1.0, 1.0)


def training_sha256(data: TrainingSet, scope: dict[str, Any]) -> str:
    """The hash that names a model: its training set, its scope (campaign, rubric) and the
    fitting settings. The same labels give the same hash; one more label another."""
    body = {"scope": scope, "settings": SETTINGS, "data": data.model_dump(mode="json")}
    return hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS
                                       | orjson.OPT_NON_STR_KEYS)).hexdigest()
