"""The group page: the siblings a trainer sampled for one prompt at one step, side by side, with
their trainer rewards and the reviewers' labels, the event where they part marked. A reviewer
labels the members one after another by keyboard (the digits answer, Ctrl+Enter saves and moves
to the next member, N / P move) and judges two members against each other (Shift+A, Shift+B,
Shift+T: a pairwise judgement, exported as a preference row). The members' table sorts by any
column (a click or Enter on its heading; `?sort=`), and the cards and the keys' next and
previous follow its order. Opened by `?group=<id>` or `?trace=<id>` (that trace's group)."""

from __future__ import annotations

import statistics

import pandas as pd
import streamlit as st

from components import keys
from components.annotation import target_form
from components.members import Sort, member_rows, members_table, ordered
from components.members import table_data, table_html
from components.siblings import siblings
from viz_app.analysis import analyze
from viz_app.errors import LabelError, OrchvizError
from viz_app.labels import Label
from viz_app.text import markdown_literal
from viz_app.training import reviewers_rewards
from viz_app.ui import session

GROUP_PARAM = "group"
SORT_PARAM = "sort"

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
                          column_config={"trainer mean": st.column_config.NumberColumn(
                              format="%.3f")},
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
answers = {m.trace_id: ", ".join(str(x["value"]) for x in records  # the run's, not a pair's
                                 if reviewer is not None and x["trace_id"] == m.trace_id
                                 and x["reviewer"] == reviewer.name and not x["event_id"]
                                 and not x.get("pair_trace_id"))
           for m in members}
state = st.session_state.setdefault("_group", {})
sort = Sort.parse(st.query_params.get(SORT_PARAM))
table = member_rows(view, members, judged=judged, answers=answers)
order = ordered(table, sort)  # the table's, the cards' and the keys' next and previous
at = state[wanted] if state.get(wanted, -1) in order else order[0]  # first: the table's top
place = order.index(at)


def partner(member: int, within: list[int]) -> int:
    """The member a pair sets beside `member` first: the next in the order `within` (for the
    last, the one before)."""
    place_of = within.index(member)
    return within[place_of + 1] if place_of + 1 < len(within) else within[max(0, place_of - 1)]


def pick(member: int, within: list[int] | None = None) -> None:
    """Make `member` the one being labelled; the pair to judge moves with it (the member and
    the next in the table's order), as a reviewer who has read one compares it with the one
    after."""
    state[wanted] = member
    st.session_state["pair_a"] = member
    st.session_state["pair_b"] = partner(member, within or order)


def move(to: int) -> None:
    """Make the member at place `to` of the table's order the one being labelled."""
    pick(order[max(0, min(to, len(order) - 1))])


def keep_in_url(chosen: Sort) -> None:
    """Keep the table's order in the URL (none for the order sampled), so a link keeps it."""
    if chosen.sampled:
        st.query_params.pop(SORT_PARAM, None)
    else:
        st.query_params[SORT_PARAM] = str(chosen)


def sort_by(chosen: Sort) -> None:
    """A heading clicked: the new order, and labelling starts again at its top (a reviewer
    sorts to label, say, the highest trainer rewards first)."""
    keep_in_url(chosen)
    new = ordered(table, chosen)
    pick(new[0], new)


keep_in_url(sort)  # spelled as it reads back (`?sort=trainer` -> `trainer:desc`; nonsense: none)


step = members[0].rollout_step
rewards = [r.trainer_reward for r in members if r.trainer_reward is not None]
st.markdown(f"### Group {markdown_literal(wanted, 80)}")
st.caption(f"step **{step if step is not None else 'not given'}** · {len(members)} siblings · "
           f"trainer mean **{statistics.fmean(rewards):.3f}**" if rewards else
           f"step **{step}** · {len(members)} siblings")

left, side = st.columns([2.0, 1.7], gap="medium")
shown = table_data(table, prompt=view.prompt, sort=sort, at=at)
with left:  # the live table's place, then one block of HTML: the table as first drawn (hidden
    # once the live one is there) and a card per sibling
    live_table = st.empty()
    siblings(view, members, judged=judged, at=at, order=order, table=table_html(shown))


def draw_live_table() -> None:
    """The sortable table, sent last of the page: the browser loads a component's code when it
    first sees one, and the labels column's widgets come first (the table is on screen, drawn
    with the cards, meanwhile)."""
    with live_table:
        members_table(shown, key="group_members", on_sort=sort_by, on_pick=pick)


if reviewer is None:
    side.info(session.identify_first("label this group"))
    draw_live_table()
    st.stop()


label_col, pair_col = side.container(), side.container(border=True)
with label_col:
    current = workspace.library.trace(members[at].trace_id)  # read once per file version
    st.markdown(f"#### Label member {at + 1} of {len(members)}" if sort.sampled else
                f"#### Label member #{at + 1} · {place + 1} of {len(members)}")
    if not sort.sampled:
        st.caption(f"In the table's order: {sort.said()}.")
    nav = st.columns(3, vertical_alignment="center")
    nav[0].button("Back", key="group_previous",
                  shortcut=keys.shortcut("group-previous"), on_click=move, args=(place - 1,),
                  disabled=place == 0, icon=":material/skip_previous:",
                  help=f"The sibling before this one (key {keys.shortcut('group-previous')})")
    nav[1].button("Next", key="group_next", shortcut=keys.shortcut("group-next"),
                  on_click=move, args=(place + 1,), disabled=place >= len(members) - 1,
                  icon=":material/skip_next:",
                  help=f"The next sibling (key {keys.shortcut('group-next')}); saving moves on "
                       "too")
    nav[2].page_link("app_pages/trace.py", label="Its trace",
                     query_params={"trace": current.trace_id}, icon=":material/account_tree:")
    whole = next((t for t in workspace.library.targets(current) if t.key == ""), None)
    mine = workspace.labelling.answers(current.trace_id, reviewer.name)
    if whole is None:
        st.caption("The rubric asks nothing about a whole run.")
    else:
        def save(values: dict, comment: str, seconds: float) -> list[Label]:
            made = workspace.labelling.save_answers(current, whole, values, reviewer,
                                                    comment=comment, seconds_spent=seconds)
            move(place + 1)
            return made

        target_form(current, analyze(current), workspace.rubric, whole,
                    key=f"group:{wanted}:{current.trace_id}", save=save,
                    saved=mine.get("") or mine.get(None),
                    save_label="Save, next")

with pair_col:
    st.markdown("#### Which of two is better?")
    numbers = list(range(len(members)))
    a_col, b_col = st.columns(2)
    if st.session_state.get("_pair_group") != wanted or "pair_a" not in st.session_state:
        # the pair starts at the member being labelled and the next (and moves with it)
        st.session_state["_pair_group"] = wanted
        st.session_state["pair_a"], st.session_state["pair_b"] = at, partner(at, order)
    a = a_col.selectbox("A", numbers, format_func=lambda i: f"#{i + 1}", key="pair_a")
    b = b_col.selectbox("B", numbers, format_func=lambda i: f"#{i + 1}", key="pair_b")
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
        st.session_state["pair_reason"] = ""  # the next pair's reason is its own

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
        # and where the reviewer looks: the pair's box is below the fold of a laptop's screen,
        # so a Shift+B said nothing they could see
        st.toast(markdown_literal(said[1], 300), icon=":material/check_circle:"
                 if said[0] == "success" else ":material/warning:")
    elif given is not None:
        st.caption("You judged this pair before; a new judgement replaces it.")
    # the command as plain text, not a code span: the page's one monospace text made the
    # browser fetch that font last and lay out every sibling's text again when it came
    st.caption("Judgements of two siblings export as preference rows, with their step and "
               "group: orchviz labels export --format preference.")

draw_live_table()
