"""The review page: a reviewer works through a campaign's queue. Pick a campaign, press Start, and
the page shows the target the database reserved for this reviewer, the trace's tree and timeline
ringing it, the campaign's questions on it as the labels panel asks them; Save (Ctrl+Enter or
Ctrl+S) submits and shows the next one, Skip (S, then a reason) puts it back for others.

Blind: the page never shows another reviewer's answer on a target, nor whether it is a gold item,
nor its gold answer; a producer's suggestions are shown only on the target just saved, unless the
campaign is assisted (then before answering, and the labels say so). `?campaign=NAME` opens the
page on a campaign.

What a question is about (an aggregate's merged returns beside its output, a stop's last events
beside those after it) heads the left column, beside the questions, in the first screen. A
change of the reviewer's name while a target is held asks first: keep the name, or give the
target back to the queue.
"""

from __future__ import annotations

import time
from typing import Any

import streamlit as st

from components import keys
from components.annotation import asked_only, keep_drafts, target_form
from components.evidence import target_evidence
from components.inspector import inspector
from components.navigation import target_label
from components.keyboard import typing_note
from components.suggestions import suggestions_view
from viz_app.analysis import analyze
from viz_app.errors import LabelError, OrchvizError, StoreError
from viz_app.labels import AlikeTarget, Claim, Label, LabelTarget
from viz_app.text import markdown_literal, note_markdown
from viz_app.ui import session
from viz_app.ui.drafts import DraftKeeper
from viz_app.ui.trace_views import task_caption, trace_views

# (no bare strings at the top level of a page: Streamlit would print them)
CAMPAIGN_PARAM = "campaign"
RENEW_EVERY = 30.0  # seconds between lease renewals while the reviewer works on a target
SKIP_REASONS = ("I cannot judge it from the trace", "The trace looks broken or cut short",
                "The question does not fit this target")  # picked by key 1, 2, 3

reviewer = session.reviewer()
workspace = session.workspace()
title, picker = st.columns([1, 2.5], vertical_alignment="bottom")
title.markdown("### Review")

campaigns = workspace.campaigns.all()
if not campaigns:
    st.info("There is no review campaign yet. A lead creates one with "
            "`orchviz campaign create NAME --traces DIR`.")
    st.stop()
if reviewer is None:
    st.info(session.identify_first("review"))
    st.stop()

names = [c.name for c in campaigns]
linked = st.query_params.get(CAMPAIGN_PARAM)
state: dict[str, Any] = st.session_state.setdefault("_review", {})


def ask_before_letting_go(held: Claim, before: str) -> None:
    """The name changed while this session holds a target under the one before: keep working
    under it (the box gets it back), or give the target back to the queue and start afresh
    under the new one. Never silently: a digit typed into the name box once cost a reviewer
    every answer they gave."""

    def keep() -> None:
        session.restore_reviewer_name(before)

    def let_go() -> None:
        try:
            workspace.campaigns.release(held)
        except (LabelError, StoreError):
            pass  # its lease runs out on its own
        state.clear()
        state.update(reviewer=reviewer.name, campaign=held.campaign)

    old, new = markdown_literal(before, 40), markdown_literal(reviewer.name, 40)
    st.warning(f"You hold **{markdown_literal(held.event_id or 'the whole trace', 40)}** of "
               f"trace **{markdown_literal(held.trace_id, 80)}** as **{old}**, and the name is "
               f"now **{new}**. Reviewing as {new} gives that target back to the queue, "
               "unanswered.", icon=":material/swap_horiz:")
    typing_note("switch")
    keep_col, go_col = st.columns(2)
    if reviewer.via == "self-declared":
        keep_col.button(f"Keep reviewing as {old}", type="primary", key="review:keep-name",
                        shortcut=keys.shortcut("keep-name"), icon=":material/undo:",
                        on_click=keep, width="stretch",
                        help="Put the name back and go on with the target you hold "
                             f"({keys.shortcut('keep-name')})")
    go_col.button(f"Give it back and review as {new}", key="review:let-go",
                  icon=":material/logout:", on_click=let_go, width="stretch")
    st.stop()


if state.get("claim") is not None and state.get("reviewer") not in (None, reviewer.name):
    ask_before_letting_go(state["claim"], state["reviewer"])
if state.get("reviewer") != reviewer.name or state.get("campaign") not in names:
    state.clear()
    state.update(reviewer=reviewer.name, campaign=linked if linked in names else names[0])
if linked in names and linked != state["campaign"] and not state.get("claim"):
    state["campaign"] = linked


def choose_campaign() -> None:
    """Another campaign: the reviewer starts it afresh (the claim held stays theirs until its
    lease runs out)."""
    name = st.session_state["review:campaign"]
    state.clear()
    state.update(reviewer=reviewer.name, campaign=name)


if st.session_state.get("review:campaign") not in names:
    st.session_state["review:campaign"] = state["campaign"]
picker.selectbox("Campaign", names, key="review:campaign", on_change=choose_campaign,
             disabled=bool(state.get("claim")),
             help="The campaigns of this workspace. Finish or leave the target you hold to "
                  "change.")
name = state["campaign"]
if st.query_params.get(CAMPAIGN_PARAM) != name:
    st.query_params[CAMPAIGN_PARAM] = name
campaign = workspace.campaigns.get(name)


def take_next() -> None:
    """Claim the next target for this reviewer (None when nothing is left for them)."""
    try:
        claim = workspace.campaigns.claim_next(name, reviewer)
    except (LabelError, StoreError) as err:
        state["error"] = markdown_literal(err, 400)
        return
    first = claim is not None and not state.get("instructed")  # beside the first target
    state.update(claim=claim, opened=time.time(), renewed=time.time(), selected=None,
                 agent=None, skipping=False, started=True, done=claim is None, error=None,
                 refused=None, first=first, instructed=state.get("instructed") or first)


def refusals() -> None:
    """Which targets the last one-answer-for-many save left unsaved, and why (one sentence)."""
    if state.get("refused"):
        st.warning(markdown_literal(state["refused"], 1200), icon=":material/warning:")


def instructions(expanded: bool) -> None:
    """The lead's instructions for this campaign, in safe Markdown (`note_markdown`: no HTML,
    no image, links only to http(s)): open beside the first target, a click away after."""
    text = campaign.spec.instructions
    if not text.strip():
        return
    with st.expander("Instructions from the lead", expanded=expanded,
                     icon=":material/menu_book:"), st.container(key="review-instructions"):
        st.markdown(note_markdown(text, headings_below=3))


def progress() -> None:
    """The reviewer's count and the campaign's (counts only: no answer, nothing about gold)."""
    found = workspace.campaigns.progress(name, reviewer.name)
    total = max(found.targets, 1)  # a reviewer reviews a target at most once
    left, right = st.columns(2)
    left.progress(min(1.0, found.reviewer_saved / total),
                  text=f"You: {found.reviewer_saved} saved"
                       + (f" · {found.reviewer_skipped} skipped" if found.reviewer_skipped
                          else ""))
    right.progress(min(1.0, found.fraction),
                   text=f"Campaign: {found.complete} of {found.targets} targets complete · "
                        f"{found.saved} of {found.slots} reviews")


def disputes_link() -> None:
    """A link to the Disputes page when this reviewer is one side of an open dispute (on the
    start and done screens only: never between two targets, where the loop's speed counts)."""
    open_ = workspace.disputes.waiting(reviewer)
    if open_:
        first, dispute = open_[0]
        st.page_link("app_pages/disputes.py", icon=":material/forum:",
                     label=f"You are one side of {len(open_)} open dispute"
                           f"{'s' if len(open_) != 1 else ''}: see both answers and say why",
                     query_params={"campaign": first, "trace": dispute.trace_id}
                     | ({"event": dispute.event_id} if dispute.event_id else {}))


if campaign.closed_at is not None and not state.get("claim"):  # a held target may be saved
    progress()
    st.info(f"**{markdown_literal(name, 80)}** was closed by a lead on "
            f"{campaign.closed_at[:16].replace('T', ' ')}: it hands out no more targets.",
            icon=":material/lock:")
    st.stop()

if not state.get("started"):
    st.caption(f"{'Assisted: suggestions shown before you answer' if campaign.assisted else 'Blind: you see no other answer, and suggestions only after you save yours'}"
               f" · Save with {keys.shown('save')} · {keys.shown('review-skip')} skips · "
               f"{keys.shown('keys-question')} lists the keys")
    progress()
    disputes_link()
    instructions(True)
    typing_note("start")
    if state.get("error"):
        st.error(state["error"])
    st.button("Start", type="primary", icon=":material/play_arrow:", key="review:start",
              shortcut=keys.shortcut("review-start"), on_click=take_next,
              help=f"Reserve the next target for you and show it ({keys.shown('review-start')})")
    st.stop()

def go_back(steps: int) -> None:
    """Go back `steps` targets among those this reviewer saved here (negative: forward again;
    past the last saved one, back to the target they hold), to change an answer."""
    if not state.get("back"):
        state["saved"] = workspace.campaigns.saved(name, reviewer.name)
    saved = state.get("saved") or []
    wanted = (state.get("back") or 0) + steps
    if not saved and steps > 0:
        state["error"] = "You have saved no target in this campaign yet: nothing to go back to."
        return
    state.update(back=max(0, min(wanted, len(saved))) or None, selected=None, agent=None,
                 error=None)


def back_buttons(where: Any) -> None:
    """Back (P) to the target saved before, forward (N) towards the one held."""
    left, right = where.columns(2)
    left.button("Back", key="review:back", shortcut=keys.shortcut("review-back"),
                icon=":material/undo:", on_click=go_back, args=(1,), width="stretch",
                help="The target you saved before, to change your answer (key "
                     f"{keys.shortcut('review-back')}; again: the one before it)")
    right.button("Forward", key="review:forward", shortcut=keys.shortcut("review-forward"),
                 icon=":material/redo:", on_click=go_back, args=(-1,), width="stretch",
                 disabled=not state.get("back"),
                 help="The next target you saved, then the one you hold (key "
                      f"{keys.shortcut('review-forward')})")


claim = state.get("claim")
revisit = None
if state.get("back"):
    saved_here = state.get("saved") or []
    revisit = saved_here[-state["back"]] if state["back"] <= len(saved_here) else None
if claim is None and revisit is None:
    progress()
    refusals()
    if state.get("error"):
        st.error(state["error"])
    else:
        st.success(f"Done: nothing is left for you in **{markdown_literal(name, 80)}**. "
                   "Thank you!", icon=":material/check_circle:")
        disputes_link()
    st.button("Look again", key="review:again", on_click=take_next, icon=":material/refresh:",
              help="Targets come back when a reservation runs out or another reviewer skips")
    back_buttons(st)
    st.stop()



def keep_lease() -> None:
    """Renew the reservation while the reviewer works (once RENEW_EVERY seconds have passed),
    on every run of the page and of its panel: key presses run the panel alone."""
    if state.get("claim") is None or time.time() - state.get("renewed", 0.0) <= RENEW_EVERY:
        return
    try:
        state["claim"] = workspace.campaigns.renew(state["claim"])
        state["renewed"] = time.time()
    except (LabelError, StoreError) as err:
        state["error"] = markdown_literal(err, 400)


keep_lease()
claim = state.get("claim")
at = revisit or claim  # the target shown: one saved before, gone back to, else the one held
view = ("back", revisit.slot_id) if revisit is not None else ("claim", claim.slot_id)

trace = None
try:
    trace = session.find_and_load(at.trace_id)  # a trace of the folders or of a pool
    if trace is None:
        st.error(f"The trace {markdown_literal(at.trace_id, 80)} of this target is not in "
                 "the library.")
except (OrchvizError, OSError) as err:
    st.error(f"The trace {markdown_literal(at.trace_id, 80)} of this target could not be "
             f"loaded: {markdown_literal(err, 300)}")
if trace is None and revisit is not None:
    back_buttons(st)
    st.stop()
if trace is None:
    st.button("Skip this target", key="review:skip-broken",
              on_click=lambda: (workspace.campaigns.skip(claim, "the trace could not be loaded"),
                                take_next()))
    st.stop()
analysis = analyze(trace)


def claim_target() -> LabelTarget | None:
    """The claimed target as the rubric finds it in the trace, with the campaign's questions."""
    key = at.event_id or ""
    memo = state.setdefault("targets", {})
    found = memo.get((trace.trace_id, trace.sha256))
    if found is None:
        memo.clear()
        found = memo[(trace.trace_id, trace.sha256)] = workspace.library.targets(trace)
    target = next((t for t in found if t.key == key), None)
    return None if target is None else asked_only(target, at.questions, workspace.rubric)


target = claim_target()
selected = state.get("selected") or at.event_id
if selected is not None and selected not in trace.events_by_id:
    selected = None
agent = state.get("agent") or (analysis.actor[selected] if selected else None)


def select_event(event_id: str) -> None:
    state.update(selected=event_id, agent=None)


def select_agent(chosen: str) -> None:
    state.update(agent=chosen, selected=None)


views, side = st.columns([2.3, 1.4], gap="medium")


def shown_now() -> tuple[str, int | None]:
    """What the page shows by the session's state now: a target gone back to, else the one
    held (a fragment's run that finds it changed draws the whole page again)."""
    if state.get("back"):
        saved = state.get("saved") or []
        if state["back"] <= len(saved):
            return ("back", saved[-state["back"]].slot_id)
    held = state.get("claim")
    return ("claim", held.slot_id if held is not None else None)


@st.fragment
def review_panel() -> None:
    """The claim's questions, Save and Skip: a fragment, so a key press reruns this column only;
    a save or a skip moves to the next target and reruns the page (its tree and timeline)."""
    if shown_now() != view:  # saved, skipped, gone back or forward: the next, in full
        st.rerun()
    keep_lease()
    with st.container(key="labels-panel"):
        where = at.event_id or "the whole trace"
        kinds = " + ".join(target.kinds) if target is not None else "target"
        with st.container(key="review-target"):
            st.markdown(f"#### {markdown_literal(where, 40)} · {markdown_literal(kinds, 40)}")
            st.caption(f"trace **{markdown_literal(trace.trace_id, 80)}** · "
                       + task_caption(trace, 160)
                       + (f" · agent {markdown_literal(target.agent, 40)}"
                          if target is not None and target.agent else ""))
        instructions(bool(state.get("first")) and revisit is None)
        if state.get("error"):
            st.error(state["error"])
        refusals()
        if revisit is not None:
            st.info(f"Back at a target you saved on {revisit.completed_at[:16].replace('T', ' ')}"
                    " UTC. Saving changes your answer: a new label, the one before stays in "
                    "your history.", icon=":material/history:")
            if target is None:
                st.error("The rubric asks nothing about this target in the trace as it is now.")
            else:
                change_questions()
            back_buttons(st)
        elif state.get("skipping"):
            skip_reasons()
        elif target is None:
            st.error("The rubric asks nothing about this target in the trace as it is now "
                     "(the file may have changed): skip it.")
            st.button("Skip", key="review:skip", shortcut=keys.shortcut("review-skip"),
                      icon=":material/redo:", on_click=lambda: state.update(skipping=True))
        else:
            questions()
        last_saved()


def questions() -> None:
    seen = workspace.suggestions.visible(trace, target, claim.reviewer.name, campaign)

    many = f"review:many:{claim.slot_id}"
    alike = {t.target_id: t for t in alike_targets()}
    chosen = [alike[t] for t in st.session_state.get(many) or [] if t in alike]

    def submit(values: dict[str, Any], comment: str, seconds: float) -> list[Label]:
        try:
            made = workspace.campaigns.submit_alike(
                claim, chosen, values, comment=comment, seconds_spent=seconds,
                suggestions_visible=seen.suggestions_visible, judged=trace.sha256)
        except LabelError:
            state.pop("alike", None)  # another reviewer may have taken some: ask again
            raise
        state["last"] = (trace, target)
        take_next()
        state["refused"] = made.sentence(trace.trace_id) or None  # beside the next target
        return made.labels

    if alike:  # above the form, in the first screen: what the save will answer
        answer_alike(alike, many, chosen)
    form = f"review:{claim.slot_id}"  # a reload or a closed tab finds the draft again
    keep_drafts(form, DraftKeeper(workspace, reviewer.name, form))
    target_form(trace, analysis, workspace.rubric, target, key=form,
                save=submit, suggestions=seen.suggestions, suggestions_hidden=not seen.shown,
                on_choose=select_event, evidence_apart=True)
    cols = st.columns(2)
    cols[0].button("Skip", key="review:skip", shortcut=keys.shortcut("review-skip"),
                   icon=":material/redo:", width="stretch",
                   on_click=lambda: state.update(skipping=True),
                   help="Put this target back for other reviewers, with a reason "
                        f"(key {keys.shown('review-skip')})")
    if cols[1].button("Keys", key="review:keys", shortcut=keys.shortcut("keys"),
                      icon=":material/keyboard:", width="stretch",
                      help=f"The keys of the review page (key {keys.shown('keys')})"):
        keys_help()
    back_buttons(st)


def alike_targets() -> list[AlikeTarget]:
    """The other targets of this kind, on this trace and the campaign's others, that the
    reviewer may answer with this one (`ws.campaigns.alike`), asked once per target held: a
    key press asks the database nothing."""
    memo = state.get("alike")
    if memo is None or memo[0] != claim.slot_id:
        try:
            found = workspace.campaigns.alike(claim)
        except (LabelError, StoreError):
            found = []
        memo = state["alike"] = (claim.slot_id, found)
    return memo[1]


def answer_alike(alike: dict[int, AlikeTarget], many: str, chosen: list[AlikeTarget]) -> None:
    """Choose targets of this kind to give the same answer (every spawn of a fan-out, or the
    stops of the campaign's other traces): each is saved as its own label when the answer is
    saved. Shift+A chooses them all, or none."""
    labels = {t.key: target_label(t, analysis, False).removeprefix("○ ")
              for t in state.get("targets", {}).get((trace.trace_id, trace.sha256), [])}
    kinds = " + ".join(target.kinds)
    # Shift+A takes this trace's targets only (the fan-out the reviewer is looking at); the
    # other traces' targets, unseen, are taken only by their own button or one by one.
    in_trace = [i for i, t in alike.items() if t.trace_id == trace.trace_id]
    others = [i for i, t in alike.items() if t.trace_id != trace.trace_id]
    here, elsewhere = len(in_trace), len({alike[i].trace_id for i in others})

    def named(target_id: int) -> str:
        found = alike[target_id]
        if found.trace_id == trace.trace_id:
            return labels.get(found.key, found.named(trace.trace_id))
        return found.named(trace.trace_id)


    def toggle(group: list[int]) -> None:
        """Choose all of `group`, or, when all are chosen already, none of them."""
        current, wanted = set(st.session_state.get(many) or []), set(group)
        current = current - wanted if wanted <= current else current | wanted
        st.session_state[many] = [i for i in alike if i in current]  # in the offered order

    with st.container(border=True, key="review-many"):
        st.markdown(f"**The same answer for other {markdown_literal(kinds, 40)} targets** · "
                    f"{here} more of this trace"
                    + (f" and {len(alike) - here} on {elsewhere} other "
                       f"trace{'s' if elsewhere != 1 else ''}" if elsewhere else "")
                    + " are open to you")
        if chosen:
            traces = len({t.trace_id for t in chosen} | {trace.trace_id})
            st.caption(f":blue[**Saving gives this answer to {1 + len(chosen)} targets**"
                       + (f" on {traces} traces" if traces > 1 else "")
                       + f": this one and the {len(chosen)} chosen, each its own label.]")
        st.multiselect("Give this answer to these too", list(alike), key=many,
                       format_func=named,
                       placeholder="choose targets of this kind",
                       help="Each one chosen is saved as its own label, with its own target "
                            "and time, when you save this answer")
        picked = {t.target_id for t in chosen}
        if in_trace:
            st.button(f"None of the {len(in_trace)} in this trace" if set(in_trace) <= picked
                      else f"All {len(in_trace)} in this trace", key="review:many-all",
                      on_click=toggle, args=(in_trace,), shortcut=keys.shortcut("many-all"),
                      width="stretch",
                      icon=":material/done_all:",
                      help=f"Choose every one of them in this trace, or none again (key "
                           f"{keys.shown('many-all')})")
        if others:
            st.button(f"None of the {len(others)} on other traces" if set(others) <= picked
                      else f"Also the {len(others)} on {elsewhere} other "
                           f"trace{'s' if elsewhere != 1 else ''}",
                      key="review:many-elsewhere", on_click=toggle, args=(others,),
                      width="stretch",
                      help="Targets of this kind on traces you have not opened: choose them "
                           "only when the answer holds without looking at them")


def change_questions() -> None:
    """The questions of a target the reviewer saved before, with their current answers:
    saving changes them (`ws.campaigns.change`), then the page returns to the target held."""
    mine = {x.question: x for x in workspace.labelling.current(trace.trace_id, reviewer.name,
                                                               campaign=name)
            if x.event_id == revisit.key and x.source == "human"}
    seen = workspace.suggestions.visible(trace, target, reviewer.name, campaign)

    def change(values: dict[str, Any], comment: str, seconds: float) -> list[Label]:
        made = workspace.campaigns.change(name, revisit.slot_id, reviewer, values,
                                          comment=comment, seconds_spent=seconds,
                                          suggestions_visible=seen.suggestions_visible,
                                          judged=trace.sha256)
        state.update(back=None, selected=None, agent=None)
        return made

    form = f"review:back:{revisit.slot_id}"
    keep_drafts(form, DraftKeeper(workspace, reviewer.name, form))
    target_form(trace, analysis, workspace.rubric, target, key=form, save=change, saved=mine,
                suggestions=seen.suggestions, suggestions_hidden=not seen.shown,
                on_choose=select_event, evidence_apart=True)


def skip_reasons() -> None:
    """Why the reviewer skips: a reason by key (1, 2, 3) or typed; Esc goes back."""

    def skip(reason: str) -> None:
        reason = reason.strip()
        if not reason:
            state["error"] = "Say why you skip this target."
            return
        try:
            workspace.campaigns.skip(claim, reason)
        except (LabelError, StoreError) as err:
            state["error"] = markdown_literal(err, 400)
            return
        take_next()

    st.markdown("**Why skip this target?** It goes back to the other reviewers.")
    for number, reason in enumerate(SKIP_REASONS, 1):
        st.button(f"{number} · {reason}", key=f"review:skip-reason:{number}",
                  shortcut=keys.digit_shortcut("skip-reason", number), on_click=skip,
                  args=(reason,), width="stretch")
    with st.form("review:skip-form", border=False):
        typed = st.text_input("Another reason", key="review:skip-typed", max_chars=500,
                              placeholder="type it and press Enter")
        st.form_submit_button("Skip with this reason", on_click=lambda: skip(
            st.session_state.get("review:skip-typed") or ""))
    st.button("Back to the target", key="review:skip-cancel",
              shortcut=keys.shortcut("skip-back"), icon=":material/undo:",
              on_click=lambda: state.update(skipping=False, error=None),
              help=f"Keep this target ({keys.shown('skip-back')})")
    del typed


def last_saved() -> None:
    """Blind-first: the suggestions on the target this reviewer has just saved."""
    last = state.get("last")
    if not last or campaign.assisted:
        return
    trace, target = last
    seen = workspace.suggestions.visible(trace, target, reviewer.name)
    found, trace_id, key = seen.suggestions if seen.shown else [], trace.trace_id, target.key
    if found:
        with st.expander(f"Suggestions on the target you just saved "
                         f"({markdown_literal(key or 'the whole trace', 30)})"):
            suggestions_view(found, workspace.rubric, key=f"review:last:{trace_id}:{key}")


@st.dialog("Keys of the review page")
def keys_help() -> None:
    st.markdown(keys.help_table("review"))


with side:
    progress()  # here, not in the fragment: a key press does not ask the database for it
    review_panel()

with views:
    # what the question is about, at the top beside it, in the first screen; drawn last, so
    # the browser shows the next target's questions before it lays out the evidence
    evidence = st.container(key="review-evidence")
    trace_views(trace, analysis, event_id=selected, agent=agent, on_event=select_event,
                on_agent=select_agent, key="review:")
    with st.expander("Inspector", expanded=selected is not None and selected != at.event_id):
        inspector(trace, analysis, event_id=selected, agent=agent, key="review:inspector",
                  on_choose=select_event)
if target is not None:
    with evidence:
        target_evidence(trace, analysis, target, f"review:evidence:{view[0]}:{at.slot_id}")
# the trace of the target that most likely comes next, read while the reviewer answers this one
session.read_ahead(("upcoming", name, reviewer.name, at.slot_id),
                   lambda ws=workspace, campaign=name, who=reviewer.name:
                   [ws.campaigns.upcoming(campaign, who)])
