"""The one rule for "these answers disagree", read by every place that asks: a campaign's
status and the Adjudicate queue (`labels.campaign.find_disagreements`), the Agreement page's
"where reviewers disagree most" (`labels.agreement`), the queue orders that look for a first
reviewer at odds with a producer (`labels.attention`) and every training export
(`export.consensus.select`). A lead who settles every dispute the queue lists has settled every
dispute an export asks about, and no other (docs/labels.md, "When answers disagree").

By the kind of question:

- **scale**: answers disagree when they are further apart than `SPREAD` of the scale's span
  (on a 1-5 scale, two points or more: 3 and 5, not 3 and 4). Answers one point apart are
  *close*: no dispute anywhere, and an export keeps the target with the mean of their rewards
  (resolution `close`, the spread in `reward_std`), since neighbouring points on a scale are
  the noise of careful reviewers, not a judgement to settle.
- **categorical, boolean, event** (a pointer to an event): any difference.
- **tags**: any difference between the sets chosen (order aside): one reviewer who flags
  `dropped_result` where another flags nothing is a dispute a lead should see.
- **correction**: a different decision (another action, agent, role or recipient); the
  reviewers' own words may differ without a dispute.
- **text**: never: notes ride along.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import orjson

from viz_app.labels.rubric import ORDINAL_KINDS, Question

SPREAD = 0.25
"""The largest spread (of a scale's span) at which a scale's answers are still close, not in
dispute: on a 1-5 scale, one point."""

CORRECTION_KEYS = frozenset({"action", "text", "agent", "role", "to"})
"""The fields of a correction's answer (`viz_app.labels.correction`); all but `text` say which
decision it chose."""

NEVER_DISPUTED = ("text",)
"""Question kinds whose answers never disagree (free-text notes)."""


def _canonical(value: Any) -> bytes:
    """An answer in a form where equal answers are equal bytes (tags in any order; 1 and True
    differ, as JSON tells them apart)."""
    if isinstance(value, list):
        return b"[" + b",".join(sorted(orjson.dumps(v, option=orjson.OPT_SORT_KEYS)
                                        for v in value)) + b"]"
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def decision_of(value: Any) -> Any:
    """What a correction's answer decides (action, agent, role, recipient), its words aside;
    any other value as itself."""
    if isinstance(value, dict) and value.keys() <= CORRECTION_KEYS:
        return tuple(map(value.get, ("action", "agent", "role", "to")))
    return _canonical(value)


def same_answer(question: Question | None, a: Any, b: Any) -> bool:
    """Whether two answers to a question are the same answer: tags as sets, corrections by the
    decision they choose, anything else exactly (1 and True differ). A question unknown to the
    rubric (None) compares exactly, tags-like lists as sets."""
    kind = question.kind if question is not None else None
    if kind == "correction":
        return decision_of(a) == decision_of(b)
    if kind == "tags":
        return _canonical(list(a or [])) == _canonical(list(b or []))
    if type(a) is type(b) and isinstance(a, (str, int, bool, float)) or a is None or b is None:
        return type(a) is type(b) and a == b
    return _canonical(a) == _canonical(b)


def spread(question: Question | None, answers: Sequence[Any]) -> float:
    """How far apart answers are, 0 to 1: for a scale the range over the scale's span, for
    anything else 0 when all are the same answer (`same_answer`) and 1 otherwise."""
    if len(answers) < 2:
        return 0.0
    if question is not None and question.kind in ORDINAL_KINDS:
        points = [c.value for c in question.choices]
        span = (max(points) - min(points)) or 1
        return (max(answers) - min(answers)) / span
    first = answers[0]
    return 0.0 if all(same_answer(question, first, a) for a in answers[1:]) else 1.0


def disputed(question: Question | None, answers: Sequence[Any],
             threshold: float = SPREAD) -> float | None:
    """The spread of answers when they disagree by the rule above (a scale: further apart than
    `threshold`; text: never; anything else: any difference), else None."""
    if len(answers) < 2 or (question is not None and question.kind in NEVER_DISPUTED):
        return None
    found = spread(question, answers)
    if question is not None and question.kind in ORDINAL_KINDS:
        return found if found > threshold else None
    return found if found > 0 else None


def close(question: Question | None, answers: Sequence[Any],
          threshold: float = SPREAD) -> bool:
    """Whether a scale's answers differ but stay within `threshold`: no dispute, kept with the
    mean of their rewards."""
    return question is not None and question.kind in ORDINAL_KINDS and len(answers) >= 2 \
        and 0 < spread(question, answers) <= threshold


def modal_spread(question: Question, answers: Sequence[Any]) -> float:
    """How disputed a target is, for ordering the worst first: a scale's spread, else the
    share of answers that are not the most common one (two of three agreeing: a third)."""
    if question.kind in ORDINAL_KINDS:
        return spread(question, answers)
    modal = Counter(decision_of(a) if question.kind == "correction" else _canonical(a)
                    for a in answers).most_common(1)[0][1]
    return 1 - modal / len(answers)
