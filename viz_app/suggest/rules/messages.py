"""O3, communication: a message that repeats an earlier one to the same agent, or that its
recipient never acts on."""

from __future__ import annotations

from collections import defaultdict

from viz_app.model import Event
from viz_app.suggest.rules.facts import Context, Finding, ids_once
from viz_app.suggest.rules.thresholds import DUPLICATE_WINDOW, MIN_WORDS, NEAR_DUPLICATE
from viz_app.suggest.rules.wording import near_duplicate, words


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
                ids_once((e.id, last.id)), f"redundant: {e.to} does nothing after {e.id} (its "
                f"last event is {last.id})"))
    return found
