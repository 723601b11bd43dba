"""The answer box of a `correction` question: the decision the orchestrator should have made.

One box per question, inside the labels form: the actions the question takes (when it takes
more than one), then what the action needs (the merge, the message, the agent, the role), and
for a text that starts from the trace's own words (a merge) the word diff of the edit below it.
The assembled answer (`viz_app.labels.correction.Correction`, as a dict) is kept under the
question's widget key, where the form's save reads every answer; None while nothing is chosen,
or while a merge is left as the aggregator wrote it.

Keyboard: W (outside a text box) puts the focus in the box's first field (`keyboard.js`), Tab
moves on, arrow keys pick an action or an agent, Ctrl+Enter saves from inside a text box. Trace
text is shown through `markdown_literal` only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from viz_app.analysis import Analysis
from viz_app.labels import ACTION_LABELS, LabelTarget, Question, word_diff
from viz_app.model import Trace
from viz_app.text import markdown_literal

NEW_ROLE = "\u2295 a new role"
"""The agent list's last option: delegate to an agent the run did not have (named below)."""

DIFF_SHOWN = 4000
"""Characters of a word diff shown (a longer edit is cut, with a note)."""


def _fields(key: str) -> dict[str, str]:
    return {name: f"{key}:{name}" for name in ("action", "text", "agent", "role", "to")}


def _start_text(question: Question, trace: Trace, target: LabelTarget) -> str:
    """What a text field starts with: a merge starts from the aggregator's own output."""
    if "merge" in question.actions and target.event_id:
        return trace.event(target.event_id).text
    return ""


def _assembled(question: Question, key: str, start: str) -> dict[str, Any] | None:
    """The answer the fields hold, or None when they give no correction yet."""
    fields = _fields(key)
    get = st.session_state.get
    action = question.actions[0] if len(question.actions) == 1 else get(fields["action"])
    if action is None:
        return None
    text = (get(fields["text"]) or "").strip()
    value: dict[str, Any] = {"action": action}
    if action == "merge":
        if not text or text == start.strip():
            return None  # left as the aggregator wrote it: no correction
        value["text"] = text
    elif action == "stop":
        if not text:
            return None
        value["text"] = text
    elif action in ("do_it_itself", "spawn", "send") and text:
        value["text"] = text
    if action == "reuse_agent" and get(fields["agent"]):
        value["agent"] = get(fields["agent"])
    if action == "delegate":
        agent = get(fields["agent"])
        if agent == NEW_ROLE:
            if (get(fields["role"]) or "").strip():
                value["role"] = get(fields["role"]).strip()
        elif agent:
            value["agent"] = agent
    if action == "spawn" and (get(fields["role"]) or "").strip():
        value["role"] = get(fields["role"]).strip()
    if action == "send" and get(fields["to"]):
        value["to"] = get(fields["to"])
    return value


def _prefill(question: Question, key: str, start: str, agents: list[str]) -> None:
    """Fill the fields once from the answer held (a draft or the saved one), else the start."""
    fields = _fields(key)
    if fields["action"] in st.session_state or fields["text"] in st.session_state:
        return
    held = st.session_state.get(key)
    held = held if isinstance(held, dict) else {}
    if len(question.actions) > 1:
        st.session_state[fields["action"]] = held.get("action") \
            if held.get("action") in question.actions else None
    st.session_state[fields["text"]] = held.get("text") or start
    st.session_state[fields["role"]] = held.get("role") or ""
    if held.get("role") and "delegate" in question.actions:
        st.session_state[fields["agent"]] = NEW_ROLE
    elif held.get("agent") in agents:
        st.session_state[fields["agent"]] = held["agent"]
    if held.get("to") in agents:
        st.session_state[fields["to"]] = held["to"]


def correction_box(question: Question, key: str, trace: Trace, analysis: Analysis,
                   target: LabelTarget, keep: Callable[[str, Any], None]) -> dict | None:
    """Draw the box of one correction question and return the answer it holds. `keep(key,
    value)` stores the assembled answer where the form reads it (and keeps it as a draft)."""
    start = _start_text(question, trace, target)
    agents = list(analysis.agents)
    fields = _fields(key)
    _prefill(question, key, start, agents)

    def changed() -> None:
        keep(key, _assembled(question, key, start))

    with st.container(border=True, key=f"ann-correction-{question.id}"):
        st.markdown(f"**{markdown_literal(question.prompt, 200)}** · key W")
        if len(question.actions) > 1:
            st.radio("What it should have done", question.actions, key=fields["action"],
                     index=None, horizontal=True, on_change=changed,
                     format_func=lambda a: ACTION_LABELS.get(a, a), help=question.guidance
                     or None)
        action = question.actions[0] if len(question.actions) == 1 \
            else st.session_state.get(fields["action"])
        if action in ("reuse_agent", "delegate"):
            options = [a for a in agents if a != analysis.actor.get(target.event_id or "", "")]
            if action == "delegate":
                options.append(NEW_ROLE)
            st.selectbox("Agent", options, key=fields["agent"], index=None, on_change=changed,
                         placeholder="pick the agent it should have gone to",
                         format_func=lambda a: markdown_literal(a, 60))
        if action == "spawn" or (action == "delegate"
                                 and st.session_state.get(fields["agent"]) == NEW_ROLE):
            st.text_input("Role of the new agent", key=fields["role"], on_change=changed,
                          placeholder="such as: database expert")
        if action == "send":
            st.selectbox("To", agents, key=fields["to"], index=None, on_change=changed,
                         placeholder="who should have received it",
                         format_func=lambda a: markdown_literal(a, 60))
        if action in ("merge", "stop", "spawn", "send", "do_it_itself"):
            label = {"merge": "The merge it should have made",
                     "stop": "The final answer it should have given",
                     "spawn": "The sub-agent's task", "send": "The message",
                     "do_it_itself": "How (optional)"}[action]
            st.text_area(label, key=fields["text"], on_change=changed,
                         height=160 if action == "merge" else 90,
                         help="Ctrl+Enter keeps the text and saves the form")
        if action == "merge":
            _diff(start, st.session_state.get(fields["text"]) or "")
        value = _assembled(question, key, start)
        if value is None and action == "merge":
            st.caption("unchanged: no correction is saved")
    return value


def diff_markdown(before: str, after: str) -> str:
    """The word diff of an edit as Markdown: removed words struck through in red, added ones in
    green, the words both share as they are ('' when nothing changed)."""
    runs = word_diff(before, after)
    if all(op == "=" for op, _ in runs):
        return ""
    shown, used = [], 0
    for op, text in runs:
        if used > DIFF_SHOWN:
            shown.append(" … (the rest of the edit is not shown)")
            break
        used += len(text)
        words = markdown_literal(text, None)
        if not words:
            continue
        if op == "-":
            shown.append(f":red-background[~~{words}~~] ")
        elif op == "+":
            shown.append(f":green-background[{words}] ")
        else:
            shown.append(words + " ")
    return "".join(shown)


def _diff(before: str, after: str) -> None:
    """The word diff of the edit in the box, under it."""
    shown = diff_markdown(before, after)
    if not shown:
        return
    with st.container(height=130, border=False, key="ann-correction-diff"):
        st.markdown("**Edit** · " + shown)
