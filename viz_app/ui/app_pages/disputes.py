"""The disputes page, for reviewers: the disputes of every campaign that they are one side of
(their answers and another reviewer's differ on a target), unsettled first; for the one chosen,
both sides, the thread (each reviewer's notes from their labels, the comments posted, a lead's
reason for the final answer, in time order) and a box to add to it. A lead settles the dispute
on the Adjudicate page, where the same thread stands beside both answers.

Who may read and post is the Workspace's rule (`ws.disputes`): a reviewer only on the disputes
they are in. `?campaign=NAME&trace=ID&event=ID` opens one dispute (`event` left out for the
trace itself); the Review page links here.
"""

from __future__ import annotations

import streamlit as st

from components.thread import comment_box, comment_posted, sides_view, thread_view
from viz_app.errors import LabelError, StoreError
from viz_app.labels import DisputeThread
from viz_app.text import markdown_literal
from viz_app.ui import session

reviewer = session.reviewer()
workspace = session.workspace()
st.markdown("### Disputes")
if reviewer is None:
    st.info(session.identify_first("see the disputes you are in"))
    st.stop()

found = workspace.disputes.mine(reviewer)
if not found:
    st.info("You are one side of no dispute: where you and another reviewer of a campaign "
            "answered a target differently, it shows here, and you can say why.",
            icon=":material/handshake:")
    st.stop()


def label(t: DisputeThread) -> str:
    """A dispute as the picker lists it (plain text: a widget's option is shown as written)."""
    d = t.dispute
    state = "settled" if d.resolved else "open"
    said = f"{len(t.entries)} said" if t.entries else "nothing said"
    where = " ".join(f"{t.campaign} · {d.trace_id} · {d.event_id or 'the whole trace'}".split())
    return f"{where[:140]} · {', '.join(d.disputed)} · {state} · {said}"


keys = ["\x1f".join(t.key) for t in found]
linked = "\x1f".join((st.query_params.get("campaign", ""), st.query_params.get("trace", ""),
                      st.query_params.get("event", "")))
if st.session_state.get("disputes:chosen") not in keys:
    st.session_state["disputes:chosen"] = linked if linked in keys else keys[0]
by_key = dict(zip(keys, found))
chosen = by_key[st.selectbox(f"Your disputes ({sum(not t.dispute.resolved for t in found)} "
                             f"open of {len(found)})", keys, key="disputes:chosen",
                             format_func=lambda k: label(by_key[k]))]
campaign, trace_id, event_id = chosen.key
st.query_params.update({"campaign": campaign, "trace": trace_id}
                       | ({"event": event_id} if event_id else {}))
if not event_id and "event" in st.query_params:
    del st.query_params["event"]

sides, said = st.columns([1, 1.4], gap="large")
with sides:
    st.markdown("**Both answers**")
    sides_view(chosen.dispute, workspace.rubric, key="disputes-sides")
    if chosen.dispute.resolved:
        st.caption("A lead has settled this dispute; you can still add to its thread.")
    st.page_link("app_pages/trace.py", label="Open the trace at this target",
                 icon=":material/account_tree:",
                 query_params={"trace": trace_id} | ({"event": event_id} if event_id else {}))
with said:
    st.markdown("**What was said** (notes, comments and reasons, oldest first)")
    thread_view(chosen.entries, key="disputes-thread")
    box = f"disputes:comment:{campaign}:{trace_id}:{event_id}"
    text = comment_box(box, label="Say why (everyone in this dispute and its leads read it)")
    if text is not None:
        try:
            workspace.disputes.comment(campaign, trace_id, event_id or None, text, reviewer)
        except (LabelError, StoreError) as err:
            st.error(markdown_literal(err, 400))
        else:
            comment_posted(box)
            st.rerun()
