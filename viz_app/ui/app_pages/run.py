"""The training-run page: the trainer's reward beside the reviewers' (and the newest reward
model's), step by step, read as a reward-hacking alarm (the trainer rewarding what reviewers do
not); the steps where the two part most, and the rollouts where they part most (of every step,
or of the step picked in the chart or the steps' table), each one click from its trace and its
group. Following a run (`--follow`), the page is drawn again as the trainer's steps and the
reviewers' labels come."""

from __future__ import annotations

from urllib.parse import quote

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from viz_app.errors import OrchvizError
from viz_app.text import plotly_text
from viz_app.training import (RewardComparison, compare_rewards, model_rewards, read_rows,
                              reviewers_rewards, scaled)
from viz_app.ui import session

TRAINER, REVIEWERS, MODEL, ALARM = "#1c7ed6", "#2f9e44", "#ae3ec9", "#e03131"
# A step whose trainer's mean (rescaled) is this far above the reviewers' is marked. (A
# comment, not a docstring: Streamlit's magic would print a bare string of a page script.)
ALARM_GAP = 0.5

workspace = session.workspace()
listed = workspace.library.update_index()


def drawn_now() -> tuple:
    """What the page draws from, in a word: the listing, and how many labels are stored (append
    only, so a label saved since changes it): a lead watching the alarm sees the reviewers'
    line move as they label, and the trainer's as steps come."""
    return session.listing_mark(workspace.library.update_index()), workspace.labelling.count()


session.follow_run((session.listing_mark(listed), workspace.labelling.count()), drawn_now)
rows = [r for r in listed.rows if r.trainer_reward is not None]
st.markdown("### Training run: the trainer's reward beside the reviewers'")
if not rows:
    st.info("No trace in the library carries a trainer's reward. Point the app at a run's "
            "rollout files (verl, OpenRLHF, OpenPipe ART, SkyRL, rLLM), with `--follow` while "
            "it trains.")
    st.stop()

reviewers = reviewers_rewards(workspace.labelling.current_records())
reviewed = [r for r in rows if r.trace_id in reviewers]
use_model = st.toggle("Beside the newest reward model's", key="run_model",
                      help="Score the reviewed rollouts with the reward model trained on the "
                      "team's labels (`orchviz reward train`)")
model: dict[str, float] = {}
if use_model:
    try:
        stored = workspace.rewards.models()
        if not stored:
            st.caption("No reward model is stored yet (`orchviz reward train`).")
        else:
            model = model_rewards(stored[0], read_rows(reviewed).values(), workspace.rubric)
    except (OrchvizError, ImportError, AttributeError) as err:
        st.warning(f"The reward model could not score the rollouts: {err}")
found = compare_rewards(rows, reviewers, model)
low, high = found.scale or (0.0, 0.0)
st.caption(f"{len(rows)} rollouts over {len(found.steps)} steps, {len(reviewed)} reviewed"
           + (f" · following the run: looking every {workspace.settings.follow:g} s"
              if workspace.settings.follow else "")
           + f". The trainer's rewards run from {low:g} to {high:g}; beside the reviewers' "
           "they are rescaled to -1 .. 1 (its lowest -1, its highest 1). Above the reviewers' "
           "line, the trainer rewards what reviewers do not: a step marked ▲ is "
           f"{ALARM_GAP:g} or more above. Click a step's point to list its rollouts.")


def most_apart(found: RewardComparison) -> dict[int, str]:
    """Per step, the reviewed rollout where the trainer and the reviewers part most, said for
    a hover box (its id escaped for Plotly: a trace id is the trainer's text)."""
    said: dict[int, str] = {}
    for gap in found.rollouts:  # the largest |gap| first
        if gap.step is not None and gap.step not in said:
            said[gap.step] = (f"<br>most apart: {plotly_text(gap.trace_id, 60)} "
                              f"(gap {gap.gap:+.2f})")
    return said


def reward_chart(found: RewardComparison) -> go.Figure:
    """The per-step means, the trainer's rescaled, the steps over the alarm marked."""
    steps = [s.step for s in found.steps]
    apart = most_apart(found)
    figure = go.Figure()
    figure.add_scatter(
        x=steps, y=[scaled(s.trainer_mean, low, high) for s in found.steps],
        name="trainer, all rollouts", mode="lines+markers", line=dict(color=TRAINER, dash="dot"),
        customdata=[[s.trainer_mean, s.rollouts] for s in found.steps],
        hovertemplate="step %{x}: the trainer's mean %{customdata[0]:.3f} as logged "
                      "(%{y:.2f} rescaled) over %{customdata[1]} rollouts<extra></extra>")
    figure.add_scatter(
        x=steps, y=[s.trainer_reviewed_mean for s in found.steps],
        name="trainer, reviewed rollouts", mode="lines+markers", line=dict(color=TRAINER),
        customdata=[s.reviewed for s in found.steps],
        hovertemplate="step %{x}: the trainer's mean %{y:.2f} (rescaled) over the "
                      "%{customdata} reviewed rollouts<extra></extra>")
    figure.add_scatter(
        x=steps, y=[s.reviewers_mean for s in found.steps], name="reviewers",
        mode="lines+markers", line=dict(color=REVIEWERS),
        customdata=[[s.reviewed, apart.get(s.step, "")] for s in found.steps],
        hovertemplate="step %{x}: the reviewers' mean %{y:.2f} over %{customdata[0]} "
                      "reviewed rollouts%{customdata[1]}<extra></extra>")
    if any(s.model_mean is not None for s in found.steps):
        figure.add_scatter(
            x=steps, y=[s.model_mean for s in found.steps], name="reward model",
            mode="lines+markers", line=dict(color=MODEL),
            hovertemplate="step %{x}: the reward model's mean %{y:.2f} over the reviewed "
                          "rollouts<extra></extra>")
    alarms = [s for s in found.steps if s.gap is not None and s.gap >= ALARM_GAP]
    if alarms:
        figure.add_scatter(
            x=[s.step for s in alarms], y=[s.trainer_reviewed_mean for s in alarms],
            name=f"▲ trainer ≥ reviewers + {ALARM_GAP:g}", mode="markers",
            marker=dict(color=ALARM, size=14, symbol="triangle-up"),
            customdata=[[s.gap, apart.get(s.step, "")] for s in alarms],
            hovertemplate="step %{x}: the trainer %{customdata[0]:.2f} above the reviewers"
                          "%{customdata[1]}<extra></extra>")
    figure.update_layout(
        height=360, margin=dict(l=10, r=10, t=10, b=10), hovermode="closest",
        clickmode="event+select",
        xaxis=dict(title="training step", tickformat="d",
                   dtick=max(1, (steps[-1] - steps[0]) // 12) if steps else 1),
        yaxis=dict(title="mean reward (-1 .. 1; the trainer's rescaled)", range=[-1.1, 1.1],
                   zeroline=True),
        legend=dict(orientation="h", y=1.12))
    return figure


chart = st.plotly_chart(reward_chart(found), key="run_rewards", on_select="rerun",
                        selection_mode="points", config={"displayModeBar": False})

st.markdown("#### Steps where they part most")
judged = sorted((s for s in found.steps if s.gap is not None),
                key=lambda s: (-abs(s.gap), s.step))
if not judged:
    st.caption("No rollout is reviewed yet: label some on their group's page, or in a "
               "campaign sampled per step (`orchviz campaign create --per-step N`).")
    st.stop()
steps_table = st.dataframe(
    pd.DataFrame([{"step": s.step, "rollouts": s.rollouts, "reviewed": s.reviewed,
                   "trainer, as logged": s.trainer_mean,
                   "trainer, reviewed (rescaled)": s.trainer_reviewed_mean,
                   "reviewers": s.reviewers_mean,
                   **({"reward model": s.model_mean} if model else {}), "gap": s.gap}
                  for s in judged]),
    hide_index=True, key="run_steps", on_select="rerun", selection_mode="single-row",
    height=min(282, 38 + 35 * len(judged)),
    column_config={
        "step": st.column_config.NumberColumn(format="%d"),
        **{name: st.column_config.NumberColumn(format="%.2f") for name in (
            "trainer, as logged", "trainer, reviewed (rescaled)", "reviewers", "reward model")},
        "gap": st.column_config.NumberColumn(
            format="%+.2f", help="The trainer's mean over the reviewed rollouts (rescaled) "
            "less the reviewers' mean: above 0 the trainer rewards what reviewers do not")})


def picked_step() -> tuple[int | None, str]:
    """The step whose rollouts are listed, and how to list every step again: the one ticked
    in the steps' table, else the one clicked in the chart, else None (every step)."""
    if steps_table is not None and steps_table.selection.rows:
        return judged[steps_table.selection.rows[0]].step, "untick it in the steps' table"
    points = chart.selection.points if chart is not None else []
    return (int(points[0]["x"]), "double-click the chart") if points else (None, "")


step, back = picked_step()
gaps = [g for g in found.rollouts if step is None or g.step == step][:200]
st.markdown("#### Rollouts where they part most" + (f" at step {step}" if step is not None
                                                    else ""))
if step is not None:
    st.caption(f"Of step {step} alone: {back} for every step.")
if not gaps:
    st.caption(f"No rollout of step {step} is reviewed yet.")
    st.stop()
frame = pd.DataFrame([{
    "trace id": f"trace?trace={quote(g.trace_id, safe='')}", "step": g.step,
    "trainer": g.trainer, "trainer (rescaled)": g.trainer_scaled, "reviewers": g.reviewers,
    **({"reward model": g.model} if model else {}), "gap": g.gap,
    "group": f"group?group={quote(g.group, safe=':')}" if g.group else None} for g in gaps])
picked = st.dataframe(
    frame, hide_index=True, key="run_gaps", on_select="rerun", selection_mode="single-row",
    height=min(460, 38 + 35 * len(frame)),
    column_config={
        "trace id": st.column_config.LinkColumn(
            width="large", display_text=r"trace=(.*)$", help="Opens the rollout's trace"),
        "group": st.column_config.LinkColumn(
            display_text=r"group=(.*)$", help="Opens its group's page: the siblings sampled "
            "for the same prompt at the same step"),
        **{name: st.column_config.NumberColumn(format="%.2f") for name in (
            "trainer (rescaled)", "reviewers", "reward model")},
        "gap": st.column_config.NumberColumn(
            format="%+.2f", help="The trainer's reward (rescaled) less the reviewers'")})
st.caption("A trace id opens the rollout's trace and a group its siblings' page, each in a new "
           "tab; the box at a row's start opens the trace here.")
if picked is not None and picked.selection.rows:
    session.open_trace(gaps[picked.selection.rows[0]].trace_id)
