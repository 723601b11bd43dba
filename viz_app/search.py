"""The library's one search: what a typed search matches, over a folder's files and a pool's
shards alike.

A search is a list of words; a trace matches when every word holding a letter or digit begins a
word of its text (ids, task, system, agents, roles, tools, then event content, as
`summary.search_text` gathers it), case and accents aside: `analyst` finds `db_analyst` and
`Analysts`, `demo-03` finds `demo-03-debate-judge`, and neither `nalyst` nor `demo_0_` (which no
word of the text begins with) finds anything. LIKE's and FTS5's own syntax mean nothing: `%`,
`_`, `*` and `AND` are characters like any other; what comes before a word's first letter or
digit, and quotes, brackets and sentence punctuation after it, are left off (`-rollout` and
`"analyst",` are searches for `rollout` and `analyst`).

`matches(text, search)` is the rule. The stores answer it their own way and must agree with it:
the folder index narrows its rows in SQL (each word a substring of the text) and keeps those
`matches` accepts; a pool's word index (SQLite FTS5, `unicode61 remove_diacritics 2`) answers a
search of plain words (letters and digits only, `plain`) alone, each word a prefix of a token,
and keeps, of what it finds for other words, those `matches` accepts.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WORDY = re.compile(r"[^\W_]")
"""A letter or a digit: a typed word without one is no word of a search."""
_PLAIN = re.compile(r"[^\W_]+")
_LEADING = re.compile(r"^[\W_]+")
"""What comes before a word's first letter or digit only parts it from what went before."""
_TRAILING = re.compile(r"[\"'`.,;:!?)\]}]+$")
"""Quotes, brackets and a sentence's punctuation after a word end it."""


def fold(text: str) -> str:
    """Text as a search compares it: lower-cased, accents taken off (`Café` is `cafe`)."""
    text = text.lower()
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(c))


def words(search: str) -> list[str]:
    """The words of a typed search that count, folded: those holding a letter or digit, each
    from its first letter or digit (`-rollout` is `rollout`), quotes, brackets and sentence
    punctuation after it left off (`analyst",` is `analyst`)."""
    return [fold(_TRAILING.sub("", _LEADING.sub("", w))) for w in (search or "").split()
            if _WORDY.search(w)]


def plain(search: str) -> bool:
    """Whether every word of a search is letters and digits alone: then a word index's tokens
    (runs of letters and digits) answer it alone, each word a prefix of one token."""
    return all(_PLAIN.fullmatch(w) for w in words(search))


def fts_query(search: str) -> str | None:
    """The SQLite FTS5 query of a search: each word a quoted prefix phrase, all required (no
    FTS5 syntax of theirs is ever parsed); None when nothing searchable is left. It finds every
    trace `matches` accepts, and for a `plain` search no other."""
    found = words(search)
    if not found:
        return None
    return " AND ".join('"' + w.replace('"', '""') + '"*' for w in found)


@lru_cache(maxsize=256)
def _pattern(word: str) -> re.Pattern[str]:
    return re.compile(r"(?<![^\W_])" + re.escape(word))


def matches(text: str, search: str) -> bool:
    """The rule: whether every word of a search begins a word of the text (a place not after a
    letter or digit), case and accents aside. A search with no word matches every text."""
    folded = None
    for word in words(search):
        if folded is None:
            folded = fold(text)
        if _pattern(word).search(folded) is None:
            return False
    return True
