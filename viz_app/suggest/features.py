"""What the learned producer sees of a target: numbers read from a trace's analysis, each with
the events behind it. Pure: a trace in, feature rows out (no model, no store).

A target's features are of three sorts:

- the **structural figures** of its kind of decision: for a stop, the returns still pending at
  it and the results arriving after it, how much happened after its final answer was already in
  hand; for an aggregate, how far each merged return is present in the output; for a spawn, how
  alike its task is to an earlier sibling's and whether its result was used; for a message or a
  delegation, whether it repeats an earlier one and whether anyone acts on it;
- the figures every event target has: depth and fan-out of its agent, the agent's tokens and
  events, where the event falls in the run (share of events and of time), the size of the run;
- the **detectors' signals**: each rule's confidence on this target (0 where it is silent).

Every feature is a float; counts of unbounded size are `log1p`-scaled so a swarm of 800 agents
does not dominate a model fitted on runs of ten. `FEATURES_VERSION` changes when a feature
changes, so a stored model is never used with features it was not fitted on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from viz_app.analysis import Analysis, analyze
from viz_app.labels.rubric import Rubric, TraceTarget, targets
from viz_app.model import Event, Trace
from viz_app.suggest import rules
from viz_app.suggest.rules import COVERED, DROP_WORDS, DROPPED, DUPLICATE_WINDOW, MAX_INPUTS, \
    MIN_WORDS, NEAR_DUPLICATE, Context, anchors, claims, covered, near_duplicate, words

FEATURES_VERSION = "1"
"""Change it when a feature is added, removed or computed differently."""


@dataclass(frozen=True)
class Signal:
    """One feature's value on one target, and the events it was read from (the evidence a
    suggestion shows when this feature weighs in its answer)."""

    value: float
    events: tuple[str, ...] = ()


FeatureRow = dict[str, Signal]
"""A target's features by name."""

DESCRIPTIONS: dict[str, str] = {
    # every event target
    "depth": "spawn depth of the target's agent",
    "fanout": "children its agent spawned",
    "run_agents": "agents in the run (log)",
    "run_events": "events in the run (log)",
    "position": "share of the run's events before it",
    "time_share": "share of the run's time before it",
    "agent_tokens": "tokens of its agent (log)",
    "agent_events": "events of its agent (log)",
    "text_words": "words of its text (log)",
    # stops
    "pending_at_stop": "agents handed work that had not returned at the stop and still worked",
    "returns_after_stop": "returns to the stopping agent after the stop",
    "missed_after_stop": "returns after the stop whose content the final answer lacks",
    "events_after_stop": "share of the run's events after the stop",
    "answer_ready_share": "share of the run's time between the final answer first being in "
                          "hand and the stop",
    "handoffs_after_answer": "spawns and delegations after the final answer was in hand (log)",
    "exchanges_after_answer": "messages, returns and aggregates after the final answer was in "
                              "hand (log)",
    "stop_inferred": "the stop is inferred (no explicit stop decision)",
    # aggregates
    "inputs": "results merged",
    "coverage_min": "presence in the output of the least present merged result (0-1)",
    "coverage_mean": "mean presence in the output of the merged results (0-1)",
    "coverage_max": "presence in the output of the most present merged result (0-1)",
    "absent_inputs": "merged results of 8+ words absent from the output",
    "quoted_inputs": "merged results present in the output",
    "conflicting_figures": "pairs of merged results stating different figures about one thing",
    "caveat_lost": "a merged result's caveat is missing from the output that repeats its claim",
    "output_hedged": "the output says its sources disagree",
    "compression": "the output's words over the merged results' words",
    # spawns
    "duplicate_task": "likeness of its task to an earlier sibling's of the same role (0-1)",
    "siblings": "children its parent spawned (log)",
    "sibling_rank": "its place among its siblings (0-1)",
    "result_used": "one of its returns was merged by an aggregate",
    "returned": "it returned to its parent",
    "after_answer": "spawned after its parent's final answer was in hand",
    "child_events": "events of the spawned agent (log)",
    "child_tokens": "tokens of the spawned agent (log)",
    # messages
    "duplicate_message": "likeness to an earlier message to the same recipient (0-1)",
    "recipient_acts": "the recipient has an event after it",
    "earlier_messages": "earlier messages to the same recipient (log)",
    # delegations
    "redelegated": "likeness of the same task later handed to another agent (0-1)",
    "delegate_returned": "the delegate returned after it",
    # the trace itself
    "max_fanout": "most children any agent spawned",
    "run_depth": "depth of the spawn tree",
    "run_messages": "messages in the run (log)",
    "run_tool_calls": "tool calls in the run (log)",
    "run_tokens": "tokens of the run (log)",
    "parallelism": "sum of agent lifetimes over the makespan",
    "findings": "suggestions the rules make on the run",
}
"""What each feature means, in the words a suggestion's explanation uses (rule signals are
described as `rule <detector>`)."""

GENERIC = ("depth", "fanout", "run_agents", "run_events", "position", "time_share",
           "agent_tokens", "agent_events", "text_words")
BY_KIND: dict[str, tuple[str, ...]] = {
    "stop": ("pending_at_stop", "returns_after_stop", "missed_after_stop", "events_after_stop",
             "answer_ready_share", "handoffs_after_answer", "exchanges_after_answer",
             "stop_inferred"),
    "aggregate": ("inputs", "coverage_min", "coverage_mean", "coverage_max", "absent_inputs",
                  "quoted_inputs", "conflicting_figures", "caveat_lost", "output_hedged",
                  "compression"),
    "spawn": ("duplicate_task", "siblings", "sibling_rank", "result_used", "returned",
              "after_answer", "child_events", "child_tokens"),
    "message": ("duplicate_message", "recipient_acts", "earlier_messages"),
    "delegate": ("redelegated", "delegate_returned"),
    "trace": ("max_fanout", "run_depth", "run_messages", "run_tool_calls", "run_tokens",
              "parallelism", "findings"),
}
"""The structural features of each kind of target (any other kind has the generic ones)."""


def rule_feature(detector: str) -> str:
    """The feature name of a detector's signal."""
    return f"rule_{detector}"


def describe(name: str) -> str:
    """A feature's meaning in a few words."""
    if name.startswith("rule_"):
        return f"rule {name[5:]}"
    return DESCRIPTIONS.get(name, name)


def shown(name: str, value: float) -> str:
    """A feature's value as a reader counts it: a `log1p`-scaled count as the count."""
    if name.startswith("rule_"):
        return f"{describe(name)} silent" if value == 0 else \
            f"{describe(name)} fired ({value:.2f})"
    if DESCRIPTIONS.get(name, "").endswith("(log)"):
        value = math.expm1(value)
        name_ = DESCRIPTIONS[name].removesuffix(" (log)")
        return f"{name_} = {round(value):d}"
    if math.isclose(value, round(value)):
        return f"{describe(name)} = {round(value):d}"
    return f"{describe(name)} = {value:.2f}"


def feature_names(kind: str) -> list[str]:
    """Every feature of a kind of target, in the order a model's columns take them."""
    if kind == "trace":
        return [*BY_KIND["trace"], *(rule_feature(d) for d in rules.DETECTORS)]
    return [*GENERIC, *BY_KIND.get(kind, ()), *(rule_feature(d) for d in rules.DETECTORS)]


def question_kind(rubric: Rubric, question: str) -> str:
    """The kind of target a question is asked about (`trace` for the trace itself)."""
    target = rubric.question(question).target
    return "trace" if isinstance(target, TraceTarget) else target.kind


def _log(x: float) -> float:
    return math.log1p(max(0.0, float(x)))


class TraceFeatures:
    """The features of one trace's targets, computed once per trace (the detectors run once)."""

    def __init__(self, trace: Trace, analysis: Analysis | None = None):
        self.analysis = analysis or analyze(trace)
        self.ctx = Context(self.analysis)
        self._rules: dict[str, dict[str, Signal]] | None = None
        order = self.analysis.order
        self.t0 = float(order[0].t)
        self.span = max(float(max(e.finish for e in order)) - self.t0, 1e-9)

    @property
    def trace(self) -> Trace:
        """The trace."""
        return self.analysis.trace

    # -- the detectors' signals ---------------------------------------------------------------

    @property
    def rule_signals(self) -> dict[str, dict[str, Signal]]:
        """detector -> event id -> its most confident finding's confidence there."""
        if self._rules is None:
            found: dict[str, dict[str, Signal]] = defaultdict(dict)
            for name, detector in rules.DETECTORS.items():
                for f in detector(self.ctx):
                    held = found[name].get(f.event_id)
                    if held is None or f.confidence > held.value:
                        found[name][f.event_id] = Signal(f.confidence, f.evidence)
            self._rules = dict(found)
        return self._rules

    # -- rows -----------------------------------------------------------------------------------

    def row(self, kind: str, event_id: str) -> FeatureRow:
        """The features of one target of a kind (`event_id` '' for the trace itself)."""
        if kind == "trace":
            found = self._trace_row()
            found["findings"] = Signal(float(sum(len(v) for v in self.rule_signals.values())))
            for name in rules.DETECTORS:
                found[rule_feature(name)] = Signal(float(len(self.rule_signals.get(name, {}))))
            return found
        event = self.ctx.event(event_id)
        found = self._generic(event)
        maker = {"stop": self._stop, "aggregate": self._aggregate, "spawn": self._spawn,
                 "message": self._message, "delegate": self._delegate}.get(kind)
        if maker is not None:
            found.update(maker(event))
        for name in rules.DETECTORS:
            found[rule_feature(name)] = self.rule_signals.get(name, {}).get(event_id, Signal(0.0))
        return found

    def _generic(self, e: Event) -> FeatureRow:
        a = self.analysis
        agent = a.actor[e.id]
        stats = a.agent_stats.get(agent)
        return {
            "depth": Signal(float(a.depth_of.get(agent, 0))),
            "fanout": Signal(float(len(a.children.get(agent, [])))),
            "run_agents": Signal(_log(len(a.agents))),
            "run_events": Signal(_log(len(a.order))),
            "position": Signal(a.position[e.id] / max(1, len(a.order) - 1)),
            "time_share": Signal((float(e.t) - self.t0) / self.span),
            "agent_tokens": Signal(_log(stats.tokens if stats else 0.0)),
            "agent_events": Signal(_log(stats.events if stats else 0)),
            "text_words": Signal(_log(words(e.text))),
        }

    def _trace_row(self) -> FeatureRow:
        f = self.analysis.figures
        return {"max_fanout": Signal(float(f.max_fanout)), "run_depth": Signal(float(f.depth)),
                "run_messages": Signal(_log(f.messages)),
                "run_tool_calls": Signal(_log(f.tool_calls)),
                "run_tokens": Signal(_log(f.tokens)), "parallelism": Signal(f.parallelism)}

    # -- stops ----------------------------------------------------------------------------------

    def _stop(self, stop: Event) -> FeatureRow:
        ctx, a = self.ctx, self.analysis
        agent, at = a.actor[stop.id], ctx.pos(stop.id)
        answers = ctx.answers_to.get(agent, [])
        late = [r for r in answers if ctx.pos(r.id) > at and r.type == "return"]
        late_from = {ctx.sender(r) for r in late}
        answered: dict[str, list[int]] = defaultdict(list)
        for r in answers:
            answered[ctx.sender(r)].append(ctx.pos(r.id))
        pending: list[Event] = []
        for child, handed in ctx.delegated.get(agent, []):
            start = ctx.pos(handed.id)
            if start > at or child in late_from or any(start < p < at
                                                       for p in answered.get(child, ())):
                continue
            after = ctx.first_after(child, at)
            if after is not None:
                pending.append(after)
        final = ctx.final_answer(agent, stop)
        missed = [r for r in late if final is not None and words(r.text) >= MIN_WORDS
                  and covered(r.text, final.text) < COVERED]
        ready, handoffs, exchanges = self._answer_in_hand(agent, stop, final)
        inferred = any(p.inferred for p in a.stops if p.event_id == stop.id)
        return {
            "pending_at_stop": Signal(float(len(pending)), tuple(e.id for e in pending[:8])),
            "returns_after_stop": Signal(float(len(late)), tuple(r.id for r in late[:8])),
            "missed_after_stop": Signal(float(len(missed)), tuple(r.id for r in missed[:8])),
            "events_after_stop": Signal((len(a.order) - 1 - at) / max(1, len(a.order))),
            "answer_ready_share": Signal(
                (float(stop.t) - float(ready.t)) / self.span if ready is not None else 0.0,
                (ready.id,) if ready is not None else ()),
            "handoffs_after_answer": Signal(_log(len(handoffs)),
                                            tuple(e.id for e in handoffs[:8])),
            "exchanges_after_answer": Signal(_log(len(exchanges)),
                                             tuple(e.id for e in exchanges[:8])),
            "stop_inferred": Signal(float(inferred)),
        }

    def _answer_in_hand(self, agent: str, stop: Event, final: Event | None
                        ) -> tuple[Event | None, list[Event], list[Event]]:
        """(the earliest return or message to the agent, or aggregate or message of it, that
        already held its final answer; the spawns and delegations after it before the stop;
        the messages, returns and aggregates of or to the agent after it before the stop)."""
        ctx = self.ctx
        if final is None or words(final.text) < MIN_WORDS:
            return None, [], []
        end, at = ctx.pos(final.id), ctx.pos(stop.id)
        mine = self.analysis.events_of.get(agent, [])
        candidates = list(ctx.answers_to.get(agent, []))
        candidates += [e for e in mine if e.type in ("aggregate", "message") and e.text]
        candidates.sort(key=lambda e: ctx.pos(e.id))
        size = words(final.text)
        for earlier in candidates:
            if ctx.pos(earlier.id) >= end:
                break
            if words(earlier.text) < size * 0.8 or covered(final.text, earlier.text) < COVERED:
                continue
            since = ctx.pos(earlier.id)
            handoffs = [e for _, e in ctx.delegated.get(agent, []) if since < ctx.pos(e.id) < at]
            exchanges = [e for e in ctx.answers_to.get(agent, []) if since < ctx.pos(e.id) < at]
            exchanges += [e for e in mine if e.type in ("aggregate", "message")
                          and since < ctx.pos(e.id) < at]
            return earlier, handoffs, exchanges
        return None, [], []

    # -- aggregates -------------------------------------------------------------------------

    def _aggregate(self, e: Event) -> FeatureRow:
        ctx = self.ctx
        point = next((p for p in self.analysis.aggregates if p.event_id == e.id), None)
        ids = point.inputs[:MAX_INPUTS] if point is not None else []
        inputs = [ctx.event(i) for i in ids if ctx.event(i).text]
        out = e.text
        scores = [(covered(r.text, out) / 100.0, r) for r in inputs] if out else []
        absent = [r for s, r in scores if s * 100 < DROPPED and words(r.text) >= DROP_WORDS]
        quoted = [r for s, r in scores if s * 100 >= COVERED]
        stated = claims(out)
        said = [(r, claims(r.text)) for r in inputs[:16]]
        conflicts: list[Event] = []
        for i, (x, cx) in enumerate(said):
            for y, cy in said[i + 1:]:
                for key in cx.keys() & cy.keys() & stated.keys():
                    if cx[key] != cy[key]:
                        conflicts += [x, y]
                        break
        lost = [r for r in inputs if rules._CAVEAT.search(r.text)
                and anchors(r.text) & anchors(out)] if not rules._CAVEAT.search(out) else []
        values = [s for s, _ in scores]
        in_words = sum(words(r.text) for r in inputs)
        least = min(scores, key=lambda x: x[0])[1] if scores else None
        return {
            "inputs": Signal(float(len(ids))),
            "coverage_min": Signal(min(values) if values else 1.0,
                                   (least.id,) if least is not None else ()),
            "coverage_mean": Signal(sum(values) / len(values) if values else 1.0),
            "coverage_max": Signal(max(values) if values else 1.0),
            "absent_inputs": Signal(float(len(absent)), tuple(r.id for r in absent[:8])),
            "quoted_inputs": Signal(float(len(quoted)), tuple(r.id for r in quoted[:8])),
            "conflicting_figures": Signal(float(len(conflicts) // 2),
                                          tuple(dict.fromkeys(r.id for r in conflicts[:8]))),
            "caveat_lost": Signal(float(bool(lost)), tuple(r.id for r in lost[:4])),
            "output_hedged": Signal(float(bool(rules._HEDGE.search(out)))),
            "compression": Signal(min(4.0, words(out) / in_words) if in_words else 1.0),
        }

    # -- spawns ---------------------------------------------------------------------------------

    def _spawn(self, e: Event) -> FeatureRow:
        ctx, a = self.ctx, self.analysis
        parent = a.actor[e.id]
        child = e.to
        handed = [(c, s) for c, s in ctx.delegated.get(parent, []) if s.type == "spawn"]
        rank = next((k for k, (_, s) in enumerate(handed) if s.id == e.id), 0)
        twin, alike = None, 0.0
        if child:
            task, basis = ctx.task_of(parent, child, e)
            for other, spawn in handed[max(0, rank - DUPLICATE_WINDOW):rank]:
                other_task, other_basis = ctx.task_of(parent, other, spawn)
                if other_basis != basis or a.role_of(other) != a.role_of(child):
                    continue
                score = near_duplicate(task, other_task) / 100.0
                if score > alike:
                    twin, alike = spawn, score
        returns = ctx.returns_of(child, parent) if child else []
        used = [r for r in returns if r.id in ctx.used_results]
        stop = ctx.stop_of(parent)
        ready = None
        if stop is not None:
            ready, _, _ = self._answer_in_hand(parent, stop, ctx.final_answer(parent, stop))
        stats = a.agent_stats.get(child) if child else None
        return {
            "duplicate_task": Signal(alike, (twin.id,) if twin is not None else ()),
            "siblings": Signal(_log(len(handed))),
            "sibling_rank": Signal(rank / max(1, len(handed) - 1)),
            "result_used": Signal(float(bool(used)), tuple(r.id for r in used[:4])),
            "returned": Signal(float(bool(returns)), tuple(r.id for r in returns[:4])),
            "after_answer": Signal(float(ready is not None and ctx.pos(ready.id) < ctx.pos(e.id)),
                                   (ready.id,) if ready is not None else ()),
            "child_events": Signal(_log(stats.events if stats else 0)),
            "child_tokens": Signal(_log(stats.tokens if stats else 0.0)),
        }

    # -- messages and delegations -----------------------------------------------------------

    @property
    def _messages_to(self) -> dict[str, list[Event]]:
        found = getattr(self, "_messages", None)
        if found is None:
            found = defaultdict(list)
            for e in self.analysis.order:
                if e.type == "message" and e.to:
                    found[e.to].append(e)
            self._messages = found
        return found

    def _message(self, e: Event) -> FeatureRow:
        ctx = self.ctx
        before = [m for m in self._messages_to.get(e.to or "", []) if ctx.pos(m.id) < ctx.pos(e.id)]
        twin, alike = None, 0.0
        if words(e.text) >= MIN_WORDS:
            for other in before[-DUPLICATE_WINDOW:]:
                score = near_duplicate(e.text, other.text) / 100.0
                if score > alike:
                    twin, alike = other, score
        acts = e.to in self.analysis.events_of and \
            ctx.first_after(e.to, ctx.pos(e.id)) is not None
        return {"duplicate_message": Signal(alike, (twin.id,) if twin is not None else ()),
                "recipient_acts": Signal(float(acts)),
                "earlier_messages": Signal(_log(len(before)))}

    def _delegate(self, e: Event) -> FeatureRow:
        ctx = self.ctx
        parent, child = self.analysis.actor[e.id], e.to
        later = [(c, d) for c, d in ctx.delegated.get(parent, [])
                 if ctx.pos(d.id) > ctx.pos(e.id) and c != child]
        twin, alike = None, 0.0
        if words(e.text) >= MIN_WORDS:
            for _, again in later[:DUPLICATE_WINDOW]:
                score = near_duplicate(e.text, again.text, NEAR_DUPLICATE * 0.5) / 100.0
                if score > alike:
                    twin, alike = again, score
        back = [r for r in ctx.returns_of(child, parent) if ctx.pos(r.id) > ctx.pos(e.id)] \
            if child else []
        return {"redelegated": Signal(alike, (twin.id,) if twin is not None else ()),
                "delegate_returned": Signal(float(bool(back)), tuple(r.id for r in back[:2]))}


def question_rows(trace: Trace, rubric: Rubric, question: str,
                  computed: TraceFeatures | None = None) -> dict[str, FeatureRow]:
    """The features of every target of one trace a question is asked about, by target key
    ('' for the trace itself)."""
    found = computed or TraceFeatures(trace)
    kind = question_kind(rubric, question)
    return {t.key: found.row(kind, t.key)
            for t in targets(rubric, found.analysis) if question in t.questions}


def vector(row: FeatureRow, names: Iterable[str]) -> list[float]:
    """A row's values in the order of `names` (0 for a feature it lacks)."""
    return [float(row[n].value) if n in row else 0.0 for n in names]
