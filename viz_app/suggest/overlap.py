"""How much of one text's distinctive content another text carries: content words weighted by
how rare they are in the trace (IDF), sentence by sentence where a text is long.

The dropped-result and late-stop rules used to ask rapidfuzz's `token_set_ratio` whether a
result was in an output; an input that merely shares the trace's common words ("cells cost
about ... dollars per kWh in 2024") passes that test while its own figures and names are gone.
Here a word that appears in most of a trace's events weighs little, a figure or a name that
one result alone states weighs most, and function words weigh nothing.

Pure and small: `content(text)` gives a text's content tokens; a `Lexicon` built over a trace's
texts gives each token its weight; `Lexicon.coverage(part, whole)` is the weighted share of
`part`'s tokens present in `whole` (0-1).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing done down during each either else
few for from further had has have having he her here hers him his how i if in into is it its
itself just let me more most my no nor not now of off on once only or other our ours out over
own per please same she should so some such than that the their theirs them then there these
they this those through to too under until up upon very was we were what when where which while
who whom why will with would yet you your yours ok okay
""".split())
"""English function words: they carry no content of a result."""

FIGURE_WEIGHT = 2.0
"""A figure (a token with a digit: a price, a date, a version) weighs this many times a word of
the same rarity: a result's figures are what a merge that drops it loses first."""

_TOKEN = re.compile(r"[^\W_]+(?:[.,:][^\W_]+)*")
_SENTENCE = re.compile(r"(?<=[.!?;])\s+|\n+")


def _normal(token: str) -> str:
    """One token as compared: lower case; a figure without thousands commas or trailing
    punctuation; a word cut to its first six letters once a plural s is off (cost, costs,
    costly read alike; released and release too)."""
    token = token.lower()
    if any(ch.isdigit() for ch in token):
        token = re.sub(r"(?<=\d),(?=\d)", "", token).rstrip(".,:")
        if re.fullmatch(r"\d+\.\d+", token):  # 21.0 and 21 are one figure
            token = token.rstrip("0").rstrip(".")
        return token
    if token.endswith("s") and len(token) > 3 and not token.endswith("ss"):
        token = token[:-1]
    return token[:6]


@lru_cache(maxsize=8192)
def content(text: str) -> frozenset[str]:
    """A text's content tokens: its words and figures, normalised, function words left
    out."""
    found = set()
    for raw in _TOKEN.findall(text or ""):
        if raw.lower() in STOPWORDS and not (len(raw) == 1 and raw.isupper()
                                             and raw not in "AI"):
            continue  # a capital letter alone names something: option (C), plan B
        found.add(_normal(raw))
    return frozenset(found)


def sentences(text: str) -> list[str]:
    """A text cut at sentence ends (., !, ?, ;) and line breaks, empty pieces left out."""
    return [s for s in _SENTENCE.split(text or "") if s.strip()]


@lru_cache(maxsize=65536)
def is_figure(token: str) -> bool:
    """Whether a token holds a digit."""
    return any(ch.isdigit() for ch in token)


_YEAR = re.compile(r"(19|20)\d\d")


def is_number(token: str) -> bool:
    """Whether a token is a number as written (it starts with a digit: 84.8, 3000, 2.5x), not
    a name with a digit in it (p99, v2, gpt-4o)."""
    return token[:1].isdigit()


def is_year(token: str) -> bool:
    """Whether a token is a bare year (1900-2099): when something was said, not what."""
    return bool(_YEAR.fullmatch(token))


class Lexicon:
    """Content-token weights over a set of texts (one trace's events): the smoothed inverse
    document frequency ln((1 + N) / (1 + df)) + 1, times `FIGURE_WEIGHT` for a figure. A token
    the texts never had weighs as one in a single text.

    `template=True` weighs a token by ln(N / df) instead: a token every text has weighs nothing.
    Siblings' tasks built from one template ("Summarise chapter 3", "Summarise chapter 4") then
    differ by their slot alone."""

    def __init__(self, texts: Iterable[str | frozenset[str]], template: bool = False):
        """`texts`: the texts, or their `content` tokens already read."""
        self.template = template
        df: Counter[str] = Counter()
        n = 0
        for text in texts:
            n += 1
            df.update(text if isinstance(text, frozenset) else content(text))
        self.documents = n
        self._df = df
        self._cache: dict[str, float] = {}

    def weight(self, token: str) -> float:
        """How much one token counts (rarer counts more)."""
        w = self._cache.get(token)
        if w is None:
            df = self._df.get(token, 1)
            if self.template:
                w = math.log(max(self.documents, 1) / df)
            else:
                w = math.log((1 + self.documents) / (1 + df)) + 1.0
            if is_figure(token):
                w *= FIGURE_WEIGHT
            self._cache[token] = w
        return w

    def mass(self, tokens: Iterable[str]) -> float:
        """The summed weight of some tokens."""
        return sum(self.weight(t) for t in tokens)

    def coverage(self, part: frozenset[str] | set[str], whole: frozenset[str] | set[str]
                 ) -> float:
        """The weighted share of `part`'s tokens that `whole` has (0-1; 1 when `part` is
        empty: nothing is missing)."""
        total = self.mass(part)
        if total <= 0:
            return 1.0
        return self.mass(part & whole) / total

    def similarity(self, a: frozenset[str] | set[str], b: frozenset[str] | set[str]) -> float:
        """Weighted Jaccard of two token sets (0-1): shared weight over the union's weight;
        1 for two equal non-empty sets (whose tokens may all weigh nothing in a template
        lexicon), 0 when either is empty."""
        if not a or not b:
            return 0.0
        if a == b:
            return 1.0
        union = self.mass(a | b)
        return self.mass(a & b) / union if union > 0 else 0.0
