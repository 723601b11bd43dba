"""Deterministic detectors of orchestration faults: pure functions of a trace's analysis.

Each detector looks for one fault and, where it finds it, proposes an answer to one rubric
question on one target (a stop, an aggregate, a spawn, a message, a delegation), on that
question's own scale, with a confidence, the ids of the events that are its evidence and one
sentence a reviewer reads ("premature: e15 returned after the stop e13").

Detectors stay silent on what they find nothing wrong with: no suggestion is made (not the
question's "fine" answer with a low confidence), so a faithful trace has no suggestions and a
reviewer's queue is not filled with "looks fine". `FINE` names, per question, the answer that
silence stands for, for agreement figures that need an answer on every target.

Whether one text's content is in another (a dropped result, an answer already held) is read
from content words weighted by their rarity in the trace (`viz_app.suggest.overlap`); whether
two messages repeat each other, from rapidfuzz's word-level similarity. `signals` gives the
detectors' raw figures on a target, before any threshold, for a learned producer.
docs/suggestions.md gives each rule, its thresholds, the figure that chose each (on the
planted faults of `viz_app.planted`, tuning part) and the detectors' precision and recall.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from rapidfuzz import fuzz, utils
from rapidfuzz.distance import Indel

from viz_app.analysis import Analysis, StopPoint, analyze
from viz_app.labels import LabelTarget, Producer, Rubric, Suggestion, targets
from viz_app.model import Event, Trace
from viz_app.suggest.overlap import (STOPWORDS, Lexicon, content, is_figure, is_number,
                                     is_year, sentences)

VERSION = "3"
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

ABSENT = 0.4
"""A merged result is absent from the output below this presence (0-1, `presence`): the
IDF-weighted share of its distinctive content (what no other merged result says) the output
carries, its best sentence counted when that scores higher."""

PRESENT = 0.5
"""A merge is judged for drops only when it keeps at least one other result at this presence
(0-1) or more: an output that keeps none of its inputs is a rewrite, not a drop."""

LOST_SHARE = 1 / 3
"""At most this share of a merge's parts (one at least) may be absent for them to be drops: an
output that leaves out more is a summary (a swarm's 34 file reports become "hot spots")."""

SENTENCE_TOKENS = 3
"""A sentence of a merged result counts on its own (`presence`) when it has at least this many
distinctive content tokens: shorter ones match by accident."""

OWN_TOKENS = 2
"""A merged result with fewer distinctive content tokens than this says nothing of its own
("Confirmed: ..." beside the result it confirms): it cannot be dropped."""

READY = 0.9
"""An earlier text held the final answer when it carries at least this weighted share (0-1) of
the final answer's content tokens, every figure of it included."""

READY_FIGURES = 2
"""A final answer stating this many figures or more is held by an earlier text that states
them all, whatever its wording (`Context.holds`)."""

READY_WORDS = 0.5
"""An earlier text stating every figure of a final answer held it only with at least this
weighted share (0-1) of the answer's content tokens too."""

READY_TOKENS = 3
"""A final answer needs this many content tokens before an earlier text can be said to hold
it ("Done." is held by everything)."""

SAME_TASK = 0.8
"""Two sibling tasks are the same sub-task at this similarity (0-1) or above: weighted Jaccard
of their content tokens, each weighted by its rarity among the siblings' tasks (a template
every sibling shares weighs nothing), no figure differing."""

SUBJECT_SHARE = 0.25
"""Two siblings' tasks share a subject when they share a word that at most this share of the
siblings' tasks have (two at least, never all of them): "LCO" in "Find the price of LCO" and
"Look up LCO's cost", not the template's "price". Tasks sharing a subject are the same
sub-task when their results also agree (`SAME_RESULT`): a paraphrased task shares few
words."""

SAME_RESULT = 0.6
"""Two siblings' returns at least this alike (`_result_likeness`, 0-1) gave the same
result."""

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


@dataclass(frozen=True)
class Merged:
    """One sender's part of what an aggregate merged (a result split over several returns or
    messages is one part), and how much of it the output carries."""

    sender: str
    events: tuple[Event, ...]
    presence: float
    """The IDF-weighted share of the part's distinctive content tokens (those no other sender's
    part has) that the output has, or its best sentence's share when higher (0-1); 1 when the
    part says nothing of its own (`OWN_TOKENS`) or the output states every number it states,
    bare years aside, or when it states none every token with a digit (a paraphrase, a
    summary of a long result keep the numbers; a year is when a source said it; p99 beside
    84.8 is a name, v2.3.0 alone is the finding), one of them its alone or each of them its
    own (`_stated_by_it`)."""
    words: int
    missing: tuple[str, ...]
    """Up to three of its distinctive words or figures the output lacks, as written."""

    @property
    def label(self) -> str:
        """The part's event ids, for a sentence ("e5" or "e5+e6")."""
        return "+".join(e.id for e in self.events[:3]) + ("+..." if len(self.events) > 3
                                                            else "")


@dataclass(frozen=True)
class Twin:
    """A spawned child's closest earlier sibling of the same role: how alike their tasks and
    their returns are."""

    child: str
    """The earlier sibling."""
    spawn: Event
    """The earlier sibling's spawn."""
    basis: str
    """Where the tasks were read: message, tools or spawn (`Context.task_of`)."""
    task: float
    """Weighted Jaccard similarity of the two tasks' content tokens, each token weighted by
    its rarity among the siblings' tasks (`Lexicon(template=True)`) (0-1; 0 when both name
    figures and not the same ones: shard 3 is not shard 4)."""
    result: float
    """How alike what the two returned is (`_result_likeness`, 0-1)."""

    subject: bool
    """Whether the two tasks share a subject (`SUBJECT_SHARE`)."""

    @property
    def redundant(self) -> bool:
        """The same sub-task: tasks alike (`SAME_TASK`), or sharing a subject with the same
        result (`SAME_RESULT`)."""
        return self.task >= SAME_TASK or (self.subject and self.result >= SAME_RESULT)


# -- what the detectors share --------------------------------------------------------------


@dataclass
class Context:
    """The analysis of one trace and the facts several detectors read from it."""

    analysis: Analysis
    _ready: dict[tuple[str, str], tuple[Event, Event, list[Event]] | None] = field(
        default_factory=dict)
    """`answer_ready` per (agent, stop): late stop and over-spawning both ask."""
    _merged: dict[str, list[Merged]] = field(default_factory=dict)
    """`merged` per aggregate."""
    _found: dict[str, list[Finding]] = field(default_factory=dict)
    """`findings_of` per detector."""

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

    @cached_property
    def lexicon(self) -> Lexicon:
        """Content-token weights over every event text of the trace (`overlap.Lexicon`)."""
        return Lexicon(e.text for e in self.analysis.order if e.text)

    def subtree(self, agent: str) -> list[str]:
        """An agent and every agent below it in the spawn tree, the agent first."""
        found, todo = [], [agent]
        while todo:
            a = todo.pop()
            if a in found:
                continue
            found.append(a)
            todo.extend(self.analysis.children.get(a, ()))
        return found

    def merged(self, aggregate_id: str) -> list[Merged]:
        """An aggregate's inputs (its first `MAX_INPUTS`), one part per sender in the order
        they arrived, each with its presence in the output."""
        if aggregate_id in self._merged:
            return self._merged[aggregate_id]
        point = next(p for p in self.analysis.aggregates if p.event_id == aggregate_id)
        out = content(self.event(aggregate_id).text)
        parts: dict[str, list[Event]] = {}
        for i in point.inputs[:MAX_INPUTS]:
            e = self.event(i)
            if e.text:
                parts.setdefault(self.sender(e), []).append(e)
        tokens = {who: frozenset().union(*(content(e.text) for e in evs))
                  for who, evs in parts.items()}
        lex = self.lexicon
        found: list[Merged] = []
        for who, evs in parts.items():
            others = frozenset().union(*(t for w, t in tokens.items() if w != who))
            own = tokens[who] - others
            figures = {t for t in tokens[who] if is_number(t) and not is_year(t)} or \
                {t for t in tokens[who] if is_figure(t) and not is_year(t)}
            if len(own) < OWN_TOKENS or (figures and figures <= out and (
                    any(not _stated_elsewhere(t, who, tokens) for t in figures)
                    or all(_stated_by_it(t, who, tokens) for t in figures))):
                presence = 1.0  # nothing of its own, or every finding's figure is there
            else:
                presence = lex.coverage(own, out)
                for e in evs:
                    for sentence in sentences(e.text):
                        mine = content(sentence) - others
                        if len(mine) >= SENTENCE_TOKENS:
                            presence = max(presence, lex.coverage(mine, out))
            missing = sorted(own - out, key=lambda t: (-lex.weight(t), t))[:3]
            found.append(Merged(who, tuple(evs), round(presence, 4),
                                sum(words(e.text) for e in evs),
                                tuple(_as_written(missing, " ".join(e.text for e in evs)))))
        self._merged[aggregate_id] = found
        return found

    @cached_property
    def twins(self) -> dict[str, Twin]:
        """spawn id -> the child's closest earlier sibling (same parent, same role, at most
        `DUPLICATE_WINDOW` back), for every spawn that has one."""
        found: dict[str, Twin] = {}
        for parent, handed in self.delegated.items():
            spawns = [(child, e) for child, e in handed if e.type == "spawn"]
            tasks = [self.task_of(parent, child, e) for child, e in spawns]
            # a child's own number in its task names the child, not the task (researcher_2)
            toks = [content(re.sub(re.escape(c), re.sub(r"\d+", "", c), t, flags=re.I))
                    for (t, _), (c, _) in zip(tasks, spawns)]
            results = [frozenset().union(*(content(r.text) for r in self.returns_of(c, parent)))
                       for c, _ in spawns]
            if len(spawns) < 2:
                continue
            # weights over the siblings of one role alone: what every one's task says is the
            # template
            roles = [(self.analysis.role_of(c), tasks[k][1]) for k, (c, _) in enumerate(spawns)]
            lexicons = {
                group: (Lexicon([toks[k] for k in range(len(spawns)) if roles[k] == group],
                                template=True),
                        Lexicon([results[k] for k in range(len(spawns))
                                 if roles[k] == group and results[k]], template=True))
                for group in set(roles)}
            df = {group: Counter(t for k in range(len(spawns)) if roles[k] == group
                                 for t in toks[k]) for group in set(roles)}
            for k, (child, e) in enumerate(spawns):
                best: Twin | None = None
                role = self.analysis.role_of(child)
                lex, rlex = lexicons[roles[k]]
                group = sum(g == roles[k] for g in roles)
                rare = min(max(2, int(SUBJECT_SHARE * group)), group - 1)
                for j in range(max(0, k - DUPLICATE_WINDOW), k):
                    if tasks[j][1] != tasks[k][1] or self.analysis.role_of(spawns[j][0]) != role:
                        continue
                    a, b = toks[k], toks[j]
                    figures_a = {t for t in a if is_figure(t)}
                    figures_b = {t for t in b if is_figure(t)}
                    if figures_a and figures_b and figures_a != figures_b:
                        task = 0.0
                    else:
                        task = lex.similarity(a, b)
                    result = _result_likeness(rlex, results[k], results[j])
                    subject = any(df[roles[k]][t] <= rare for t in a & b)
                    twin = Twin(spawns[j][0], spawns[j][1], tasks[k][1], round(task, 4),
                                round(result, 4), subject)
                    if best is None or (twin.redundant, twin.task, twin.result) > \
                            (best.redundant, best.task, best.result):
                        best = twin
                if best is not None:
                    found[e.id] = best
        return found

    def findings_of(self, name: str) -> list[Finding]:
        """What one detector finds in this trace (computed once)."""
        if name not in self._found:
            self._found[name] = DETECTORS[name](self)
        return self._found[name]

    def in_flight(self, agent: str, stop: Event
                  ) -> tuple[list[Event], list[tuple[str, Event, int]]]:
        """What an agent's stop left in flight: (the returns to it after the stop; for each
        agent it spawned or delegated to before the stop, that had not returned, or that had
        but whose own helpers still return to it after the stop: (that agent, the first event
        of its subtree after the stop, how deep below the stopping agent that event is))."""
        at = self.pos(stop.id)
        answers = self.answers_to.get(agent, [])
        late_returns = [r for r in answers if self.pos(r.id) > at and r.type == "return"]
        late_from = {self.sender(r) for r in late_returns}
        answered_at: dict[str, list[int]] = defaultdict(list)
        for r in answers:
            answered_at[self.sender(r)].append(self.pos(r.id))
        depth = self.analysis.depth_of
        working: list[tuple[str, Event, int]] = []
        seen: set[str] = set()
        for child, handed in self.delegated.get(agent, []):
            start = self.pos(handed.id)
            if start > at or child in late_from or child in seen:
                continue
            seen.add(child)
            below = self.subtree(child)
            firsts = [e for e in (self.first_after(a, at) for a in below) if e is not None]
            if not firsts:
                continue
            first = min(firsts, key=lambda e: self.pos(e.id))
            if any(start < p < at for p in answered_at.get(child, ())):
                inner = set(below)
                late_inside = [e for a in below[1:] for e in self.analysis.events_of.get(a, [])
                               if e.type == "return" and e.to in inner and self.pos(e.id) > at]
                if not late_inside:
                    continue
                first = min(late_inside, key=lambda e: self.pos(e.id))
            who = self.analysis.actor[first.id]
            level = max(1, depth.get(who, 1) - depth.get(agent, 0))
            working.append((child, first, level))
        return late_returns, working

    def answer_ready(self, agent: str, stop_id: str) -> tuple[Event, Event, list[Event]] | None:
        """(the earliest message, return or aggregate of the agent's team, or to it, that
        already held the final answer (`ready`), that final answer, the new work started
        between the two (`_new_work`)), when there was such work; else None. Returns alone are
        not new work: they finish what was asked before."""
        key = (agent, stop_id)
        if key in self._ready:
            return self._ready[key]
        self._ready[key] = None
        stop = self.event(stop_id)
        final = self.final_answer(agent, stop)
        if final is None or len(content(final.text)) < READY_TOKENS:
            return None
        team = set(self.subtree(agent))
        end = self.pos(final.id)
        for earlier in self.analysis.order[:end]:
            if earlier.type not in ("return", "message", "aggregate") or not earlier.text:
                continue
            if self.analysis.actor[earlier.id] not in team and earlier.to not in team:
                continue
            if not self.ready(earlier.text, final.text):
                continue
            rounds = [e for e in self.analysis.order[self.pos(earlier.id) + 1:end]
                      if self._new_work(e, team, agent)]
            if rounds:
                self._ready[key] = (earlier, final, rounds)
            break
        return self._ready[key]

    def _new_work(self, e: Event, team: set[str], agent: str) -> bool:
        """Whether an event starts work in an agent's team: a spawn or delegation by a member,
        a message from or to one, another aggregate of the agent's own (a member's aggregate
        merges work asked for before)."""
        actor = self.analysis.actor[e.id]
        if actor not in team and e.to not in team:
            return False
        if e.type == "aggregate":
            return actor == agent
        return (e.type in ("spawn", "message")
                or (e.type == "orchestrator_decision" and e.decision == "delegate"))

    def holds(self, earlier: str, final: str) -> float:
        """How far an earlier text holds a final answer (0-1). An answer stating
        `READY_FIGURES` figures or more is held as far as its figures are (the share the
        earlier text states: the wording may change, the figures do not); another, by the
        weighted share of its content tokens the earlier text has, 0 when it lacks one of the
        answer's figures."""
        answer, had = content(final), content(earlier)
        figures = [t for t in answer if is_figure(t)]
        if len(figures) >= READY_FIGURES:
            return sum(t in had for t in figures) / len(figures)
        if any(t not in had for t in figures):
            return 0.0
        return self.lexicon.coverage(answer, had)

    def ready(self, earlier: str, final: str) -> bool:
        """Whether an earlier text held a final answer: every figure of an answer with
        `READY_FIGURES` or more, and `READY_WORDS` of its weighted content (the figures alone
        may be an argument on the way to it); else `READY` of its weighted content."""
        held = self.holds(earlier, final)
        answer = content(final)
        if sum(is_figure(t) for t in answer) >= READY_FIGURES:
            return held >= 1.0 and \
                self.lexicon.coverage(answer, content(earlier)) >= READY_WORDS
        return held >= READY

    def final_answer(self, agent: str, stop: Event) -> Event | None:
        """What an agent answered when it stopped: its last aggregate at or before the stop;
        else its last message or return of a few words (a judge's verdict, an answer handed
        up); else the stop itself when it carries text."""
        at = self.pos(stop.id)
        mine = [e for e in self.analysis.events_of.get(self.analysis.actor[stop.id], [])
                if self.pos(e.id) <= at and e.text]
        for e in reversed(mine):
            if e.type == "aggregate":
                return e
        for e in reversed(mine):
            if e.type in ("message", "return") and len(content(e.text)) >= READY_TOKENS:
                return e
        return stop if stop.text else None


# -- O5: premature stop ------------------------------------------------------------------------


def premature_stop(ctx: Context) -> list[Finding]:
    """A stop while work the stopping agent handed out is still in flight (`Context.in_flight`:
    a return to it comes after the stop, or an agent it spawned or delegated to has not
    returned and it or an agent below it still works after the stop); stronger when the final
    answer leaves out what a late return said."""
    found: list[Finding] = []
    for point in ctx.analysis.stops:
        stop = ctx.event(point.event_id)
        agent, at = point.agent, ctx.pos(stop.id)
        late_returns, working = ctx.in_flight(agent, stop)
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
            child, first, _ = working[0]
            confidence = 0.6
            names = ", ".join(c for c, _, _ in working[:5]) + (" ..." if len(working) > 5
                                                                else "")
            explanation = (f"premature: the stop {stop.id} came while {names} had not returned "
                           f"({child} still worked at {first.id})")
            evidence = (stop.id, *(e.id for _, e, _ in working))
        found.append(Finding("premature_stop", stop.id, "stopping_correctness", "premature",
                             confidence, _ids(evidence), explanation))
    return found


# -- O5: late stop ----------------------------------------------------------------------------


def late_stop(ctx: Context) -> list[Finding]:
    """A stop whose final answer was already held by an earlier message, return or aggregate of
    the stopping agent's team (`Context.answer_ready`), with new work started between that
    point and the final answer: spawns, delegations, messages, other aggregates."""
    found: list[Finding] = []
    for point in ctx.analysis.stops:
        ready = ctx.answer_ready(point.agent, point.event_id)
        if ready is None:
            continue
        earlier, final, rounds = ready
        stop = ctx.event(point.event_id)
        if any(ctx.in_flight(point.agent, stop)):
            continue  # work still in flight: the stop came too early, not too late
        span = max(float(stop.t) - float(ctx.analysis.order[0].t), 1e-9)
        share = max(0.0, min(1.0, (float(stop.t) - float(earlier.t)) / span))
        confidence = round(min(0.85, 0.5 + 0.35 * share), 2)
        explanation = (f"late: the final answer {final.id} was already in {earlier.id} "
                       f"({earlier.type} at t={float(earlier.t):g}); {_work(rounds)} after it "
                       f"({rounds[0].id} ...) brought nothing the answer uses")
        found.append(Finding("late_stop", stop.id, "stopping_correctness", "late", confidence,
                             _ids((stop.id, earlier.id, *(r.id for r in rounds[:10]),
                                   final.id)), explanation))
    return found


def _work(events: list[Event]) -> str:
    """New work counted by kind, in words: "2 spawns, 3 messages"."""
    kinds: dict[str, int] = defaultdict(int)
    for e in events:
        kinds["delegation" if e.type == "orchestrator_decision" else e.type] += 1
    return ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in kinds.items())


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
                _ids((point.event_id, *(e.id for m in lost for e in m.events),
                      best.events[0].id)),
                f"dropped: the output keeps what {best.label} said ({best.presence:.0%} of "
                f"its own words and figures) but {first.presence:.0%} of what {first.label} "
                f"said ({missing} are missing)"))
            found.append(Finding(
                "dropped_result", point.event_id, "aggregation_issues", ["dropped_result"], 0.5,
                _ids((point.event_id, *(e.id for m in lost for e in m.events))),
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


# -- O1: over-spawning ----------------------------------------------------------------------


def over_spawning(ctx: Context) -> list[Finding]:
    """Children whose task is a near-duplicate of an earlier sibling's (same role), children
    spawned after the final answer was already in hand, and children whose return the parent
    never used before it stopped."""
    found: list[Finding] = []
    late_after: dict[str, tuple[Event, Event]] = {}
    for point in ctx.analysis.stops:
        ready = ctx.answer_ready(point.agent, point.event_id)
        if ready is not None and not any(ctx.in_flight(point.agent, ctx.event(point.event_id))):
            earlier, _, rounds = ready
            for r in rounds:
                if r.type == "spawn":
                    late_after[r.id] = (earlier, ctx.event(point.event_id))
    used = ctx.used_results
    for parent, handed in ctx.delegated.items():
        spawns = [(child, e) for child, e in handed if e.type == "spawn"]
        for child, e in spawns:
            if e.id in late_after:
                earlier, stop = late_after[e.id]
                found.append(Finding(
                    "over_spawning", e.id, "spawn_necessity", "redundant", 0.7,
                    (e.id, earlier.id, stop.id),
                    f"redundant: {child} was spawned after the answer was already in "
                    f"{earlier.id}"))
                continue
            twin = ctx.twins.get(e.id)
            if twin is not None and twin.redundant:
                other, first = twin.child, twin.spawn
                confidence = 0.45 if twin.basis == "spawn" else 0.65
                how = (f"the same task as {other} ({first.id})" if twin.task >= SAME_TASK else
                       f"a task on the same subject as {other}'s ({first.id}) and returned "
                       f"the same figures")
                found.append(Finding(
                    "over_spawning", e.id, "spawn_necessity", "redundant", confidence,
                    (e.id, first.id), f"redundant: {child} was given {how}"))
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


def _stated_elsewhere(figure: str, who: str, tokens: dict[str, frozenset[str]]) -> bool:
    """Whether another sender states a figure too."""
    return any(figure in t for w, t in tokens.items() if w != who)


def _stated_by_it(figure: str, who: str, tokens: dict[str, frozenset[str]]) -> bool:
    """Whether a figure in an output can be one sender's: no other sender states it, or one
    that does states it about the same thing (the two share a word no third sender has: a
    copy of the same result). Spreadtrum's 2.6 W and Unisoc's 2.6 W are two results: the
    output's 2.6 says nothing of the one it left out."""
    mine = tokens[who]
    others = [w for w, t in tokens.items() if w != who and figure in t]
    for other in others:
        rest = [t for w, t in tokens.items() if w not in (who, other)]
        if any(not is_figure(t) and not any(t in r for r in rest)
               for t in mine & tokens[other]):
            return True
    return not others


def _result_likeness(lex: Lexicon, a: frozenset[str], b: frozenset[str]) -> float:
    """How alike two siblings' returns are (0-1): the Jaccard similarity of the figures of two
    characters or more they state when both state some (the same figures worded otherwise are
    the same result);
    else the weighted Jaccard of their content tokens; 0 when either returned nothing."""
    if not a or not b:
        return 0.0
    fa = {t for t in a if is_figure(t) and len(t) > 1}  # "part 1 of 3" is no finding
    fb = {t for t in b if is_figure(t) and len(t) > 1}
    if fa and fb:
        return len(fa & fb) / len(fa | fb)
    return lex.similarity(a, b)


def _as_written(tokens: list[str], text: str) -> list[str]:
    """Content tokens as the text writes them (the first word that reads as each)."""
    found = []
    for token in tokens:
        for raw in re.findall(r"[^\W_]+(?:[.,:][^\W_]+)*", text):
            if content(raw) == frozenset({token}):
                found.append(raw)
                break
        else:
            found.append(token)
    return found


DETECTORS: dict[str, Callable[[Context], list[Finding]]] = {
    "premature_stop": premature_stop,
    "late_stop": late_stop,
    "unfaithful_merge": unfaithful_merge,
    "over_spawning": over_spawning,
    "redundant_message": redundant_message,
    "wrong_delegate": wrong_delegate,
}
"""Every detector by name, in the order they run."""


# -- raw signals, for a learned producer ---------------------------------------------------

SIGNALS: tuple[str, ...] = (
    "is_stop", "is_aggregate", "is_spawn", "is_message", "is_delegation",
    "stop_inferred", "stop_returns_after", "stop_pending_agents", "stop_inflight_depth",
    "stop_late_missing", "stop_answer_ready", "stop_ready_holds", "stop_work_after_ready",
    "stop_time_after_ready",
    "agg_inputs", "agg_parts", "agg_min_presence", "agg_max_presence",
    "agg_lost_parts", "agg_min_token_set", "agg_conflict", "agg_caveat_dropped",
    "spawn_siblings", "spawn_depth", "spawn_task_similarity", "spawn_result_similarity",
    "spawn_after_ready", "spawn_result_unused",
    "msg_repeat_similarity", "msg_ignored",
    "deleg_redelegated",
)
"""The names `signals` returns, always all of them, in this order."""

def context(analysis: Analysis) -> Context:
    """The detectors' shared facts on one analysis, built once per analysis (kept on it, so
    they go when it goes)."""
    ctx = analysis.__dict__.get("_rules_context")
    if ctx is None:
        ctx = analysis.__dict__["_rules_context"] = Context(analysis)
    return ctx


def signals(source: Trace | Analysis, target: str | LabelTarget) -> dict[str, float]:
    """The detectors' raw figures on one target, before any threshold: numbers a learned
    producer can weigh (`SIGNALS` names them; every name is always there, 0.0 where it does
    not apply). `source` is a trace or its analysis (pass the analysis when asking about many
    targets of one trace: the shared work is done once per analysis); `target` an event id, a
    `LabelTarget`, or '' for the trace itself (all zeros).

    - `is_*`: 1.0 for what the event is (an aggregate that is also the stop has both).
    - stop (`stopping_correctness`): `stop_inferred` 1.0 for a stop the analysis inferred;
      `stop_returns_after` returns to the stopping agent after it; `stop_pending_agents` agents
      it handed work to that had not returned and whose subtree still works after it (or whose
      helpers still return to them); `stop_inflight_depth` how deep below the stopping agent
      the deepest such work is (1 = its own child); `stop_late_missing` the largest share
      (0-1) of a late return's content tokens the final answer lacks; `stop_answer_ready` 1.0
      when an earlier message, return or aggregate held the final answer and new work followed;
      `stop_ready_holds` how far the earliest earlier text held the final answer (0-1, the best
      before the final); `stop_work_after_ready` spawns, delegations, messages and aggregates
      started after the answer was ready; `stop_time_after_ready` the share of the run's time
      from that point to the stop.
    - aggregate (`aggregation_*`): `agg_inputs` inputs merged; `agg_parts` senders they came
      from; `agg_min_presence` / `agg_max_presence` the lowest and highest presence (0-1) of a
      sender's distinctive content in the output (`Merged.presence`; 1.0 with one part);
      `agg_lost_parts` parts under `ABSENT`; `agg_min_token_set` the lowest rapidfuzz
      token_set_ratio of an input to the output (0-1, the old rule's figure);
      `agg_conflict` 1.0 when two inputs give one subject different figures and the output
      repeats one without saying so; `agg_caveat_dropped` 1.0 when an input's caveat is lost.
    - spawn (`spawn_necessity`): `spawn_siblings` children its parent spawned; `spawn_depth`
      the child's depth; `spawn_task_similarity` / `spawn_result_similarity` its closest
      earlier sibling's (`Twin`); `spawn_after_ready` 1.0 when spawned after the final answer
      was in hand; `spawn_result_unused` 1.0 when no aggregate used what it returned.
    - message (`message_necessity`): `msg_repeat_similarity` the highest word-level likeness
      (0-1) to an earlier message to the same agent; `msg_ignored` 1.0 when the recipient has
      no event after it.
    - delegation (`delegation_fit`): `deleg_redelegated` 1.0 when the same task went to another
      agent after this one answered.
    """
    analysis = source if isinstance(source, Analysis) else analyze(source)
    ctx = context(analysis)
    out = dict.fromkeys(SIGNALS, 0.0)
    event_id = target.key if isinstance(target, LabelTarget) else target
    if not event_id or event_id not in analysis.position:
        return out
    e = ctx.event(event_id)
    stops = {p.event_id: p for p in analysis.stops}
    aggregates = {p.event_id: p for p in analysis.aggregates}
    link = analysis.link_of(e)
    if event_id in stops:
        out.update(_stop_signals(ctx, stops[event_id], e))
    if event_id in aggregates:
        out.update(_aggregate_signals(ctx, e))
    if link is not None and link[0] == "spawn":
        out.update(_spawn_signals(ctx, e, link[1], link[2]))
    if e.type == "message" and e.to:
        out.update(_message_signals(ctx, e))
    if link is not None and link[0] == "delegate":
        out["is_delegation"] = 1.0
        out["deleg_redelegated"] = float(any(f.event_id == e.id for f in ctx.findings_of(
            "wrong_delegate")))
    return out


def _stop_signals(ctx: Context, point: StopPoint, stop: Event) -> dict[str, float]:
    late_returns, working = ctx.in_flight(point.agent, stop)
    final = ctx.final_answer(point.agent, stop)
    missing = 0.0
    if final is not None:
        out = content(final.text)
        for r in late_returns:
            missing = max(missing, 1.0 - ctx.lexicon.coverage(content(r.text), out))
    ready = ctx.answer_ready(point.agent, point.event_id)
    holds = 0.0
    if final is not None and len(content(final.text)) >= READY_TOKENS:
        team = set(ctx.subtree(point.agent))
        for e in ctx.analysis.order[:ctx.pos(final.id)]:
            if e.type in ("return", "message", "aggregate") and e.text and (
                    ctx.analysis.actor[e.id] in team or e.to in team):
                holds = max(holds, ctx.holds(e.text, final.text))
    figures: dict[str, float] = {
        "is_stop": 1.0, "stop_inferred": float(point.inferred),
        "stop_returns_after": float(len(late_returns)),
        "stop_pending_agents": float(len(working)),
        "stop_inflight_depth": float(max((d for _, _, d in working), default=0)),
        "stop_late_missing": round(missing, 4), "stop_ready_holds": round(holds, 4)}
    if ready is not None:
        earlier, _, rounds = ready
        span = max(float(stop.t) - float(ctx.analysis.order[0].t), 1e-9)
        figures.update(stop_answer_ready=1.0, stop_work_after_ready=float(len(rounds)),
                       stop_time_after_ready=round(max(0.0, min(1.0, (
                           float(stop.t) - float(earlier.t)) / span)), 4))
    return figures


def _aggregate_signals(ctx: Context, e: Event) -> dict[str, float]:
    point = next(p for p in ctx.analysis.aggregates if p.event_id == e.id)
    merged = ctx.merged(e.id)
    inputs = [ctx.event(i).text for i in point.inputs[:MAX_INPUTS] if ctx.event(i).text]
    kinds = {tuple(f.value) for f in ctx.findings_of("unfaithful_merge")
             if f.event_id == e.id and f.question == "aggregation_issues"}
    return {
        "is_aggregate": 1.0, "agg_inputs": float(len(point.inputs)),
        "agg_parts": float(len(merged)),
        "agg_min_presence": min((m.presence for m in merged), default=1.0),
        "agg_max_presence": max((m.presence for m in merged), default=1.0),
        "agg_lost_parts": float(sum(m.presence < ABSENT for m in merged)),
        "agg_min_token_set": min((covered(t, e.text) / 100.0 for t in inputs), default=1.0),
        "agg_conflict": float(any("conflict_unresolved" in k for k in kinds)),
        "agg_caveat_dropped": float(any("unfaithful_merge" in k for k in kinds)),
    }


def _spawn_signals(ctx: Context, e: Event, parent: str, child: str) -> dict[str, float]:
    twin = ctx.twins.get(e.id)
    late = {f.event_id for f in ctx.findings_of("over_spawning")
            if "after the answer" in f.explanation}
    unused = {f.event_id for f in ctx.findings_of("over_spawning")
              if "never used" in f.explanation}
    return {
        "is_spawn": 1.0,
        "spawn_siblings": float(sum(x.type == "spawn" for _, x in ctx.delegated.get(parent, []))),
        "spawn_depth": float(ctx.analysis.depth_of.get(child, 0)),
        "spawn_task_similarity": twin.task if twin else 0.0,
        "spawn_result_similarity": twin.result if twin else 0.0,
        "spawn_after_ready": float(e.id in late), "spawn_result_unused": float(e.id in unused)}


def _message_signals(ctx: Context, e: Event) -> dict[str, float]:
    at = ctx.pos(e.id)
    earlier = [x for x in ctx.analysis.order[max(0, at - 2000):at]
               if x.type == "message" and x.to == e.to][-DUPLICATE_WINDOW:]
    repeat = max((near_duplicate(e.text, x.text) for x in earlier), default=0.0) \
        if words(e.text) >= MIN_WORDS else 0.0
    ignored = e.to in ctx.analysis.events_of and ctx.first_after(e.to, at) is None
    return {"is_message": 1.0, "msg_repeat_similarity": round(repeat / 100.0, 4),
            "msg_ignored": float(ignored)}


# -- findings to suggestions ----------------------------------------------------------------


def findings(trace: Trace, names: Iterable[str] | None = None) -> list[Finding]:
    """What the detectors (all, or those named) find in one trace; where two findings answer
    the same question on the same target, the more confident one."""
    ctx = context(analyze(trace))
    best: dict[tuple[str, str], Finding] = {}
    for name in names if names is not None else DETECTORS:
        for f in ctx.findings_of(name):
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
