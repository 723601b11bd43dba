"""The adjudication page, for a campaign's leads: the targets whose reviewers disagree, one at a
time, beside the trace focused on the target; each reviewer's answers and, below them, the
dispute's thread (the reviewers' notes, the comments posted and the leads' reasons, in time
order, with a box to add to it); the final answer with a reason (a new label, `source:
adjudication`; the reviewers' labels stay); the retraction of a reviewer's labels with a reason;
and the campaign's status (progress, each reviewer's count and gold accuracy, alpha per
question), which only leads see.

With sign-in configured only members whose role is `lead` see it; without sign-in the page says
that names are not verified. `?campaign=NAME` opens it on a campaign.
"""

from __future__ import annotations

from typing import Any

import time

import pandas as pd
import streamlit as st

from components import keys
from components.annotation import asked_only, keep_drafts, target_form
from components.correction import diff_markdown
from components.suggestions import answer_text
from components.thread import comment_box, comment_posted, thread_view
from viz_app.analysis import Analysis, analyze
from viz_app.errors import LabelError, OrchvizError, StoreError
from viz_app.labels import Label, made_decision
from viz_app.text import identifier_markdown, markdown_literal
from viz_app.ui import session
from viz_app.ui.drafts import DraftKeeper
from viz_app.ui.trace_views import trace_views

CAMPAIGN_PARAM = "campaign"


def _plain(text: str, limit: int = 120) -> str:
    """Text for a widget's option (shown as written): one line, shortened."""
    value = " ".join(str(text).split())
    return value if len(value) <= limit else value[: limit - 1] + "…"


lead = session.reviewer()
workspace = session.workspace()
title, picker = st.columns([1, 2.5], vertical_alignment="bottom")
title.markdown("### Adjudicate")
session.lead_or_stop(workspace, lead, "adjudicate")
if not session.sign_in_configured():
    st.caption(f"Adjudicating as **{markdown_literal(lead.name, 60)}** · sign-in is not "
               "configured, so names are not verified: anyone who types a name may settle "
               "and retract here.")

campaigns = workspace.campaigns.all()
if not campaigns:
    st.info("There is no review campaign yet: `orchviz campaign create NAME --traces DIR`.")
    st.stop()
names = [c.name for c in campaigns]
if st.session_state.get("adj:campaign") not in names:
    linked = st.query_params.get(CAMPAIGN_PARAM)
    st.session_state["adj:campaign"] = linked if linked in names else names[0]
name = picker.selectbox("Campaign", names, key="adj:campaign")
st.query_params[CAMPAIGN_PARAM] = name
campaign = workspace.campaigns.get(name)
rubric = workspace.rubric
flash = st.session_state.pop("_adj:flash", None)
if flash:
    st.toast(markdown_literal(flash, 300), icon=":material/check_circle:")


def show_status() -> None:
    """Where the campaign stands, for its leads: gold accuracy is shown here and nowhere else."""
    status = workspace.campaigns.status(name)
    cols = st.columns(5)
    cols[0].metric("targets", status.targets)
    cols[1].metric("complete", status.complete)
    cols[2].metric("in progress", status.in_progress)
    cols[3].metric("reviews saved", f"{status.saved} of {status.slots}")
    cols[4].metric("unresolved disagreements", len(status.unresolved))
    st.markdown("**Reviewers**")
    if status.reviewers:
        st.dataframe(pd.DataFrame([{
            "reviewer": r.reviewer, "saved": r.saved, "reserved now": r.leased,
            "skipped": r.skipped, "gold answers": r.gold_seen,
            "gold accuracy": r.accuracy} for r in status.reviewers]),
            hide_index=True, width="stretch",
            column_config={"gold accuracy": st.column_config.ProgressColumn(
                min_value=0.0, max_value=1.0, format="percent")})
    else:
        st.caption("Nobody has claimed a target yet.")
    st.markdown("**Agreement** (Krippendorff's alpha over the campaign's labels)")
    st.dataframe(pd.DataFrame([{
        "question": q.question, "level": q.level, "alpha": q.alpha,
        "targets with 2+ reviewers": q.shared_targets, "note": q.note}
        for q in status.agreement]), hide_index=True, width="stretch",
        column_config={"alpha": st.column_config.NumberColumn(format="%.3f")})
    reservations()
    with st.expander("Retract every label of one reviewer in this campaign"):
        retract_reviewer([r.reviewer for r in status.reviewers])


def reservations() -> None:
    """Who holds which target now and when each reservation ends unless renewed; a lead gives
    one back to everyone (a reviewer gone for the day) with Release."""
    held = workspace.campaigns.reservations(name)
    st.markdown(f"**Reservations now** ({len(held)})")
    if not held:
        st.caption("No reviewer holds a target now.")
        return
    now = time.time()
    for r in held:
        who, target, ends, act = st.columns([1.2, 2.6, 1.8, 1], vertical_alignment="center")
        who.markdown(markdown_literal(r.reviewer, 40))
        target.markdown(f"{markdown_literal(r.trace_id, 60)} · "
                        f"{markdown_literal(r.event_id or 'the whole trace', 30)}")
        left = max(0, int(r.ends - now))
        ends.markdown(f"ends {time.strftime('%H:%M:%S', time.gmtime(r.ends))} UTC "
                      f"(in {left // 60} min {left % 60:02d} s)")
        if act.button("Release", key=f"adj:release:{r.slot_id}", icon=":material/lock_open:",
                      help="Give this target back to every reviewer now"):
            if workspace.campaigns.release_reservation(name, r.slot_id, lead):
                st.session_state["_adj:flash"] = (f"Released {r.reviewer}'s reservation of "
                                                  f"{r.trace_id} · {r.event_id or 'the trace'}.")
            else:
                st.session_state["_adj:flash"] = "That reservation had already ended."
            st.rerun()


def retract_reviewer(reviewers: list[str]) -> None:
    """A trial run, a reviewer who misread the rubric: all their labels in the campaign."""
    if not reviewers:
        st.caption("No reviewer has saved anything yet.")
        return
    with st.form("adj:retract-reviewer"):
        who = st.selectbox("Reviewer", reviewers)
        reason = st.text_input("Reason (required)", max_chars=500)
        if st.form_submit_button("Retract their labels", type="secondary"):
            ids = [x.label_id for x in workspace.labelling.current(reviewer=who, campaign=name)
                   if x.source == "human"]
            retract(ids, reason)


def retract(label_ids: list[str], reason: str) -> None:
    """Retract labels (appended retraction rows: the history stays)."""
    if not label_ids:
        st.error("Choose the labels to retract.")
        return
    if not reason.strip():
        st.error("Say why you retract them.")
        return
    try:
        count = workspace.campaigns.retract(label_ids, lead, reason.strip(), campaign=name)
    except (LabelError, StoreError) as err:
        st.error(markdown_literal(err, 400))
        return
    st.session_state["_adj:flash"] = f"Retracted {count} label{'s' if count != 1 else ''}."
    st.rerun()


def show_disagreements() -> None:
    found = workspace.campaigns.disagreements(name)
    settled = st.toggle("show settled ones too", key="adj:settled",
                        help="Disagreements that already have an adjudicated answer")
    items = [d for d in found if settled or not d.resolved]
    just = st.session_state.get("_adj:settled")
    if just:  # what the last adjudication saved, until the lead moves on
        shown = min(st.session_state.get("_adj:place", 0), len(items) - 1) + 1
        upcoming = (f" Now showing disagreement {shown} of {len(items)}." if items
                    else " No open disagreement is left.")
        st.success(markdown_literal(just, 600) + upcoming, icon=":material/gavel:")
    if not items:
        st.success("No open disagreement in this campaign." if found or not settled else
                   "The reviewers of this campaign agree so far.",
                   icon=":material/check_circle:")
        return
    place = min(st.session_state.get("_adj:place", 0), len(items) - 1)
    nav = st.columns([1, 1, 4], vertical_alignment="center")
    if nav[0].button("Previous", key="adj:previous", icon=":material/skip_previous:",
                     disabled=place == 0, shortcut=keys.shortcut("adjudicate-previous"),
                     width="stretch"):
        place -= 1
        st.session_state.pop("_adj:settled", None)
    if nav[1].button("Next", key="adj:next", icon=":material/skip_next:",
                     disabled=place >= len(items) - 1,
                     shortcut=keys.shortcut("adjudicate-next"), width="stretch"):
        place += 1
        st.session_state.pop("_adj:settled", None)
    st.session_state["_adj:place"] = place
    item = items[place]
    nav[2].caption(f"Disagreement {place + 1} of {len(items)} · trace "
                   f"**{markdown_literal(item.trace_id, 80)}** · target "
                   f"**{markdown_literal(item.event_id or 'the whole trace', 40)}** · disputed: "
                   + ", ".join(f"{markdown_literal(q, 40)} (spread {s:.2f})"
                               for q, s in item.disputed.items()))
    one_disagreement(item)
    if place + 1 < len(items):  # N's trace, read while the lead weighs this disagreement
        following = items[place + 1].trace_id
        session.read_ahead(("adjudicate", name, following), lambda: [following])


def one_disagreement(item) -> None:
    try:
        trace = session.find_and_load(item.trace_id)  # a trace of the folders or of a pool
        if trace is None:
            st.error(f"The trace {markdown_literal(item.trace_id, 80)} is not in the library.")
            return
    except (OrchvizError, OSError) as err:
        st.error(f"The trace could not be loaded: {markdown_literal(err, 300)}")
        return
    analysis = analyze(trace)
    key = item.event_id or ""
    target = next((t for t in workspace.library.targets(trace) if t.key == key), None)
    labels = [x for x in workspace.labelling.current(trace.trace_id, campaign=name)
              if x.event_id == key]
    views, side = st.columns([2.0, 1.7], gap="medium")
    with side:
        answers_side_by_side(item, labels, analysis)
        thread(item, trace)
        if target is None:
            st.error("The rubric asks nothing about this target in the trace as it is now.")
        else:
            final_form(item, trace, analysis, asked_only(target, campaign.questions, rubric),
                       labels)
        with st.expander("Retract reviewers' labels on this target"):
            retract_here(labels)
    with views:
        selected = st.session_state.get(f"_adj:selected:{item.trace_id}:{key}") or item.event_id
        trace_views(trace, analysis, event_id=selected,
                    agent=analysis.actor[selected] if selected in analysis.actor else None,
                    on_event=lambda e: st.session_state.update(
                        {f"_adj:selected:{item.trace_id}:{key}": e}),
                    on_agent=lambda a: None, key="adj:")


def answers_side_by_side(item, labels: list[Label], analysis: Analysis) -> None:
    """Every reviewer's answers side by side: a column per reviewer, a row per question, each
    cell wrapping its words (a long answer pushes no reviewer out of view); a correction reads
    as words with its word diff against what the orchestrator did; the adjudicated answer, when
    there is one, marked final. The reviewers' notes are in the thread below (`thread`)."""
    st.markdown("**What the reviewers answered**")
    reviewers = sorted(item.answers)
    widths = [1.5] + [2.0] * len(reviewers) + ([2.0] if item.adjudicated else [])
    with st.container(key="adj-answers"):
        head = st.columns(widths, vertical_alignment="bottom")
        head[0].caption("question")
        for col, who in zip(head[1:], reviewers):
            col.markdown(f"**{markdown_literal(who, 40)}**")
        if item.adjudicated:
            head[-1].markdown("**final** (adjudicated)")
        made = None
        if item.event_id and item.event_id in analysis.position:
            made = made_decision(analysis, item.event_id)[0]
        for q in [q for q in rubric.questions if any(q.id in a for a in item.answers.values())]:
            row = st.columns(widths)
            row[0].markdown(("⚠ " if q.id in item.disputed else "") + identifier_markdown(q.id, 40),
                            help="the reviewers disagree here" if q.id in item.disputed
                            else None)
            for col, who in zip(row[1:], reviewers):
                with col:
                    answer_cell(q, item.answers[who].get(q.id), made)
            if item.adjudicated:
                with row[-1]:
                    answer_cell(q, item.adjudicated.get(q.id), made)


def thread(item, trace) -> None:
    """What was said on the dispute, beside both sides: each reviewer's notes from their
    labels, the comments posted and the leads' reasons for a final answer, in time order; and a
    box where the lead adds to it (`ws.disputes`)."""
    st.markdown("**What was said** (notes, comments and reasons, oldest first)")
    try:
        entries = workspace.disputes.thread(name, item.trace_id, item.event_id, lead)
    except LabelError as err:
        st.error(markdown_literal(err, 400))
        return
    chosen = thread_view(entries, key="adj-thread", hiding=True)
    if chosen is not None:
        action, comment_id, reason = chosen
        try:
            if action == "hidden":
                workspace.disputes.hide(name, item.trace_id, item.event_id, comment_id, reason,
                                        lead)
            else:
                workspace.disputes.show(name, item.trace_id, item.event_id, comment_id, lead,
                                        reason)
        except (LabelError, StoreError) as err:
            st.error(markdown_literal(err, 400))
        else:
            st.rerun()
    box = f"adj:comment:{name}:{item.trace_id}:{item.event_id or ''}"
    text = comment_box(box, label="Comment on this dispute")
    if text is not None:
        try:
            workspace.disputes.comment(name, item.trace_id, item.event_id, text, lead,
                                       trace_sha256=trace.sha256)
        except (LabelError, StoreError) as err:
            st.error(markdown_literal(err, 400))
            return
        comment_posted(box)
        st.rerun()


def answer_cell(question, value: Any, made) -> None:
    """One reviewer's answer to one question, as words; a correction's text with its word diff
    against the decision the trace shows."""
    if value is None:
        st.markdown("—")
        return
    st.markdown(markdown_literal(answer_text(question, value), 600))
    text = value.get("text") if isinstance(value, dict) else None
    if made is not None and text and made.text:
        shown = diff_markdown(made.text, text)
        if shown:
            st.caption("against what it did: " + shown)


def final_form(item, trace, analysis, target, labels: list[Label]) -> None:
    """The final answer and its reason, through the labels panel's form."""
    saved = {x.question: x for x in labels if x.source == "adjudication"}

    def adjudicate(values: dict[str, Any], comment: str, seconds: float) -> list[Label]:
        if not comment.strip():
            raise LabelError("Give the reason for the final answer (the note box).")
        made = workspace.campaigns.adjudicate(name, item.trace_id, item.event_id, values, lead,
                                    comment.strip())
        said = "; ".join(f"{q} = {answer_text(rubric.question(q), v)}"
                         for q, v in values.items() if v is not None)  # what was saved
        st.session_state["_adj:settled"] = (
            f"Saved the final answer on {item.trace_id} · {item.event_id or 'the whole trace'}: "
            f"{said} (reason: {comment.strip()}).")
        return made

    st.markdown("**Final answer**")
    form = f"adj:{name}:{item.trace_id}:{item.event_id or ''}"
    keep_drafts(form, DraftKeeper(workspace, lead.name, form))
    target_form(trace, analysis, rubric, target, key=form, save=adjudicate,
                saved=saved, note_label="Reason for the final answer (required)")


def retract_here(labels: list[Label]) -> None:
    mine = [x for x in labels if x.source == "human"]
    if not mine:
        st.caption("No reviewer label here.")
        return
    by_id = {x.label_id: x for x in mine}
    with st.form("adj:retract-here"):
        chosen = st.multiselect(
            "Labels", list(by_id), format_func=lambda i: _plain(
                f"{by_id[i].reviewer} · {by_id[i].question} = {by_id[i].value}"))
        reason = st.text_input("Reason (required)", max_chars=500, key="adj:retract-reason")
        if st.form_submit_button("Retract"):
            retract(chosen, reason)


disagreements_tab, status_tab = st.tabs(["Disagreements", "Status"])
with disagreements_tab:
    show_disagreements()
with status_tab:
    show_status()
