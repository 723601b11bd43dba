"""Which target the labels panel is on and where N, P and S take it, and the one-line labels
of targets and events: pure functions over the panel's state (a plain dict, `form.form_state`),
unit-tested without Streamlit."""

from __future__ import annotations

import time

from viz_app.analysis import Analysis
from viz_app.labels import LabelTarget
from viz_app.model import Event


def short(text: object, limit: int = 60) -> str:
    """Trace text for a plain-text option label: one line, shortened."""
    value = " ".join(str(text).split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


def target_label(target: LabelTarget, analysis: Analysis, done: bool) -> str:
    mark = "✓" if done else "○"
    if target.event_id is None:
        return f"{mark} the whole trace"
    kinds = " + ".join("inferred stop" if k == "stop" and target.inferred else k
                       for k in target.kinds)
    return f"{mark} {short(target.event_id, 24)} · {kinds} · {short(target.agent, 24)} · " \
           f"t={target.t:g}s"


def event_label(event: Event, analysis: Analysis) -> str:
    return f"{short(event.id, 20)} · {event.type} · {short(analysis.actor[event.id], 20)} · " \
           f"t={float(event.t):g}s"


def next_target_key(keys: list[str], done: set[str], current: str | None,
                    skipped: list[str]) -> str | None:
    """The target N moves to: the first unlabelled target after `current` (in order, wrapping),
    never `current` itself; targets the reviewer skipped come last, in the order skipped.
    None when no other target is left to label."""
    start = keys.index(current) + 1 if current in keys else 0
    ordered = keys[start:] + keys[:start]
    left = [k for k in ordered if k not in done and k != current]
    fresh = [k for k in left if k not in skipped]
    if fresh:
        return fresh[0]
    later = [k for k in skipped if k in left]
    return later[0] if later else None


def previous_target_key(keys: list[str], current: str | None) -> str | None:
    """The target P moves to: the one before `current` in order (None at the first)."""
    if current not in keys:
        return None
    where = keys.index(current)
    return keys[where - 1] if where > 0 else None


def follow(state: dict, selected: str | None, keys: list[str]) -> str | None:
    """An event selected elsewhere (tree, timeline, inspector), followed by the panel's state:
    a target's event becomes the current target; while the reviewer picks a 'should have
    stopped here' event, the event is returned, to be recorded as the current target's answer
    (None otherwise). An event already seen changes nothing."""
    if selected == state["seen"]:
        return None
    state["seen"] = selected
    if selected is None:
        return None
    if state["picking"] and state["target"] and selected != state["target"]:
        state["picking"] = False
        return selected
    if selected in keys and selected != state["target"]:
        leave(state, selected)
    return None


def leave(state: dict, new_key: str) -> None:
    """Move the panel's state (`form.form_state`) to another target: it is opened now, and the
    event it names is the one last seen (the whole trace, "", names none)."""
    state["target"] = new_key
    state["seen"] = new_key or state["seen"]
    state["opened"] = time.time()
    state["picking"] = False
