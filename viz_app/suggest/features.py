"""What the learned producer sees of a target: numbers read from a trace's analysis, each with
the events behind it. Pure: a trace in, feature rows out (no model, no store).

A target's features are of three sorts:

- the **detectors' raw signals** (`viz_app.suggest.rules.signals`, before any threshold): for a
  stop, the returns after it, the agents still working at it and how deep, how much of a late
  return the final answer lacks, whether and how long before the stop the answer was in hand;
  for an aggregate, how present each merged result is in the output, conflicts and dropped
  caveats; for a spawn, how alike its task and result are to an earlier sibling's, whether it
  came after the answer or its result went unused; for a message, how far it repeats an earlier
  one and whether anyone acts on it; for a delegation, whether the task went to another agent;
- each **detector's confidence** on the target (0 where it is silent);
- the **structural figures** every target has: depth and fan-out of its agent, the agent's
  tokens and events, where the event falls in the run (share of events and of time), the size
  of the run; for a spawn the child's own events and tokens and whether it returned.

Every feature is a float; counts of unbounded size are `log1p`-scaled (their description ends
"(log)") so a swarm of 800 agents does not dominate a model fitted on runs of ten.
`FEATURES_VERSION` changes when a feature or the rules change, so a stored model is never used
with features it was not fitted on.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from viz_app.analysis import Analysis, analyze
from viz_app.labels import Rubric, TraceTarget, targets
from viz_app.model import Event, Trace
from viz_app.suggest import rules

FEATURES = "2"
"""Change it when a feature of this module is added, removed or computed differently (2: the
rules' raw signals)."""

FEATURES_VERSION = f"{FEATURES}/rules-{rules.VERSION}"
"""The features' version a model records: this module's and the rules' (whose signals and
confidences are features), so a new rules version makes stored models stale, not silently
misread."""


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
    # spawns, beyond the signals
    "child_events": "events of the spawned agent (log)",
    "child_tokens": "tokens of the spawned agent (log)",
    "returned": "the spawned agent returned to its parent",
    # the trace itself
    "max_fanout": "most children any agent spawned",
    "run_depth": "depth of the spawn tree",
    "run_messages": "messages in the run (log)",
    "run_tool_calls": "tool calls in the run (log)",
    "run_tokens": "tokens of the run (log)",
    "parallelism": "sum of agent lifetimes over the makespan",
    "findings": "suggestions the rules make on the run",
    # the rules' raw signals (rules.signals says how each is read)
    "stop_inferred": "the stop is inferred (no explicit stop decision)",
    "stop_returns_after": "returns to the stopping agent after the stop",
    "stop_pending_agents": "agents handed work still working at the stop",
    "stop_inflight_depth": "depth of the deepest work still going at the stop",
    "stop_late_missing": "share of a late return the final answer lacks",
    "stop_answer_ready": "the final answer was in hand before new work",
    "stop_ready_holds": "how far an earlier text held the final answer",
    "stop_work_after_ready": "new work after the answer was in hand",
    "stop_time_after_ready": "share of the run's time after the answer was in hand",
    "agg_inputs": "results merged",
    "agg_parts": "senders merged",
    "agg_min_presence": "presence in the output of the least present merged result",
    "agg_max_presence": "presence in the output of the most present merged result",
    "agg_lost_parts": "merged results absent from the output",
    "agg_min_token_set": "lowest word overlap of a merged result with the output",
    "agg_conflict": "two merged results disagree and the output picks one silently",
    "agg_caveat_dropped": "a merged result's caveat is lost",
    "spawn_siblings": "children its parent spawned",
    "spawn_depth": "depth of the spawned agent",
    "spawn_task_similarity": "likeness of its task to an earlier sibling's",
    "spawn_result_similarity": "likeness of its result to that sibling's",
    "spawn_after_ready": "spawned after the answer was in hand",
    "spawn_result_unused": "its result was never used",
    "msg_repeat_similarity": "likeness to an earlier message to the same agent",
    "msg_ignored": "the recipient does nothing after it",
    "deleg_redelegated": "the same task went to another agent after",
}
"""What each feature means, in the words a suggestion's explanation uses (detector confidences
are described as `rule <detector>`)."""

GENERIC = ("depth", "fanout", "run_agents", "run_events", "position", "time_share",
           "agent_tokens", "agent_events", "text_words")
PREFIXES: dict[str, str] = {"stop": "stop_", "aggregate": "agg_", "spawn": "spawn_",
                            "message": "msg_", "delegate": "deleg_"}
"""Which of the rules' signals belong to which kind of target."""
EXTRA: dict[str, tuple[str, ...]] = {"spawn": ("child_events", "child_tokens", "returned")}
TRACE = ("max_fanout", "run_depth", "run_messages", "run_tool_calls", "run_tokens",
         "parallelism", "findings")


def rule_feature(detector: str) -> str:
    """The feature name of a detector's confidence."""
    return f"rule_{detector}"


def describe(name: str) -> str:
    """A feature's meaning in a few words."""
    if name.startswith("rule_"):
        return f"rule {name[5:]}"
    return DESCRIPTIONS.get(name, name.replace("_", " "))


def shown(name: str, value: float) -> str:
    """A feature and its value as a reader counts it (a `log1p`-scaled count as the count)."""
    if name.startswith("rule_"):
        return f"{describe(name)} silent" if value == 0 else \
            f"{describe(name)} fired ({value:.2f})"
    if DESCRIPTIONS.get(name, "").endswith("(log)"):
        return f"{DESCRIPTIONS[name].removesuffix(' (log)')} = {round(math.expm1(value)):d}"
    if math.isclose(value, round(value)):
        return f"{describe(name)} = {round(value):d}"
    return f"{describe(name)} = {value:.2f}"


def feature_names(kind: str) -> list[str]:
    """Every feature of a kind of target, in the order a model's columns take them."""
    detectors = [rule_feature(d) for d in rules.DETECTORS]
    if kind == "trace":
        return [*TRACE, *detectors]
    prefix = PREFIXES.get(kind)
    signals = [s for s in rules.SIGNALS if prefix and s.startswith(prefix)]
    return [*GENERIC, *EXTRA.get(kind, ()), *signals, *detectors]


def question_kind(rubric: Rubric, question: str) -> str:
    """The kind of target a question is asked about (`trace` for the trace itself)."""
    target = rubric.question(question).target
    return "trace" if isinstance(target, TraceTarget) else target.kind


def _log(x: float) -> float:
    return math.log1p(max(0.0, float(x)))


class TraceFeatures:
    """The features of one trace's targets (the detectors run once per trace)."""

    def __init__(self, trace: Trace, analysis: Analysis | None = None):
        self.analysis = analysis or analyze(trace)
        self.ctx = rules.context(self.analysis)
        order = self.analysis.order
        self.t0 = float(order[0].t)
        self.span = max(max(e.finish for e in order) - self.t0, 1e-9)
        self._rules: dict[str, dict[str, Signal]] | None = None

    @property
    def rule_confidence(self) -> dict[str, dict[str, Signal]]:
        """detector -> event id -> its most confident finding there, with its evidence."""
        if self._rules is None:
            found: dict[str, dict[str, Signal]] = defaultdict(dict)
            for name in rules.DETECTORS:
                for f in self.ctx.findings_of(name):
                    held = found[name].get(f.event_id)
                    if held is None or f.confidence > held.value:
                        found[name][f.event_id] = Signal(f.confidence, tuple(f.evidence))
            self._rules = dict(found)
        return self._rules

    def row(self, kind: str, event_id: str) -> FeatureRow:
        """The features of one target of a kind (`event_id` '' for the trace itself)."""
        found: FeatureRow = {}
        if kind == "trace":
            f = self.analysis.figures
            found.update(max_fanout=Signal(float(f.max_fanout)), run_depth=Signal(float(f.depth)),
                         run_messages=Signal(_log(f.messages)),
                         run_tool_calls=Signal(_log(f.tool_calls)),
                         run_tokens=Signal(_log(f.tokens)), parallelism=Signal(f.parallelism),
                         findings=Signal(float(sum(map(len, self.rule_confidence.values())))))
            for name in rules.DETECTORS:
                found[rule_feature(name)] = Signal(float(len(self.rule_confidence.get(name,
                                                                                      {}))))
            return found
        event = self.ctx.event(event_id)
        found.update(self._generic(event))
        if kind == "spawn":
            found.update(self._spawn(event))
        evidence = self._evidence(kind, event)
        for name, value in rules.signals(self.analysis, event_id).items():
            found[name] = Signal(float(value), evidence.get(name, ()) if value else ())
        for name in rules.DETECTORS:
            found[rule_feature(name)] = self.rule_confidence.get(name, {}).get(event_id,
                                                                               Signal(0.0))
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
            "text_words": Signal(_log(rules.words(e.text))),
        }

    def _spawn(self, e: Event) -> FeatureRow:
        child, parent = e.to, self.analysis.actor[e.id]
        stats = self.analysis.agent_stats.get(child) if child else None
        returns = self.ctx.returns_of(child, parent) if child else []
        return {"child_events": Signal(_log(stats.events if stats else 0)),
                "child_tokens": Signal(_log(stats.tokens if stats else 0.0)),
                "returned": Signal(float(bool(returns)), tuple(r.id for r in returns[:4]))}

    def _evidence(self, kind: str, e: Event) -> dict[str, tuple[str, ...]]:
        """The events behind the signals of one target, by signal name."""
        ctx, found = self.ctx, {}
        stop = next((p for p in self.analysis.stops if p.event_id == e.id), None)
        if stop is not None:
            late, working = ctx.in_flight(stop.agent, e)
            found["stop_returns_after"] = found["stop_late_missing"] = \
                tuple(r.id for r in late[:8])
            found["stop_pending_agents"] = found["stop_inflight_depth"] = \
                tuple(w.id for _, w, _ in working[:8])
            ready = ctx.answer_ready(stop.agent, e.id)
            if ready is not None:
                earlier, _, rounds = ready
                found["stop_answer_ready"] = found["stop_time_after_ready"] = (earlier.id,)
                found["stop_work_after_ready"] = tuple(r.id for r in rounds[:8])
        if any(p.event_id == e.id for p in self.analysis.aggregates):
            merged = ctx.merged(e.id)
            lost = [m for m in merged if m.presence < rules.ABSENT]
            least = min(merged, key=lambda m: m.presence, default=None)
            found["agg_lost_parts"] = tuple(x.id for m in lost[:4] for x in m.events[:2])
            found["agg_min_presence"] = tuple(x.id for x in least.events[:2]) if least else ()
        twin = ctx.twins.get(e.id)
        if twin is not None:
            found["spawn_task_similarity"] = found["spawn_result_similarity"] = (twin.spawn.id,)
        for name, signals in (("over_spawning", ("spawn_after_ready", "spawn_result_unused")),
                              ("unfaithful_merge", ("agg_conflict", "agg_caveat_dropped")),
                              ("redundant_message", ("msg_repeat_similarity", "msg_ignored")),
                              ("wrong_delegate", ("deleg_redelegated",))):
            held = self.rule_confidence.get(name, {}).get(e.id)
            if held is not None:
                for s in signals:
                    found.setdefault(s, held.events)
        return found


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
