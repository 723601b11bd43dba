"""Continue from here: on an orchestrator's decision, the form where a reviewer writes the
decision it should have made, for a model to continue the run from (`viz_app.branch`).

The form takes the trace, its analysis and the selected event, and returns the reviewer's
`Replacement` when they press Continue from here (None otherwise); the page asks the Workspace
to continue and shows the outcome. Trace text is shown only inside widgets (text areas),
never as Markdown or HTML.
"""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from viz_app.analysis import Analysis
from viz_app.branch import BranchError, Replacement, default_kind, orchestrator_of
from viz_app.model import DECISIONS, Trace
from viz_app.text import markdown_literal

NOT_RUN = ("Only the orchestrator's own LLM turns are replayed: the sub-agents, tool calls and "
           "messages it asks for are recorded as requested, not run.")


def can_continue(analysis: Analysis, event_id: str | None) -> bool:
    """Whether an event is an orchestrator's decision a run can be continued from."""
    if event_id is None:
        return False
    try:
        orchestrator_of(analysis, event_id)
    except BranchError:
        return False
    return True


def continue_form(trace: Trace, analysis: Analysis, event_id: str, *, model: str | None,
                  who: str | None, prefill: Replacement | None = None) -> Replacement | None:
    """The Continue from here form on one decision; the replacement the reviewer asks a model
    to continue from, when they press the button. `model` is the configured endpoint's model
    (None: none is configured, the button is off and says how to configure one); `who` the
    reviewer (None: the button says to identify first); `prefill` a correction to start from
    (else the decision the orchestrator made)."""
    event = trace.event(event_id)
    start = prefill or Replacement(kind=default_kind(trace, event_id), text=event.text,
                                   to=event.to or "")
    keys = {name: f"branch-{name}-{event_id}" for name in ("kind", "text", "to", "start")}
    if st.session_state.get(keys["start"]) != start:  # a new starting point (a correction
        st.session_state[keys["start"]] = start       # saved since) fills the form afresh
        st.session_state[keys["kind"]] = start.kind
        st.session_state[keys["text"]] = start.text
        st.session_state[keys["to"]] = start.to
    with st.expander(f"Continue from here · {markdown_literal(event_id, 40)}",
                     expanded=False, key=f"branch-{event_id}"):
        st.caption("Write the decision it should have made; "
                   + (f"**{markdown_literal(model, 60)}** continues" if model else
                      "a model continues")
                   + " the orchestrator from there as a new trace, shown beside this one on "
                   "Compare. " + NOT_RUN
                   + (" The form starts from your saved correction here." if prefill else ""))
        with st.form(f"branch-form-{event_id}", border=False):
            kind = st.selectbox("Decision", DECISIONS, key=keys["kind"])
            text = st.text_area("What it should have decided", height=120, key=keys["text"])
            to = st.text_input("To (the agent it spawns, delegates to or messages)",
                               key=keys["to"])
            why_off = ("start the app with --judge-url and --judge-model to continue runs"
                       if not model else "say who you are in the sidebar" if not who else None)
            pressed = st.form_submit_button("Continue from here", type="primary",
                                            disabled=why_off is not None, help=why_off)
        if why_off:
            st.caption(why_off[0].upper() + why_off[1:] + ".")
    if not pressed:
        return None
    try:
        return Replacement(kind=kind, text=text, to=to.strip())
    except ValidationError as err:
        st.error(f"The decision cannot be used: {markdown_literal(err.errors()[0]['msg'], 200)}.")
        return None
