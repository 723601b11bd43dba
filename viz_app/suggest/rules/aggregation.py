"""O4, aggregation: an aggregate that drops a result it merged, or repeats one of two
disagreeing results as if they agreed, or loses the caveat a result put on its claim."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from viz_app.suggest.overlap import STOPWORDS, sentences
from viz_app.suggest.rules.facts import Context, Finding, ids_once
from viz_app.suggest.rules.thresholds import (ABSENT, ANCHOR_LENGTH, DROP_WORDS, LOST_SHARE,
                                              MAX_INPUTS, MIN_WORDS, PRESENT, SAME_SUBJECT)
from viz_app.suggest.rules.wording import FIGURE, same_subject, words

_HEDGE = re.compile(r"\b(disagree\w*|conflict\w*|contradict\w*|however|whereas|unclear|"
                    r"unconfirmed|unverified|sources differ|but)\b", re.IGNORECASE)
"""Words by which an output says that its sources disagree."""

_CAVEAT = re.compile(r"\b(not (yet )?(confirmed|verified|checked)|unconfirmed|unverified|"
                     r"correlation only|single source|uncertain|tentative|preliminary|"
                     r"speculative|rumou?red|unclear)\b", re.IGNORECASE)
"""Words by which a result says its claim is not established."""


def _pairs(items: list) -> Iterable[tuple]:
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            yield a, b



# -- O4: dropped or unfaithful merge ------------------------------------------------------------


def _figure(text: str) -> str:
    return text.rstrip(".,;:)%").lower()


def _same_figure(a: str, b: str) -> bool:
    """Whether two figures say the same: equal as written, or one is the other rounded
    (22.2 and 22.22 agree; versions 3.12 and 3.13 do not)."""
    if a == b:
        return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    places = min(len(a.partition(".")[2]), len(b.partition(".")[2]))
    return round(x, places) == round(y, places)


def claims(text: str) -> dict[str, set[str]]:
    """The figures a text states, keyed by the word they are about: the nearest word of three
    or more letters before each, at most one short word between (`Python 3.13` and `Lagos at
    15.4` are python -> {3.13} and lagos -> {15.4})."""
    found: dict[str, set[str]] = defaultdict(set)
    previous, gap = "", 0
    for token in text.split():
        core = token.strip("()[]{},;:.!?'\"")
        if FIGURE.fullmatch(core):
            if previous:
                found[previous].add(_figure(core))
            previous = ""
            continue
        word = core.lower()
        if word.isalpha() and len(word) >= 3:
            previous, gap = word, 0
        elif word.isalpha() and gap == 0 and previous:
            gap = 1
        else:
            previous = ""
    return dict(found)


def _disagree(a: dict[str, set[str]], b: dict[str, set[str]]) -> list[tuple[str, str, str]]:
    """(subject, a's figure, b's figure) where two texts give a subject different figures."""
    return [(key, x, y) for key in a.keys() & b.keys() for x in a[key] for y in b[key]
            if not any(_same_figure(x, z) for z in b[key])
            and not any(_same_figure(y, z) for z in a[key])]


def _named(text: str, figure: str) -> str:
    """What the sentence stating a figure is about: the nearest name before the figure (a
    word starting with a capital, not a function word: Redis, LFP, Lagos, Python), else the
    sentence's first content word, lower-cased; '' when the figure is not found."""
    for sentence in sentences(text):
        said = [w.strip("()[]{},;:.!?'\"") for w in sentence.split()]
        at = next((i for i, w in enumerate(said) if _figure(w) == figure), None)
        if at is None:
            continue
        before = [w for w in said[:at] if w and w.lower() not in STOPWORDS
                  and not any(ch.isdigit() for ch in w)]
        for w in reversed(before):
            if w[0].isupper():
                return w.lower()
        return before[0].lower() if before else ""
    return ""


def _hedged(text: str) -> bool:
    """Whether a text says that sources disagree."""
    return bool(_HEDGE.search(text))


def anchors(text: str) -> set[str]:
    """The tokens with a digit that anchor a text's claims (versions, dates, figures)."""
    found = set()
    for token in text.split():
        core = token.strip("()[]{},;:.!?'\"").lower()
        if len(core) >= ANCHOR_LENGTH and any(ch.isdigit() for ch in core):
            found.add(core)
    return found


def unfaithful_merge(ctx: Context) -> list[Finding]:
    """An aggregate that quotes some results closely and leaves out another entirely; or that
    merged two results about the same thing that state different figures and repeats one's,
    none of the other's, without saying they disagree; or that repeats a result's claim without
    the caveat the result put on it ("correlation only", "not yet confirmed")."""
    found: list[Finding] = []
    for point in ctx.analysis.aggregates:
        out = ctx.event(point.event_id).text
        inputs = [ctx.event(i) for i in point.inputs[:MAX_INPUTS] if ctx.event(i).text]
        if words(out) < MIN_WORDS or len(inputs) < 2:
            continue
        stated = claims(out)
        conflict = None
        if stated and not _hedged(out):
            said = [(r, claims(r.text)) for r in inputs]
            for (a, ca), (b, cb) in _pairs(said):
                if ctx.sender(a) == ctx.sender(b):
                    continue  # one agent's later result corrects its earlier one
                for key, x, y in _disagree(ca, cb):
                    if same_subject(a.text, b.text) < SAME_SUBJECT:
                        break
                    if _named(a.text, x) != _named(b.text, y):
                        continue  # Redis's latency and MongoDB's are two facts, not one
                    out_says = stated.get(key, set())
                    has_x = any(_same_figure(x, z) for z in out_says)
                    has_y = any(_same_figure(y, z) for z in out_says)
                    if has_x != has_y:
                        conflict = (a, b, key, x, y) if has_x else (b, a, key, y, x)
                        break
                if conflict:
                    break
        merged = ctx.merged(point.event_id)
        kept = [m for m in merged if m.presence >= PRESENT]
        roles = {ctx.analysis.role_of(m.sender) for m in kept}
        absent = [m for m in merged if m.presence < ABSENT and m.words >= DROP_WORDS]
        lost = [m for m in absent if ctx.analysis.role_of(m.sender) in roles]
        if conflict is None and kept and lost and \
                len(absent) <= max(1.0, len(merged) * LOST_SHARE):
            first, best = lost[0], max(kept, key=lambda m: m.presence)
            missing = ", ".join(first.missing) or "its content"
            found.append(Finding(
                "dropped_result", point.event_id, "aggregation_quality", 2,
                round(min(0.8, 0.5 + 0.3 * (ABSENT - first.presence) / ABSENT), 2),
                ids_once((point.event_id, *(e.id for m in lost for e in m.events),
                      best.events[0].id)),
                f"dropped: the output keeps what {best.label} said ({best.presence:.0%} of "
                f"its own words and figures) but {first.presence:.0%} of what {first.label} "
                f"said ({missing} are missing)"))
            found.append(Finding(
                "dropped_result", point.event_id, "aggregation_issues", ["dropped_result"], 0.5,
                ids_once((point.event_id, *(e.id for m in lost for e in m.events))),
                f"dropped a result: {first.label}"))
            continue
        if conflict is None and not _hedged(out) and not _CAVEAT.search(out):
            for r in inputs:
                caveat = _CAVEAT.search(r.text)
                shared = anchors(r.text) & anchors(out) if caveat else set()
                if shared:
                    claim = sorted(shared)[0]
                    found.append(Finding(
                        "unfaithful_merge", point.event_id, "aggregation_quality", 2, 0.6,
                        (point.event_id, r.id),
                        f"unfaithful: {r.id} says its claim on {claim} is "
                        f"'{caveat.group(0).lower()}', the output states it without the caveat"))
                    found.append(Finding(
                        "unfaithful_merge", point.event_id, "aggregation_issues",
                        ["unfaithful_merge"], 0.6, (point.event_id, r.id),
                        f"unfaithful merge: the caveat of {r.id} is dropped"))
                    break
        if conflict:
            kept, lost, key, x, y = conflict
            found.append(Finding(
                "unfaithful_merge", point.event_id, "aggregation_quality", 1, 0.75,
                (point.event_id, kept.id, lost.id),
                f"unfaithful: {kept.id} says {key} {x}, {lost.id} says {key} {y}, and the "
                f"output repeats {x} without saying they disagree"))
            found.append(Finding(
                "unfaithful_merge", point.event_id, "aggregation_issues",
                ["dropped_result", "conflict_unresolved"], 0.75,
                (point.event_id, kept.id, lost.id),
                f"conflict left unresolved: {lost.id} is contradicted by {kept.id} and dropped"))
    return found
