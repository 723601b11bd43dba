"""What an agent of a trace had seen, and when: the facts a counterfactual decision may rest on.

A decision is judged in its agent's context: the events it made and those addressed to it
(spawns, delegations, messages, returns), never a sub-agent's tool calls or a message between
two others. A reviewer who says "it should have stopped at e15" points at an event; when the
stopping agent never saw e15 (a worker's return to a lead), stopping there rests on nothing the
agent had. `first_had` finds the first event at which the agent had what the event says (the
lead's return carrying it, say), which the label form offers and the decision-pairs export uses.

`waited_for` names the agent a decision to go on waits for (an agent it handed work to that has
not answered, else the one that answered last); `last_delivery` the result that completed a
sound stop's context. Pure: an `Analysis` in, ids out.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from viz_app.analysis import Analysis

_HANDED = frozenset({"spawn", "delegate", "message"})
"""Links by which an agent hands another work (a message may carry a task)."""


def seen_positions(analysis: Analysis, agent: str) -> list[int]:
    """Positions (in time order) of the events `agent` saw: its own, and those addressed to it
    (made for every agent in one pass over the trace, kept on the analysis)."""
    seen = analysis.__dict__.get("_seen_positions")
    if seen is None:
        seen = {}
        actor = analysis.actor
        for i, e in enumerate(analysis.order):
            who = actor[e.id]
            seen.setdefault(who, []).append(i)
            to = e.to
            if to is not None and to != who:
                seen.setdefault(to, []).append(i)
        analysis.__dict__["_seen_positions"] = seen
    return seen.get(agent, [])


def saw(analysis: Analysis, agent: str, event_id: str) -> bool:
    """Whether `agent` made the event or it was addressed to the agent."""
    positions = seen_positions(analysis, agent)
    at = analysis.position[event_id]
    i = bisect_left(positions, at)
    return i < len(positions) and positions[i] == at


def first_had(analysis: Analysis, event_id: str, agent: str) -> str | None:
    """The first event at which `agent` had what event `event_id` says: the event itself when
    the agent made it or received it; else the first later event addressed to the agent that
    carries it (`carries`) from an agent that had it by then. What an event says spreads from
    whoever made or received it along the messages, returns, spawns and delegations that carry
    it on; a later message from the same agent about something else does not. None when it
    never reached the agent."""
    if saw(analysis, agent, event_id):
        return event_id
    start = analysis.position[event_id]
    event = analysis.order[start]
    said = _content(event.text)
    knows = {analysis.actor[event_id]}
    link = analysis.link_of(event)
    if link is not None:
        knows.add(link[2])
    for later in analysis.order[start + 1:]:
        link = analysis.link_of(later)
        if link is None or link[1] not in knows or not carries(later.text, said):
            continue
        if link[2] == agent:
            return later.id
        knows.add(link[2])
    return None


_FIGURE = re.compile(r"(?<![\w.])[0-9][0-9,]*(?:\.[0-9]+)?(?![\w])")
_WORD = re.compile(r"[A-Za-z][\w'-]{3,}")


def _content(text: str) -> tuple[frozenset[str], frozenset[str]]:
    """What a text says, for `carries`: its figures, and its words of four letters or more."""
    return (frozenset(_FIGURE.findall(text or "")),
            frozenset(w.lower() for w in _WORD.findall(text or "")))


def carries(text: str, said: tuple[frozenset[str], frozenset[str]]) -> bool:
    """Whether a text carries what another said (`_content` of it): three quarters of its
    figures or more (all of three or fewer: one result's figure is not another's), or, when it
    holds none, half its words or more."""
    figures, words = said
    mine = _content(text)
    if figures:
        return len(figures & mine[0]) * 4 >= len(figures) * 3
    return bool(words) and len(words & mine[1]) * 2 >= len(words)


def _deliveries(analysis: Analysis, agent: str, before: int) -> list[tuple[int, str]]:
    """(position, sender) of the returns and messages addressed to `agent` before `before`."""
    found = []
    for p in seen_positions(analysis, agent):
        if p >= before:
            break
        link = analysis.link_of(analysis.order[p])
        if link is not None and link[0] in ("return", "message") and link[2] == agent:
            found.append((p, link[1]))
    return found


def outstanding(analysis: Analysis, agent: str, before: int) -> list[str]:
    """The agents `agent` handed work to (a spawn, a delegation, a message) before position
    `before` that have not returned to it since, most recently handed first."""
    handed: dict[str, int] = {}
    answered: dict[str, int] = {}
    for p in seen_positions(analysis, agent):
        if p >= before:
            break
        link = analysis.link_of(analysis.order[p])
        if link is None:
            continue
        kind, sender, to = link
        if sender == agent and kind in _HANDED:
            handed[to] = p
        elif to == agent and kind == "return":
            answered[sender] = p
    waiting = [(p, who) for who, p in handed.items() if answered.get(who, -1) < p]
    return [who for _, who in sorted(waiting, reverse=True)]


def waited_for(analysis: Analysis, agent: str, before: int) -> str:
    """The agent a decision to go on at position `before` would wait for: the one most
    recently handed work that has not returned, else the one whose result came last ('' when
    none ever answered)."""
    waiting = outstanding(analysis, agent, before)
    if waiting:
        return waiting[0]
    delivered = _deliveries(analysis, agent, before)
    return delivered[-1][1] if delivered else ""


def last_delivery(analysis: Analysis, agent: str, before: int) -> int | None:
    """The position at which the last result `agent` received before `before` began to come
    in: the sender of the last return or message is X, and this is X's first delivery since
    `agent` last handed X work (so a result split over three returns begins at the first).
    None when nothing was delivered."""
    delivered = _deliveries(analysis, agent, before)
    if not delivered:
        return None
    last, sender = delivered[-1]
    handed = -1
    for p in seen_positions(analysis, agent):
        if p >= last:
            break
        link = analysis.link_of(analysis.order[p])
        if link is not None and link[1] == agent and link[2] == sender and link[0] in _HANDED:
            handed = p
    return min(p for p, who in delivered if who == sender and p > handed)
