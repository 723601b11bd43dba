"""How alike two texts are, word by word: the measures the detectors share (rapidfuzz's
word-level similarity and token-set ratio, figures set apart)."""

from __future__ import annotations

import re
from functools import lru_cache

from rapidfuzz import fuzz, utils
from rapidfuzz.distance import Indel

FIGURE = re.compile(r"(?<![\w.])\d[\d.,:/%-]*\w*")
"""A figure: a version, a date, a count, a percentage, as written."""


_WORD = re.compile(r"\w+")


def words(text: str) -> int:
    """How many words a text has."""
    return len(_WORD.findall(text))


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    """A text's words, lower-cased, punctuation and figures dropped (so numbered names such as
    researcher_1 and researcher_2 read alike), in sorted order."""
    return tuple(sorted(w for w in utils.default_process(text).split() if not w.isdigit()))


def near_duplicate(a: str, b: str, cutoff: float = 0.0) -> float:
    """How alike two texts are word by word, order and figures ignored (rapidfuzz Indel
    normalized similarity of their sorted word lists, 0-100): one word of seven different
    scores 86, identical wording 100. Below `cutoff` it says 0 (rapidfuzz stops early)."""
    return 100.0 * Indel.normalized_similarity(_tokens(a), _tokens(b),
                                               score_cutoff=cutoff / 100.0)


def same_subject(a: str, b: str) -> float:
    """How far two texts speak about the same thing, their figures left out (rapidfuzz
    token_set_ratio, 0-100)."""
    return fuzz.token_set_ratio(FIGURE.sub(" ", a), FIGURE.sub(" ", b),
                                processor=utils.default_process)


def covered(part: str, whole: str) -> float:
    """How far one text's words are present in another (rapidfuzz token_set_ratio, 0-100: 100
    when either's words are all in the other)."""
    return fuzz.token_set_ratio(part, whole, processor=utils.default_process)
