"""What the detectors share: the `Context` of one trace's analysis (who handed work to whom,
what came back, what an aggregate merged and how much of each part its output carries, each
spawn's closest earlier sibling, what a stop left in flight, when the final answer was ready),
computed once and read by several detectors; and the `Finding` each detector proposes."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from viz_app.analysis import Analysis
from viz_app.model import Event, Trace
from viz_app.suggest.overlap import Lexicon, content, is_figure, is_number, is_year, sentences
from viz_app.suggest.rules.thresholds import (DUPLICATE_WINDOW, MAX_INPUTS, OWN_TOKENS, READY,
                                              READY_FIGURES, READY_TOKENS, READY_WORDS,
                                              SAME_RESULT, SAME_TASK, SENTENCE_TOKENS,
                                              SUBJECT_SHARE, TASK_CALLS)
from viz_app.suggest.rules.wording import words


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


def ids_once(ids: Iterable[str]) -> tuple[str, ...]:
    """Event ids once each, in the order given."""
    return tuple(dict.fromkeys(ids))



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
    detectors: Mapping[str, Callable[[Context], list[Finding]]] = field(default_factory=dict)
    """Every detector by name (`rules.detectors.DETECTORS`): `findings_of` runs them."""
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
            self._found[name] = self.detectors[name](self)
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
