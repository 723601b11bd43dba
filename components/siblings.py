"""The siblings of a group side by side, as the group page shows them: a table of the members
(each one's trainer reward, the reviewers' reward, the reader's own answers and what it does
where they part) and a card per sibling with its steps from there, the parting step marked ▶
and the member being labelled ▸.

All of it is one block of HTML (`st.html`, sanitized by Streamlit, no script), not a Streamlit
element per cell and per card: sixteen siblings as markdown, text and containers in columns
were some ninety elements, each drawn by the browser on its own, and the table a data grid
whose code the browser compiles and whose canvas it paints; as one block the browser lays the
page out once. Every piece of trace text goes through `viz_app.text.html_text`, so no tag
opens and no attribute ends; the style sheet is a constant.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import quote

import streamlit as st

from viz_app.text import html_text
from viz_app.training import GroupView, RolloutRow

STYLE = """<style>
.orchviz-group { font-size: 0.875rem; line-height: 1.45; }
.orchviz-group .og-rule { border-color: color-mix(in srgb, currentColor 16%, transparent); }
.orchviz-group details { border: 1px solid color-mix(in srgb, currentColor 16%, transparent);
  border-radius: 0.5rem; padding: 0.45rem 0.9rem; margin-bottom: 0.9rem; }
.orchviz-group summary { cursor: pointer; }
.orchviz-group details[open] summary { margin-bottom: 0.4rem; }
.orchviz-group .og-table { width: 100%; border-collapse: collapse; table-layout: fixed; }
.orchviz-group .og-table th { font-weight: 600; text-align: left; opacity: 0.75; }
.orchviz-group .og-table th, .orchviz-group .og-table td { padding: 0.2rem 0.45rem;
  border-bottom: 1px solid color-mix(in srgb, currentColor 12%, transparent);
  white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.orchviz-group .og-table .og-num { text-align: right; font-variant-numeric: tabular-nums; }
.orchviz-group .og-table tr.og-at td { background: color-mix(in srgb, currentColor 6%,
  transparent); }
.orchviz-group .og-table a { color: inherit; }
.orchviz-group .og-caption { font-size: 0.875rem; opacity: 0.7; margin: 0.5rem 0 0.9rem; }
.orchviz-group .og-grid { display: grid; grid-template-columns: repeat(3, minmax(0, 1fr));
  gap: 0.9rem 0.75rem; }
.orchviz-group .og-card { content-visibility: auto; contain-intrinsic-size: auto 300px; }
.orchviz-group .og-card h5 { font-size: 0.95rem; font-weight: 400; margin: 0 0 0.35rem;
  padding: 0; }
.orchviz-group .og-steps { height: 260px; overflow-y: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; border: 1px solid color-mix(in srgb, currentColor 16%, transparent);
  border-radius: 0.5rem; padding: 0.5rem 0.75rem; }
.orchviz-group .og-card.og-at .og-steps { border-color: color-mix(in srgb, currentColor 45%,
  transparent); }
.orchviz-group .og-prompt { max-height: 180px; overflow-y: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; font-size: 0.9rem; }
.orchviz-group .og-steps, .orchviz-group .og-steps p { font-size: 0.9rem; }
.orchviz-group .og-steps p { margin: 0 0 0.8rem; }
.orchviz-group .og-head { opacity: 0.75; }
.orchviz-group .og-parts .og-head { opacity: 1; font-weight: 600; }
</style>"""
"""The block's own style sheet: colours from the text's (`currentColor`), so it reads in the
light and the dark theme alike; cards off screen are not laid out until scrolled to
(`content-visibility`)."""

ROW_HEADERS = (("#", "2.5rem", ""), ("trace id", "28%", ""), ("trainer reward", "6.5rem", ""),
               ("reviewers", "5.5rem", "The reviewers' mean reward, -1 to 1 (— not reviewed)"),
               ("your answer", "16%", "Your answers about the whole run"),
               ("where they part", "auto", "What each does where they part"))
"""The table's columns: name, width and the tooltip of its heading."""
NUMBERS = ("trainer reward", "reviewers")


def _short(trace_id: str, limit: int = 20) -> str:
    """A trace id cut in its middle: siblings' ids differ at their end (`…@1f2e/3/7`)."""
    if len(trace_id) <= limit:
        return trace_id
    return f"{trace_id[:limit // 3]}…{trace_id[-(limit - limit // 3 - 1):]}"


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _table(view: GroupView, rows: Sequence[RolloutRow], judged: Mapping[str, float],
           answers: Mapping[str, str], at: int) -> str:
    heads = "".join(f'<th style="width: {width}" title="{tip}"'
                    f'{" class=og-num" if name in NUMBERS else ""}>{name}</th>'
                    for name, width, tip in ROW_HEADERS)
    body = []
    for i, (row, sibling) in enumerate(zip(rows, view.siblings)):
        link = "trace?trace=" + quote(row.trace_id, safe="")
        body.append(
            f'<tr{" class=og-at" if i == at else ""}><td>{i + 1}</td>'
            f'<td title="{html_text(row.trace_id)}"><a href="{html_text(link)}">'
            f"{html_text(_short(row.trace_id))}</a></td>"
            f'<td class="og-num">{_number(row.trainer_reward, 3)}</td>'
            f'<td class="og-num">{_number(judged.get(row.trace_id), 2)}</td>'
            f'<td title="{html_text(answers.get(row.trace_id, ""))}">'
            f'{html_text(answers.get(row.trace_id, ""))}</td>'
            f'<td title="{html_text(sibling.where)}">{html_text(sibling.where)}</td></tr>')
    return (f'<table class="og-table"><thead><tr>{heads}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _caption(view: GroupView) -> str:
    found = view.parting
    if found is None:
        return ('<p class="og-caption">The siblings are alike throughout: each card shows its '
                "first steps.</p>")
    how = {"decision": "another decision", "content": "the same step, other words",
           "length": "one ended, another went on"}[found.by]
    alike = f"{found.shared} steps before it are alike" if found.shared != 1 else \
        "1 step before it is alike"
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
                  answers: Mapping[str, str], at: int) -> str:
    """The block: the prompt (folded), the members' table, where they part, and a card per
    sibling. `rows` are the members' library rows in the order of `view.siblings`, `judged`
    the reviewers' reward by trace id, `answers` the reader's own answers by trace id (as
    text), `at` the member being labelled (0-based)."""
    prompt = (f"<details><summary>The prompt</summary>"
              f'<div class="og-prompt">{html_text(view.prompt)}</div></details>'
              if view.prompt else "")
    cards = "".join(_card(i, row, view, judged, at) for i, row in enumerate(rows))
    return (f'{STYLE}<div class="orchviz-group">{prompt}'
            f"{_table(view, rows, judged, answers, at)}{_caption(view)}"
            f'<div class="og-grid">{cards}</div></div>')


def siblings(view: GroupView, rows: Sequence[RolloutRow], *, judged: Mapping[str, float],
             answers: Mapping[str, str], at: int) -> None:
    """Draw the block `siblings_html` makes."""
    st.html(siblings_html(view, rows, judged=judged, answers=answers, at=at))
