"""A Plotly chart that stays mounted from run to run, and from trace to trace.

`st.plotly_chart` hashes a figure into its element's id, so another trace's figure is another
element: the browser mounts it afresh (new WebGL contexts, shaders compiled again) and draws it
twice (once as sent, once more after a JSON round trip that applies Streamlit's theme). For a
20,000-event timeline that was most of a Shift+N (docs/pools.md, "Shift+N onto a 20,000-event
trace again"). This chart, which draws the trace views' tree and timeline (`components.tree`,
`components.timeline`), is an `st.components.v2` component under a stable key: the browser keeps
its graph div and hands each new figure to `Plotly.react` on it, drawn once; a figure it already
has (the same revision) is neither parsed nor drawn again, and the ring around the
selected event is a layout shape, moved without redrawing the points.

The browser side is `static/live_chart.js`, a constant file. plotly.js comes from the installed
`plotly` package (`package_data/plotly.min.js`), served by the app itself: no network at runtime.
Hover texts are escaped by the figure builders (`viz_app.text`); no trace text is turned into
HTML here.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import plotly
import plotly.graph_objects as go
import plotly.io as pio
import streamlit as st
import streamlit.components.v1 as components_v1

SCRIPT = Path(__file__).resolve().parent / "static" / "live_chart.js"
PLOTLY_DIR = Path(plotly.__file__).resolve().parent / "package_data"

CONFIG = {"displaylogo": False, "scrollZoom": True, "responsive": True,
          "modeBarButtonsToRemove": ["select2d", "lasso2d"]}

# Streamlit's light theme for charts, which `st.plotly_chart` applies in the browser: the same
# fonts and greys, set once on the server (the figures give their own colours for everything
# they draw). Tick labels may overflow (`ticklabeloverflow`): the margins grow to fit them
# (`automargin`), and Plotly's default for a numeric axis ("hide past div") measures every
# label again after placing each one, each measure a layout of the whole page while Streamlit
# is drawing it (a third of a demo trace's timeline drawn on Shift+N).
FONT = '"Source Sans", sans-serif'
TEMPLATE = {"layout": {
    "font": {"family": FONT, "size": 12, "color": "#31333F"},
    "paper_bgcolor": "#ffffff",
    "colorway": ["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700",
                 "#ffd16a", "#6d3fc0", "#d5dae5"],
    "hoverlabel": {"bgcolor": "#ffffff", "bordercolor": "rgba(49, 51, 63, 0.2)",
                   "font": {"family": FONT, "size": 12, "color": "#31333F"}},
    "xaxis": {"tickfont": {"color": "#808495"}, "title": {"font": {"color": "#808495",
                                                                   "size": 14}},
              "linecolor": "#e6eaf1", "tickcolor": "#e6eaf1", "automargin": True,
              "ticklabeloverflow": "allow"},
    "yaxis": {"tickfont": {"color": "#31333F"}, "automargin": True,
              "ticklabeloverflow": "allow"},
    "legend": {"font": {"color": "#31333F"}},
}}


@cache
def _script() -> str:
    return SCRIPT.read_text(encoding="utf-8")


def _plotly_path() -> str:
    """Where the app serves plotly.min.js, relative to the page: the installed package's folder,
    declared as a (v1) component's static folder, which Streamlit serves as `component/<name>/`.
    Declared on every run, as a runtime (each AppTest its own) keeps its own registry."""
    served = components_v1.declare_component("plotlyjs", path=str(PLOTLY_DIR))
    return f"component/{served.name}/plotly.min.js"


_mount = st.components.v2.component("orchviz.live_chart", js=_script(), isolate_styles=False)

_ENCODED: OrderedDict[int, tuple[go.Figure, bytes, str]] = OrderedDict()
_KEEP = 16  # figures: a few sessions' own and the ones read ahead for them (a figure kept
#              keeps its id from being reused)
_LOCK = threading.Lock()  # sessions run on threads of their own


def encoded(figure: go.Figure) -> tuple[bytes, str]:
    """The figure as the browser reads it (JSON, with the theme above) and its revision, made
    once per figure object: the pages' figures are cached and shared, and never changed."""
    with _LOCK:
        kept = _ENCODED.get(id(figure))
        if kept is not None and kept[0] is figure:
            _ENCODED.move_to_end(id(figure))
            return kept[1], kept[2]
    spec = figure.to_dict()  # a copy: the shared figure keeps its own template
    spec["layout"]["template"] = TEMPLATE
    raw = pio.json.to_json_plotly(spec).encode()
    revision = hashlib.blake2b(raw, digest_size=12).hexdigest()
    with _LOCK:
        _ENCODED[id(figure)] = (figure, raw, revision)
        while len(_ENCODED) > _KEEP:
            _ENCODED.popitem(last=False)
    return raw, revision


def live_chart(figure: go.Figure, *, key: str, decode: Callable[[dict], Any],
               on_choose: Callable[[Any], None] | None, ring: dict | None = None,
               ring_style: dict | None = None, tag: str = "") -> Any:
    """Draw `figure` in the chart under `key` (kept mounted while the key is drawn); return the
    choice a click made in this run.

    `decode` turns a clicked point (`customdata`, `curve_number`, `point_index`, `x`, `y`) into
    a choice, or None to ignore it; the choice reaches `on_choose` in the widget's callback,
    before the page's next run draws anything. `ring` (`{"at": [x, y], ...}`, any JSON) rings a
    point with `ring_style` (a Plotly layout shape of pixel size, anchored at the point); a
    click rings its point at once in the browser, and the ring stays there until a run sends
    a `ring` different from the last one. The chart's div carries `key` (`data-chart`) and, once
    the figure is drawn, `tag` (`data-tag`): for tests and benchmarks to tell which chart and
    which figure is on screen."""
    stash = f"_chosen:{key}"
    raw, revision = encoded(figure)
    head = {"rev": revision, "plotly": _plotly_path(), "config": CONFIG, "tag": tag, "chart": key,
            "height": figure.layout.height, "ring": ring, "ring_style": ring_style}

    def clicked() -> None:
        point = st.session_state.get(key, {}).get("click")
        choice = decode(point) if isinstance(point, dict) else None
        if choice is not None:
            st.session_state[stash] = choice
            if on_choose is not None:
                on_choose(choice)

    _mount(key=key, data=json.dumps(head).encode() + b"\n" + raw, height="content",
           on_click_change=clicked)
    return st.session_state.pop(stash, None)


def load_ahead(key: str) -> None:
    """Have the browser fetch and compile plotly.js now, ahead of the first live chart (a
    mount that draws nothing)."""
    _mount(key=key, data=json.dumps({"plotly": _plotly_path()}).encode())
