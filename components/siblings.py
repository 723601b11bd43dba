"""The siblings of a group side by side, as the group page shows them: where they part, and a
card per sibling with its steps from there, the parting step marked ▶ and the member being
labelled ▸, in the order of the members' table above them (`components.members`).

The cards are one block of HTML (`st.html`, sanitized by Streamlit, no script), not a Streamlit
element per card: sixteen siblings as markdown, text and containers in columns were some
ninety elements, each drawn by the browser on its own; as one block the browser lays the page
out once. Every piece of trace text goes through `viz_app.text.html_text`, so no tag opens and
no attribute ends; the style sheet is a constant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from components.members import CSS as TABLE_CSS
from viz_app.text import html_text
from viz_app.training import GroupView, RolloutRow

STYLE = "<style>" + TABLE_CSS + """
.orchviz-group { font-size: 0.875rem; line-height: 1.45; }
.orchviz-group .og-rule { border-color: color-mix(in srgb, currentColor 16%, transparent); }
.orchviz-group .og-caption { font-size: 0.875rem; opacity: 0.7; margin: 0.5rem 0 0.9rem; }
.orchviz-group .og-grid { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr));
  gap: 0.9rem 0.75rem; }
.orchviz-group .og-card { content-visibility: auto; contain-intrinsic-size: auto 300px; }
.orchviz-group .og-card h5 { font-size: 0.875rem; font-weight: 400; margin: 0 0 0.35rem;
  padding: 0; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.orchviz-group .og-steps { height: 260px; overflow-y: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; border: 1px solid color-mix(in srgb, currentColor 16%, transparent);
  border-radius: 0.5rem; padding: 0.5rem 0.75rem; }
.orchviz-group .og-card.og-at .og-steps { border-color: color-mix(in srgb, currentColor 45%,
  transparent); }
.orchviz-group .og-steps, .orchviz-group .og-steps p { font-size: 0.9rem; }
.orchviz-group .og-steps p { margin: 0 0 0.8rem; }
.orchviz-group .og-head { opacity: 0.75; }
.orchviz-group .og-parts .og-head { opacity: 1; font-weight: 600; }
</style>"""
"""The block's own style sheet: colours from the text's (`currentColor`), so it reads in the
light and the dark theme alike; cards off screen are not laid out until scrolled to
(`content-visibility`)."""


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _caption(view: GroupView) -> str:
    found = view.parting
    if found is None:
        return ('<p class="og-caption">The siblings are alike throughout: each card shows its '
                "first steps.</p>")
    how = {"decision": "another decision", "content": "the same step, other words",
           "length": "one ended, another went on"}[found.by]
    alike = ("they differ from their first step" if found.shared == 0 else
             "1 step before it is alike" if found.shared == 1 else
             f"{found.shared} steps before it are alike")
    return (f'<p class="og-caption">They part at step {found.position + 1} of their runs '
            f"({how}); {alike}. The parting step is marked ▶.</p>")


def _card(i: int, row: RolloutRow, view: GroupView, judged: Mapping[str, float], at: int) -> str:
    sibling = view.siblings[i]
    mark = '<b title="the member being labelled">▸</b> ' if i == at else ""
    steps = []
    for step in sibling.steps:
        head = f"{'▶ ' if step.parts else ''}[{html_text(step.type)} · {html_text(step.agent)}]"
        text = f"\n{html_text(step.text)}" if step.text else ""
        steps.append(f'<p{" class=og-parts" if step.parts else ""}>'
                     f'<span class="og-head">{head}</span>{text}</p>')
    return (f'<section class="og-card{" og-at" if i == at else ""}" id="sibling-{i + 1}">'
            f"<h5>{mark}<b>#{i + 1}</b> · trainer <b>{_number(row.trainer_reward, 3)}</b> · "
            f"reviewers <b>{_number(judged.get(row.trace_id), 2)}</b></h5>"
            f'<div class="og-steps">{"".join(steps) or "(no step after the shared ones)"}</div>'
            "</section>")


def siblings_html(view: GroupView, rows: Sequence[RolloutRow], *, judged: Mapping[str, float],
                  at: int, order: Sequence[int] | None = None, table: str = "") -> str:
    """The block: the members' table as first drawn (`table`, `components.members.table_html`),
    where they part, and a card per sibling. `rows` are the members' library rows in the order
    of `view.siblings`, `judged` the reviewers' reward by trace id, `at` the member being
    labelled (0-based), `order` the cards' order (the table's; default: as sampled)."""
    shown = range(len(rows)) if order is None else order
    cards = "".join(_card(i, rows[i], view, judged, at) for i in shown)
    return (f'{STYLE}{table}<div class="orchviz-group">{_caption(view)}'
            f'<div class="og-grid">{cards}</div></div>')


def siblings(view: GroupView, rows: Sequence[RolloutRow], *, judged: Mapping[str, float],
             at: int, order: Sequence[int] | None = None, table: str = "") -> None:
    """Draw the block `siblings_html` makes."""
    st.html(siblings_html(view, rows, judged=judged, at=at, order=order, table=table))
