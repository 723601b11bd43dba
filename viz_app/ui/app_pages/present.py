"""Presentation mode: one trace, full width, stepping through its bookmarks in the order of the
run. Each step rings its event in the tree and the timeline and shows its note and the labels on
it. Opened by `?trace=<id>&present=1` (`&step=<n>` links to a step); ← and → step."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from components import keys
from components.bookmarks import note
from viz_app.ui import session
from viz_app.ui.trace_views import task_caption
from viz_app.analysis import analyze, figure_rows
from viz_app.case_study import steps, timeline_marks
from viz_app.text import markdown_literal

_CLEAN = """<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none !important; }
[data-testid="stMainBlockContainer"] { padding: 1.2rem 2.5rem 2rem 2.5rem !important;
                                       max-width: 100% !important; }
[data-testid="stHeader"] { background: transparent; }
</style>"""

st.html(_CLEAN)  # a constant style sheet: no trace text goes into it
viewer = session.reviewer()  # in the hidden sidebar: who is looking decides which labels show
trace = session.linked_trace(
    "Presentation mode shows one trace: open it from the trace page (Present).")
analysis = analyze(trace)

labels, bookmarks = session.workspace().bookmarks.case_study(
    trace, viewer.name if viewer else None, lead=session.is_lead(viewer))
presented = steps(analysis, bookmarks, [r for r in labels if r["trace_id"] == trace.trace_id])
count = len(presented)
try:
    number = min(max(int(st.query_params.get("step", "1")), 1), max(count, 1))
except ValueError:
    number = 1
step = presented[number - 1] if presented else None


def go(to: int) -> None:
    """Move to step `to` (kept in the URL, so a link opens the same step)."""
    st.query_params["step"] = str(to)


head, back, where, forward, leave = st.columns([6, 1.1, 1.2, 1.1, 1.3],
                                               vertical_alignment="center")
head.markdown(f"### {markdown_literal(trace.trace_id, 90)}")
shown = {r.name: r.value for r in figure_rows(analysis.figures, ("agents", "events", "makespan"))}
head.caption(task_caption(trace) + f" · {shown['agents']} agents · "
             f"{shown['events']} events · makespan {shown['makespan']}")
back.button("previous", key="present:back", width="stretch",
            disabled=step is None or number <= 1, on_click=go, args=(number - 1,),
            shortcut=keys.shortcut("present-previous"), help="previous bookmark (←)")
where.markdown(f"**{number if step else 0} / {count}**", text_alignment="center",
               help="bookmark shown / bookmarks of the trace")
forward.button("next", key="present:next", width="stretch",
               disabled=step is None or number >= count, on_click=go, args=(number + 1,),
               shortcut=keys.shortcut("present-next"), help="next bookmark (→)", type="primary")
leave.page_link(session.TRACE_PAGE, label="Leave", icon=":material/close:",
                query_params={"trace": trace.trace_id}
                | ({"event": step.bookmark.event_id} if step and step.bookmark.event_id else {}))

if step is None:
    st.info("This trace has no bookmarks yet. Add them on the trace page (Bookmarks and notes), "
            "then present them here.")

tree_col, note_col = st.columns([1.5, 1], gap="large")
with tree_col:
    tree = session.tree_figure(trace, size_by="tokens", expanded=(),
                                 selected=step.agent if step else None, until=None)
    st.plotly_chart(tree, key="present:tree", config={"displaylogo": False},
                    height="content")
with note_col:
    if step is not None:
        with st.container(border=True, key="present-note"):
            mark = step.bookmark
            st.markdown(f"#### {step.number}. {markdown_literal(mark.where, 80)}")
            st.caption(f"{markdown_literal(step.agent, 60) + ' · ' if step.agent else ''}note by "
                       f"{markdown_literal(mark.reviewer, 40)} · "
                       f"{mark.created_at[:16].replace('T', ' ')}")
            note(mark)
            if mark.event_id is not None:
                event = trace.event(mark.event_id)
                with st.expander(f"{event.type} {markdown_literal(event.id, 40)}: content"):
                    if event.text:
                        st.code(event.text, language=None, wrap_lines=True, height=200)
                    else:
                        st.caption("no content")
            if step.labels:
                st.markdown("**Labels here**")
                st.dataframe(pd.DataFrame([{
                    "event": r["event_id"], "question": r["question"], "answer": str(r["value"]),
                    "reviewer": r["reviewer"]} for r in step.labels]),
                    hide_index=True, width="stretch", height=min(250, 38 + 35 * len(step.labels)))
            else:
                st.caption("no labels on it")

timeline = session.timeline_figure(trace, until=None, critical=False)
current = step.bookmark.bookmark_id if step else None
with session.overlaid(timeline, timeline_marks(analysis, [s.bookmark for s in presented],
                                                 current)) as shown:
    st.plotly_chart(shown, key=f"present:timeline:{number}", config={"displaylogo": False},
                    height="content")
