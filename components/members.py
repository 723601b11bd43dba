"""The members' table of a group page: one row per sibling (its trace, trainer reward, the
reviewers' reward, its length, the reader's own answers and what it does where they part),
sortable by any column, and the prompt they were sampled for, folded above it.

A reviewer sorts by a click on a column's heading (again: the other way), or by Tab to the
heading and Enter; a click on a member's number (or Tab and Enter) makes it the member being
labelled. The table is an `st.components.v2` component under a stable key, so a sort re-orders
the rows the browser already has, at once, from the orders this module worked out (`ordered`,
the one sort rule; the browser only applies them), and the page's next run re-orders the cards
and the keyboard's next and previous to match, from the group's cached view: nothing is read
again. The sort is the page's `?sort=` (`Sort`), so a deep link keeps it.

The browser side is `static/members_table.js`, a constant file: it builds every cell with
`textContent` and `title`, so no trace text is ever HTML there. A component's script comes
last on a page opened in a new tab (Streamlit loads its code when first shown), so the same
table is drawn first as plain HTML with the cards (`table_html`, every piece of trace text
through `viz_app.text.html_text`), and hidden by the style sheet while the live one is on the
page (its script marks the document, and unmarks it when the table goes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import NamedTuple
from urllib.parse import quote

import streamlit as st

from viz_app.text import html_text
from viz_app.training import GroupView, RolloutRow

SCRIPT = Path(__file__).resolve().parent / "static" / "members_table.js"


class Column(NamedTuple):
    """A column of the table."""

    key: str
    """Its name in the URL (`?sort=trainer:desc`)."""
    name: str
    width: str
    tip: str
    numeric: bool = False
    """Right-aligned, and sorted highest first at its first click."""
    spoken: str = ""
    """Its name in a sentence ("sorted by trainer reward"), where the heading is short."""


COLUMNS = (
    Column("n", "#", "2.75rem", "Sort as sampled. A click on a member's number labels it"),
    Column("trace", "trace id", "7.5rem", "Sort by trace id. A click on an id opens its trace"),
    Column("trainer", "trainer", "5.25rem", "Sort by the trainer's reward", numeric=True,
           spoken="trainer reward"),
    Column("reviewers", "reviewers", "6.5rem",
           "Sort by the reviewers' mean reward, -1 to 1 (— not reviewed)", numeric=True,
           spoken="reviewers' reward"),
    Column("steps", "steps", "4.25rem", "Sort by how many steps each ran", numeric=True),
    Column("answer", "your answer", "7rem", "Sort by your answers about the whole run"),
    Column("where", "where they part", "auto", "Sort by what each does where they part: "
           "the ones that do the same side by side"),
)
BY_KEY = {c.key: c for c in COLUMNS}
HINT = ("A click on a heading sorts the members by it (again: the other way); the cards and "
        "N / P follow, and labelling starts at the top. A click on a member's number labels "
        "it. Tab reaches both.")


class Sort(NamedTuple):
    """The table's order: a column, and which way."""

    by: str = "n"
    descending: bool = False

    @classmethod
    def parse(cls, text: str | None) -> Sort:
        """From the URL's `?sort=` (`trainer:desc`, `steps`, `where:asc`); anything else is the
        order the trainer sampled them in."""
        by, _, way = (text or "").partition(":")
        if by not in BY_KEY or way not in ("", "asc", "desc"):
            return cls()
        return cls(by, way == "desc" if way else BY_KEY[by].numeric)

    def __str__(self) -> str:
        return f"{self.by}:{'desc' if self.descending else 'asc'}"

    @property
    def sampled(self) -> bool:
        """Whether it is the order they were sampled in (no `?sort=` needed)."""
        return self == Sort()

    def said(self) -> str:
        """The order in words ("trainer reward, highest first")."""
        column = BY_KEY[self.by]
        name = column.spoken or column.name
        if self.by == "n":
            return "as sampled" if not self.descending else "as sampled, last first"
        if column.numeric:
            return f"{name}, {'highest' if self.descending else 'lowest'} first"
        return f"{name}, {'Z to A' if self.descending else 'A to Z'}"


class Member(NamedTuple):
    """One member of the group as the table shows and sorts it."""

    index: int
    """Its place in the group as sampled (0-based; shown as #index+1)."""
    trace_id: str
    trainer: float | None
    reviewers: float | None
    steps: int
    answer: str
    where: str

    def value(self, by: str) -> float | str | None:
        """What the column `by` sorts it by (None: nothing to sort by, kept last)."""
        found = {"n": self.index, "trace": self.trace_id, "trainer": self.trainer,
                 "reviewers": self.reviewers, "steps": self.steps,
                 "answer": self.answer or None, "where": self.where}[by]
        return found.casefold() if isinstance(found, str) else found


def member_rows(view: GroupView, rows: Sequence[RolloutRow], *, judged: Mapping[str, float],
            answers: Mapping[str, str]) -> list[Member]:
    """The members in the order of `view.siblings` (`rows` their library rows, in that order)."""
    return [Member(i, row.trace_id, row.trainer_reward, judged.get(row.trace_id),
                   sibling.length, answers.get(row.trace_id, ""), sibling.where)
            for i, (row, sibling) in enumerate(zip(rows, view.siblings))]


def ordered(found: Sequence[Member], sort: Sort) -> list[int]:
    """The members' indexes in the table's order: by the column's value, ties as sampled, and
    a member with nothing to sort by last whichever way (an unreviewed rollout never heads
    'reviewers, lowest first')."""
    known = [m for m in found if m.value(sort.by) is not None]
    known.sort(key=lambda m: m.value(sort.by), reverse=sort.descending)  # stable both ways
    return [m.index for m in known] + [m.index for m in found if m.value(sort.by) is None]


def short_id(trace_id: str, limit: int = 14) -> str:
    """A trace id's end: siblings' ids share their start and differ at their end
    (`…5f09d18b/1/7`); the whole id is the cell's tooltip and its link."""
    return trace_id if len(trace_id) <= limit else f"…{trace_id[-(limit - 1):]}"


def _number(value: float | None, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table_data(found: Sequence[Member], *, prompt: str | None, sort: Sort, at: int) -> dict:
    """What the browser is handed: the prompt, the columns, each member's cells (shown text,
    and the whole text where the cell cuts it) and, for every column both ways, the order the
    rows take (so a click re-orders them at once, by this module's rule)."""
    rows = [{"n": m.index + 1, "link": "trace?trace=" + quote(m.trace_id, safe=""),
             "cells": [str(m.index + 1), short_id(m.trace_id), _number(m.trainer, 3),
                       _number(m.reviewers, 2), str(m.steps), m.answer, m.where],
             "titles": ["", m.trace_id, "", "", "", m.answer, m.where]} for m in found]
    orders = {c.key: {way: ordered(found, Sort(c.key, way == "desc")) for way in ("asc", "desc")}
              for c in COLUMNS}
    return {"prompt": prompt or "", "columns": [c._asdict() for c in COLUMNS], "rows": rows,
            "hint": HINT,
            "orders": orders, "sort": {"by": sort.by, "desc": sort.descending}, "at": at}


def table_html(data: dict) -> str:
    """The table `table_data` describes as plain HTML, as the live one first looks: drawn
    with the cards' block, and hidden once the live table is on the page (`CSS`)."""
    columns, rows, sort = data["columns"], data["rows"], data["sort"]
    cols = "".join(f'<col style="width: {c["width"]}">' if c["width"] != "auto" else "<col>"
                   for c in columns)
    heads = []
    for c in columns:
        mine = c["key"] == sort["by"]
        arrow = (" ▾" if sort["desc"] else " ▴") if mine else ""
        aria = f' aria-sort="{"descending" if sort["desc"] else "ascending"}"' if mine else ""
        heads.append(f'<th data-key="{c["key"]}"{" class=og-num" if c["numeric"] else ""}{aria}>'
                     f'<button type="button" title="{html_text(c["tip"])}">'
                     f'{html_text(c["name"])}{arrow}</button></th>')
    body = []
    for i in data["orders"][sort["by"]]["desc" if sort["desc"] else "asc"]:
        row = rows[i]
        cells = []
        for c, (column, cell, title) in enumerate(zip(columns, row["cells"], row["titles"])):
            tip = f' title="{html_text(title)}"' if title else ""
            if c == 0:
                cells.append(f'<td class="og-pick"><button type="button" title="Label member '
                             f'#{row["n"]}">{html_text(cell)}</button></td>')
            elif column["key"] == "trace":
                cells.append(f'<td{tip}><a href="{html_text(row["link"])}">{html_text(cell)}'
                             "</a></td>")
            else:
                cells.append(f'<td{" class=og-num" if column["numeric"] else ""}{tip}>'
                             f"{html_text(cell)}</td>")
        body.append(f'<tr data-member="{i}"{" class=og-at" if i == data["at"] else ""}>'
                    f'{"".join(cells)}</tr>')
    prompt = (f'<details><summary>The prompt</summary><div class="om-prompt">'
              f'{html_text(data["prompt"])}</div></details>' if data["prompt"] else "")
    return (f'<div class="orchviz-members og-static">{prompt}<table class="og-table">'
            f'<colgroup>{cols}</colgroup><thead><tr>{"".join(heads)}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>'
            f'<p class="om-hint">{html_text(data["hint"])}</p></div>')


@cache
def _script() -> str:
    return SCRIPT.read_text(encoding="utf-8")


CSS = """
.orchviz-members { font-size: 0.875rem; line-height: 1.45; }
.orchviz-members details { border: 1px solid color-mix(in srgb, currentColor 16%, transparent);
  border-radius: 0.5rem; padding: 0.45rem 0.9rem; margin-bottom: 0.9rem; }
.orchviz-members summary { cursor: pointer; }
.orchviz-members details[open] summary { margin-bottom: 0.4rem; }
.orchviz-members .om-prompt { max-height: 180px; overflow-y: auto; white-space: pre-wrap;
  overflow-wrap: anywhere; font-size: 0.9rem; }
.orchviz-members .og-table { width: 100%; border-collapse: collapse; table-layout: fixed; }
.orchviz-members .og-table th { font-weight: 600; text-align: left; padding: 0; }
.orchviz-members .og-table th button { all: unset; box-sizing: border-box; width: 100%;
  padding: 0.2rem 0.45rem; cursor: pointer; opacity: 0.75; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; border-radius: 0.25rem; }
.orchviz-members .og-table th[aria-sort] button { opacity: 1; }
.orchviz-members .og-table button:focus-visible { outline: 2px solid
  color-mix(in srgb, currentColor 55%, transparent); outline-offset: -2px; }
.orchviz-members .og-table th button:hover { opacity: 1; }
.orchviz-members .og-table th, .orchviz-members .og-table td {
  border-bottom: 1px solid color-mix(in srgb, currentColor 12%, transparent); }
.orchviz-members .og-table td { padding: 0.2rem 0.45rem; white-space: nowrap; overflow: hidden;
  text-overflow: ellipsis; }
.orchviz-members .og-table .og-num, .orchviz-members .og-table .og-num button {
  text-align: right; font-variant-numeric: tabular-nums; }
.orchviz-members .og-table td.og-pick { padding: 0; }
.orchviz-members .og-table td.og-pick button { all: unset; box-sizing: border-box; width: 100%;
  padding: 0.2rem 0.45rem; cursor: pointer; text-decoration: underline dotted; }
.orchviz-members .og-table tr.og-at td { background: color-mix(in srgb, currentColor 6%,
  transparent); }
.orchviz-members .og-table a { color: inherit; }
.orchviz-members .om-hint { opacity: 0.6; margin: 0.3rem 0 0; font-size: 0.8rem; }
html[data-orchviz-members="live"] .orchviz-members.og-static { display: none; }
"""
"""The table's style sheet (the live one's and the first drawn one's): colours from the text's
(`currentColor`), so it reads in the light and the dark theme alike."""

_mount = st.components.v2.component("orchviz.members_table", js=_script(), css=CSS,
                                    isolate_styles=False)


def members_table(data: dict, *, key: str, on_sort: Callable[[Sort], None],
                  on_pick: Callable[[int], None]) -> None:
    """Draw the table `data` (`table_data`) describes under `key` (kept mounted from run to
    run). A heading clicked calls `on_sort` with the new order, a member's number `on_pick`
    with its index, in the widget's callback, before the page's next run draws anything."""

    def sorted_() -> None:
        said = st.session_state.get(key, {}).get("sort")
        if isinstance(said, str):
            on_sort(Sort.parse(said))

    def picked() -> None:
        said = st.session_state.get(key, {}).get("pick")
        if isinstance(said, int) and 0 <= said < len(data["rows"]):
            on_pick(said)

    _mount(key=key, data=data, height="content", on_sort_change=sorted_,
           on_pick_change=picked)
