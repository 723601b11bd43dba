"""Does an export teach the decision, or a prior? A small pairwise model fitted on part of a
pairwise export's rows and scored on the rest, beside the baselines that read no context.

`check_signal(train_rows, test_rows)` (or `split_rows` to hold out a share of one export's
traces) fits a Bradley-Terry model (scikit-learn's logistic regression on the difference of the
two sides' features) and reports, per sub-decision and for corrections and confirmations apart,
its held-out pairwise accuracy with a Wilson 95 % interval, beside:

- **length**: the longer side wins (ties count a half);
- **template**: the action that won more often in the training rows against the other side's
  action wins (`stop` over `continue`, say), whatever the context;
- **response only**: the same model without the prompt: the action, the words and the length
  of each side. When it scores well, rows can be told apart without reading the prompt, and a
  reward model trained on them can learn a prior instead of the decision: the report warns.

The model's features are what a decision rests on in an orchviz prompt (one line per event,
`[t=8] log_analyst return -> orchestrator: ...`), each crossed with the side's action: whether
the agent a side names has answered in the prompt or is still awaited, how many agents are
awaited, the prompt's figures a side leaves out or adds, how close a side's task is to a task
already handed out (to anyone, and to the agent it names), the kind of the prompt's last event;
and the words of each side. Rows of any pairwise export are read: `prompt`, `chosen`,
`rejected` (strings or message lists), or OpenRLHF's `chosen`/`rejected` with the prompt
inside (their common prefix is taken as the prompt).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

_LINE = re.compile(r"^\[t=[^\]]*\] (\S+) (.*?): (.*)$")
_WORD = re.compile(r"[A-Za-z][\w'-]*|[0-9][0-9.,]*[0-9]|[0-9]")
_FIGURE = re.compile(r"(?<![\w.])[0-9][0-9,]*(?:\.[0-9]+)?(?![\w])")
_STOP = frozenset("a an and are as at be by for from in is it its of on or the to was with "
                  "this that find give cite source what".split())

MIN_ROWS = 4
"""Fewest rows a group needs to be reported."""

WARN_AT = 0.65
"""A response-only accuracy above this on held-out rows draws the warning."""


def text_of(value: Any) -> str:
    """A side or a prompt as text (message lists joined by their contents)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Sequence):
        return "".join(m.get("content", "") for m in value if isinstance(m, Mapping))
    return "" if value is None else str(value)


@dataclass(frozen=True)
class Pair:
    """One row, as the check reads it."""

    prompt: str
    chosen: str
    rejected: str
    group: str
    """The sub-decision (or 'all')."""
    kind: str
    """correction, confirmation, or 'pairs' when the export does not say."""
    trace_id: str


def pairs_of(rows: Iterable[Mapping[str, Any]]) -> list[Pair]:
    """The pairs of an export's rows (see the module's docstring for the columns read)."""
    found = []
    for row in rows:
        chosen, rejected = text_of(row.get("chosen")), text_of(row.get("rejected"))
        if row.get("prompt") is not None:
            prompt = text_of(row.get("prompt"))
        else:  # OpenRLHF: the prompt inside both, up to the last line they share
            n = 0
            for a, b in zip(chosen, rejected):
                if a != b:
                    break
                n += 1
            n = chosen.rfind("\n", 0, n) + 1
            prompt, chosen, rejected = chosen[:n], chosen[n:], rejected[n:]
        found.append(Pair(prompt, _answer_line(chosen), _answer_line(rejected),
                          str(row.get("sub_decision") or "all"),
                          str(row.get("pair_kind") or "pairs"),
                          str(row.get("trace_id") or row.get("chosen_trace_id") or "")))
    return found


def _answer_line(text: str) -> str:
    """The decision a side states: its last line (a conversational side may open with the
    agent's own events, which both sides share)."""
    lines = [x for x in text.strip().split("\n") if x.strip()]
    return lines[-1] if lines else ""


# -- features ---------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text)} - _STOP


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


@dataclass
class _Context:
    """What a prompt holds, read from its event lines."""

    answered: dict[str, int] = field(default_factory=dict)
    handed: dict[str, int] = field(default_factory=dict)
    tasks: list[set[str]] = field(default_factory=list)
    tasks_to: dict[str, list[set[str]]] = field(default_factory=lambda: defaultdict(list))
    figures: set[str] = field(default_factory=set)
    all_figures: set[str] = field(default_factory=set)
    last_kind: str = "none"

    @property
    def awaited(self) -> set[str]:
        return {a for a, at in self.handed.items() if self.answered.get(a, -1) < at}


def read_prompt(prompt: str) -> _Context:
    """The agents a prompt shows answering and being handed work, the tasks handed out, and
    the figures its returns and messages carry."""
    found = _Context()
    for i, line in enumerate(prompt.split("\n")):
        m = _LINE.match(line)
        if not m:
            continue
        actor, what, text = m.groups()
        kind, _, to = what.partition(" -> ")
        kind = kind.split(" ")[0]
        found.last_kind = kind + ("_in" if to else "")
        figures = set(_FIGURE.findall(text))
        found.all_figures |= figures
        if kind == "return":
            found.answered[actor] = i
            found.figures |= figures
        elif kind in ("message", "spawn") and to:
            found.handed[to] = i
            words = _words(text)
            found.tasks.append(words)
            found.tasks_to[to].append(words)
            if kind == "message":
                found.figures |= figures
        elif kind == "orchestrator_decision" and "(delegate)" in what:
            found.tasks.append(_words(text))
    return found


def _side(text: str) -> tuple[str, str, str]:
    """(action word, agent named, words after the head) of a side in the one form."""
    head, _, words = text.partition(": ")
    parts = head.split()
    action = parts[0].lower() if parts else ""
    named = ""
    if "->" in parts:
        named = parts[parts.index("->") + 1] if parts.index("->") + 1 < len(parts) else ""
    elif action == "reuse" and len(parts) > 1:
        named = parts[1]
    elif action == "continue" and words.startswith("wait for "):
        named = words[len("wait for "):].split()[0] if words[len("wait for "):] else ""
    return action, named, words


def features(prompt: str, side: str, context: _Context | None = None,
             with_prompt: bool = True) -> dict[str, float]:
    """The features of one side in its prompt (module docstring); without the prompt, only
    the side's own (action, words, length)."""
    action, named, words = _side(side)
    a = action or "none"
    found: dict[str, float] = {f"a={a}": 1.0, "len": math.log1p(len(side)) / 8}
    for w in _words(side):
        found[f"w={w}"] = found.get(f"w={w}", 0.0) + 0.5
    if not with_prompt:
        return found
    ctx = context or read_prompt(prompt)
    awaited = ctx.awaited

    def put(name: str, value: float) -> None:
        found[f"{a}|{name}"] = value

    put("last=" + ctx.last_kind, 1.0)
    put("awaited_any", float(bool(awaited)))
    put("awaited_n", min(len(awaited), 3) / 3)
    if named:
        put("named_answered", float(named in ctx.answered and named not in awaited))
        put("named_awaited", float(named in awaited))
        put("named_unknown", float(named not in ctx.answered and named not in ctx.handed))
        put("named_task", max((_jaccard(_words(words), t) for t in ctx.tasks_to.get(named, ())),
                              default=0.0))
    said = set(_FIGURE.findall(side))
    put("figures_left_out", min(len(ctx.figures - said), 4) / 4)
    put("figures_added", min(len(said - ctx.all_figures), 4) / 4)
    put("figures_kept", len(said & ctx.figures) / len(ctx.figures) if ctx.figures else 0.0)
    mine = _words(words)
    overlaps = sorted((_jaccard(mine, t) for t in ctx.tasks), reverse=True)
    put("task_overlap", overlaps[0] if overlaps else 0.0)
    put("task_twice", float(len(overlaps) > 1 and overlaps[1] > 0.6))
    return found


# -- fitting and scoring ---------------------------------------------------------------------


@dataclass
class Score:
    """A held-out pairwise accuracy: wins (ties a half) over rows, with its interval."""

    wins: float
    rows: int

    @property
    def accuracy(self) -> float:
        return self.wins / self.rows if self.rows else float("nan")

    def interval(self, z: float = 1.96) -> tuple[float, float]:
        """The Wilson score interval."""
        n = self.rows
        if not n:
            return float("nan"), float("nan")
        p = self.accuracy
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        return max(0.0, centre - half), min(1.0, centre + half)

    def text(self) -> str:
        lo, hi = self.interval()
        return f"{self.accuracy:.2f} [{lo:.2f}-{hi:.2f}]"


@dataclass
class GroupReport:
    """One sub-decision and kind of pair."""

    group: str
    kind: str
    rows: int
    model: Score
    response_only: Score
    length: Score
    template: Score


@dataclass
class SignalReport:
    """The whole check."""

    train_rows: int
    test_rows: int
    groups: list[GroupReport]
    overall: GroupReport | None
    warning: str = ""

    def lines(self) -> list[str]:
        head = (f"{'sub-decision':<13}{'pairs':<13}{'rows':>6}  {'model':<18}"
                f"{'response only':<18}{'length':<18}{'template':<18}")
        out = [f"trained on {self.train_rows} rows, held out {self.test_rows} (held-out "
               "pairwise accuracy, Wilson 95 % interval)", head]
        for g in [*self.groups, *([self.overall] if self.overall else [])]:
            out.append(f"{g.group:<13}{g.kind:<13}{g.rows:>6}  {g.model.text():<18}"
                       f"{g.response_only.text():<18}{g.length.text():<18}"
                       f"{g.template.text():<18}")
        if self.warning:
            out.append(self.warning)
        return out

    def as_dict(self) -> dict[str, Any]:
        def one(g: GroupReport) -> dict[str, Any]:
            return {"sub_decision": g.group, "pairs": g.kind, "rows": g.rows,
                    **{name: {"accuracy": s.accuracy, "interval": list(s.interval())}
                       for name, s in (("model", g.model), ("response_only", g.response_only),
                                       ("length", g.length), ("template", g.template))}}

        return {"train_rows": self.train_rows, "test_rows": self.test_rows,
                "groups": [one(g) for g in self.groups],
                "overall": one(self.overall) if self.overall else None,
                "warning": self.warning}


class PairwiseModel:
    """A Bradley-Terry model over `features`: a logistic regression on the difference of the
    two sides' feature vectors (both orders, so it has no side to favour)."""

    def __init__(self, with_prompt: bool = True, c: float = 1.0):
        self.with_prompt = with_prompt
        self.c = c

    def _diffs(self, pairs: Sequence[Pair]):
        rows = []
        for p in pairs:
            ctx = read_prompt(p.prompt) if self.with_prompt else None
            a = features(p.prompt, p.chosen, ctx, self.with_prompt)
            b = features(p.prompt, p.rejected, ctx, self.with_prompt)
            rows.append({k: a.get(k, 0.0) - b.get(k, 0.0) for k in a.keys() | b.keys()})
        return rows

    def fit(self, pairs: Sequence[Pair]) -> PairwiseModel:
        from sklearn.feature_extraction import DictVectorizer
        from sklearn.linear_model import LogisticRegression

        diffs = self._diffs(pairs)
        self.vectorizer = DictVectorizer()
        x = self.vectorizer.fit_transform(diffs + [{k: -v for k, v in d.items()} for d in diffs])
        y = [1] * len(diffs) + [0] * len(diffs)
        self.model = LogisticRegression(C=self.c, fit_intercept=False, max_iter=2000)
        self.model.fit(x, y)
        return self

    def margins(self, pairs: Sequence[Pair]) -> list[float]:
        """The chosen side's score minus the rejected side's, per pair."""
        if not pairs:
            return []
        x = self.vectorizer.transform(self._diffs(pairs))
        return list(self.model.decision_function(x))


def _score(values: Iterable[float]) -> Score:
    """Wins from margins: above 0 a win, 0 a tie (a half)."""
    wins, n = 0.0, 0
    for v in values:
        n += 1
        wins += 1.0 if v > 1e-12 else 0.5 if abs(v) <= 1e-12 else 0.0
    return Score(wins, n)


def _template_prior(pairs: Sequence[Pair]) -> dict[tuple[str, str], float]:
    """For each (action, action): +1 when the first won more often in training, -1 less."""
    wins: Counter = Counter()
    for p in pairs:
        a, b = _side(p.chosen)[0], _side(p.rejected)[0]
        wins[(a, b)] += 1
        wins[(b, a)] -= 1
    return {k: float((v > 0) - (v < 0)) for k, v in wins.items()}


def split_rows(pairs: Sequence[Pair], held_out: float = 0.3, seed: str = "orchviz"
               ) -> tuple[list[Pair], list[Pair]]:
    """Training and held-out pairs, held out by trace (a hash of its id picks it), so no
    trace is on both sides."""
    train, test = [], []
    for p in pairs:
        h = int(hashlib.sha256(f"{seed}/{p.trace_id}".encode()).hexdigest()[:8], 16)
        (test if h / 0xFFFFFFFF < held_out else train).append(p)
    return train, test


def check_signal(train: Sequence[Pair], test: Sequence[Pair]) -> SignalReport:
    """Fit on `train`, score on `test` (see the module's docstring)."""
    model = PairwiseModel().fit(train)
    blind = PairwiseModel(with_prompt=False).fit(train)
    prior = _template_prior(train)
    full, plain = model.margins(test), blind.margins(test)
    length = [float((len(p.chosen) > len(p.rejected)) - (len(p.chosen) < len(p.rejected)))
              for p in test]
    template = [prior.get((_side(p.chosen)[0], _side(p.rejected)[0]), 0.0) for p in test]
    by_group: dict[tuple[str, str], list[int]] = defaultdict(list)
    for i, p in enumerate(test):
        by_group[(p.group, p.kind)].append(i)
        if p.kind != "pairs":
            by_group[(p.group, "both")].append(i)

    def report(group: str, kind: str, idx: list[int]) -> GroupReport:
        return GroupReport(group, kind, len(idx), _score(full[i] for i in idx),
                           _score(plain[i] for i in idx), _score(length[i] for i in idx),
                           _score(template[i] for i in idx))

    groups = [report(g, k, idx) for (g, k), idx in sorted(by_group.items())
              if len(idx) >= MIN_ROWS]
    overall = report("all", "all", list(range(len(test)))) if test else None
    warning = ""
    if overall is not None and overall.rows >= MIN_ROWS:
        lo = overall.response_only.interval()[0]
        worst = max((g for g in groups if g.kind in ("both", "pairs")),
                    key=lambda g: g.response_only.interval()[0], default=None)
        if lo > WARN_AT or (worst is not None and worst.response_only.interval()[0] > 0.8):
            where = overall if lo > WARN_AT else worst
            warning = (f"Warning: these rows can be told apart without reading the prompt (a "
                       f"model of the answers alone scores {where.response_only.accuracy:.2f} "
                       f"on held-out {where.group} pairs), so a reward model trained on them can "
                       "learn a prior over answers instead of the decision.")
    return SignalReport(len(train), len(test), groups, overall, warning)


def read_rows(path: str) -> list[dict[str, Any]]:
    """The rows of an export file: JSON Lines (or a JSON array), Parquet, or a `--hf-dataset`
    folder's Parquet shards. OSError or ValueError naming the file and line when unreadable."""
    from pathlib import Path

    import orjson

    given = Path(path)
    if given.is_dir():
        shards = sorted(p for p in given.rglob("*.parquet") if "arrow" not in p.parts)
        if not shards:
            raise ValueError(f"{path}: no Parquet shards in this folder")
        return [row for shard in shards for row in _parquet(shard)]
    if given.suffix == ".parquet":
        return _parquet(given)
    data = given.read_bytes()
    if data.lstrip().startswith(b"["):
        return orjson.loads(data)
    rows = []
    for number, line in enumerate(data.splitlines(), 1):
        if line.strip():
            try:
                rows.append(orjson.loads(line))
            except orjson.JSONDecodeError as err:
                raise ValueError(f"{path}: line {number}: not valid JSON ({err})") from None
    return rows


def _parquet(path) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()

