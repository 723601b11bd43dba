"""The trace page: figures, spawn tree (or communication graph) over the message timeline, the
inspector beside them, and a replay bar. Opened by `?trace=<id>` (and `&event=<id>`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from components.annotation import (OthersAnswers, blind_mode, keep_drafts, labels_form,
                                   labels_head, others_answers, panel_key, shown_target)
from components.bookmarks import (BookmarkChoice, bookmark_panel, event_bookmarks, present_link,
                                  report_button)
from components.branching import can_continue, continue_form
from components.form import remembered
from components.inspector import inspector
from viz_app.analysis import analyze, figure_rows
from viz_app.branch import BranchError
from viz_app.errors import BookmarkError, OrchvizError, RubricError, StoreError
from viz_app.io.rollouts import rollout_of
from viz_app.labels import Label, LabelTarget
from viz_app.text import markdown_literal
from viz_app.ui import session
from viz_app.ui.drafts import DraftKeeper
from viz_app.ui.trace_views import task_caption, trace_views

reviewer = session.reviewer()
workspace = session.workspace()
trace = session.linked_trace("No trace is open. Pick one in the library.")
analysis = analyze(trace)
views_ready = session.views_ahead()
bookmarks = workspace.bookmarks
# The labels panel's column starts at the top of the page, beside the header, so that at
# 1600x1000 a target's question and its answers are in view without scrolling.
views, side = st.columns([2.3, 1.4], gap="medium")
# The header is filled last: its figures wait on the critical path, the slowest part to compute,
# and the tree and timeline should reach the browser first.
header = views.container()
HEADER_FIGURES = ("agents", "events", "depth", "fan-out", "makespan", "parallelism",
                  "critical path", "tokens", "cost")


def draw_header() -> None:
    """The trace's id and links, its figures, what it carries and its warnings."""
    title, present_col, report_col = st.columns([5, 1.3, 1.3], vertical_alignment="center")
    title.markdown(f"### {markdown_literal(trace.trace_id, 100)}")
    with present_col:
        present_link(trace)
    with report_col:
        report_button(trace, lambda: workspace.exports.report_html(
            trace, reviewer.name if reviewer else None, lead=session.is_lead(reviewer)))
    st.caption(task_caption(trace) + " · "
               f"topology **{trace.topology or 'not given'}** · "
               f"format {markdown_literal(trace.source_format, 30)} · "
               f"file {markdown_literal(workspace.library.source_name(trace), 200)}"
               + (f"  \n{markdown_literal(trace.system, 400)}" if trace.system else ""))
    rollout = rollout_of(trace)
    if rollout is not None:  # a trainer's rollout: its step, and its siblings one click away
        said, group = st.columns([4, 1.3], vertical_alignment="center")
        said.caption(f"rollout of **{markdown_literal(rollout.trainer, 20)}** · step "
                     f"**{rollout.step if rollout.step is not None else 'not given'}** · group "
                     f"{markdown_literal(rollout.group, 80)}"
                     + (f" · checkpoint {markdown_literal(rollout.checkpoint, 80)}"
                        if rollout.checkpoint else ""))
        group.page_link("app_pages/group.py", label="Its group", icon=":material/view_column:",
                        query_params={"group": rollout.group})
    rows = figure_rows(analysis.figures, HEADER_FIGURES)
    with st.container(horizontal=True, gap="small"):  # wraps rather than cut a figure's name
        for row in rows:
            st.metric(row.name, row.value, help=row.help or None, width="content")

    carried = [{"kind": "reward", "name": k, "value": v} for k, v in trace.rewards.items()]
    carried += [{"kind": "metric", "name": k, "value": v} for k, v in (trace.metrics or {}).items()]
    with st.expander(f"Rewards and metrics the trace carries ({len(carried)}) · "
                     f"warnings ({len(analysis.warnings)})", expanded=bool(analysis.warnings)):
        left, right = st.columns(2)
        if carried:
            left.dataframe(pd.DataFrame(carried), hide_index=True, width="stretch",
                           height=min(250, 38 + 35 * len(carried)))
        else:
            left.caption("no rewards or metrics")
        if analysis.warnings:
            right.dataframe(pd.DataFrame([w.model_dump() for w in analysis.warnings]), hide_index=True,
                            width="stretch", height=min(250, 38 + 35 * len(analysis.warnings)))
        else:
            right.caption("no structural warnings")


def follow(event_id: str | None) -> None:
    """Select an event chosen anywhere (a view, the inspector, the annotation panel)."""
    if event_id is not None:
        session.select_event(trace, event_id)


def follow_now(event_id: str) -> None:
    """In a widget callback of the side column: select the event, then rerun the labels panel
    and the inspector, which both show the selection (the tree and the timeline ring it again
    at the page's next full run)."""
    follow(event_id)
    st.rerun(scope=["labels", "inspector"])


# Two fragments: a key press, a pick or a save reruns the labels panel alone; a move to another
# target or event reruns it and the inspector; neither rebuilds the tree and the timeline.
@st.fragment(key="labels")
def labels_panel() -> None:
    """The labels panel: first in the column, so that the question and its answers are in view
    whatever the inspector shows. The page gathers what it shows through the facets and saves
    what the reviewer answers through `ws.labelling`."""
    with st.container(key="labels-panel"):
        st.markdown("#### Labels")
        try:
            rubric = workspace.rubric
        except RubricError as err:
            st.error(f"The rubric cannot be used: {markdown_literal(err, 400)}")
            return
        if not reviewer:
            st.info(session.identify_first("label this trace"))
            return
        form = panel_key(trace)
        keep_drafts(form, DraftKeeper(workspace, reviewer.name, form))
        targets = remembered(("targets", trace.trace_id, trace.sha256, id(rubric)),
                             lambda: workspace.library.targets(trace))
        mine = workspace.labelling.answers(trace.trace_id, reviewer.name)
        target = shown_target(trace, targets, mine, session.selected_event(trace))
        choice = labels_head(trace, analysis, reviewer, targets, mine, on_choose=follow_now,
                             on_next_trace=next_trace)
        if choice is not None and choice.action == "next-trace":  # none left, or no callback ran
            following = workspace.labelling.next_unlabelled(reviewer.name, after=trace.trace_id)
            if following is None:
                st.toast("Every trace in the library is labelled. Thank you!",
                         icon=":material/check_circle:")
            else:
                session.open_trace(following)  # not from a callback: pages are known only to a run
        if target is None:
            return
        # blind first: the facet says whether the reviewer may see the suggestions yet, and
        # what the save records of it
        seen = workspace.suggestions.visible(trace, target, reviewer.name)

        def save(values: dict[str, Any], comment: str, seconds: float) -> list[Label]:
            return workspace.labelling.save_answers(
                trace, target, values, reviewer, comment=comment, seconds_spent=seconds,
                suggestions_visible=seen.suggestions_visible)

        labels_form(trace, analysis, rubric, target, mine.get(target.key, {}), seen.suggestions,
                    seen.shown, save=save, on_choose=follow_now)
        others_answers(others_on(target))


def next_trace() -> None:
    """Shift+N, in the Next trace button's callback: the next trace the reviewer has left to
    label, shown by a full run of this page at once (`session.show_trace`); when none is left
    the panel's run that follows says so."""
    following = workspace.labelling.next_unlabelled(reviewer.name, after=trace.trace_id)
    if following is not None:
        session.show_trace(following)


def others_on(target: LabelTarget) -> OthersAnswers:
    """Other reviewers' answers on the labels panel's target, through the facets, as far as
    `labels_in_view` lets the reviewer see them (a campaign's target stays sealed until their
    own save in it, whatever the blind toggle), and their own history there."""
    name = reviewer.name
    everyone = {x.reviewer for x in workspace.labelling.current(trace.trace_id)
                if x.event_id == target.key and x.reviewer != name}
    others = [x for x in workspace.campaigns.labels_in_view(trace.trace_id, name,
                                                            blind=blind_mode())
              if x.event_id == target.key and x.reviewer != name]
    sealed = bool(everyone and not others) and target.key in workspace.campaigns.sealed(
        trace.trace_id)
    return OthersAnswers(
        others=others, answered=len(everyone), sealed=sealed,
        history=workspace.labelling.history(trace.trace_id, target.key or "", reviewer=name))


@st.fragment(key="inspector")
def inspector_panel() -> None:
    """The inspector of the selected event or agent, and the bookmarks below it."""
    inspector_box = st.container(border=True, key="inspector-panel")
    marks = bookmarks.current(trace.trace_id)
    with st.container():
        choice = bookmark_panel(trace, analysis, marks,
                                {m.bookmark_id: bookmarks.history(m.bookmark_id) for m in marks},
                                reviewer.name if reviewer else None,
                                session.selected_event(trace), on_choose=follow_now)
        if choice is not None and choice.action != "go":
            save_bookmark(choice)
    event_id = session.selected_event(trace)
    with inspector_box:
        st.markdown("#### Inspector")
        inspector(trace, analysis, event_id=event_id, agent=session.selected_agent(trace),
                  on_choose=follow_now)
        event_bookmarks(marks, event_id)
    if can_continue(analysis, event_id):
        continue_panel(event_id)


def save_bookmark(choice: BookmarkChoice) -> None:
    """Carry out what the reviewer chose in the bookmarks panel through `ws.bookmarks`; a
    refusal is one sentence under the panel, and nothing is saved."""
    who = reviewer.name if reviewer else None
    try:
        if choice.action == "add":
            bookmarks.add(trace, who, choice.note, event_id=choice.event_id,
                          start_s=choice.start_s, end_s=choice.end_s)
            st.toast("Bookmark added")
        elif choice.action == "edit":
            bookmarks.edit(trace, choice.bookmark_id, who, choice.note)
        elif choice.action == "remove":
            bookmarks.remove(choice.bookmark_id, who)
    except (BookmarkError, StoreError) as err:
        st.error(markdown_literal(err, 300))
        return
    st.rerun()


def continue_panel(event_id: str) -> None:
    """Continue from here on an orchestrator's decision, and the branch it made last."""
    endpoint = workspace.settings.endpoint
    try:  # a correction the reviewer saved here is where the form starts
        prefill = workspace.branches.correction_at(trace, event_id, reviewer.name) if reviewer else None
    except OrchvizError:
        prefill = None
    replacement = continue_form(trace, analysis, event_id,
                                model=endpoint.model if endpoint else None,
                                who=reviewer.name if reviewer else None, prefill=prefill)
    made = f"branch:{trace.trace_id}:{event_id}"
    if replacement is not None:
        with st.spinner(f"{endpoint.model if endpoint else 'The model'} is continuing the "
                        "orchestrator…"):
            try:
                branch, _ = workspace.branches.continue_from(trace, event_id, replacement, by=reviewer)
            except BranchError as err:
                said = markdown_literal(err, 400)
                st.error(said[:1].upper() + said[1:] + ".")
                return
        st.session_state[made] = (branch.trace.trace_id, branch.turns, branch.warnings)
    if made in st.session_state:
        branch_id, turns, warnings = st.session_state[made]
        st.success(f"Saved the branch **{markdown_literal(branch_id, 80)}** ({turns} turns "
                   "of the orchestrator after this decision).")
        for warning in warnings:
            said = markdown_literal(warning, 300)
            st.warning(said[:1].upper() + said[1:] + ".", icon=":material/person_alert:")
        st.page_link("app_pages/compare.py", label="See it beside the original on Compare",
                     icon=":material/compare:",
                     query_params={"a": trace.trace_id, "b": branch_id})


with side:
    labels_panel()
    inspector_panel()
event_id = session.selected_event(trace)
agent = session.selected_agent(trace)

with views:
    trace_views(trace, analysis, event_id=event_id, agent=agent, on_event=follow,
                on_agent=lambda chosen: session.select_agent(trace, chosen))

with header:
    draw_header()
views_ready()
if reviewer is not None:  # Shift+N's trace, read while the reviewer works on this one
    session.read_ahead(("next", session.trace_key(trace), reviewer.name),
                       lambda ws=workspace, who=reviewer.name, after=trace.trace_id:
                       [ws.labelling.next_unlabelled(who, after=after)])
