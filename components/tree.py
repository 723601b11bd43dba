"""The spawn and delegation tree as a clickable Plotly figure, drawn in a chart that stays
mounted from trace to trace (`components.live_chart`)."""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
from pydantic import BaseModel, Field

from components.live_chart import live_chart


class TreeChoice(BaseModel):
    """A click on a tree node."""

    agent: str = Field(description="The agent clicked (for a group of siblings: their parent).")
    expand: bool = Field(description="True when the node was a collapsed subtree or a group "
                         "of hidden siblings: the reviewer asked to see what it hides.")


def _decode(point: dict) -> TreeChoice | None:
    data = point.get("customdata")
    if not isinstance(data, list) or len(data) != 2:
        return None
    kind, agent = data
    return TreeChoice(agent=str(agent), expand=kind in ("collapsed", "more"))


def spawn_tree(figure: go.Figure, *, key: str = "tree",
               on_choose: Callable[[TreeChoice], None] | None = None,
               tag: str = "") -> TreeChoice | None:
    """Draw the tree (built by `viz_app.charts.tree_figure`); return the node clicked, if any.
    `tag` names the figure on the chart's div once drawn (`data-tag`)."""
    return live_chart(figure, key=key, decode=_decode, on_choose=on_choose, tag=tag)
