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
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rapidfuzz import fuzz, utils

from viz_app.analysis import Analysis, analyze
from viz_app.labels.rubric import Rubric, targets
from viz_app.labels.suggestion import Producer, Suggestion
from viz_app.model import Event, Trace

VERSION = "1"
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
"""rapidfuzz token_sort_ratio (0-100) at or above which two texts are near-duplicates."""

COVERED = 85.0
"""rapidfuzz token_set_ratio (0-100) at or above which a text's content is present in another
(the smaller text's words are, nearly all, in the larger one)."""

MIN_WORDS = 4
"""Texts with fewer words than this are too short to compare (a pointer, "done")."""

DUPLICATE_WINDOW = 50
"""A message is compared with at most this many earlier messages to the same agent, so a long
trace stays linear."""


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


def near_duplicate(a: str, b: str) -> float:
    """How alike two texts are, word order ignored (rapidfuzz token_sort_ratio, 0-100)."""
    return fuzz.token_sort_ratio(a, b, processor=utils.default_process)


def covered(part: str, whole: str) -> float:
    """How far one text's words are present in another (rapidfuzz token_set_ratio, 0-100: 100
    when either's words are all in the other)."""
    return fuzz.token_set_ratio(part, whole, processor=utils.default_process)


# -- what the detectors share --------------------------------------------------------------


@dataclass
class Context:
    """The analysis of one trace and the facts several detectors read from it."""

    analysis: Analysis
    findings: list[Finding] = field(default_factory=list)

    @property
    def trace(self) -> Trace:
        return self.analysis.trace

    def event(self, event_id: str) -> Event:
        return self.trace.event(event_id)

    def pos(self, event_id: str) -> int:
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
        return e.from_ or self.analysis.actor[e.id]

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
        late_returns = [r for r in ctx.answers_to.get(agent, []) if ctx.pos(r.id) > at
                        and r.type == "return"]
        late_from = {ctx.sender(r) for r in late_returns}
        working: list[tuple[str, Event]] = []
        for child, handed in ctx.delegated.get(agent, []):
            if ctx.pos(handed.id) > at or child in late_from:
                continue
            returned = any(ctx.sender(r) == child and ctx.pos(handed.id) < ctx.pos(r.id) < at
                           for r in ctx.answers_to.get(agent, []))
            after = [e for e in ctx.analysis.events_of.get(child, []) if ctx.pos(e.id) > at]
            if not returned and after:
                working.append((child, after[0]))
        if not late_returns and not working:
            continue
        final = ctx.final_answer(agent, stop)
        missed = [r for r in late_returns if final is not None and words(r.text) >= MIN_WORDS
                  and covered(r.text, final.text) < COVERED]
        if missed:
            r = missed[0]
            confidence = 0.85
            explanation = (f"premature: {r.id} from {ctx.sender(r)} returned after the stop "
                           f"{stop.id}, and the final answer"
                           f"{f' {final.id}' if final is not None else ''} leaves out what it said")
            evidence = (stop.id, *(m.id for m in missed), *([final.id] if final else []))
        elif late_returns:
            r = late_returns[0]
            confidence = 0.7
            explanation = f"premature: {r.id} from {ctx.sender(r)} returned after the stop {stop.id}"
            evidence = (stop.id, *(x.id for x in late_returns))
        else:
            child, first = working[0]
            confidence = 0.6
            names = ", ".join(c for c, _ in working)
            explanation = (f"premature: the stop {stop.id} came while {names} had not returned "
                           f"({child} still worked at {first.id})")
            evidence = (stop.id, *(e.id for _, e in working))
        found.append(Finding("premature_stop", stop.id, "stopping_correctness", "premature",
                             confidence, tuple(dict.fromkeys(evidence)), explanation))
    return found


DETECTORS: dict[str, Callable[[Context], list[Finding]]] = {
    "premature_stop": premature_stop,
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
    for f in findings(trace):
        if f.event_id not in asked.get(f.question, ()):
            continue
        question = rubric.questions_by_id[f.question]
        values = f.value if question.kind == "tags" else [f.value]
        if any(question.choice(v) is None for v in values):
            continue
        made.append(Suggestion(
            trace_id=trace.trace_id, trace_sha256=trace.sha256, event_id=f.event_id,
            question=f.question, value=f.value, confidence=f.confidence, producer=PRODUCER,
            evidence=f.evidence, explanation=f.explanation))
    return made
