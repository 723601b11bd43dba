"""Deterministic detectors of orchestration faults: pure functions of a trace's analysis.

Each detector looks for one fault and, where it finds it, proposes an answer to one rubric
question on one target (a stop, an aggregate, a spawn, a message, a delegation), on that
question's own scale, with a confidence, the ids of the events that are its evidence and one
sentence a reviewer reads ("premature: e15 returned after the stop e13").

Detectors stay silent on what they find nothing wrong with: no suggestion is made (not the
question's "fine" answer with a low confidence), so a faithful trace has no suggestions and a
reviewer's queue is not filled with "looks fine". `FINE` names, per question, the answer that
silence stands for, for agreement figures that need an answer on every target.

Text similarity is rapidfuzz's (`fuzz.token_sort_ratio`, `fuzz.token_set_ratio` with its
default processor); no scoring is written here. docs/suggestions.md gives each rule, its
threshold and why.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from rapidfuzz import fuzz, utils
from rapidfuzz.distance import Indel

from viz_app.analysis import Analysis, analyze
from viz_app.labels.rubric import Rubric, targets
from viz_app.labels.suggestion import Producer, Suggestion
from viz_app.model import Event, Trace

VERSION = "2"
"""The rules' version: change it when a rule or threshold changes, so stored suggestions of the
old rules stay apart from the new ones."""

PRODUCER = Producer(name="rules", version=VERSION)

FINE: dict[str, Any] = {
    "stopping_correctness": "correct",
    "aggregation_quality": 5,
    "aggregation_issues": [],
    "spawn_necessity": "necessary",
    "delegation_fit": "right_agent",
    "message_necessity": "necessary",
}
"""The answer a detector's silence stands for, per question it answers."""

# -- thresholds (docs/suggestions.md says why each is where it is) ---------------------------

NEAR_DUPLICATE = 90.0
"""Word-level similarity (0-100, `near_duplicate`) at or above which two texts are
near-duplicates: at most one word in ten differs."""

COVERED = 85.0
"""rapidfuzz token_set_ratio (0-100) at or above which a text's content is present in another
(the smaller text's words are, nearly all, in the larger one)."""

MIN_WORDS = 4
"""Texts with fewer words than this are too short to compare (a pointer, "done")."""

DUPLICATE_WINDOW = 50
"""A message (a child's task, a delegation) is compared with at most this many earlier ones to
the same agent (siblings, delegations), so a long trace stays linear."""

SAME_SUBJECT = 40.0
"""rapidfuzz token_set_ratio (0-100), figures left out, at or above which two results speak
about the same thing (so different figures in them disagree)."""

DROPPED = 40.0
"""rapidfuzz token_set_ratio (0-100) below which a merged result is absent from the output."""

DROP_WORDS = 8
"""A merged result needs this many words before its absence counts as a drop."""

TASK_CALLS = 3
"""A child's task, when no message gives it, is read from its first this many tool calls."""

MAX_INPUTS = 64
"""An aggregate's first this many inputs are compared pairwise (a wide swarm's are not)."""

_FIGURE = re.compile(r"(?<![\w.])\d[\d.,:/%-]*\w*")
"""A figure: a version, a date, a count, a percentage, as written."""

_HEDGE = re.compile(r"\b(disagree\w*|conflict\w*|contradict\w*|however|whereas|unclear|"
                    r"unconfirmed|unverified|sources differ|but)\b", re.IGNORECASE)
"""Words by which an output says that its sources disagree."""

_CAVEAT = re.compile(r"\b(not (yet )?(confirmed|verified|checked)|unconfirmed|unverified|"
                     r"correlation only|single source|uncertain|tentative|preliminary|"
                     r"speculative|rumou?red|unclear)\b", re.IGNORECASE)
"""Words by which a result says its claim is not established."""

ANCHOR_LENGTH = 3
"""A claim's anchor is a token with a digit of at least this many characters (v2.3.0, 3.12,
2023): an output that repeats one repeats the claim."""


@dataclass(frozen=True)
class Finding:
    """One detector's proposed answer on one target (before it becomes a `Suggestion`)."""

    rule: str
    event_id: str
    question: str
    value: Any
    confidence: float
    evidence: tuple[str, ...]
    explanation: str


# -- text ------------------------------------------------------------------------------------

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
    return fuzz.token_set_ratio(_FIGURE.sub(" ", a), _FIGURE.sub(" ", b),
                                processor=utils.default_process)


def covered(part: str, whole: str) -> float:
    """How far one text's words are present in another (rapidfuzz token_set_ratio, 0-100: 100
    when either's words are all in the other)."""
    return fuzz.token_set_ratio(part, whole, processor=utils.default_process)


# -- what the detectors share --------------------------------------------------------------


@dataclass
class Context:
    """The analysis of one trace and the facts several detectors read from it."""

    analysis: Analysis
    _ready: dict[tuple[str, str], tuple[Event, Event, list[Event]] | None] = field(
        default_factory=dict)
    """`answer_ready` per (agent, stop): late stop and over-spawning both ask."""

    @property
    def trace(self) -> Trace:
        """The trace analysed."""
        return self.analysis.trace

    def event(self, event_id: str) -> Event:
        """An event of the trace by id."""
        return self.trace.event(event_id)

    def pos(self, event_id: str) -> int:
        """An event's place in the time order."""
        return self.analysis.position[event_id]

    @cached_property
    def delegated(self) -> dict[str, list[tuple[str, Event]]]:
        """agent -> [(agent it handed work to, the spawn or delegate event)], in time order."""
        handed: dict[str, list[tuple[str, Event]]] = defaultdict(list)
        for e in self.analysis.order:
            link = self.analysis.link_of(e)
            if link is not None and link[0] in ("spawn", "delegate"):
                handed[link[1]].append((link[2], e))
        return dict(handed)

    @cached_property
    def answers_to(self) -> dict[str, list[Event]]:
        """agent -> the returns (and messages) other agents sent it, in time order."""
        got: dict[str, list[Event]] = defaultdict(list)
        for e in self.analysis.order:
            link = self.analysis.link_of(e)
            if link is not None and link[0] in ("return", "message"):
                got[link[2]].append(e)
        return dict(got)

    def sender(self, e: Event) -> str:
        """Who sent a return or message: its `from`, else the agent it belongs to."""
        return e.from_ or self.analysis.actor[e.id]

    @cached_property
    def _positions(self) -> dict[str, list[int]]:
        return {a: [self.pos(e.id) for e in evs] for a, evs in self.analysis.events_of.items()}

    def first_after(self, agent: str, at: int) -> Event | None:
        """An agent's first event after a position of the time order, if any."""
        positions = self._positions.get(agent, [])
        i = bisect_right(positions, at)
        return self.analysis.events_of[agent][i] if i < len(positions) else None

    @cached_property
    def _returns(self) -> dict[tuple[str, str], list[Event]]:
        found: dict[tuple[str, str], list[Event]] = defaultdict(list)
        for to, events in self.answers_to.items():
            for e in events:
                if e.type == "return":
                    found[(self.sender(e), to)].append(e)
        return dict(found)

    def returns_of(self, child: str, parent: str) -> list[Event]:
        """The returns one agent sent another, in time order."""
        return self._returns.get((child, parent), [])

    def stop_of(self, agent: str) -> Event | None:
        """An agent's last stop decision (or the inferred stop, when it is the agent's)."""
        for point in reversed(self.analysis.stops):
            if point.agent == agent:
                return self.event(point.event_id)
        return None

    @cached_property
    def used_results(self) -> set[str]:
        """Ids of the events an aggregate merged."""
        return {i for point in self.analysis.aggregates for i in point.inputs}

    @cached_property
    def aggregators(self) -> set[str]:
        """The agents that aggregate at least once."""
        return {point.agent for point in self.analysis.aggregates}

    def task_of(self, parent: str, child: str, spawn: Event) -> tuple[str, str]:
        """(the task a spawned child was given, where it was read): the parent's first message
        or delegation to it; else the child's first tool calls; else the spawn's own text
        (`near_duplicate` ignores the figures of numbered names)."""
        start = self.pos(spawn.id)
        for e in self.analysis.events_of.get(parent, []):
            if self.pos(e.id) > start and e.to == child and e.text and (
                    e.type == "message" or e.decision == "delegate"):
                return e.text, "message"
        calls = [e.text for e in self.analysis.events_of.get(child, [])[:TASK_CALLS * 4]
                 if e.type == "tool_call" and e.text][:TASK_CALLS]
        if calls:
            return " ".join(calls), "tools"
        return spawn.text, "spawn"

    def answer_ready(self, agent: str, stop_id: str) -> tuple[Event, Event, list[Event]] | None:
        """(the earliest return to the agent, or aggregate of it, that already held its final
        answer, that final answer, the spawns and delegations it made between the two), when
        there were any such; else None."""
        key = (agent, stop_id)
        if key in self._ready:
            return self._ready[key]
        self._ready[key] = None
        stop = self.event(stop_id)
        final = self.final_answer(agent, stop)
        if final is None or final.type != "aggregate" or words(final.text) < MIN_WORDS:
            return None
        end = self.pos(final.id)
        candidates = [e for e in self.answers_to.get(agent, []) if e.type == "return"]
        candidates += [e for e in self.analysis.events_of.get(agent, [])
                       if e.type == "aggregate"]
        candidates.sort(key=lambda e: self.pos(e.id))
        for earlier in candidates:
            if self.pos(earlier.id) >= end:
                break
            if words(earlier.text) < words(final.text) * 0.8 or \
                    covered(final.text, earlier.text) < COVERED:
                continue
            rounds = [e for _, e in self.delegated.get(agent, [])
                      if self.pos(earlier.id) < self.pos(e.id) < self.pos(stop_id)]
            if rounds:
                self._ready[key] = (earlier, final, rounds)
            break
        return self._ready[key]

    def final_answer(self, agent: str, stop: Event) -> Event | None:
        """What an agent answered when it stopped: its last aggregate at or before the stop,
        else the stop itself when it carries text."""
        at = self.pos(stop.id)
        for e in reversed(self.analysis.events_of.get(agent, [])):
            if self.pos(e.id) <= at and e.type == "aggregate" and e.text:
                return e
        return stop if stop.text else None


# -- O5: premature stop ------------------------------------------------------------------------


def premature_stop(ctx: Context) -> list[Finding]:
    """A stop while an agent the stopping agent spawned or delegated to has not returned (it
    still works after the stop, or its return comes after it); stronger when the final answer
    leaves out what a late return said."""
    found: list[Finding] = []
    for point in ctx.analysis.stops:
        stop = ctx.event(point.event_id)
        agent, at = point.agent, ctx.pos(stop.id)
        answers = ctx.answers_to.get(agent, [])
        late_returns = [r for r in answers if ctx.pos(r.id) > at and r.type == "return"]
        late_from = {ctx.sender(r) for r in late_returns}
        answered_at: dict[str, list[int]] = defaultdict(list)
        for r in answers:
            answered_at[ctx.sender(r)].append(ctx.pos(r.id))
        working: list[tuple[str, Event]] = []
        for child, handed in ctx.delegated.get(agent, []):
            start = ctx.pos(handed.id)
            if start > at or child in late_from:
                continue
            if any(start < p < at for p in answered_at.get(child, ())):
                continue
            after = ctx.first_after(child, at)
            if after is not None:
                working.append((child, after))
        if not late_returns and not working:
            continue
        final = ctx.final_answer(agent, stop)
        missed = [r for r in late_returns if final is not None and words(r.text) >= MIN_WORDS
                  and covered(r.text, final.text) < COVERED]
        if missed:
            r = missed[0]
            confidence = 0.85
            explanation = (f"premature: {r.id} from {ctx.sender(r)} returned after the stop "
                           f"{stop.id}, and the final answer {final.id} leaves out what it said")
            evidence = (stop.id, *(m.id for m in missed), final.id)
        elif late_returns:
            r = late_returns[0]
            confidence = 0.7
            explanation = (f"premature: {r.id} from {ctx.sender(r)} returned after the stop "
                           f"{stop.id}")
            evidence = (stop.id, *(x.id for x in late_returns))
        else:
            child, first = working[0]
            confidence = 0.6
            names = ", ".join(c for c, _ in working[:5]) + (" ..." if len(working) > 5 else "")
            explanation = (f"premature: the stop {stop.id} came while {names} had not returned "
                           f"({child} still worked at {first.id})")
            evidence = (stop.id, *(e.id for _, e in working))
        found.append(Finding("premature_stop", stop.id, "stopping_correctness", "premature",
                             confidence, _ids(evidence), explanation))
    return found


# -- O5: late stop ----------------------------------------------------------------------------


def late_stop(ctx: Context) -> list[Finding]:
    """A stop whose final answer was already present in an earlier return or aggregate, with
    new rounds of work (spawns, delegations) between that point and the stop."""
    found: list[Finding] = []
    for point in ctx.analysis.stops:
        ready = ctx.answer_ready(point.agent, point.event_id)
        if ready is None:
            continue
        earlier, final, rounds = ready
        stop = ctx.event(point.event_id)
        span = max(float(stop.t) - float(ctx.analysis.order[0].t), 1e-9)
        share = max(0.0, min(1.0, (float(stop.t) - float(earlier.t)) / span))
        confidence = round(min(0.85, 0.5 + 0.35 * share), 2)
        explanation = (f"late: the final answer {final.id} was already in {earlier.id} at "
                       f"t={float(earlier.t):g}; the {len(rounds)} spawn(s) or delegation(s) after "
                       f"it ({rounds[0].id} ...) brought nothing the answer uses")
        found.append(Finding("late_stop", stop.id, "stopping_correctness", "late", confidence,
                             _ids((stop.id, earlier.id, *(r.id for r in rounds), final.id)),
                             explanation))
    return found


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
        if _FIGURE.fullmatch(core):
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
        scores = [(covered(r.text, out), r) for r in inputs]
        quoted = [r for score, r in scores if score >= COVERED]
        dropped = [r for score, r in scores if score < DROPPED and words(r.text) >= DROP_WORDS
                   and not any(near_duplicate(r.text, q.text, NEAR_DUPLICATE) >= NEAR_DUPLICATE
                               for q in quoted)]
        if quoted and dropped:
            first = dropped[0]
            found.append(Finding(
                "dropped_result", point.event_id, "aggregation_quality", 2, 0.5,
                _ids((point.event_id, *(r.id for r in dropped), quoted[0].id)),
                f"dropped: the output follows {quoted[0].id} closely but leaves out what "
                f"{first.id} said"))
            found.append(Finding(
                "dropped_result", point.event_id, "aggregation_issues", ["dropped_result"], 0.5,
                _ids((point.event_id, *(r.id for r in dropped))),
                f"dropped a result: {first.id}"))
            continue
        stated = claims(out)
        conflict = None
        if stated and not _hedged(out):
            said = [(r, claims(r.text)) for r in inputs]
            for (a, ca), (b, cb) in _pairs(said):
                for key, x, y in _disagree(ca, cb):
                    if same_subject(a.text, b.text) < SAME_SUBJECT:
                        break
                    out_says = stated.get(key, set())
                    has_x = any(_same_figure(x, z) for z in out_says)
                    has_y = any(_same_figure(y, z) for z in out_says)
                    if has_x != has_y:
                        conflict = (a, b, key, x, y) if has_x else (b, a, key, y, x)
                        break
                if conflict:
                    break
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


# -- O1: over-spawning ----------------------------------------------------------------------


def over_spawning(ctx: Context) -> list[Finding]:
    """Children whose task is a near-duplicate of an earlier sibling's (same role), children
    spawned after the final answer was already in hand, and children whose return the parent
    never used before it stopped."""
    found: list[Finding] = []
    late_after: dict[str, tuple[Event, Event]] = {}
    for point in ctx.analysis.stops:
        ready = ctx.answer_ready(point.agent, point.event_id)
        if ready is not None:
            earlier, _, rounds = ready
            for r in rounds:
                if r.type == "spawn":
                    late_after[r.id] = (earlier, ctx.event(point.event_id))
    used = ctx.used_results
    for parent, handed in ctx.delegated.items():
        spawns = [(child, e) for child, e in handed if e.type == "spawn"]
        tasks = [ctx.task_of(parent, child, e) for child, e in spawns]
        for k, (child, e) in enumerate(spawns):
            if e.id in late_after:
                earlier, stop = late_after[e.id]
                found.append(Finding(
                    "over_spawning", e.id, "spawn_necessity", "redundant", 0.7,
                    (e.id, earlier.id, stop.id),
                    f"redundant: {child} was spawned after the answer was already in "
                    f"{earlier.id}"))
                continue
            task, basis = tasks[k]
            if words(task) >= 1:
                twin = None
                for j in range(max(0, k - DUPLICATE_WINDOW), k):
                    other, other_basis = tasks[j]
                    if other_basis == basis and ctx.analysis.role_of(spawns[j][0]) == \
                            ctx.analysis.role_of(child) and \
                            near_duplicate(task, other, NEAR_DUPLICATE) >= NEAR_DUPLICATE:
                        twin = spawns[j]
                        break
                if twin is not None:
                    confidence = 0.45 if basis == "spawn" else 0.65
                    found.append(Finding(
                        "over_spawning", e.id, "spawn_necessity", "redundant", confidence,
                        (e.id, twin[1].id),
                        f"redundant: {child} was given the same task as {twin[0]} "
                        f"({twin[1].id})"))
                    continue
            returns = ctx.returns_of(child, parent)
            stop = ctx.stop_of(parent)
            if returns and stop is not None and parent in ctx.aggregators and all(
                    ctx.pos(r.id) < ctx.pos(stop.id) and r.id not in used
                    and words(r.text) >= DROP_WORDS for r in returns):
                found.append(Finding(
                    "over_spawning", e.id, "spawn_necessity", "redundant", 0.4,
                    _ids((e.id, *(r.id for r in returns), stop.id)),
                    f"redundant: what {child} returned ({returns[0].id}) was never used "
                    f"before the stop {stop.id}"))
    return found


# -- O3: redundant message ----------------------------------------------------------------------


def redundant_message(ctx: Context) -> list[Finding]:
    """A message that nearly repeats an earlier message to the same agent, or that its
    recipient never acts on (it has no event after it)."""
    found: list[Finding] = []
    earlier: dict[str, list[Event]] = defaultdict(list)
    for e in ctx.analysis.order:
        if e.type != "message" or not e.to:
            continue
        before = earlier[e.to]
        text = e.text
        twin = None
        if words(text) >= MIN_WORDS:
            for other in reversed(before[-DUPLICATE_WINDOW:]):
                if near_duplicate(text, other.text, NEAR_DUPLICATE) >= NEAR_DUPLICATE:
                    twin = other
                    break
        before.append(e)
        if twin is not None:
            found.append(Finding(
                "redundant_message", e.id, "message_necessity", "redundant", 0.7,
                (e.id, twin.id), f"redundant: it repeats {twin.id} to {e.to}"))
            continue
        if e.to in ctx.analysis.events_of and ctx.first_after(e.to, ctx.pos(e.id)) is None:
            last = ctx.analysis.events_of[e.to][-1]
            found.append(Finding(
                "redundant_message", e.id, "message_necessity", "redundant", 0.45,
                _ids((e.id, last.id)), f"redundant: {e.to} does nothing after {e.id} (its "
                f"last event is {last.id})"))
    return found


# -- O2: delegation fit --------------------------------------------------------------------------


def wrong_delegate(ctx: Context) -> list[Finding]:
    """A delegation whose task the same agent later hands, nearly word for word, to another
    agent after the first has answered: the first agent did not do it."""
    found: list[Finding] = []
    for parent, handed in ctx.delegated.items():
        delegations = [(child, e) for child, e in handed if e.decision == "delegate"]
        for k, (child, e) in enumerate(delegations):
            if words(e.text) < MIN_WORDS:
                continue
            answered = ctx.returns_of(child, parent)
            for other, again in delegations[k + 1:k + 1 + DUPLICATE_WINDOW]:
                if other == child or \
                        near_duplicate(e.text, again.text, NEAR_DUPLICATE) < NEAR_DUPLICATE:
                    continue
                reply = [r for r in answered if ctx.pos(e.id) < ctx.pos(r.id) < ctx.pos(again.id)]
                if reply:
                    found.append(Finding(
                        "wrong_delegate", e.id, "delegation_fit", "wrong_agent", 0.55,
                        (e.id, reply[0].id, again.id),
                        f"wrong agent: after {child} answered ({reply[0].id}), the same task "
                        f"went to {other} ({again.id})"))
                    break
    return found


def _pairs(items: list) -> Iterable[tuple]:
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            yield a, b


def _ids(ids: Iterable[str]) -> tuple[str, ...]:
    """Event ids once each, in the order given."""
    return tuple(dict.fromkeys(ids))


DETECTORS: dict[str, Callable[[Context], list[Finding]]] = {
    "premature_stop": premature_stop,
    "late_stop": late_stop,
    "unfaithful_merge": unfaithful_merge,
    "over_spawning": over_spawning,
    "redundant_message": redundant_message,
    "wrong_delegate": wrong_delegate,
}
"""Every detector by name, in the order they run."""


# -- findings to suggestions ----------------------------------------------------------------


def findings(trace: Trace, names: Iterable[str] | None = None) -> list[Finding]:
    """What the detectors (all, or those named) find in one trace; where two findings answer
    the same question on the same target, the more confident one."""
    ctx = Context(analyze(trace))
    best: dict[tuple[str, str], Finding] = {}
    for name in names if names is not None else DETECTORS:
        for f in DETECTORS[name](ctx):
            key = (f.event_id, f.question)
            if key not in best or f.confidence > best[key].confidence:
                best[key] = f
    return list(best.values())


def suggest(trace: Trace, rubric: Rubric) -> list[Suggestion]:
    """The rules' suggestions on one trace, for the questions the rubric asks about each target
    (a finding whose question or answer the rubric does not have is left out)."""
    asked: dict[str, set[str]] = defaultdict(set)
    for target in targets(rubric, analyze(trace)):
        for question in target.questions:
            asked[question].add(target.key)
    made: list[Suggestion] = []
    sha256 = trace.sha256
    for f in findings(trace):
        if f.event_id not in asked.get(f.question, ()):
            continue
        question = rubric.questions_by_id[f.question]
        values = f.value if question.kind == "tags" else [f.value]
        if any(question.choice(v) is None for v in values):
            continue
        made.append(Suggestion(
            trace_id=trace.trace_id, trace_sha256=sha256, event_id=f.event_id,
            question=f.question, value=f.value, confidence=f.confidence, producer=PRODUCER,
            evidence=f.evidence, explanation=f.explanation))
    return made
