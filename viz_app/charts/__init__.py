"""The figures of a trace: spawn tree, message timeline and communication graph; and the
agreement history of the team's producers.

Pure builders over an `Analysis`, free of Streamlit, so the app and the offline report draw the
same pictures. Every string that came from the trace is made safe for where it goes: escaped for
Plotly (whose labels understand a little HTML: `viz_app.text.plotly_text`), kept as text for
pyvis, which draws labels on a canvas and shows titles as text (`viz_app.text.canvas_text`; it
writes both into its page as escaped JSON), and truncated where a label has to stay short.

Large traces stay fast and readable: when more than `TREE_BUDGET` nodes would stand side by
side, subtrees collapse into one node with a count (expanded on demand), and above
`WEBGL_EVENTS` events the timeline draws with WebGL (`Scattergl`).
The per-event work is done once per figure with plain lists, so a builder can be cached.

Callers import from this face (lazy, `viz_app.face`); its rooms are `_style` (budgets, colours,
symbols, the legend's margin), `_tree`, `_timeline`, `_graph` (pyvis and the hardening of its
HTML) and `_agreement`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from viz_app.face import lazy

if TYPE_CHECKING:  # the face: what callers import from viz_app.charts, each from its module
    from viz_app.charts._style import (TREE_BUDGET, TREE_WIDTH_PX, WEBGL_EVENTS, LABELLED_NODES,
                                       SizeBy, SELECTED, EventStyle, EVENT_STYLES, ROLE_COLOURS,
                                       LINK_STYLES, BIG_TIMELINE_HIDDEN_LINKS, role_colour,
                                       CHAR_PX, LEGEND_ROW_PX, legend_margin)
    from viz_app.charts._tree import (TreeNode, MORE, visible_tree, tree_layout, size_weight,
                                      tree_figure, LABEL_CHAR_PX, label_places,
                                      label_half_px, wrapped_name)
    from viz_app.charts._timeline import (timeline_figure, lane_label_margin, timeline_highlight,
                                          timeline_point, TIMELINE_RING_SHAPE, RING_PX)
    from viz_app.charts._graph import (GRAPH_GROUP_ABOVE, GRAPH_BUDGET, communication_html,
                                       harden_html)
    from viz_app.charts._agreement import PRODUCER_COLOURS, agreement_history_figure

__getattr__, __dir__ = lazy(__name__, __file__)
