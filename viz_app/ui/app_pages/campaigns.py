"""The campaigns page, for leads: make a review campaign in the app and run it, without the
command line. A new campaign takes the rows ticked in the Library's table (or all that match its
search and filter), the Library's current search and filter (held as they are: the campaign
draws the traces they select when it is made), or traces picked here by hand; its questions, K (reviewers per target), gold from an earlier campaign's
adjudicated answers, and instructions for the reviewers in Markdown (shown on the Review page
beside the first target and on demand, rendered safely: no HTML, no image, links only to
http(s)). Each campaign can be closed, reopened, given more traces and new instructions.

Everything goes through the Workspace's campaigns facet, the very calls `orchviz campaign`
makes: the page only gathers what the lead chose.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from viz_app.errors import LabelError, OrchvizError, StoreError
from viz_app.labels import (INSTRUCTIONS_LIMIT, CampaignSpec, Filter, Sample,
                            default_questions, storage_conditions)
from viz_app.query import condition_text
from viz_app.text import markdown_literal, note_markdown
from viz_app.ui import session

# where the Library leaves its current search, topologies and the traces they list
LIBRARY_FILTER = "_library_filter"

lead = session.reviewer()
workspace = session.workspace()
st.markdown("### Campaigns")
session.lead_or_stop(workspace, lead, "make and run campaigns")
if not session.sign_in_configured():
    st.caption(f"Working as **{markdown_literal(lead.name, 60)}** · sign-in is not configured, "
               "so names are not verified.")

flash = st.session_state.pop("_camp:flash", None)
if flash:
    st.success(markdown_literal(flash, 600), icon=":material/check_circle:")
rubric = workspace.rubric
campaigns = workspace.campaigns.all()
indexed = workspace.library.update_index()
library = indexed.rows
trace_ids = [r.trace_id for r in library]


def said(err: Exception) -> None:
    text = markdown_literal(err, 400)
    st.error(text[:1].upper() + text[1:] + (". Nothing was saved." if not text.endswith(".")
                                            else " Nothing was saved."))


def instructions_preview(text: str, where: str) -> None:
    """The instructions as reviewers will see them (`note_markdown`: safe Markdown)."""
    if text.strip():
        with st.container(border=True, key=f"camp-preview-{where}"):
            st.caption("As reviewers will see them")
            st.markdown(note_markdown(text, headings_below=3))


def held_query(chosen: dict, key: str, location: str | None) -> tuple[Filter | None, int]:
    """A search and filter the Library holds for a campaign (`key`: `query`, its current one,
    or `matching`, all that match ticked), never the list of their ids, and how many traces it
    selects now, counted by the storage the campaign will draw from (the pool at `location`,
    or the folders). (None, 0) when the Library holds none."""
    if not chosen.get(key):
        return None, 0
    wanted = Filter.model_validate_json(chosen[key])
    storage = workspace.library.storage(location, indexed)
    return wanted, storage.count(*storage_conditions(wanted, storage.kind))


def query_text(wanted: Filter) -> str:
    """The search and filter of a held query, as the lead typed them (Markdown-safe)."""
    said = [f"the search “{markdown_literal(wanted.text, 80)}”"] if wanted.text else []
    if wanted.conditions:
        said.append("the filter " + markdown_literal(
            ", ".join(condition_text(c) for c in wanted.conditions), 200))
    return " and ".join(said) or "the whole library"


def new_campaign() -> None:
    """The form of a new campaign."""
    chosen = st.session_state.get(LIBRARY_FILTER) or {}
    known = set(trace_ids)
    pooled = chosen.get("pool") in workspace.library.pools  # ticked in a pool's table
    ticked = [t for t in chosen.get("picked", []) if pooled or t in known]
    matching, ticked_count = held_query(chosen, "matching", chosen.get("pool") if pooled
                                        else None)
    if matching is None:  # rows ticked one by one
        ticked_count = len(ticked)
    current, listed = held_query(chosen, "query", None)  # the folders' search and filter
    if current is None:  # the Library handed none: the whole library
        current, listed = Filter(), len(trace_ids)
    sources = (["ticked"] if ticked_count else []) + ["library", "pick"]
    if st.session_state.get("camp:source") not in sources:
        st.session_state["camp:source"] = sources[0]  # rows ticked in the Library come first
    source = st.radio("Traces", sources, key="camp:source", horizontal=True,
                      format_func=lambda s: {
                          "ticked": f"the {ticked_count:,} traces ticked in the Library's table"
                                    + (" (all that match its search and filter)"
                                       if matching is not None else ""),
                          "library": f"the Library's current filter ({query_text(current)}: "
                                     f"{listed:,} traces)",
                          "pick": "pick traces by hand"}[s])
    picked: list[str] = ticked if source == "ticked" else []
    if source == "ticked" and matching is not None:
        st.caption("Ticked: all that match " + query_text(matching) + " (the traces are drawn "
                   "from the library when the campaign is made)")
    elif source == "ticked":
        st.caption("Ticked: " + ", ".join(markdown_literal(t, 60) for t in ticked[:12])
                   + (f" and {len(ticked) - 12} more" if len(ticked) > 12 else ""))
    if source == "pick":
        picked = st.multiselect("Traces of the campaign", trace_ids, key="camp:picked",
                                placeholder="type a trace id")
    with st.form("camp:new", border=True):
        name = st.text_input("Name", max_chars=256, key="camp:name")
        questions = st.multiselect(
            "Questions", [q.id for q in rubric.questions], default=default_questions(rubric),
            key="camp:questions", help="Their follow-ups come with them.")
        per_step = 0
        if pooled or any(r.rollout_step is not None for r in library):  # a trainer's run
            per_step = st.number_input(
                "Whole groups of each training step (0: every trace chosen above)", 0, 10_000,
                0, key="camp:per_step",
                help="A trainer's rollouts: N whole groups (the siblings sampled for one prompt) "
                     "of each training step among the traces chosen above, and of each step the "
                     "trainer writes later: the campaign keeps sampling as the run trains "
                     "(`orchviz campaign create --per-step N`)")
        k_col, gold_col = st.columns(2)
        per_target = k_col.number_input("K: reviewers per target", 1, 50, 2, key="camp:k")
        gold = gold_col.selectbox("Gold from an earlier campaign's final answers",
                                  [""] + [c.name for c in campaigns], key="camp:gold",
                                  format_func=lambda n: n or "no gold")
        text = st.text_area("Instructions for the reviewers (Markdown)", key="camp:instructions",
                            max_chars=INSTRUCTIONS_LIMIT, height=160,
                            placeholder="What to look for, how to judge a merge, when to skip…")
        made = st.form_submit_button("Make the campaign", type="primary")
    instructions_preview(st.session_state.get("camp:instructions") or "", "new")
    if not made:
        return
    pool = chosen.get("pool") if source == "ticked" and pooled else None
    if source == "ticked" and matching is not None:
        wanted = matching  # the query itself: the campaign draws its traces from the storage
    elif source == "library":
        wanted = current  # its search and filter: the campaign draws the traces they select
    else:
        if not picked:
            st.error("Pick at least one trace. Nothing was saved.")
            return
        wanted = Filter(trace_ids=picked)
    try:
        spec = CampaignSpec(name=name, questions=questions, per_target=int(per_target),
                            filter=wanted, gold_campaign=gold or None, instructions=text,
                            pool=pool, sample=Sample(kind="per_step", n=int(per_step))
                            if per_step else Sample())
        found = workspace.campaigns.create(spec, lead)
    except ValueError as err:  # pydantic's, on a name or instructions it refuses
        said(LabelError(str(err).splitlines()[-1] if str(err) else "the spec is refused"))
        return
    except (LabelError, OrchvizError, StoreError) as err:
        said(err)
        return
    st.session_state["_camp:flash"] = (
        f"Made the campaign {found.name}: {found.targets} targets, K = {found.per_target}"
        + (f", {int(per_step)} whole group{'s' if per_step > 1 else ''} of each training "
           "step (and of each step the trainer writes later)" if per_step else "")
        + ". Reviewers open it on the Review page.")
    st.session_state["camp:open"] = found.name
    st.rerun()


def one_campaign(name: str) -> None:
    """Close or reopen a campaign, add traces to it, change its instructions."""
    found = workspace.campaigns.get(name)
    state = "closed" if found.closed_at else "open"
    sample = found.spec.sample
    stepped = (f"{sample.n} whole group{'s' if (sample.n or 1) > 1 else ''} of each training "
               "step, sampled as steps come · "
               if sample.kind == "per_step" else "")
    st.caption(f"**{markdown_literal(found.name, 80)}** · {state} · {found.targets} targets · "
               f"{stepped}K = {found.per_target} · questions: "
               + ", ".join(markdown_literal(q, 40) for q in found.questions))
    st.page_link("app_pages/review.py", label="Open it on the Review page",
                 icon=":material/rate_review:", query_params={"campaign": found.name})
    close_col, add_col = st.columns([1, 3])
    if found.closed_at:
        if close_col.button("Reopen", key=f"camp:reopen:{name}", icon=":material/lock_open:"):
            act(lambda: workspace.campaigns.reopen(name, lead), f"Reopened {name}.")
    elif close_col.button("Close", key=f"camp:close:{name}", icon=":material/lock:",
                          help="No reviewer claims a target of it any more"):
        act(lambda: workspace.campaigns.close(name, lead), f"Closed {name}.")
    with add_col.popover("Add traces", icon=":material/playlist_add:"):
        more = st.multiselect("Traces", trace_ids, key=f"camp:more:{name}")
        if st.button("Add them", key=f"camp:add:{name}", disabled=not more):
            act(lambda: workspace.campaigns.add_traces(name, more, lead),
                lambda added: f"Added {added} targets to {name}.")
    with st.form(f"camp:edit:{name}"):
        text = st.text_area("Instructions for the reviewers (Markdown)",
                            value=found.spec.instructions, max_chars=INSTRUCTIONS_LIMIT,
                            height=140)
        if st.form_submit_button("Save the instructions"):
            act(lambda: workspace.campaigns.set_instructions(name, text, lead),
                f"Saved the instructions of {name}.")
    instructions_preview(found.spec.instructions, "saved")


def act(do, sentence) -> None:
    """Do one thing to a campaign, then say it (or why nothing was saved)."""
    try:
        result = do()
    except (LabelError, OrchvizError, StoreError) as err:
        said(err)
        return
    st.session_state["_camp:flash"] = sentence(result) if callable(sentence) else sentence
    st.rerun()


if campaigns:
    st.dataframe(pd.DataFrame([{
        "campaign": c.name, "state": "closed" if c.closed_at else "open", "targets": c.targets,
        "K": c.per_target, "questions": len(c.questions), "made by": c.created_by,
        "made": c.created_at[:16].replace("T", " "),
        "instructions": "yes" if c.spec.instructions.strip() else "—"} for c in campaigns]),
        hide_index=True, width="stretch")
new_tab, run_tab = st.tabs(["New campaign", "Run a campaign"])
with new_tab:
    new_campaign()
with run_tab:
    if not campaigns:
        st.caption("No campaign yet.")
    else:
        names = [c.name for c in campaigns]
        if st.session_state.get("camp:open") not in names:
            st.session_state["camp:open"] = names[-1]
        one_campaign(st.selectbox("Campaign", names, key="camp:open"))
