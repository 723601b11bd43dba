"""O2, delegation: a task handed to one agent that the same delegator hands, nearly word for
word, to another after the first answered."""

from __future__ import annotations

from viz_app.suggest.rules.facts import Context, Finding
from viz_app.suggest.rules.thresholds import DUPLICATE_WINDOW, MIN_WORDS, NEAR_DUPLICATE
from viz_app.suggest.rules.wording import near_duplicate, words


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
