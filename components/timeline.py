"""The message timeline as a Plotly figure whose events can be clicked, drawn in a chart that
stays mounted from trace to trace (`components.live_chart`): Shift+N hands the next trace's
figure to the same graph."""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
import streamlit as st

from components.live_chart import encoded, live_chart
from viz_app import charts
from viz_app.analysis import Analysis


def message_timeline(figure: go.Figure, analysis: Analysis, *, key: str = "timeline",
                     selected: str | None = None, on_choose: Callable[[str], None] | None = None,
                     tag: str = "") -> str | None:
    """Draw the timeline (built by `viz_app.charts.timeline_figure`, without a selection) with
    the event `selected` ringed; return the id of the event clicked, if any.

    A click rings its event in the browser at once, and the runs after it send the chart the
    same data as before (the browser then gets a reference, not the figure again: 1.2 MB for
    20,000 events). An event selected elsewhere moves the ring. `tag` names the figure on the
    chart's div once drawn (`data-tag`)."""
    order = analysis.order
    memo = f"_ring:{key}"

    def decode(point: dict) -> str | None:
        position = point.get("customdata")
        if isinstance(position, list):
            position = position[0] if position else None
        if isinstance(position, (int, float)) and 0 <= int(position) < len(order):
            event_id = order[int(position)].id
            revision, ringed, generation, _ = st.session_state.get(memo, (None, None, 0, None))
            st.session_state[memo] = (revision, ringed, generation, event_id)
            return event_id
        return None

    revision = encoded(figure)[1]
    shown, ringed, generation, clicked = st.session_state.get(memo, (None, None, 0, None))
    if shown != revision:  # another figure: drawn with the selection ringed, no click kept
        ringed, generation, clicked = selected, generation + 1, None
    elif selected != clicked and (selected != ringed or clicked is not None):
        ringed, generation, clicked = selected, generation + 1, None  # selected elsewhere
    st.session_state[memo] = (revision, ringed, generation, clicked)
    at = charts.timeline_point(analysis, ringed)
    return live_chart(figure, key=key, decode=decode, on_choose=on_choose,
                      ring={"at": list(at) if at else None, "generation": generation},
                      ring_style=charts.TIMELINE_RING_SHAPE, tag=tag)
