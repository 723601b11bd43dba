"""O5, the decision to stop: a stop that came too early (work it handed out still in flight)
or too late (the final answer was already in hand and new work followed)."""

from __future__ import annotations

from collections import defaultdict

from viz_app.model import Event
from viz_app.suggest.rules.facts import Context, Finding, ids_once
from viz_app.suggest.rules.thresholds import COVERED, MIN_WORDS
from viz_app.suggest.rules.wording import covered, words


# -- O5: premature stop ------------------------------------------------------------------------


def premature_stop(ctx: Context) -> list[Finding]:
    """A stop while work the stopping agent handed out is still in flight (`Context.in_flight`:
    a return to it comes after the stop, or an agent it spawned or delegated to has not
    returned and it or an agent below it still works after the stop); stronger when the final
    answer leaves out what a late return said."""
    found: list[Finding] = []
    for point in ctx.analysis.stops:
        stop = ctx.event(point.event_id)
        agent = point.agent
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
                             confidence, ids_once(evidence), explanation))
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
                             ids_once((stop.id, earlier.id, *(r.id for r in rounds[:10]),
                                   final.id)), explanation))
    return found


def _work(events: list[Event]) -> str:
    """New work counted by kind, in words: "2 spawns, 3 messages"."""
    kinds: dict[str, int] = defaultdict(int)
    for e in events:
        kinds["delegation" if e.type == "orchestrator_decision" else e.type] += 1
    return ", ".join(f"{n} {k}{'s' if n > 1 else ''}" for k, n in kinds.items())
