"""The message timeline as a Plotly figure whose events can be clicked."""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go

from components import plotly_choice
from viz_app.analysis import Analysis


def message_timeline(figure: go.Figure, analysis: Analysis, *, key: str = "timeline",
                     on_choose: Callable[[str], None] | None = None) -> str | None:
    """Draw the timeline (built by `viz_app.charts.timeline_figure`); return the id of the event
    clicked, if any."""
    order = analysis.order

    def decode(point: dict) -> str | None:
        position = point.get("customdata")
        if isinstance(position, list):
            position = position[0] if position else None
        if isinstance(position, (int, float)) and 0 <= int(position) < len(order):
            return order[int(position)].id
        return None

    return plotly_choice(figure, key=key, decode=decode, on_choose=on_choose)
