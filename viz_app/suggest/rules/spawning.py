"""O1, spawning: a child whose task repeats an earlier sibling's, one spawned after the answer
was in hand, one whose return was never used."""

from __future__ import annotations

from viz_app.model import Event
from viz_app.suggest.rules.facts import Context, Finding, ids_once
from viz_app.suggest.rules.thresholds import DROP_WORDS, SAME_TASK
from viz_app.suggest.rules.wording import words


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
                    ids_once((e.id, *(r.id for r in returns), stop.id)),
                    f"redundant: what {child} returned ({returns[0].id}) was never used "
                    f"before the stop {stop.id}"))
    return found
