"""A browser session's view of orchviz: the shared Workspace, cached traces and figures, the
reviewer, and what is selected (kept in step with the URL, so a link opens the same view).

Pages get everything through here and hand domain objects to `components`; this module calls the
Workspace and the domain modules (`analysis`, `charts`) and draws nothing but the reviewer box.

Caching: a parsed, analysed trace is read-only and shared by every session, kept by the
Workspace per version of its file (`ws.library.trace`: an edited file is read again), which also
reads ahead the trace a page will most likely open next (`read_ahead`), its first figures with
it. Tree and timeline figures are shared by every session too (`st.cache_resource`) and never
changed: a highlight is drawn onto a session's own copy (`overlaid`). Each session keeps the
figures it is looking at in its session state.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple
from urllib.parse import unquote

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from streamlit import auth_util
from sqlalchemy import Engine

from components import live_chart
from viz_app import charts, training
from viz_app.analysis import analyze
from viz_app.errors import NoSuchTrace, OrchvizError
from viz_app.labels import Reviewer
from viz_app.model import Trace
from viz_app.settings import Settings
from viz_app.query import Condition
from viz_app.store import IndexProgress, IndexResult
from viz_app.summary import LibraryRow
from viz_app.text import markdown_literal
from viz_app.workspace import Workspace

TRACE_PAGE = "app_pages/trace.py"
LIBRARY_PAGE = "app_pages/library.py"
_MEMO = "_orchviz_memo"
_MEMO_SIZE = 8


def settings() -> Settings:
    """The running app's settings (from the environment `orchviz app` sets)."""
    return Settings.from_env()


@st.cache_resource(show_spinner=False)
def _workspace(settings_json: str, rubric_mtime: float) -> Workspace:
    del rubric_mtime  # part of the cache key: an edited rubric file is read again
    return Workspace(Settings.model_validate_json(settings_json))


def workspace() -> Workspace:
    """The app's Workspace, shared by every session (it holds the database connection and the
    rubric, nothing of any one reviewer)."""
    current = settings()
    path = current.rubric
    mtime = path.stat().st_mtime if path is not None and path.exists() else 0.0
    return _workspace(current.model_dump_json(), mtime)


def index(progress: IndexProgress | None = None) -> IndexResult:
    """Bring the trace index up to date and return the library."""
    return workspace().library.update_index(progress=progress)


def listing_mark(result: IndexResult) -> tuple[int, int, int]:
    """What the folders list, in three numbers (rows, failures, and a hash of every row's
    file, place and version): the index is shared by every session of the app and by
    `orchviz` commands, so whichever of them read a trainer's new lines first, every page
    following the run sees the listing change (an update's own `parsed` is 0 for all but the
    one that read them)."""
    return (len(result.rows), len(result.failures),
            hash(tuple((r.path, r.position, r.sha256) for r in result.rows)))


def follow_run(drawn: Any, now: Callable[[], Any] | None = None) -> None:
    """Following a run (`--follow`): look at the folders every few seconds (a fragment that
    draws nothing) and draw the page again when what they list is no longer `drawn` (the
    `listing_mark` of what the page drew; or whatever `now()` gives, for a page that draws
    more than the listing), whoever's look read the trainer's new lines; an idle look costs
    one look of the index (`TraceIndex.update`), nothing sent to the browser."""
    every = settings().follow
    if not every:
        return

    def look() -> None:
        if (now() if now is not None else listing_mark(workspace().library.update_index())) \
                != drawn:
            st.rerun()  # the whole page: new rollouts come in

    st.fragment(run_every=every)(look)()


# -- traces and figures ----------------------------------------------------------------------


def find_and_load(trace_id: str) -> Trace | None:
    """A trace of the library or of a pool by id, analysed, read once per version of its file
    for every session (`ws.library.trace`, which finds it ready when it was read ahead); None
    when no index knows it (raises TraceError when it is known but cannot be read)."""
    try:
        return workspace().library.trace(trace_id)
    except NoSuchTrace:
        return None


def read_ahead(reason: tuple, trace_ids: Callable[[], Iterable[str | None]]) -> None:
    """Read the traces `trace_ids()` names, and draw their tree and timeline as a page opens
    them, on the Workspace's background thread while this page waits for the reviewer
    (`ws.library.read_ahead`): Shift+N, or a save onto another trace, then finds them ready.
    Asked once per `reason` in a row (a page's rerun on the same trace asks nothing again).
    Never raises, never waits."""
    if st.session_state.get(_READ_AHEAD) == reason:
        return
    st.session_state[_READ_AHEAD] = reason
    workspace().library.read_ahead(trace_ids, then=_first_figures, after=READ_AHEAD_AFTER)


_READ_AHEAD = "_read_ahead"
READ_AHEAD_AFTER = 1.0
"""Seconds a page's read ahead waits: the browser is drawing the page just sent, on the same
cores, and a reviewer spends longer than this on a trace."""


def _first_figures(trace: Trace) -> None:
    """The figures a page first draws of a trace opened without a selection (the caches that
    `tree_figure` and `timeline_figure` read), encoded for the browser as the live chart sends
    them (`live_chart.encoded`, kept per figure): on the read-ahead thread."""
    live_chart.encoded(_tree(trace_key(trace), "tokens", (), None, None, trace))
    live_chart.encoded(_timeline(trace_key(trace), None, False, trace))


class _ReadAheadQuiet(logging.Filter):
    """Streamlit's caches warn "missing ScriptRunContext" on every call from a thread of no
    page run: the read-ahead thread is one on purpose."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not threading.current_thread().name.startswith("orchviz-read-ahead")


for _name in ("streamlit.runtime.scriptrunner_utils.script_run_context",
              "streamlit.runtime.caching.cache_data_api"):
    logging.getLogger(_name).addFilter(_ReadAheadQuiet())


def _memo() -> dict[tuple, Any]:
    memo = st.session_state.get(_MEMO)
    if memo is None:
        memo = st.session_state[_MEMO] = {}
    return memo


def _remember(key: tuple, make: Callable[[], Any]) -> Any:
    memo = _memo()
    if key in memo:
        value = memo.pop(key)
    else:
        value = make()
    memo[key] = value  # most recent last
    while len(memo) > _MEMO_SIZE:
        memo.pop(next(iter(memo)))
    return value


def pool_rows(trace_ids: Sequence[str], *, with_groups: bool = False,
              first_page: bool = False) -> list[LibraryRow]:
    """The pools' index rows of these trace ids (each once, the pools in their order); with
    `with_groups`, the other rollouts of their tasks (GRPO groups, up to GROUP_ROWS) after them;
    with `first_page`, the first page of the first pool when the ids name none of its traces:
    what a page that picks traces by id (Compare) offers from a pool of a million."""
    ws = workspace()
    found: dict[str, LibraryRow] = {}
    ids = [t for t in dict.fromkeys(trace_ids) if t]
    for location in ws.library.pools:
        index = ws.library.storage(location)
        named = index.rows(ids)
        groups = sorted({r.group for r in named})
        mates = index.page([Condition(field="group", op="in", value=groups)],
                           limit=GROUP_ROWS) if with_groups and groups else []
        for row in [*named, *mates]:
            found.setdefault(row.trace_id, row)
    if first_page and not found and ws.library.pools:
        found = {r.trace_id: r for r in ws.library.storage(ws.library.pools[0]).page()}
    return list(found.values())


GROUP_ROWS = 200
"""The most rollouts of one task `pool_rows` adds for each trace named."""


class _Member(NamedTuple):
    """Where a group's member is and which version of it (what `_group_view` is keyed on)."""

    trace_id: str
    path: str
    position: int
    sha256: str


def group_view(members: Sequence[LibraryRow]) -> tuple[list[LibraryRow], training.GroupView]:
    """What a group page shows of these siblings (`training.group_view`), and the members
    that could be read, in order: worked out once for every session per version of the
    members (their hash in the index), not on each run of the page (every key a reviewer
    presses there reruns it; reading the rollout file and finding where they part each time
    was most of the server's work)."""
    key = tuple(_Member(r.trace_id, r.path, r.position, r.sha256) for r in members)
    read, view = _group_view(key)
    if len(read) < len(key):  # a file that could not be read is read again next time
        _group_view.clear(key)
    kept = set(read)
    return [r for r in members if r.trace_id in kept], view


@st.cache_data(show_spinner=False, max_entries=32)
def _group_view(members: tuple[_Member, ...]) -> tuple[list[str], training.GroupView]:
    traces = training.read_rows(members)
    ordered = [traces[m.trace_id] for m in members if m.trace_id in traces]
    return [t.trace_id for t in ordered], training.group_view(ordered)


def linked_trace(none_open: str) -> Trace:
    """The trace the URL names (`?trace=<id>`), loaded; when there is none, or it cannot be
    found or read, the page says so (`none_open` when the URL names none) and stops."""
    trace_id = url_trace()
    if not trace_id:
        st.info(none_open)
        st.page_link(LIBRARY_PAGE, label="Go to the library", icon=":material/list:")
        st.stop()
    try:
        with st.spinner("Finding the trace…"):
            trace = find_and_load(trace_id)
    except (OrchvizError, OSError) as err:
        st.error(f"The trace could not be loaded: {markdown_literal(err, 400)}")
        st.stop()
    if trace is None:
        st.error(f"No trace with id **{markdown_literal(trace_id)}** in the library.")
        st.page_link(LIBRARY_PAGE, label="Go to the library", icon=":material/list:")
        st.stop()
    return trace


def trace_key(trace: Trace) -> str:
    """What identifies a loaded trace in the caches: its file, position and content hash."""
    return f"{trace.source}|{trace.sha256}"


# Tree and timeline figures are shared by every session, read-only (`overlaid` draws on a
# session's own copy): a copy per session cost a 20,000-event trace 0.1 s of each first view.
@st.cache_resource(show_spinner=False, max_entries=16)
def _tree(key: str, size_by: str, expanded: tuple[str, ...], selected: str | None,
          until: float | None, _trace: Trace) -> go.Figure:
    return charts.tree_figure(analyze(_trace), size_by=size_by, expanded=expanded,
                              selected=selected, until=until)


@st.cache_resource(show_spinner=False, max_entries=16)
def _timeline(key: str, until: float | None, critical: bool, _trace: Trace) -> go.Figure:
    return charts.timeline_figure(analyze(_trace), until=until, critical=critical)


@st.cache_data(show_spinner=False, max_entries=16)
def _communication(key: str, selected: str | None, _trace: Trace) -> str:
    return charts.communication_html(analyze(_trace), selected=selected)


def tree_figure(trace: Trace, *, size_by: str, expanded: tuple[str, ...], selected: str | None,
                until: float | None) -> go.Figure:
    """The spawn tree figure (cached by file hash and options; shared: do not change it)."""
    key = ("tree", trace_key(trace), size_by, expanded, selected, until)
    return _remember(key, lambda: _tree(trace_key(trace), size_by, expanded, selected, until,
                                        trace))


def timeline_figure(trace: Trace, *, until: float | None, critical: bool) -> go.Figure:
    """The message timeline figure without a selection (cached by file hash and options; shared:
    do not change it); draw it inside `overlaid` to ring the selected event."""
    key = ("timeline", trace_key(trace), until, critical)
    return _remember(key, lambda: _timeline(trace_key(trace), until, critical, trace))


@contextmanager
def overlaid(figure: go.Figure, traces: list) -> Iterator[go.Figure]:
    """The figure with a few traces on top for the time of a `with` block. The cached figure is
    shared by every session and never changed: the traces go onto this session's own copy,
    made once and kept with its figures (rebuilding or copying a 20,000-event figure for each
    click would cost more than drawing it)."""
    if not traces:
        yield figure
        return
    kept = _remember(("own copy", id(figure)), lambda: (figure, go.Figure(figure)))
    if kept[0] is not figure:  # the id of a figure no longer cached, now another's
        kept = (figure, go.Figure(figure))
        _memo()[("own copy", id(figure))] = kept
    own = kept[1]
    count = len(own.data)
    for trace in traces:
        own.add_trace(trace)
    try:
        yield own
    finally:
        own.data = own.data[:count]


def communication_html(trace: Trace, *, selected: str | None) -> str:
    """The communication graph page (cached by file hash)."""
    key = ("communication", trace_key(trace), selected)
    return _remember(key, lambda: _communication(trace_key(trace), selected, trace))


_CHARTS_READY = "_charts_ready"
_VIEWS_READY = "_views_ready"
_EMPTY_CHART = go.Figure(layout=dict(height=10, margin=dict(l=0, r=0, t=0, b=0)))
_EMPTY_TABLE = pd.DataFrame({"": []})

_STYLE = """<style>
[data-testid="stMainBlockContainer"] { padding: 2rem 2.5rem 2rem 2.5rem !important; }
[data-testid="stMetricValue"] { font-size: 1.55rem !important; }
.st-key-chart-library { display: none !important; }
.st-key-view-library { position: fixed !important; top: 0; left: 0; width: 300px;
  opacity: 0; pointer-events: none; z-index: -1; }  /* in the viewport, so its code loads */
.st-key-ann-keys, .st-key-ann-keys-save { display: none !important; }
.st-key-adj-answers p { word-break: normal !important; overflow-wrap: anywhere !important; }
  /* words wrap between words; only a token longer than its column breaks inside */
[data-testid="stColumn"]:has(.st-key-labels-panel) {
  position: sticky; top: 0.5rem; align-self: flex-start; max-height: calc(100vh - 1rem);
  overflow-y: auto; }
</style>"""


def page_style() -> None:
    """Tighter page margins and metrics, so a trace's tree and timeline share the first screen.
    (A constant style sheet: no trace text ever goes into it.)"""
    st.html(_STYLE)


PLOTLY_BUNDLE = "plotly"
"""Streamlit's Plotly bundle (about 5 MB), which `st.plotly_chart` draws with."""
LIVE_BUNDLE = "live"
"""plotly.js as the live chart loads it (`components.live_chart`): the trace views' tree and
timeline on the trace, review and adjudication pages."""


@contextmanager
def charts_ahead(bundles: Collection[str] = (PLOTLY_BUNDLE, LIVE_BUNDLE)) -> Iterator[None]:
    """Run a page under a hidden chart of each of `bundles` this session has not fetched yet,
    until the page has run.

    The browser fetches and compiles a chart's code (Streamlit's Plotly bundle, about 5 MB;
    plotly.js for the live chart, about 4 MB) only when a page first shows such a chart:
    without this, a deep link would wait for it after the server had sent the tree and
    timeline. With it the download overlaps the server's work on the trace. A page that
    switches, reruns or stops leaves the charts for its next run to remove.

    A page asks only for the code it draws with: a page that draws no chart (the group page)
    for none, since compiling a bundle took the browser's main thread for longer than such a
    page's own widgets (1.3-2.2 s of a group page's first open in a new tab, on a loaded
    machine); the pages of the trace views (trace, review, adjudication) for the live chart's
    alone, since Streamlit's Plotly bundle, compiled there for nothing, stayed in the page
    with its own Plotly's listeners. The first page with the other charts fetches the rest."""
    slot = st.empty()  # drawn on every run, so that what follows keeps its place (views_ahead)
    ready = st.session_state.get(_CHARTS_READY)
    ready = tuple(ready) if isinstance(ready, (tuple, list)) else ()
    wanted = [bundle for bundle in bundles if bundle not in ready]
    if not wanted:
        yield
        return
    with slot.container(key="chart-library"):
        if PLOTLY_BUNDLE in wanted:
            st.plotly_chart(_EMPTY_CHART, key="_chart_library", config={"staticPlot": True})
        if LIVE_BUNDLE in wanted:
            live_chart.load_ahead("_live_chart_library")  # plotly.js, for the live charts
    yield  # not past here when the page raises to switch, rerun or stop
    slot.empty()
    st.session_state[_CHARTS_READY] = tuple(sorted({*ready, *wanted}))


def views_ahead() -> Callable[[], None]:
    """Draw a hidden, empty table, code box and JSON view at the top of the trace page, on its
    first run in this session; returns the function that removes them, for the page's end.

    Streamlit's browser code for each of these is fetched and compiled when a page first shows
    one: without this, the first key press that shows them (N onto a stop, whose neighbours
    are a table, with the inspector showing its event) waited 0.5-0.8 s for it. A page that
    switches or stops leaves them, hidden, for its next run to remove.

    The empty slot stays on the page after: Streamlit matches a run's elements to the last
    run's by their place, and a slot gone would move every element below it, which the
    browser then mounts afresh (the tree and timeline drawn again, their WebGL contexts
    made anew, on the first click after a page opened)."""
    slot = st.empty()  # drawn on every run, so that what follows keeps its place
    if st.session_state.get(_VIEWS_READY):
        return lambda: None
    with slot.container(key="view-library"):
        st.dataframe(_EMPTY_TABLE, height=40)
        st.code(".", language=None)  # empty ones draw nothing, and load nothing
        st.json({"": 0}, expanded=False)

    def done() -> None:
        slot.empty()
        st.session_state[_VIEWS_READY] = True

    return done


# -- the reviewer ------------------------------------------------------------------------------


def sign_in_configured() -> bool:
    """Whether the app signs people in: Streamlit's own test, an `[auth]` section in the
    secrets (`.streamlit/secrets.toml`, or the file `orchviz app --secrets` names)."""
    secrets = st.secrets  # the server's secrets; an AppTest's `at.secrets` in a page test
    return bool(secrets.load_if_toml_exists() and secrets.get("auth"))


def reviewer() -> Reviewer | None:
    """Who is labelling, read one way for every page. Labels, bookmarks, judgements and
    campaigns all record this.

    With sign-in configured it is the signed-in user's e-mail (`via="oidc"`), shown in the
    sidebar with a Sign out button; a visitor who has not signed in sees a Sign in button and
    gets None, so nothing can be saved until they do. Without sign-in it is the name typed in
    the sidebar (`via="self-declared"`), and the sidebar says that names are not verified.

    A link never carries or sets an identity: a `&reviewer=` in the URL is dropped unread (a
    shared link once made its visitor save as the sender). The typed name is kept in this
    browser's cookie (`orchviz_reviewer`), so a reload or a new tab opens as the same
    reviewer, who types their name once; it changes only when they edit the box."""
    _drop_link_identity()
    if sign_in_configured():
        return _signed_in_reviewer()
    kept = st.session_state.get("reviewer")
    if "_reviewer_box" not in st.session_state:  # a new session, or a page without the box
        st.session_state["_reviewer_box"] = kept or _cookie_name() or ""
    elif kept and st.session_state["_reviewer_box"] == kept:
        # set again in this run: the box is drawn by each page, and on a switch of pages
        # Streamlit drops the value a page's widget left (the box came back empty, and the
        # browser's cookie was forgotten with it); a name the reviewer edits is theirs
        st.session_state["_reviewer_box"] = kept
    box = st.sidebar.text_input("Reviewer", key="_reviewer_box", max_chars=REVIEWER_LENGTH,
                                placeholder="your name",
                                help="Recorded on every label you give; kept in this "
                                     "browser, so a reload or a new tab keeps it (links "
                                     "never carry it).")
    st.sidebar.caption(NOT_VERIFIED)
    name = box.strip() or None
    st.session_state["reviewer"] = name
    _keep_in_browser(name)
    return Reviewer(name=name, via="self-declared") if name else None


def _drop_link_identity() -> None:
    """Remove a reviewer name from the URL: whoever sent the link is not whoever opens it."""
    if REVIEWER_PARAM in st.query_params:
        del st.query_params[REVIEWER_PARAM]


REVIEWER_COOKIE = "orchviz_reviewer"
"""The cookie that keeps the typed reviewer name in this browser (a new tab opens as the same
reviewer); written only without sign-in."""


def _cookie_name() -> str:
    """The reviewer name this browser kept (read from the cookies of the session's first
    request), or ''."""
    try:
        kept = st.context.cookies.get(REVIEWER_COOKIE) or ""
    except Exception:  # noqa: BLE001  (no browser request behind this run: an AppTest)
        return ""
    return " ".join(unquote(kept).split())[:REVIEWER_LENGTH]


def _keep_in_browser(name: str | None) -> None:
    """Write the name into the browser's cookie when it changed (an empty box forgets it). The
    name goes into the script as a JSON string with <, > and & escaped, so it stays a string."""
    if "_reviewer_kept" not in st.session_state:
        st.session_state["_reviewer_kept"] = _cookie_name() or None
    if st.session_state["_reviewer_kept"] == name:
        return
    st.session_state["_reviewer_kept"] = name
    literal = (json.dumps(name or "").replace("<", "\\u003c").replace(">", "\\u003e")
               .replace("&", "\\u0026"))
    age = 31_536_000 if name else 0
    with st.sidebar.container(key="reviewer-cookie"):
        st.html("<style>.st-key-reviewer-cookie { display: none !important; }</style>"
                f"<script>document.cookie = '{REVIEWER_COOKIE}=' + encodeURIComponent({literal})"
                f" + '; path=/; max-age={age}; SameSite=Lax';</script>",
                unsafe_allow_javascript=True)


def restore_reviewer_name(name: str) -> None:
    """Put a name back in the sidebar's Reviewer box (from a widget's callback, which runs
    before the box is drawn): the review page's "keep reviewing as" after a change of name."""
    st.session_state["_reviewer_box"] = name


def is_lead(reviewer: Reviewer | None) -> bool:
    """Whether this reviewer may do what leads do (create campaigns, adjudicate, retract):
    with sign-in, a signed-in member whose role is `lead`; without sign-in, anyone (a person
    alone on a laptop is their own lead)."""
    if not sign_in_configured():
        return True
    if reviewer is None or reviewer.via != "oidc":
        return False
    return workspace().campaigns.role(reviewer.name) == "lead"


def identify_first(doing: str) -> str:
    """What a page says where nobody is named yet and something is to be saved: sign in, or
    type a name (`doing`: "label this trace", "review", ...)."""
    if sign_in_configured():
        return f"Sign in (in the sidebar) to {doing}."
    return f"Enter your name under **Reviewer** in the sidebar to {doing}."


def lead_or_stop(workspace, lead: Reviewer | None, doing: str) -> None:
    """Stop the page unless someone named is at it and, where the app signs people in, a lead
    of the campaigns (`doing`: "adjudicate", "make and run campaigns"): the one gate of the
    lead's pages."""
    if lead is None:
        st.info(identify_first(doing))
        st.stop()
    if sign_in_configured() and workspace.campaigns.role(lead.name) != "lead":
        st.warning(f"Only a campaign's leads {doing}. A lead adds you with "
                   "`orchviz campaign members add EMAIL --role lead`.")
        st.stop()


REVIEWER_PARAM = "reviewer"
"""The URL parameter that older links carried a reviewer name in: dropped, never read."""
REVIEWER_LENGTH = 80
NOT_VERIFIED = "Names are not verified: anyone can type any name here."
"""What the sidebar says under the name box when the app does not sign people in."""


def _signed_in_reviewer() -> Reviewer | None:
    st.session_state["reviewer"] = None  # no typed name counts with sign-in
    email = _signed_in()
    if not st.user.get("is_logged_in"):
        if not auth_util.is_authlib_installed():
            st.sidebar.error("Sign-in is configured but Authlib is missing on the server: "
                             "`pip install 'orchviz[auth]'`.")
            return None
        st.sidebar.caption("Sign in to label, bookmark or judge; until then you can look.")
        if st.sidebar.button("Sign in", key="_sign_in", type="primary",
                             icon=":material/login:", width="stretch"):
            st.login()
        return None
    if email is None:
        st.sidebar.warning("Your sign-in gave no verified e-mail address, so nothing can be "
                           "saved as you; sign in with another account.")
    else:
        st.sidebar.caption(f"Signed in as **{markdown_literal(email, REVIEWER_LENGTH)}**")
    if st.sidebar.button("Sign out", key="_sign_out", icon=":material/logout:",
                         width="stretch"):
        st.logout()
    return Reviewer(name=email, via="oidc") if email else None


def _signed_in() -> str | None:
    """The signed-in user's e-mail (lower case), or None: not signed in, no e-mail in the
    identity token, or one the provider does not vouch for. Only `email_verified: true`, the
    JSON boolean, verifies: a missing claim, `"false"` or `"true"` as text (some providers
    send strings) do not, since anyone could claim such an address."""
    if not st.user.get("is_logged_in"):
        return None
    email = st.user.get("email")
    if not isinstance(email, str) or st.user.get("email_verified") is not True:
        return None
    email = email.strip().lower()
    return email if "@" in email and len(email) <= 256 else None


# -- selection, in step with the URL ------------------------------------------------------------


def url_trace() -> str | None:
    """The trace id the URL names (`?trace=`)."""
    return st.query_params.get("trace") or None


def open_trace(trace_id: str, event_id: str | None = None) -> None:
    """Go to the trace page for a trace (and event): the URL then links to exactly that."""
    params = {"trace": trace_id} | ({"event": event_id} if event_id else {})
    st.switch_page(TRACE_PAGE, query_params=params)


def show_trace(trace_id: str) -> None:
    """From a widget's callback on the trace page: show another trace (the URL names it, and no
    event) in the full run of the page that follows the callback, as `open_trace` would from
    the page's run. Shift+N goes this way: opened from the labels panel's run, the next trace
    waited for that fragment's run to send the panel of the trace being left and for a switch
    of page, and the browser drew the page once more for them before drawing the next trace."""
    st.query_params.from_dict({"trace": trace_id})
    st.rerun()  # a full run of this page: the callback's fragment is not run first


def selected_event(trace: Trace) -> str | None:
    """The selected event's id (from `?event=`), when it is an event of this trace."""
    event_id = st.query_params.get("event")
    return event_id if event_id and event_id in trace.events_by_id else None


def select_event(trace: Trace, event_id: str | None) -> None:
    """Select an event (None clears): it goes into the URL, and its agent becomes the agent."""
    if event_id is None or event_id not in trace.events_by_id:
        if "event" in st.query_params:
            del st.query_params["event"]
        return
    st.query_params["event"] = event_id
    st.session_state["_selected_agent"] = (trace_key(trace), analyze(trace).actor[event_id])


def selected_agent(trace: Trace) -> str | None:
    """The selected agent: the one last chosen, else the selected event's agent."""
    event_id = selected_event(trace)
    chosen = st.session_state.get("_selected_agent")
    if chosen is not None and chosen[0] == trace_key(trace) and chosen[1] in analyze(trace).agent_stats:
        if event_id is None or analyze(trace).actor[event_id] == chosen[1]:
            return chosen[1]
    return analyze(trace).actor[event_id] if event_id is not None else None


def select_agent(trace: Trace, agent: str | None) -> None:
    """Select an agent (clears the selected event, so the inspector shows the agent)."""
    st.session_state["_selected_agent"] = (trace_key(trace), agent) if agent else None
    if "event" in st.query_params:
        del st.query_params["event"]


def view_state(trace: Trace, name: str, default: Any) -> Any:
    """A per-trace view setting kept for the session (expanded tree nodes, replay time...)."""
    return st.session_state.get(f"_view:{trace_key(trace)}:{name}", default)


def set_view_state(trace: Trace, name: str, value: Any) -> None:
    """Change a per-trace view setting."""
    st.session_state[f"_view:{trace_key(trace)}:{name}"] = value
