"""The library page (home): every trace in the folders and uploads, searchable; a row opens it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from viz_app.io.uploads import save_upload
from viz_app.store.index import IndexRow
from viz_app.ui import session

if session.url_trace():  # a deep link to the app's root: `/?trace=<id>&event=<id>`
    session.open_trace(session.url_trace(), st.query_params.get("event"))

reviewer = session.reviewer()
st.title("orchviz")
st.markdown("Browse orchestration traces of LLM multi-agent systems: who spawned whom, who "
            "talked to whom, when, and what every event said. Pick a trace to open it.")

uploads = st.file_uploader("Add traces (JSON, JSONL, or a format orchviz imports)",
                           accept_multiple_files=True, key="uploads",
                           help="Saved into the uploads folder, so they stay after a restart.")
for upload in uploads or []:
    saved = session.settings().uploads
    path = save_upload(saved, upload.name, upload.getvalue())
    st.session_state.setdefault("_uploaded", set()).add(str(path))

bar = st.empty()


def show_progress(done: int, total: int, path: str) -> None:
    """Show indexing progress while new or changed files are read."""
    if total:
        bar.progress(done / total, text=f"Indexing {done + 1 if done < total else total} of "
                                        f"{total} files…")


workspace = session.workspace()
result = workspace.update_index(progress=show_progress)
bar.empty()

query_col, topology_col = st.columns([3, 1])
query = query_col.text_input("Search", placeholder="trace id, task, agent name or any text",
                             key="library_query")
topologies = sorted({r.topology for r in result.rows if r.topology})
chosen = topology_col.multiselect("Topology", topologies, key="library_topologies")
rows = workspace.search(result.rows, query) if query.strip() else result.rows
if chosen:
    rows = [r for r in rows if r.topology in chosen]

st.caption(f"{len(rows)} of {len(result.rows)} traces · indexed {result.parsed} new or changed "
           f"files, {result.skipped} unchanged · click a row to open the trace")
# by this reviewer, or by anyone when none is named
answered = workspace.answered(reviewer.name if reviewer else None)


def labelled(row: IndexRow) -> str:
    """'2 of 5' targets labelled."""
    return workspace.labelled_text(row, answered)


frame = pd.DataFrame([{
    "trace id": r.trace_id, "task": r.task_id, "system": r.system, "topology": r.topology,
    "format": r.source_format, "events": r.events, "agents": r.agents, "depth": r.depth,
    "makespan (s)": r.makespan_s, "parallelism": r.parallelism, "tokens": r.tokens,
    "labelled": labelled(r), "file": r.path,
} for r in rows], columns=["trace id", "labelled", "task", "system", "topology", "format", "events",
                           "agents", "depth", "makespan (s)", "parallelism", "tokens", "file"])
table_key = f"library_table:{st.session_state.get('_library_visit', 0)}"
picked = st.dataframe(
    frame, key=table_key, hide_index=True, on_select="rerun", selection_mode="single-row",
    height=min(560, 38 + 35 * max(len(frame), 1)),
    column_config={
        "trace id": st.column_config.TextColumn(width="medium", pinned=True),
        "system": st.column_config.TextColumn(width="medium"),
        "makespan (s)": st.column_config.NumberColumn(format="%.1f"),
        "parallelism": st.column_config.NumberColumn(format="%.2f"),
        "tokens": st.column_config.NumberColumn(format="localized"),
        "file": st.column_config.TextColumn(width="small"),
        "labelled": st.column_config.TextColumn(
            width="small", help="Targets (aggregates, stops, the trace...) with every required "
            "question answered " + ("by you" if reviewer else "by anyone")
            + ", of those the rubric asks for"),
    })
if picked is not None and picked.selection.rows:
    st.session_state["_library_visit"] = st.session_state.get("_library_visit", 0) + 1
    session.open_trace(rows[picked.selection.rows[0]].trace_id)

if result.failures:
    st.subheader(f"Files that failed to load ({len(result.failures)})")
    st.dataframe(pd.DataFrame([{"file": f.path, "error": f.error} for f in result.failures]),
                 hide_index=True, width="stretch",
                 column_config={"error": st.column_config.TextColumn(width="large")})
