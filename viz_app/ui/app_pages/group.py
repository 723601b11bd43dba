"""The group page: the siblings a trainer sampled for one prompt at one step, side by side, with
their trainer rewards and the reviewers' labels, the event where they part marked. A reviewer
labels the members one after another by keyboard (the digits answer, Ctrl+Enter saves and moves
to the next member, N / P move) and judges two members against each other (Shift+A, Shift+B,
Shift+T: a pairwise judgement, exported as a preference row). Opened by `?group=<id>` or
`?trace=<id>` (that trace's group)."""

from __future__ import annotations

import statistics

import pandas as pd
import streamlit as st

from components import keys
from components.annotation import target_form
from components.siblings import siblings
from viz_app.analysis import analyze
from viz_app.errors import LabelError, OrchvizError
from viz_app.labels import Label
from viz_app.text import markdown_literal
from viz_app.training import reviewers_rewards
from viz_app.ui import session

GROUP_PARAM = "group"

reviewer = session.reviewer()
workspace = session.workspace()
rows = workspace.library.update_index().rows
wanted = st.query_params.get(GROUP_PARAM)
if not wanted and st.query_params.get("trace"):
    wanted = next((r.rollout_group for r in rows if r.trace_id == st.query_params["trace"]),
                  None)
members = [r for r in rows if wanted and r.rollout_group == wanted]

if not members:
    grouped = sorted({(r.rollout_step, r.rollout_group) for r in rows if r.rollout_group},
                     key=lambda k: (k[0] is None, k[0] or 0, k[1]))
    st.markdown("### Groups")
    if not grouped:
        st.info("No trace in the library is a trainer's rollout with a group. Point the app at "
                "a run's rollout files (verl, OpenRLHF, OpenPipe ART, SkyRL, rLLM).")
        st.stop()
    if wanted:
        st.warning(f"No group {markdown_literal(wanted, 120)} in the library.")
    sizes = {g: [r for r in rows if r.rollout_group == g] for _, g in grouped}
    frame = pd.DataFrame([{
        "step": step, "group": group, "siblings": len(sizes[group]),
        "trainer mean": statistics.fmean(r.trainer_reward for r in sizes[group]
                                         if r.trainer_reward is not None)
        if any(r.trainer_reward is not None for r in sizes[group]) else None}
        for step, group in grouped])
    picked = st.dataframe(frame, hide_index=True, on_select="rerun", key="groups_table",
                          selection_mode="single-row", height=min(560, 38 + 35 * len(frame)))
    if picked is not None and picked.selection.rows:
        st.query_params.clear()
        st.query_params[GROUP_PARAM] = grouped[picked.selection.rows[0]][1]
        st.rerun()
    st.stop()

st.query_params[GROUP_PARAM] = wanted
members, view = session.group_view(members)
if not members:
    st.error(f"The rollouts of group {markdown_literal(wanted, 120)} could not be read: the "
             "library lists them, but their file no longer holds them. Open one from the "
             "library to see why.")
    st.stop()
ids = {m.trace_id for m in members}
records = [r for r in workspace.labelling.current_records() if r["trace_id"] in ids]
judged = reviewers_rewards(records)
answers = {m.trace_id: ", ".join(f"{x['question']}={x['value']}" for x in records
                                 if reviewer is not None and x["trace_id"] == m.trace_id
                                 and x["reviewer"] == reviewer.name and not x["event_id"])
           for m in members}
state = st.session_state.setdefault("_group", {})
at = min(state.get(wanted, 0), len(members) - 1)

step = members[0].rollout_step
rewards = [r.trainer_reward for r in members if r.trainer_reward is not None]
st.markdown(f"### Group {markdown_literal(wanted, 80)}")
st.caption(f"step **{step if step is not None else 'not given'}** · {len(members)} siblings · "
           f"trainer mean **{statistics.fmean(rewards):.3f}**" if rewards else
           f"step **{step}** · {len(members)} siblings")

left, side = st.columns([2.0, 1.7], gap="medium")
with left:  # one block of HTML: the prompt, the members' table, and a card per sibling
    siblings(view, members, judged=judged, answers=answers, at=at)

if reviewer is None:
    side.info(session.identify_first("label this group"))
    st.stop()


def move(to: int) -> None:
    state[wanted] = max(0, min(to, len(members) - 1))


label_col, pair_col = side.container(), side.container(border=True)
with label_col:
    current = workspace.library.trace(members[at].trace_id)  # read once per file version
    st.markdown(f"#### Label member {at + 1} of {len(members)}")
    nav = st.columns(3)
    nav[0].button("Back", key="group_previous",
                  shortcut=keys.shortcut("group-previous"), on_click=move, args=(at - 1,),
                  disabled=at == 0, icon=":material/skip_previous:",
                  help=f"The sibling before this one (key {keys.shortcut('group-previous')})")
    nav[1].button("Next", key="group_next", shortcut=keys.shortcut("group-next"),
                  on_click=move, args=(at + 1,), disabled=at >= len(members) - 1,
                  icon=":material/skip_next:",
                  help=f"The next sibling (key {keys.shortcut('group-next')}); saving moves on "
                       "too")
    nav[2].page_link("app_pages/trace.py", label="Its trace",
                     query_params={"trace": current.trace_id}, icon=":material/account_tree:")
    whole = next((t for t in workspace.library.targets(current) if t.key == ""), None)
    if whole is None:
        st.caption("The rubric asks nothing about a whole run.")
    else:
        def save(values: dict, comment: str, seconds: float) -> list[Label]:
            made = workspace.labelling.save_answers(current, whole, values, reviewer,
                                                    comment=comment, seconds_spent=seconds)
            move(at + 1)
            return made

        target_form(current, analyze(current), workspace.rubric, whole,
                    key=f"group:{wanted}:{current.trace_id}", save=save,
                    saved=workspace.labelling.answers(current.trace_id, reviewer.name).get("")
                    or workspace.labelling.answers(current.trace_id, reviewer.name).get(None),
                    save_label="Save, next")

with pair_col:
    st.markdown("#### Which of two is better?")
    numbers = list(range(len(members)))
    a_col, b_col = st.columns(2)
    a = a_col.selectbox("A", numbers, index=at, format_func=lambda i: f"#{i + 1}", key="pair_a")
    b = b_col.selectbox("B", numbers, index=min(at + 1, len(members) - 1) if len(members) > 1
                        else 0, format_func=lambda i: f"#{i + 1}", key="pair_b")
    reason = st.text_input("Why", key="pair_reason", placeholder="a few words: needed to save")
    given = workspace.labelling.judgement(members[a].trace_id, members[b].trace_id,
                                          reviewer.name) if a != b else None

    def judge(chosen: str | None) -> None:
        if a == b:
            st.session_state["_pair_said"] = ("warning", "Pick two different siblings.")
            return
        try:
            workspace.labelling.save_preference(workspace.library.trace(members[a].trace_id),
                                                workspace.library.trace(members[b].trace_id),
                                                chosen, reviewer, reason)
        except (LabelError, OrchvizError) as err:
            st.session_state["_pair_said"] = ("error", f"Nothing was saved: {err}")
            return
        better = "a tie" if chosen is None else \
            f"#{(a if chosen == members[a].trace_id else b) + 1} is better"
        st.session_state["_pair_said"] = ("success", f"Saved: {better}.")

    verdicts = st.columns(3)
    verdicts[0].button("A better", key="pair_a_better", shortcut=keys.shortcut("pair-a"),
                       on_click=judge, args=(members[a].trace_id,), width="stretch")
    verdicts[1].button("B better", key="pair_b_better", shortcut=keys.shortcut("pair-b"),
                       on_click=judge, args=(members[b].trace_id,), width="stretch")
    verdicts[2].button("Tie", key="pair_tie", shortcut=keys.shortcut("pair-tie"),
                       on_click=judge, args=(None,), width="stretch")
    said = st.session_state.pop("_pair_said", None)
    if said:
        getattr(st, said[0])(markdown_literal(said[1], 300))
    elif given is not None:
        st.caption("You judged this pair before; a new judgement replaces it.")
    # the command as plain text, not a code span: the page's one monospace text made the
    # browser fetch that font last and lay out every sibling's text again when it came
    st.caption("Judgements of two siblings export as preference rows, with their step and "
               "group: orchviz labels export --format preference.")
