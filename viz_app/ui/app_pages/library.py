"""The library page (home): every trace in the folders and uploads, and in a pool, searchable; a
row opens it.

A pool (`orchviz app --traces POOL`) and the folders are shown by one table (`library_table`)
over the library's one interface (`store.library.Storage`): it searches, filters, sorts, counts
and pages in the storage (50 rows at a time, never the whole pool in one frame), ticks rows for
a campaign, draws a histogram of a figure and a sample of trace ids at random or by stratum (the
library's one sampler, which review campaigns use too). The pool's index is a DuckDB file; the
folders' is the folder index, queried in memory."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from viz_app.errors import OrchvizError
from viz_app.io.detect import FORMATS as IMPORT_FORMATS
from viz_app.io.uploads import add_upload, relative_to, remove_upload
from viz_app.labels import Filter
from viz_app.query import FIELDS, NUMBER_FIELDS, Condition, parse_conditions
from viz_app.store import PAGE_SIZE, IndexBusy, PoolIndex, Storage
from viz_app.summary import LibraryRow
from viz_app.text import markdown_literal
from viz_app.ui import session

if session.url_trace():  # a deep link to the app's root: `/?trace=<id>&event=<id>`
    session.open_trace(session.url_trace(), st.query_params.get("event"))

DETECT = "detect the format"
reviewer = session.reviewer()
st.title("orchviz")
st.markdown("Browse orchestration traces of LLM multi-agent systems: who spawned whom, who "
            "talked to whom, when, and what every event said. Pick a trace to open it.")

upload_col, format_col = st.columns([4, 1])
read_as = format_col.selectbox(
    "Read as", [DETECT, *IMPORT_FORMATS], key="upload_format",
    help="The format to read the files added here in, as `orchviz import --from`: "
         "detected by default; a file read in a format chosen here is saved converted.")
uploads = upload_col.file_uploader(
    "Add traces (JSON, JSONL, or a format orchviz imports)", accept_multiple_files=True,
    key="uploads", help="Checked as `orchviz validate` checks a file (a pool with one bad line "
    "is refused whole), and saved into the uploads folder only when accepted, so they stay "
    "after a restart.")
refused: dict[str, list[str]] = st.session_state.setdefault("_refused_uploads", {})
checked_uploads: set = st.session_state.setdefault("_checked_uploads", set())
for upload in uploads or []:
    seen = (upload.file_id, read_as)
    if seen in checked_uploads:
        continue
    checked_uploads.add(seen)
    checked, path = add_upload(session.settings().uploads, upload.name, upload.getvalue(),
                               None if read_as == DETECT else read_as)
    if path is None:  # the file as the user named it, and why: by the box they used
        refused[upload.name] = [f"{e.place}: {e.problem}" if e.place else e.problem
                                for e in checked.errors[:3]] + (
            [f"and {len(checked.errors) - 3} more failures"] if len(checked.errors) > 3
            else []) or [f"{upload.name}: holds no trace"]
    else:
        refused.pop(upload.name, None)
        st.session_state.setdefault("_uploaded", set()).add(str(path))
for name, said in list(refused.items()):
    message_col, drop_col = st.columns([12, 1], vertical_alignment="center")
    message_col.error(
        f"**{markdown_literal(name, 80)}** was not added, and nothing of it was kept: "
        + "; ".join(markdown_literal(s, 300) for s in said)
        + ". Choose its format under *Read as* if it is in one orchviz imports, or fix the "
        "file, and add it again.", icon=":material/upload_file:")
    if drop_col.button("Dismiss", key=f"drop_upload:{name}",
                       help="Forget this failed upload (it was never kept)"):
        refused.pop(name, None)
        st.rerun()

bar = st.empty()


workspace = session.workspace()
# How often the page looks for new or changed shards of a pool (each a HEAD request on object
# storage); the Re-index button looks at once. (A comment, not a docstring: Streamlit's magic
# would print a bare string of a page script.)
POOL_CHECK_SECONDS = 300


def id_width(trace_ids: list[str]) -> int:
    """The trace id column's width in pixels: the longest id of the page whole, up to a third
    of a wide screen (a trainer's ids differ at their end, `.../rank0@5f09d18b/2/13`, which a
    narrower column cuts off, every row then reading the same)."""
    return max(160, min(480, 24 + 8 * max((len(t) for t in trace_ids), default=0)))


def trace_table(frame: pd.DataFrame, trace_ids: list[str], key: str,
                columns: dict, *, picking: bool = False) -> list[str]:
    """A table of traces, one row each: the figures' formats, plus `columns`; a click on a row
    opens that trace. While `picking`, rows are ticked instead (several at once) and the ticked
    traces are returned: what a lead picks for a campaign by hand."""
    picked = st.dataframe(
        frame, key=f"{key}:picking" if picking else key, hide_index=True, on_select="rerun",
        selection_mode="multi-row" if picking else "single-row",
        height=min(560, 38 + 35 * max(len(frame), 1)),
        column_config={
            "trace id": st.column_config.TextColumn(width=id_width(trace_ids), pinned=True),
            "system": st.column_config.TextColumn(width="medium"),
            "makespan (s)": st.column_config.NumberColumn(format="%.1f"),
            "parallelism": st.column_config.NumberColumn(format="%.2f"),
            "tokens": st.column_config.NumberColumn(format="localized"),
            **columns,
        })
    if picking:
        return [trace_ids[i] for i in (picked.selection.rows if picked is not None else [])
                if i < len(trace_ids)]
    if picked is not None and picked.selection.rows:
        st.session_state["_library_visit"] = st.session_state.get("_library_visit", 0) + 1
        session.open_trace(trace_ids[picked.selection.rows[0]])
    return []


# the library's two labelled columns: the team's progress, and the named reviewer's own
LABELLED_COLUMNS = {
    "labelled": st.column_config.TextColumn(
        width="small", help="Targets (aggregates, stops, the trace...) with every required "
        "question answered by the team (any reviewer), of those the rubric asks for"),
    "by you": st.column_config.TextColumn(
        width="small", help="The same targets answered by you, the reviewer named"),
}


def step_range(storage: Storage) -> tuple[int, int] | None:
    """The first and last training step of the library's rollouts (None when fewer than two
    steps): the ends of the steps slider."""
    wanted = [Condition(field="step", op=">", value=-1e18)]
    first = storage.page(wanted, sort="step", limit=1)
    last = storage.page(wanted, sort="step", descending=True, limit=1)
    if not first or first[0].rollout_step == last[0].rollout_step:
        return None
    return int(first[0].rollout_step), int(last[0].rollout_step)


def kept_steps(prefix: str, steps: tuple[int, int]) -> tuple[int, int]:
    """The steps the slider starts at: the ones chosen before, within the run's steps now.
    A slider whose ends change is a new widget to Streamlit, so a followed run's new step would
    set it back to every step; a range that reached the last step reaches the new last one
    (a lead watching the newest steps keeps watching them)."""
    kept = st.session_state.get(f"_{prefix}_steps_kept")
    if kept is None:
        return steps
    low, high, at_end = kept
    low = min(max(low, steps[0]), steps[1])
    high = steps[1] if at_end else min(max(high, low), steps[1])
    return low, high


def library_table(storage: Storage, prefix: str, status: str, names: Callable[[str], str],
                  actions: Callable[[Any], None] | None = None,
                  pool: str | None = None) -> None:
    """The library's one table, over a pool's index or the folders alike (`Storage`): a
    search, a topology, a filter line, the training steps, a sort, 50 rows a page, ticking
    rows for a campaign, a histogram of a figure and a sample for review, all asked of the
    storage. `prefix` names its widgets (`pool_query`, `library_query`...), `status` says what
    the last indexing did, `names` shows a row's file, `actions` draws into the paging row;
    `pool` is the pool's location (None for the folders), which a campaign of the rows ticked
    is made over."""
    search_col, topology_col, filter_col = st.columns([3, 2, 3])
    search = search_col.text_input("Search", key=f"{prefix}_query",
                                   placeholder="words: trace id, task, agent, tool, any text")
    topologies = topology_col.multiselect(
        "Topology", [v for v, _ in storage.values("topology") if v], key=f"{prefix}_topologies")
    expressions = filter_col.text_input(
        "Filter", key=f"{prefix}_filter", placeholder="agents>10, reward.team>=0.5, step>=40",
        help="FIELD OP VALUE, comma or space separated; all must hold. Operators = != < <= > "
             ">= ~ (contains), and : for = (group:train:40:9f3a). Fields: " + ", ".join(FIELDS)
             + ", reward.NAME")
    filters: list[Condition] = []
    if topologies:
        filters.append(Condition(field="topology", op="in", value=list(topologies)))
    try:
        filters += parse_conditions(expressions)
    except OrchvizError as err:
        st.error(markdown_literal(err, 300))
        filters = filters[:1] if topologies else []
    steps = step_range(storage)
    if steps is not None:  # a trainer's run: narrow it to some of its steps
        low, high = st.slider("Training steps", *steps, kept_steps(prefix, steps),
                              key=f"{prefix}_steps")
        st.session_state[f"_{prefix}_steps_kept"] = (low, high, high == steps[1])
        if (low, high) != steps:
            filters += [Condition(field="step", op=">=", value=low),
                        Condition(field="step", op="<=", value=high)]
    rewards = [f"reward.{name}" for name in storage.reward_names()]
    sort_col, order_col, _ = st.columns([2, 1, 5])
    sort = sort_col.selectbox("Sort by", [LIBRARY_ORDER, *FIELDS, *rewards], key=f"{prefix}_sort",
                              help="Ties, and a search without a sort, in the library's order: "
                                   "files (or shards) and their rows")
    descending = order_col.toggle("Descending", key=f"{prefix}_desc")
    sort_field = None if sort == LIBRARY_ORDER else sort

    total = storage.count()
    selected = storage.count(filters, search)
    signature = (search, tuple(c.model_dump_json() for c in filters), sort_field, descending)
    if st.session_state.get(f"_{prefix}_signature") != signature:
        st.session_state[f"_{prefix}_signature"] = signature
        st.session_state[f"_{prefix}_page"] = 0
    pages = max(1, -(-selected // PAGE_SIZE))
    page = min(st.session_state.get(f"_{prefix}_page", 0), pages - 1)
    rows = storage.page(filters, search, sort_field, descending, page * PAGE_SIZE, PAGE_SIZE)

    picking = st.toggle("Pick traces for a campaign", key=f"{prefix}_picking",
                        help="Tick rows of this page of the table (a click on a row then ticks "
                             "it rather than opening the trace) and make a review campaign of "
                             "them")
    st.caption(f"{selected:,} of {total:,} traces · page {page + 1} of {pages:,} · {status}"
               + ("tick the rows of a campaign" if picking else "a row's box opens its trace"))
    answered, yours = labelled_by(reviewer)
    rollouts = steps is not None or any(r.rollout_group is not None for r in rows)
    grouped = storage.kind == "folders"  # the group page opens the folders' groups
    labelled = workspace.labelling.labelled_text
    frame = pd.DataFrame([{
        "trace id": r.trace_id, "labelled": labelled(r, answered),
        **({"by you": labelled(r, yours)} if yours is not None else {}),
        "step": r.rollout_step, "trainer reward": r.trainer_reward,
        "group": (f"group?group={quote(r.rollout_group, safe=':')}" if grouped
                  else r.rollout_group) if r.rollout_group else None,
        "task": r.task_shown, "system": r.system, "topology": r.topology,
        "format": r.source_format, "events": r.events, "agents": r.agents, "depth": r.depth,
        "makespan (s)": r.makespan_s, "parallelism": r.parallelism, "tokens": r.tokens,
        **{name: r.rewards.get(name.removeprefix("reward.")) for name in rewards},
        "file": names(r.path), "row": r.position,
    } for r in rows], columns=["trace id", "labelled", *(["by you"] if yours is not None else []),
                               *(["step", "group", "trainer reward"] if rollouts else []),
                               "task", "system", "topology", "format", "events", "agents",
                               "depth", "makespan (s)", "parallelism", "tokens", *rewards,
                               "file", "row"])
    table_key = f"{prefix}_table:{st.session_state.get('_library_visit', 0)}:{page}"
    wanted = Filter(text=search, conditions=filters)
    if picking:  # the page's ticks as the rows show them: all that match held, or none
        page_ticks(prefix, f"{table_key}:picking", [r.trace_id for r in rows],
                   held_all(prefix, wanted))
    ticked = trace_table(frame, [r.trace_id for r in rows], table_key, {
        **LABELLED_COLUMNS,
        "file": st.column_config.TextColumn(width="small"),
        "row": st.column_config.NumberColumn(width="small", help="The trace's place in its "
                                             "file (a shard's row)"),
        "group": st.column_config.LinkColumn(
            width="small", display_text=r"group=(.*)$",
            help="The group of siblings sampled for the same prompt at the same step: a click "
                 "opens its page") if grouped else st.column_config.TextColumn(width="small"),
        "trainer reward": st.column_config.NumberColumn(
            format="%.3f", help="The reward the trainer gave the rollout (carried by the "
            "trace; the reviewers' labels are apart from it)"),
        **{name: st.column_config.NumberColumn(format="%.3f") for name in rewards}},
        picking=picking)
    matching = every_match(prefix, wanted, selected) if picking else None
    campaign_link(search, filters, ticked, pool, matching, selected - len(
        st.session_state.get(f"_{prefix}_all_but", ())) if matching else selected)

    previous, where, following, more = st.columns([1, 2, 1, 1])
    if previous.button("Previous page", key=f"{prefix}_previous", disabled=page == 0,
                       icon=":material/chevron_left:"):
        st.session_state[f"_{prefix}_page"] = page - 1
        st.rerun()
    where.caption(f"rows {page * PAGE_SIZE + 1 if rows else 0:,}–{page * PAGE_SIZE + len(rows):,}"
                  f" of {selected:,}")
    if following.button("Next page", key=f"{prefix}_next", disabled=page >= pages - 1,
                        icon=":material/chevron_right:"):
        st.session_state[f"_{prefix}_page"] = page + 1
        st.rerun()
    if actions is not None:
        actions(more)

    chart_col, sample_col = st.columns([3, 2])
    with chart_col:
        figure = st.selectbox("Histogram of", [*NUMBER_FIELDS, *rewards],
                              key=f"{prefix}_histogram", index=NUMBER_FIELDS.index("agents"))
        bars = storage.histogram(figure, filters, search, bins=30)
        whole = all(b.high - b.low == 1 and float(b.low).is_integer() for b in bars)
        chart = go.Figure(go.Bar(x=[b.low if whole else (b.low + b.high) / 2 for b in bars],
                                 y=[b.count for b in bars],
                                 width=[(b.high - b.low) * (0.8 if whole else 1) for b in bars],
                                 hovertemplate="%{x}: %{y} traces<extra></extra>"))
        chart.update_layout(height=260, margin=dict(l=10, r=10, t=10, b=10), bargap=0.05,
                            xaxis_title=figure, yaxis_title="traces")
        st.plotly_chart(chart, key=f"{prefix}_histogram_chart",
                        config={"displayModeBar": False})
    with sample_col:
        with st.form(f"{prefix}_sample_form", border=True):
            st.markdown("**Sample for review** (from the traces selected above)")
            n_col, seed_col = st.columns(2)
            count = n_col.number_input("How many", 1, 10_000, 20, key=f"{prefix}_sample_n")
            seed = seed_col.number_input("Seed", 0, 2**31 - 1, 0, key=f"{prefix}_sample_seed")
            stratum = st.selectbox("Stratify by", ["(at random)", "group", "topology", "system",
                                                   "source_format", *NUMBER_FIELDS, *rewards],
                                   key=f"{prefix}_sample_stratify",
                                   help="Draw evenly from each value (a number: its quartiles)")
            if st.form_submit_button("Draw sample"):
                st.session_state[f"{prefix}_sample"] = storage.sample(
                    int(count), seed=int(seed), filters=filters, search=search,
                    stratify=None if stratum.startswith("(") else stratum)
        drawn = st.session_state.get(f"{prefix}_sample")
        if drawn:
            st.caption(f"{len(drawn)} trace ids drawn")
            st.dataframe(pd.DataFrame({"trace id": drawn}), hide_index=True, height=180,
                         key=f"{prefix}_sample_table")


def held_all(prefix: str, wanted: Filter) -> bool:
    """Whether all the traces that match this search and filter are ticked (`every_match`);
    a new search or filter drops them, and the rows unticked one by one with them."""
    if st.session_state.get(f"_{prefix}_all") == wanted.model_dump_json():
        return True
    st.session_state.pop(f"_{prefix}_all", None)
    st.session_state.pop(f"_{prefix}_all_but", None)
    return False


def page_ticks(prefix: str, key: str, page_ids: list[str], every: bool) -> None:
    """The ticks the rows of this page of the table (widget `key`) show, set before it is
    drawn. While all that match are ticked (`every`), every row shows ticked but those
    unticked one by one: a row the reviewer unticks is left out of "all", and ticking it again
    takes it back; those left out are kept by id (a few, never every matching id), read
    from what the browser sent against the rows it showed. A row ticked by hand shows as the
    browser ticked it; when all are unticked again, the page's rows are unticked with them."""
    drawn = st.session_state.setdefault(f"_{prefix}_all_drawn", {})
    if not every:
        if drawn.pop(key, None) is not None:  # "all" was held when this page was last drawn
            st.session_state[key] = {"selection": {"rows": []}}
        return
    left_out: list[str] = st.session_state.setdefault(f"_{prefix}_all_but", [])
    shown, sent = drawn.get(key), st.session_state.get(key)
    if shown is not None and sent is not None:  # what the reviewer ticked and unticked since
        kept = set(sent["selection"]["rows"])
        for i, trace_id in enumerate(shown):
            if i not in kept and trace_id not in left_out:
                left_out.append(trace_id)
            elif i in kept and trace_id in left_out:
                left_out.remove(trace_id)
    out = set(left_out)
    st.session_state[key] = {"selection": {"rows": [i for i, t in enumerate(page_ids)
                                                    if t not in out]}}
    drawn.clear()
    drawn[key] = page_ids


def every_match(prefix: str, wanted: Filter, selected: int) -> Filter | None:
    """Ticking beyond the page shown: a button ticks all `selected` traces the search and
    filter match (every page of them), another unticks them. What is ticked is the query (a
    `Filter` of the search and the conditions, and `trace_id != X` for each row unticked by
    hand since), never the list of their ids: the action that takes it (a campaign) draws the
    traces from the storage when it runs, so ticking all of a pool of 100,000 costs the count
    the page shows anyway. None while only the page's own ticks count. Ticking all holds for
    this search and filter: changing either unticks them, as the count they were ticked by no
    longer holds."""
    state = f"_{prefix}_all"
    if st.session_state.get(state) != wanted.model_dump_json():
        if selected and st.button(f"Tick all {selected:,} that match this search and filter",
                                  key=f"{prefix}_tick_all", icon=":material/done_all:",
                                  help="Every page of them, not only the rows shown: then make "
                                       "a review campaign of them all"):
            st.session_state[state] = wanted.model_dump_json()
            st.session_state[f"_{prefix}_all_but"] = []
            st.rerun()
        return None
    left_out = st.session_state.get(f"_{prefix}_all_but", [])
    said = (f"All {selected:,} traces that match this search and filter are ticked, on every "
            "page")
    if left_out:
        names = ", ".join(markdown_literal(t, 60) for t in left_out[:3]) + (
            f" and {len(left_out) - 3:,} more" if len(left_out) > 3 else "")
        said = (f"{selected - len(left_out):,} of the {selected:,} traces that match this "
                f"search and filter are ticked, on every page: all but the {len(left_out):,} "
                f"you unticked ({names})")
    st.info(said + ". Untick a row to leave it out, tick it again to take it back.",
            icon=":material/done_all:")
    if st.button("Untick them all", key=f"{prefix}_untick_all", icon=":material/remove_done:"):
        st.session_state.pop(state, None)
        st.session_state.pop(f"_{prefix}_all_but", None)
        st.rerun()
    return wanted.model_copy(update={"conditions": [
        *wanted.conditions, *(Condition(field="trace_id", op="!=", value=t) for t in left_out)]})


def campaign_link(search: str, filters: list[Condition], ticked: list[str], pool: str | None,
                  matching: Filter | None, selected: int) -> None:
    """What a new campaign on the Campaigns page takes from the table, and the link there: the
    rows ticked in it, all that match its search and filter (`matching`), or, over the folders,
    its current search and filter. A search and filter are handed as the query itself (a
    `Filter`), never as the list of the `selected` traces' ids: the campaign draws them from
    the storage when it is made."""
    every = {"matching": matching.model_dump_json()} if matching else {}
    if pool is not None:
        if ticked or matching:  # the Campaigns page makes a campaign of them over the pool
            st.session_state["_library_filter"] = {"picked": [] if matching else ticked,
                                                   "pool": pool, **every}
    else:
        st.session_state["_library_filter"] = {
            "query": Filter(text=search, conditions=filters).model_dump_json(),
            "picked": [] if matching else ticked, **every}
        if selected and not ticked and not matching:
            st.page_link("app_pages/campaigns.py", icon=":material/campaign:",
                         label=f"Make a review campaign of these {selected:,} traces")
    if matching or ticked:
        st.page_link("app_pages/campaigns.py", icon=":material/campaign:",
                     label=f"Make a review campaign of the "
                           f"{selected if matching else len(ticked):,} traces ticked")


LIBRARY_ORDER = "(the library's order)"


def labelled_by(named) -> tuple[dict, dict | None]:
    """What the team answered, and what the named reviewer answered (None when no one is named):
    a reviewer sees both the campaign's progress and their own."""
    return workspace.labelling.answered(None), workspace.labelling.answered(named.name) if named else None


def pool_library(location: str) -> None:
    """The pool's traces, a page at a time, through its index."""
    index: PoolIndex = workspace.library.storage(location)  # shared by every session of the app
    if st.session_state.pop("_pool_reindex", False) or \
            time.time() - index.updated_at > POOL_CHECK_SECONDS:
        def pool_progress(done: int, total: int, shard: str) -> None:
            if total:
                bar.progress(done / total, text=f"Indexing the pool: {done:,} of {total:,} traces…")

        try:  # never wait here: another update's rows show on their own once it ends
            workspace.library.update_pool_index(location, progress=pool_progress, wait=False)
        except IndexBusy:
            st.info("Another update of this pool's index is under way (`orchviz pool index` "
                    "or the app's Re-index): the library shows the index as it was, and the "
                    "new rows once it finishes.", icon=":material/sync:")
    bar.empty()

    def reindex(place) -> None:
        if place.button("Re-index", key="pool_reindex",
                        help="Read new and changed shards now (the library shows the index as "
                        "it was until they are read; one update runs at a time, the app's or "
                        "`orchviz pool index`'s)"):
            st.session_state["_pool_reindex"] = True
            st.rerun()

    last = index.last_update
    base = location.rstrip("/") + "/"
    library_table(index, "pool", f"indexed {last.read} new or changed shards, {last.skipped} "
                  "unchanged · " if last is not None else "", lambda path: path.removeprefix(base),
                  reindex, pool=location)

    failures = index.failure_count()
    if failures:
        with st.expander(f"Shards and rows that failed to load ({failures:,})"):
            st.dataframe(pd.DataFrame([{"shard": f.path, "row": f.row, "error": f.error}
                                       for f in index.failures(limit=200)]),
                         hide_index=True, width="stretch",
                         column_config={"error": st.column_config.TextColumn(width="large")})


if workspace.library.pools:
    chosen_pool = workspace.library.pools[0] if len(workspace.library.pools) == 1 else st.selectbox(
        "Pool", workspace.library.pools, key="pool_location")
    pool_library(chosen_pool)
    pooled = set(workspace.library.pools)
    uploaded = workspace.settings.uploads
    if not any(str(t) not in pooled for t in workspace.settings.traces) and not (
            uploaded is not None and uploaded.is_dir() and any(uploaded.iterdir())):
        st.stop()  # nothing besides the pool (the uploads folder is listed once it holds files)
    st.subheader("Trace files")


def folder_library() -> None:
    """The traces of the folders (a pool of one shard a file, `store.library.Folders`) in the
    library's one table; a rollout's step, group and trainer reward where a trainer's file
    gives them (following a run, `watch` redraws it when rollouts come)."""
    own_bar = st.empty()

    def indexing(done: int, total: int, path: str) -> None:
        if total:
            own_bar.progress(done / total, text=f"Indexing {done + 1 if done < total else total}"
                                                f" of {total} files…")

    result = workspace.library.update_index(progress=indexing)
    own_bar.empty()
    following = workspace.settings.follow
    if following and seen_anew(result):  # a trainer wrote: per-step campaigns sample it
        for campaign in workspace.campaigns.all():
            if campaign.closed_at is None and campaign.spec.sample.kind == "per_step":
                try:
                    workspace.campaigns.top_up(campaign.name)
                except OrchvizError as err:
                    st.warning(markdown_literal(err, 300))

    roots = library_roots()
    twice = same_ids(result.rows)
    for trace_id, held in sorted(twice.items()):  # said above the table, where rows are read
        st.warning(
            f"The trace id **{markdown_literal(trace_id, 80)}** is in {len(held)} files: "
            + ", ".join(f"{markdown_literal(relative_to(r.path, roots), 80)} (version "
                        f"{r.sha256[:12]})" for r in held)
            + ". A label belongs to the file whose version it was made on (its hash): the "
            "trace page opens the file indexed last, and exports name each label's version.",
            icon=":material/content_copy:")
    storage = workspace.library.storage(result=result)
    library_table(storage, "library", follow_status(following) if following else
                  f"indexed {result.parsed} new or changed files, {result.skipped} unchanged · ",
                  lambda path: relative_to(path, roots))
    failures(result)


def library_roots() -> list[Path]:
    """The folders a file's path is shown relative to: never the server's full path."""
    uploaded = workspace.settings.uploads
    return [*map(Path, workspace.settings.traces), *([uploaded] if uploaded else [])]


def same_ids(rows: list[LibraryRow]) -> dict[str, list[LibraryRow]]:
    """Trace ids that more than one file (or one file twice) holds, with their rows."""
    held: dict[str, list[LibraryRow]] = {}
    for row in rows:
        held.setdefault(row.trace_id, []).append(row)
    return {trace_id: found for trace_id, found in held.items() if len(found) > 1}


def failures(result) -> None:
    """The files that failed to load, with why, each by its path in the library (a failed
    upload an earlier orchviz kept can be removed here)."""
    if not result.failures:
        return
    roots = library_roots()
    shown = [(f, relative_to(f.path, roots)) for f in result.failures]
    st.subheader(f"Files that failed to load ({len(result.failures)})")
    st.dataframe(pd.DataFrame([{"file": name, "error": f.error.replace(f.path, name)}
                               for f, name in shown]),
                 hide_index=True, width="stretch",
                 column_config={"error": st.column_config.TextColumn(width="large")})
    uploaded = workspace.settings.uploads
    kept = [(f, name) for f, name in shown if uploaded is not None
            and Path(uploaded).resolve() in Path(f.path).resolve().parents]
    if kept:  # failed uploads an earlier orchviz kept: the app's own folder, so removable here
        drop = st.multiselect("Failed uploads to remove from the uploads folder",
                              sorted({name for _, name in kept}), key="drop_failed_uploads")
        if drop and st.button("Remove them", key="remove_failed_uploads"):
            for f, name in kept:
                if name in drop:
                    remove_upload(uploaded, f.path)
            st.rerun()


# What this session's page last listed while following a run, and when traces last came.
FOLLOW_SEEN, FOLLOW_NEWS = "_follow_seen", "_follow_news"


def seen_anew(result) -> bool:
    """Whether the listing differs from what this session's page last drew (True the first
    time), remembered now; the traces that came since, and when, for the status line."""
    mark, before = session.listing_mark(result), st.session_state.get(FOLLOW_SEEN)
    if mark == before:
        return False
    st.session_state[FOLLOW_SEEN] = mark
    if before is not None and mark[0] != before[0]:
        st.session_state[FOLLOW_NEWS] = (mark[0] - before[0], time.strftime("%H:%M:%S"))
    return True


def follow_status(every: float) -> str:
    """The status line of a followed run: how often it looks, and the last traces that came."""
    news = st.session_state.get(FOLLOW_NEWS)
    if news is None:
        came = ""
    else:
        count, noun = abs(news[0]), "trace" if abs(news[0]) == 1 else "traces"
        came = (f"{count:,} new {noun}" if news[0] > 0 else f"{count:,} {noun} gone") + \
            f" at {news[1]} · "

    return f"following the run: looking every {every:g} s · {came}"


folder_library()
session.follow_run(st.session_state.get(FOLLOW_SEEN))
