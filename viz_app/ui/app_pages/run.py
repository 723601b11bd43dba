"""The training-run page: the trainer's reward beside the reviewers' (and the newest reward
model's), step by step, read as a reward-hacking alarm (the trainer rewarding what reviewers do
not), and the rollouts where the two part most, each one click from its trace and its group."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from viz_app.errors import OrchvizError
from viz_app.training import (compare_rewards, model_rewards, read_rows, reviewers_rewards,
                              scaled)
from viz_app.ui import session

TRAINER, REVIEWERS, MODEL, ALARM = "#1c7ed6", "#2f9e44", "#ae3ec9", "#e03131"

workspace = session.workspace()
rows = [r for r in workspace.library.update_index().rows if r.trainer_reward is not None]
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
st.caption(f"{len(rows)} rollouts over {len(found.steps)} steps, {len(reviewed)} reviewed. The "
           f"trainer's rewards run from {low:g} to {high:g}; beside the reviewers' they are "
           "scaled to -1 .. 1 (its lowest -1, its highest 1). Above the reviewers' line, the "
           "trainer rewards what reviewers do not.")

steps = [s.step for s in found.steps]
figure = go.Figure()
figure.add_scatter(x=steps, y=[scaled(s.trainer_mean, low, high) for s in found.steps],
                   name="trainer (all rollouts)", mode="lines+markers",
                   line=dict(color=TRAINER, dash="dot"),
                   customdata=[s.trainer_mean for s in found.steps],
                   hovertemplate="step %{x}: %{customdata:.3f} as logged<extra></extra>")
figure.add_scatter(x=steps, y=[s.trainer_reviewed_mean for s in found.steps],
                   name="trainer (reviewed rollouts)", mode="lines+markers",
                   line=dict(color=TRAINER))
figure.add_scatter(x=steps, y=[s.reviewers_mean for s in found.steps], name="reviewers",
                   mode="lines+markers", line=dict(color=REVIEWERS))
if model:
    figure.add_scatter(x=steps, y=[s.model_mean for s in found.steps], name="reward model",
                       mode="lines+markers", line=dict(color=MODEL))
alarms = [s for s in found.steps if s.gap is not None and s.gap >= 0.5]
if alarms:
    figure.add_scatter(x=[s.step for s in alarms], y=[s.trainer_reviewed_mean for s in alarms],
                       name="trainer ≥ reviewers + 0.5", mode="markers",
                       marker=dict(color=ALARM, size=14, symbol="triangle-up"))
figure.update_layout(height=360, margin=dict(l=10, r=10, t=10, b=10),
                     xaxis=dict(title="training step", tickformat="d", dtick=max(
                         1, (steps[-1] - steps[0]) // 12) if steps else 1),
                     yaxis=dict(title="reward, -1 .. 1", range=[-1.1, 1.1]),
                     legend=dict(orientation="h", y=1.12))
st.plotly_chart(figure, key="run_rewards", config={"displayModeBar": False})

st.markdown("#### Where they part most")
gaps = found.rollouts[:200]
if not gaps:
    st.caption("No rollout is reviewed yet: label some on their group's page.")
    st.stop()
frame = pd.DataFrame([{
    "trace id": g.trace_id, "step": g.step,
    "trainer": g.trainer, "trainer (scaled)": g.trainer_scaled, "reviewers": g.reviewers,
    **({"model": g.model} if model else {}), "gap": g.gap,
    "group": g.group} for g in gaps])
picked = st.dataframe(frame, hide_index=True, key="run_gaps", on_select="rerun",
                      selection_mode="single-row", height=min(460, 38 + 35 * len(frame)),
                      column_config={name: st.column_config.NumberColumn(format="%.2f") for name
                                     in ("trainer (scaled)", "reviewers", "model", "gap")})
st.caption("A click opens the rollout's trace; its group's page shows its siblings.")
if picked is not None and picked.selection.rows:
    session.open_trace(gaps[picked.selection.rows[0]].trace_id)
