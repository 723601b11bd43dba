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
the folder index keeps each trace's words (`index_words`: runs of letters and digits, folded) in
a table of the label database and finds the traces holding a word each typed word's runs begin
(`word_parts`, one index range each, `prefix_range`), which answers a `plain` search alone and
keeps, of what it finds for other words, those `matches` accepts; a pool's word index (SQLite
FTS5, `unicode61 remove_diacritics 2`) answers a search of plain words alone, each word a
prefix of a token, and keeps, of what it finds for other words, those `matches` accepts.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_WORDY = re.compile(r"[^\W_]")
"""A letter or a digit: a typed word without one is no word of a search."""
_PLAIN = re.compile(r"[^\W_]+")
WORD_LIMIT = 64
"""A word index keeps the first 64 characters of a word (a run of base64 is no word anyone
types whole, and a B-tree's entries have a size limit)."""
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


def index_words(text: str) -> set[str]:
    """The words a word index keeps of a text: its runs of letters and digits, folded, each cut
    to WORD_LIMIT characters. A typed word of letters and digits alone, no longer than that,
    begins a word of the text (the rule) exactly when it begins one of these."""
    found = set(_PLAIN.findall(fold(text)))
    if any(len(w) > WORD_LIMIT for w in found):  # seldom: cut only then
        found = {w[:WORD_LIMIT] for w in found}
    return found


def word_parts(word: str) -> list[str]:
    """The runs of letters and digits of a typed word (`rollout-01`: `rollout`, `01`), each cut
    to WORD_LIMIT: a text the rule accepts holds a word each of them begins."""
    return [w[:WORD_LIMIT] for w in _PLAIN.findall(fold(word))]


def exact(search: str) -> bool:
    """Whether a word index's words answer a search alone (`plain`, no word longer than
    WORD_LIMIT), with no text to check against the rule."""
    return plain(search) and all(len(w) <= WORD_LIMIT for w in words(search))


def prefix_range(part: str) -> tuple[str, str]:
    """The words a part begins, as a range of words compared by code point (UTF-8's byte
    order): from the part itself to, not including, the part with its last character the next
    one (`abc` to `abd`)."""
    following = ord(part[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:  # no character is a surrogate: past them
        following = 0xE000
    return part, part[:-1] + chr(min(following, 0x10FFFF))
