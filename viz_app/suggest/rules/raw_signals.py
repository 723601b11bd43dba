"""The detectors' raw figures on one target, before any threshold, for a learned producer
(`viz_app.suggest.features` weighs them)."""

from __future__ import annotations

from viz_app.analysis import Analysis, StopPoint, analyze
from viz_app.labels import LabelTarget
from viz_app.model import Event, Trace
from viz_app.suggest.overlap import content
from viz_app.suggest.rules.detectors import context
from viz_app.suggest.rules.facts import Context
from viz_app.suggest.rules.thresholds import (ABSENT, DUPLICATE_WINDOW, MAX_INPUTS, MIN_WORDS,
                                              READY_TOKENS)
from viz_app.suggest.rules.wording import covered, near_duplicate, words

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
