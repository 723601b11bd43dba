"""The compare page: two traces (typically two rollouts of one task) side by side: their
figures with the differences marked, their spawn trees with agents aligned by role and position,
their timelines on one time axis, and the pairwise question. When one is a branch of the other
(continued from an edited decision, `viz_app.branch`), where they part is said and marked, and
their events from there on are set side by side. Opened by `?a=<id>&b=<id>`; the traces come
from the library's folders or its pools (`session.find_and_load`)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from viz_app.ui import session
from viz_app.analysis import Analysis, analyze, figure_text
from viz_app.comparison import (Divergence, FigureDiff, align, aligned_tree_figure, divergence,
                                figure_differences, shared_timeline)
from viz_app.errors import LabelError, OrchvizError, RubricError, StoreError
from viz_app.labels import PAIRWISE_PROMPT, STRENGTHS
from viz_app.model import Event, Trace
from viz_app.text import markdown_literal

reviewer = session.reviewer()
st.markdown("### Compare two runs")

rows = session.index().rows
# a pool's traces come from its index: those the URL names, the other rollouts of their tasks
# (or the pool's first page when it names none), never all of a million
by_id = {r.trace_id: r for r in rows}
for row in session.pool_rows([st.query_params.get("a") or "", st.query_params.get("b") or ""],
                             with_groups=True, first_page=True):
    by_id.setdefault(row.trace_id, row)
if len(by_id) < 2:
    st.info("The library needs at least two traces to compare.")
    st.stop()
ids = list(by_id)


def _default_b(a: str) -> str:
    """Another rollout of the same task when there is one, else the next trace."""
    same = [t for t in ids if t != a and by_id[t].task_id == by_id[a].task_id]
    return same[0] if same else ids[(ids.index(a) + 1) % len(ids)]


a_id = st.query_params.get("a") if st.query_params.get("a") in by_id else ids[0]
b_id = st.query_params.get("b") if st.query_params.get("b") in by_id else _default_b(a_id)
if b_id == a_id:
    b_id = _default_b(a_id)


def _option(trace_id: str) -> str:
    row = by_id[trace_id]
    return f"{trace_id} · {row.task_id} · {row.agents} agents"


pick_a, pick_b = st.columns(2)
chosen_a = pick_a.selectbox("Run A", ids, index=ids.index(a_id), format_func=_option,
                            key="compare:a")
others = [t for t in ids if t != chosen_a]
chosen_b = pick_b.selectbox("Run B", others,
                            index=others.index(b_id) if b_id in others else
                            others.index(_default_b(chosen_a)),
                            format_func=_option, key="compare:b")
if (chosen_a, chosen_b) != (st.query_params.get("a"), st.query_params.get("b")):
    st.query_params.update({"a": chosen_a, "b": chosen_b})


def _load(trace_id: str) -> Trace:
    try:
        found = session.find_and_load(trace_id)
    except (OrchvizError, OSError) as err:
        st.error(f"The trace could not be loaded: {markdown_literal(err, 400)}")
        st.stop()
    if found is None:
        st.error(f"No trace with id **{markdown_literal(trace_id)}** in the library.")
        st.stop()
    return found


trace_a, trace_b = _load(chosen_a), _load(chosen_b)
analysis_a, analysis_b = analyze(trace_a), analyze(trace_b)
if trace_a.task_id != trace_b.task_id:
    st.caption(f"Different tasks: **{markdown_literal(trace_a.task_id, 80)}** and "
               f"**{markdown_literal(trace_b.task_id, 80)}**.")
else:
    st.caption(f"Both runs attempt task **{markdown_literal(trace_a.task_id, 100)}**.")


# -- a branch and its original ------------------------------------------------------------------


def _event_row(event: Event) -> dict[str, str]:
    flag = ("requested, not run" if event.extras.get("requested_not_run") is True else
            "replayed" if event.extras.get("replayed") is True else
            "edited decision" if event.extras.get("fork_event") == event.id else "recorded")
    what = event.decision or event.type
    if event.to:
        what += f" → {event.to}"
    elif event.tool:
        what += f" · {event.tool}"
    return {"t (s)": f"{float(event.t):.1f}", "event": event.id, "agent": event.agent,
            "what": what, "text": event.text[:300], "how": flag}


def _divergence(found: Divergence) -> None:
    """Where a branch parts from its original, said and set side by side."""
    fork = found.fork
    branch, original = ("B", "A") if found.branch == "b" else ("A", "B")
    limit = " (it reached the turn limit)" if fork.turn_limit_reached else ""
    with st.container(border=True, key="compare-divergence"):
        st.markdown(
            f"**{branch} is a branch of {original}**: at event "
            f"**{markdown_literal(fork.fork_event, 60)}** ({float(fork.t):.1f} s, the red line "
            f"below) the orchestrator's decision was replaced by a reviewer's, and "
            f"**{markdown_literal(fork.model or 'a model', 60)}** continued it for "
            f"{len(fork.replayed)} turn{'s' if len(fork.replayed) != 1 else ''}{limit}. "
            f"Before it the two runs are the same record.")
        st.caption("Only the orchestrator's own LLM turns were replayed: the sub-agents, tool "
                   f"calls and messages they asked for ({len(fork.requested)}) are shown as "
                   "requested, not run, so no result of theirs comes back. The branch's figures "
                   "are not a finished run's: its time after the divergence is the model's, "
                   "and its makespan, tokens and cost leave out all that was not run.")
        left, right = st.columns(2)
        for column, side, events in ((left, "A", found.original if found.branch == "b"
                                      else found.continued),
                                     (right, "B", found.continued if found.branch == "b"
                                      else found.original)):
            column.markdown(f"**{side} from the divergence on** "
                            f"({'branch' if side == branch else 'original'})")
            column.dataframe(pd.DataFrame([_event_row(e) for e in events]), hide_index=True,
                             width="stretch", height=min(320, 38 + 35 * len(events)),
                             key=f"compare:diverge-{side}")


parted = divergence(trace_a, trace_b)
if parted is not None:
    _divergence(parted)
diverge_at = None if parted is None else \
    float(parted.fork.t) - float(min(e.t for e in trace_a.events))


# -- figures -------------------------------------------------------------------------------------


def _figure_table(diffs: list[FigureDiff]) -> pd.DataFrame:
    return pd.DataFrame([{
        "figure": d.name, "A": figure_text(d.name, d.a), "B": figure_text(d.name, d.b),
        "B − A": ("+" if d.delta > 0 else "") + figure_text(d.name, d.delta) if d.differs
        else "=",
        "better": {"a": "A", "b": "B"}.get(d.better or "", ""),
    } for d in diffs])


def _mark(frame: pd.DataFrame, diffs: list[FigureDiff]):
    """Differing figures on a yellow ground, the better value in green."""
    def style(row: pd.Series) -> list[str]:
        d = diffs[row.name]
        base = "background-color: #fff3bf" if d.differs else ""
        cells = []
        for column in frame.columns:
            css = base
            if column == "A" and d.better == "a" or column == "B" and d.better == "b":
                css += "; color: #2b8a3e; font-weight: 600"
            cells.append(css)
        return cells

    return frame.style.apply(style, axis=1)


diffs = figure_differences(analysis_a, analysis_b, judged=parted is None)
st.markdown(f"**Figures** · {sum(d.differs for d in diffs)} of {len(diffs)} differ "
            + ("(yellow; none is called better: the branch's requested work was not run)"
               if parted else "(yellow; the better value in green where lower is better)"))
st.dataframe(_mark(_figure_table(diffs), diffs), hide_index=True, width="stretch",
             height=38 + 35 * len(diffs), key="compare:figures")


# -- trees and timelines -----------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=16)
def _figures(key_a: str, key_b: str, at: float | None, _a: Analysis, _b: Analysis
             ) -> tuple[go.Figure, go.Figure, go.Figure, int, int]:
    alignment = align(_a, _b)
    return (aligned_tree_figure(_a, alignment, "a"), aligned_tree_figure(_b, alignment, "b"),
            shared_timeline(_a, _b, names=("A · " + _a.trace.trace_id,
                                           "B · " + _b.trace.trace_id), diverge_at=at),
            len(alignment.only_a), len(alignment.only_b))


tree_a, tree_b, timeline, only_a, only_b = _figures(session.trace_key(trace_a),
                                                    session.trace_key(trace_b), diverge_at,
                                                    analysis_a, analysis_b)
st.markdown(f"**Spawn trees**, agents aligned by role and position · {only_a} only in A, "
            f"{only_b} only in B (orange ring: only in this run; grey: only in the other; "
            "purple diamond: paired by position, the roles differ)")
left, right = st.columns(2)
left.caption(f"**A** · {markdown_literal(trace_a.trace_id, 80)}")
left.plotly_chart(tree_a, key="compare:tree-a", config={"displaylogo": False})
right.caption(f"**B** · {markdown_literal(trace_b.trace_id, 80)}")
right.plotly_chart(tree_b, key="compare:tree-b", config={"displaylogo": False})
st.markdown("**Timelines** on one time axis (seconds from each run's start; the dotted line "
            "is the run's end" + ("; the red line is where the branch parts" if parted else "")
            + ")")
st.plotly_chart(timeline, key="compare:timeline", config={"displaylogo": False})


# -- the pairwise question ------------------------------------------------------------------------

st.markdown(f"**{PAIRWISE_PROMPT}**")
workspace = session.workspace()
try:
    held = workspace.labelling.judgement(trace_a.trace_id, trace_b.trace_id, reviewer.name) \
        if reviewer else None
except RubricError as err:
    st.error(f"The label store cannot be opened: {markdown_literal(err, 300)}")
    st.stop()
if held is not None:
    verdict = "about the same" if held.chosen is None else (
        f"{'A' if held.chosen == trace_a.trace_id else 'B'} "
        f"{STRENGTHS.get(held.strength, 'better')}")
    st.caption(f"Your current answer: **{verdict}** ({held.created_at[:16].replace('T', ' ')}). "
               "Saving again replaces it; the old one stays in the history.")
options = ["A is better", "B is better", "About the same"]
current = None if held is None else (2 if held.chosen is None else
                                     0 if held.chosen == trace_a.trace_id else 1)
with st.form("compare:pairwise", border=True):
    choice = st.radio("Which orchestration is better?", options, index=current,
                      horizontal=True, key="compare:choice")
    strength = st.select_slider("How much better (optional)", ["not said", *STRENGTHS.values()],
                                value=STRENGTHS.get(held.strength, "not said") if held else
                                "not said", key="compare:strength")
    reason = st.text_area("Why", value=held.reason if held else "", height=90,
                          key="compare:reason",
                          placeholder="B waits for the profiler's result; A stops before it.")
    saved = st.form_submit_button("Save judgement", type="primary", disabled=not reviewer,
                                  help=None if reviewer else "say who you are in the sidebar")
if not reviewer:
    st.caption(session.identify_first("answer"))
if saved:
    chosen = {0: trace_a.trace_id, 1: trace_b.trace_id, 2: None}.get(
        options.index(choice) if choice else -1, "")
    level = {v: k for k, v in STRENGTHS.items()}.get(strength)
    try:
        if chosen == "":
            raise LabelError("pick which run is better (or about the same)")
        workspace.labelling.save_preference(trace_a, trace_b, chosen, reviewer, reason,
                                  None if chosen is None else level)
    except (LabelError, StoreError) as err:  # the form keeps the answer
        st.error(markdown_literal(err, 300))
    else:
        st.success("Judgement saved.")
