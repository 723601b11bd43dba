"""The case-study report: one trace, its figures, its interactive spawn tree and timeline, its
labels with their reviewers (an adjudicated answer marked final, its reason beside it), its
bookmarks with their notes in the order of the run, the disputes on it with what was said (both
sides, each reviewer's notes, the comments, the lead's reason, in time order), and its warnings,
as one self-contained file.

HTML (`report_html`): Plotly's JavaScript is inlined, nothing is fetched from any host, and a
Content-Security-Policy lets exactly the page's own scripts run, so even a payload that slipped
through could not execute. Every string that came from a trace or a reviewer is escaped
(`viz_app.text.html_text`); notes are Markdown rendered by `viz_app.text.note_html`
(markdown-it-py in its safe mode: raw HTML stays text, no image, links only to http(s)). A print
stylesheet lays the report out for paper.

Markdown (`report_markdown`): the same content, trace text as `viz_app.text.markdown_literal`
writes it, with the figures as PNG files when they can be rendered here (`figure_pngs`:
Chromium through Playwright), and without them otherwise.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import plotly.graph_objects as go
from pydantic import BaseModel, Field

from viz_app import charts
from viz_app.analysis import Analysis, analyze, figure_rows, task_words
from viz_app.case_study import Step, steps, timeline_marks
from viz_app.export.consensus import ADJUDICATION
from viz_app.labels import (PAIRWISE_QUESTION, STRENGTHS, Bookmark, DisputeThread, LabelRecord,
                            ThreadEntry, correction_text)
from viz_app.model import Trace
from viz_app import text as safe_text
from viz_app.text import html_text, markdown_literal

CHROMIUM = os.environ.get("ORCHVIZ_CHROMIUM", "/usr/bin/chromium")
"""The Chromium that renders PNG figures for the Markdown report (override: ORCHVIZ_CHROMIUM)."""

Format = Literal["html", "md"]

REPORT_FIGURES = ("agents", "events", "depth", "fan-out", "makespan", "parallelism",
                  "critical path", "tokens", "cost", "aggregates", "stops")
"""The figures the report lists (`viz_app.analysis.FIGURES` names)."""


# -- notes ---------------------------------------------------------------------------------------


def note_html(text: str) -> str:
    """A bookmark's note as the HTML report shows it: `viz_app.text.note_html` (markdown-it-py
    in its safe mode: raw HTML as text, no image, links only to http(s)), its headings two
    levels down, under the bookmark's own."""
    return safe_text.note_html(text, headings_below=2)


def note_markdown(text: str) -> str:
    """A bookmark's note as the Markdown report keeps it: `viz_app.text.note_markdown` (raw HTML
    inert, no image, links only to http(s): a `javascript:` or `data:` link becomes its text),
    its headings two levels down, under the bookmark's own."""
    return safe_text.note_markdown(text, headings_below=2)


# -- what the report holds -----------------------------------------------------------------------


class LabelRow(BaseModel):
    """One current label as the report lists it (plain text; escaped where it is written)."""

    target: str = Field(description="'trace', an event id, or 'vs <trace>' for a pair.")
    question: str
    answer: str
    reward: str
    reviewer: str
    created_at: str
    comment: str
    final: bool = Field(False, description="A lead's adjudicated answer: the one that settles "
                        "its target, over the reviewers' beside it.")


def _answer(record: LabelRecord) -> str:
    value = record["value"]
    if record["question"] == PAIRWISE_QUESTION and isinstance(value, dict):
        if value.get("chosen") is None:
            return "about the same"
        strength = STRENGTHS.get(value.get("strength"), "better")
        return f"{value['chosen']} is {strength}"
    if isinstance(value, dict) and "action" in value:
        return correction_text(value, limit=100_000)
    if isinstance(value, list):
        return ", ".join(map(str, value)) or "none"
    if isinstance(value, dict):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def task_meta(trace: Trace) -> tuple[str, str | None]:
    """The task as a report's header names it: its words when the trace holds them, and its id
    beside them (None when the id is all there is)."""
    words = task_words(trace)
    if not words or words == trace.task_id:
        return trace.task_id, None
    return words, trace.task_id


def label_rows(trace: Trace, labels: Iterable[LabelRecord]) -> list[LabelRow]:
    """The current labels on a trace (pairwise judgements it is part of included), by target."""
    rows = []
    for r in labels:
        pair = r.get("pair_trace_id")
        if r["trace_id"] != trace.trace_id and pair != trace.trace_id:
            continue
        if pair:
            target = f"vs {r['trace_id'] if pair == trace.trace_id else pair}"
        else:
            target = r["event_id"] or "trace"
        rows.append(LabelRow(
            target=target, question=r["question"], answer=_answer(r),
            reward="" if r["reward"] is None else f"{r['reward']:+.2f}", reviewer=r["reviewer"],
            created_at=r["created_at"][:19].replace("T", " "), comment=r.get("comment") or "",
            final=r.get("source") == ADJUDICATION))
    order = analyze(trace).position
    return sorted(rows, key=lambda x: (x.target not in order, order.get(x.target, 0), x.target,
                                       x.question, x.reviewer))


def _side(answers: Mapping[str, Any]) -> str:
    """A reviewer's (or the final) answers on a disputed target, as words."""
    return "; ".join(f"{q} = {_answer({'question': q, 'value': v})}" for q, v in answers.items())


def _entry_body(entry) -> str:
    """A thread entry's text as HTML; a comment a lead hid as its hidden line only (a report
    goes beyond the leads)."""
    if entry.hidden is not None:
        return f"<em>{html_text(entry.hidden.line)}</em>"
    return note_html(entry.text)


def _dispute_title(thread: DisputeThread) -> str:
    d = thread.dispute
    return (f"{thread.campaign} · {d.event_id or 'the whole trace'} · disputed: "
            f"{', '.join(d.disputed)} · {'settled' if d.resolved else 'not settled'}")


def _sides(thread: DisputeThread) -> list[tuple[str, str]]:
    """(who, their answers) for each side, then ('final (adjudicated)', ...) when settled."""
    d = thread.dispute
    found = [(who, _side(a)) for who, a in sorted(d.answers.items())]
    return found + ([("final (adjudicated)", _side(d.adjudicated))] if d.adjudicated else [])


def _entry_head(entry: ThreadEntry) -> str:
    return (f"{entry.author} ({entry.role}) · {entry.heading} · "
            f"{entry.created_at[:19].replace('T', ' ')}")


def report_figures(analysis: Analysis, bookmarks: Iterable[Bookmark] = ()) -> dict[str, go.Figure]:
    """The report's two figures: the spawn tree, and the timeline with the bookmarks marked."""
    timeline = charts.timeline_figure(analysis)
    for mark in timeline_marks(analysis, bookmarks):
        timeline.add_trace(mark)
    tree = charts.tree_figure(analysis)
    for fig in (tree, timeline):
        fig.update_layout(clickmode="none", dragmode="zoom" if fig is timeline else "pan")
    return {"tree": tree, "timeline": timeline}


# -- HTML ---------------------------------------------------------------------------------------

_CSS = """
:root { --ink: #212529; --muted: #6c757d; --rule: #dee2e6; --mark: #f03e3e; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
       sans-serif; color: var(--ink); margin: 0; background: #f8f9fa; }
main { max-width: 1280px; margin: 0 auto; padding: 28px 36px 60px; background: white; }
h1 { font-size: 1.7rem; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 1.2rem; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--rule); }
.meta { color: var(--muted); margin: 0 0 8px; overflow-wrap: anywhere; }
.figures { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; }
.figure { border: 1px solid var(--rule); border-radius: 6px; padding: 8px 12px; }
.figure .name { color: var(--muted); font-size: .8rem; }
.figure .value { font-size: 1.35rem; font-weight: 600; }
.figure .note { color: var(--muted); font-size: .75rem; }
.plot { border: 1px solid var(--rule); border-radius: 6px; margin: 8px 0 4px; }
.caption { color: var(--muted); font-size: .85rem; }
table { border-collapse: collapse; width: 100%; font-size: .88rem; }
th, td { text-align: left; vertical-align: top; padding: 5px 8px; border-bottom: 1px solid var(--rule);
         overflow-wrap: break-word; word-break: normal; hyphens: none; }
td.nowrap, th.nowrap { white-space: nowrap; }
td.answer { min-width: 14ch; }
.final { display: inline-block; font-size: .72rem; font-weight: 600; color: white;
         background: #2b8a3e; border-radius: 3px; padding: 0 5px; margin-left: 6px; }
th { background: #f1f3f5; }
ol.bookmarks { list-style: none; padding: 0; counter-reset: none; }
.bookmark { border: 1px solid var(--rule); border-left: 4px solid var(--mark); border-radius: 6px;
            padding: 10px 16px; margin: 12px 0; }
.bookmark h3 { margin: 0 0 4px; font-size: 1.05rem; }
.bookmark .num { color: var(--mark); margin-right: 6px; }
.bookmark .where { color: var(--muted); font-size: .85rem; overflow-wrap: anywhere; }
.note { margin: 8px 0; }
.note blockquote { border-left: 3px solid var(--rule); margin: 6px 0; padding: 0 12px; color: #495057; }
pre { background: #f1f3f5; padding: 8px 10px; border-radius: 4px; white-space: pre-wrap;
      overflow-wrap: anywhere; font-size: .82rem; max-height: 320px; overflow: auto; }
code { background: #f1f3f5; padding: 0 3px; border-radius: 3px; font-size: .88em; }
pre code { background: none; padding: 0; }
details summary { cursor: pointer; color: var(--muted); font-size: .85rem; }
.dispute { border: 1px solid var(--rule); border-left: 4px solid #1c7ed6; border-radius: 6px;
           padding: 10px 16px; margin: 12px 0; }
.dispute h3 { margin: 0 0 6px; font-size: 1.02rem; overflow-wrap: anywhere; }
.dispute .sides { margin: 4px 0 8px; padding-left: 20px; }
.dispute ol.thread { list-style: none; padding: 0; margin: 0; }
.dispute ol.thread li { border-top: 1px solid var(--rule); padding: 6px 0; }
.dispute .who { color: var(--muted); font-size: .85rem; overflow-wrap: anywhere; }
.empty { color: var(--muted); font-style: italic; }
footer { color: var(--muted); font-size: .8rem; margin-top: 40px; }
@media print {
  @page { size: A4 landscape; margin: 14mm; }
  body { background: white; font-size: 11pt; }
  main { max-width: none; padding: 0; }
  h2 { break-after: avoid; }
  .bookmark, .dispute, .figure, .plot, tr { break-inside: avoid; }
  .modebar, .modebar-container { display: none !important; }
  pre { max-height: none; overflow: visible; }
  a { color: inherit; text-decoration: none; }
  a[href^="http"]::after { content: " (" attr(href) ")"; font-size: .8em; color: var(--muted); }
}
"""

_PRINT_SCRIPT = ("window.addEventListener('beforeprint', () => "
                 "document.querySelectorAll('details').forEach(d => { d.open = true; }));")
"""Paper cannot be clicked: every collapsed event content opens for printing."""

_SCRIPT = re.compile(r"<script(?:\s[^>]*)?>(.*?)</script>", re.DOTALL | re.IGNORECASE)


def _figure_div(fig: go.Figure, div_id: str) -> str:
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id,
                       config={"displaylogo": False, "responsive": True,
                               "modeBarButtonsToRemove": ["select2d", "lasso2d"]})


def _policy(page: str) -> str:
    """A Content-Security-Policy allowing exactly the page's own inline scripts, no request
    to any host ('unsafe-eval' only because Plotly's WebGL traces compile shaders with it)."""
    hashes = sorted({"'sha256-" + base64.b64encode(hashlib.sha256(body.encode()).digest())
                     .decode() + "'" for body in _SCRIPT.findall(page)})
    return (f"default-src 'none'; script-src {' '.join(hashes)} 'unsafe-eval'; "
            "style-src 'unsafe-inline'; img-src data:; font-src data:; connect-src 'none'; "
            "form-action 'none'; base-uri 'none'")


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _step_html(step: Step, analysis: Analysis) -> str:
    b = step.bookmark
    esc = html_text
    where = esc(_sentence(b.where)) + (f" · {esc(step.agent)}" if step.agent else "")
    parts = [f'<li class="bookmark" id="bookmark-{step.number}">',
             f'<h3><span class="num">{step.number}</span>{where}</h3>',
             f'<div class="where">note by {esc(b.reviewer)} · '
             f'{esc(b.created_at[:19].replace("T", " "))}</div>',
             f'<div class="note">{note_html(b.note) or "<p class=empty>no note</p>"}</div>']
    if b.event_id is not None and b.event_id in analysis.position:
        e = analysis.trace.event(b.event_id)
        text = e.text
        parts.append(f"<details><summary>{esc(e.type)} {esc(e.id)}: content "
                     f"({len(text):,} characters)</summary><pre>{esc(text) or '(no content)'}"
                     "</pre></details>")
    if step.labels:
        items = "".join(f"<li>{esc(r['question'])}: <strong>{esc(_answer(r))}</strong> "
                        f"({esc(r['reviewer'])})</li>" for r in step.labels)
        parts.append(f'<div class="caption">labels here:</div><ul>{items}</ul>')
    parts.append("</li>")
    return "\n".join(parts)


def report_html(trace: Trace, labels: Iterable[LabelRecord] = (),
                bookmarks: Iterable[Bookmark] = (), *, generated_at: str | None = None,
                source: str | None = None, threads: Sequence[DisputeThread] = ()) -> str:
    """The case study of one trace as one self-contained HTML page. Its footer names the
    trace's file as `source` says (the app gives `ws.library.source_name`), by default by its
    name alone: a report is passed around, and a server's paths are nobody's business.
    `threads` (`ws.disputes.on_trace`) adds each dispute on the trace: both sides, the final
    answer, and what was said (notes, comments and the lead's reason, in time order)."""
    from plotly.offline import get_plotlyjs

    esc = html_text
    analysis = analyze(trace)
    labels = list(labels)
    bookmarks = list(bookmarks)
    presented = steps(analysis, bookmarks, labels)
    figures = report_figures(analysis, bookmarks)
    stamp = generated_at or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    task, task_id = task_meta(trace)
    meta = [f"task <strong>{esc(task)}</strong>" + (f" (id {esc(task_id)})" if task_id else ""),
            f"topology <strong>{esc(trace.topology or 'not given')}</strong>",
            f"format {esc(trace.source_format or 'orchviz')}"]
    body: list[str] = [
        f"<h1>Case study: {esc(trace.trace_id)}</h1>",
        f'<p class="meta">{" · ".join(meta)}</p>',
    ]
    if trace.system:
        body.append(f'<p class="meta">{esc(trace.system)}</p>')
    body.append('<section id="figures"><h2>Figures</h2><div class="figures">')
    body += [f'<div class="figure"><div class="name">{esc(r.name)}</div>'
             f'<div class="value">{esc(r.value)}</div><div class="note">{esc(r.help)}</div></div>'
             for r in figure_rows(analysis.figures, REPORT_FIGURES)]
    body.append("</div></section>")
    body.append('<section id="tree"><h2>Spawn tree</h2><div class="plot">'
                + _figure_div(figures["tree"], "orchviz-tree") + "</div>"
                '<p class="caption">Agents coloured by role and sized by tokens; solid lines are '
                "spawns, dashed lines delegations and messages. Hover for details, drag to pan."
                "</p></section>")
    body.append('<section id="timeline"><h2>Message timeline</h2><div class="plot">'
                + _figure_div(figures["timeline"], "orchviz-timeline") + "</div>"
                '<p class="caption">One lane per agent; red numbered flags are the bookmarks '
                "below. Drag to zoom, double-click to reset.</p></section>")
    body.append(f'<section id="bookmarks"><h2>Bookmarks and notes ({len(presented)})</h2>')
    if presented:
        body.append('<ol class="bookmarks">' + "\n".join(_step_html(s, analysis)
                                                           for s in presented) + "</ol>")
    else:
        body.append('<p class="empty">No bookmarks.</p>')
    body.append("</section>")
    rows = label_rows(trace, labels)
    body.append(f'<section id="labels"><h2>Labels ({len(rows)})</h2>')
    if rows:
        body.append("<table><thead><tr><th>target</th><th>question</th><th>answer</th>"
                    "<th>reward</th><th>reviewer</th><th>when</th><th>comment</th></tr></thead>"
                    "<tbody>" + "".join(
                        f"<tr><td>{esc(r.target)}</td><td>{esc(r.question)}</td>"
                        f'<td class="answer">{esc(r.answer)}'
                        + ('<span class="final" title="the lead\'s adjudicated answer settles '
                           'this target">final</span>' if r.final else "")
                        + f'</td><td class="nowrap">{esc(r.reward)}</td>'
                        f"<td>{esc(r.reviewer)}</td><td class=\"nowrap\">{esc(r.created_at)}</td>"
                        f"<td>{esc(r.comment)}</td></tr>" for r in rows) + "</tbody></table>")
    else:
        body.append('<p class="empty">No labels.</p>')
    body.append("</section>")
    if threads:
        body.append(f'<section id="disputes"><h2>Disputes and what was said ({len(threads)})'
                    "</h2>")
        for t in threads:
            body.append(f'<div class="dispute"><h3>{esc(_dispute_title(t))}</h3>'
                        '<ul class="sides">' + "".join(
                            f"<li><strong>{esc(who)}</strong>: {esc(said)}</li>"
                            for who, said in _sides(t)) + "</ul>")
            body.append('<ol class="thread">' + "".join(
                f'<li><div class="who">{esc(_entry_head(e))}</div>'
                f'<div class="note">{_entry_body(e)}</div></li>' for e in t.entries)
                + "</ol>" if t.entries else '<p class="empty">Nothing said.</p>')
            body.append("</div>")
        body.append("</section>")
    body.append(f'<section id="warnings"><h2>Warnings ({len(analysis.warnings)})</h2>')
    if analysis.warnings:
        body.append("<table><thead><tr><th>code</th><th>event</th><th>message</th></tr></thead>"
                    "<tbody>" + "".join(
                        f"<tr><td>{esc(w.code)}</td><td>{esc(w.event_id or '')}</td>"
                        f"<td>{esc(w.message)}</td></tr>" for w in analysis.warnings)
                    + "</tbody></table>")
    else:
        body.append('<p class="empty">No structural warnings.</p>')
    body.append("</section>")
    body.append(f"<footer>orchviz case study · generated {esc(stamp)} · trace file "
                f"{esc(source if source is not None else Path(trace.source).name)} · sha256 "
                f"{esc(trace.sha256)}</footer>")
    page = ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            f"<title>Case study: {esc(trace.trace_id)}</title>\n<style>{_CSS}</style>\n"
            f"<script>{get_plotlyjs()}</script>\n<script>{_PRINT_SCRIPT}</script>\n"
            "</head>\n<body><main>\n"
            + "\n".join(body) + "\n</main></body></html>\n")
    meta_policy = f'<meta http-equiv="Content-Security-Policy" content="{_policy(page)}">'
    return page.replace("<meta charset=\"utf-8\">", "<meta charset=\"utf-8\">\n" + meta_policy, 1)


# -- Markdown -------------------------------------------------------------------------------------


def _md_cell(text: object) -> str:
    return markdown_literal(text, None) or " "


def report_markdown(trace: Trace, labels: Iterable[LabelRecord] = (),
                    bookmarks: Iterable[Bookmark] = (), *,
                    images: Mapping[str, str] | None = None,
                    generated_at: str | None = None,
                    threads: Sequence[DisputeThread] = ()) -> str:
    """The case study as Markdown; `images` maps 'tree' and 'timeline' to the PNG files' paths
    relative to the Markdown file (figures are left out when there are none)."""
    analysis = analyze(trace)
    labels = list(labels)
    presented = steps(analysis, list(bookmarks), labels)
    stamp = generated_at or datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    images = images or {}
    task, task_id = task_meta(trace)
    out = [f"# Case study: {markdown_literal(trace.trace_id, None)}", "",
           f"task **{markdown_literal(task, None)}**"
           + (f" (id {markdown_literal(task_id, None)})" if task_id else "")
           + " · "
           f"topology **{markdown_literal(trace.topology or 'not given', None)}**"
           f" · format {markdown_literal(trace.source_format or 'orchviz', None)}", ""]
    if trace.system:
        out += [markdown_literal(trace.system, None), ""]
    out += ["## Figures", "", "| figure | value | note |", "|---|---|---|"]
    out += [f"| {_md_cell(r.name)} | {_md_cell(r.value)} | {_md_cell(r.help)} |"
            for r in figure_rows(analysis.figures, REPORT_FIGURES)]
    for name, title in (("tree", "Spawn tree"), ("timeline", "Message timeline")):
        out += ["", f"## {title}", ""]
        if name in images:
            out.append(f"![{title}]({images[name]})")
        else:
            out.append(f"_The {title.lower()} is in the HTML report (`orchviz report --format "
                       "html`); no PNG could be rendered here._")
    out += ["", f"## Bookmarks and notes ({len(presented)})", ""]
    if not presented:
        out.append("_No bookmarks._")
    for step in presented:
        b = step.bookmark
        where = markdown_literal(_sentence(b.where), None) + (
            f" · {markdown_literal(step.agent, None)}" if step.agent else "")
        out += [f"### {step.number}. {where}", "",
                f"note by {markdown_literal(b.reviewer, None)} · "
                f"{markdown_literal(b.created_at[:19].replace('T', ' '), None)}",
                "", note_markdown(b.note) or "_no note_", ""]
        for r in step.labels:
            out.append(f"- {markdown_literal(r['question'], None)}: "
                       f"**{markdown_literal(_answer(r), None)}** "
                       f"({markdown_literal(r['reviewer'], None)})")
        if step.labels:
            out.append("")
    rows = label_rows(trace, labels)
    out += ["", f"## Labels ({len(rows)})", ""]
    if rows:
        out += ["| target | question | answer | reward | reviewer | when | comment |",
                "|---|---|---|---|---|---|---|"]
        out += ["| " + " | ".join(_md_cell(v) for v in (r.target, r.question, r.answer
                                                        + (" (final: adjudicated)" if r.final
                                                           else ""), r.reward,
                                                        r.reviewer, r.created_at, r.comment))
                + " |" for r in rows]
    else:
        out.append("_No labels._")
    if threads:
        out += ["", f"## Disputes and what was said ({len(threads)})", ""]
        for t in threads:
            out += [f"### {markdown_literal(_dispute_title(t), None)}", ""]
            out += [f"- **{markdown_literal(who, None)}**: {markdown_literal(said, None)}"
                    for who, said in _sides(t)]
            out.append("")
            for e in t.entries:
                body = (f"_{markdown_literal(e.hidden.line, None)}_" if e.hidden is not None
                        else note_markdown(e.text))
                out += [f"_{markdown_literal(_entry_head(e), None)}_", "", body, ""]
            if not t.entries:
                out += ["_Nothing said._", ""]
    out += ["", f"## Warnings ({len(analysis.warnings)})", ""]
    out += [f"- **{markdown_literal(w.code, None)}** {markdown_literal(w.event_id or '', None)} "
            f"{markdown_literal(w.message, None)}"
            for w in analysis.warnings] or ["_No structural warnings._"]
    out += ["", f"_orchviz case study · generated {markdown_literal(stamp, None)}_", ""]
    return "\n".join(out)


def figure_pngs(figures: Mapping[str, go.Figure], folder: str | Path, *,
                width: int = 1400) -> dict[str, Path]:
    """Render figures to PNG files in `folder` with Chromium (Playwright), offline; returns the
    files written by figure name, or {} when Playwright or Chromium is not available here."""
    from concurrent.futures import ThreadPoolExecutor

    # Playwright's sync API refuses a thread that already runs an event loop (a notebook, a
    # test's browser): a thread of its own always works.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(_render_pngs, figures, Path(folder), width).result()


def _render_pngs(figures: Mapping[str, go.Figure], target: Path, width: int) -> dict[str, Path]:
    try:
        from playwright.sync_api import Error as PlaywrightError
        from playwright.sync_api import sync_playwright
    except ImportError:
        return {}
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return {}
    from plotly.offline import get_plotlyjs

    target.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": width + 40, "height": 900},
                                    device_scale_factor=1.5)
            page.route("**/*", lambda route: route.abort())  # nothing leaves the machine
            for name, fig in figures.items():
                shown = go.Figure(fig).update_layout(width=width)
                page.set_content(
                    f"<html><head><meta charset='utf-8'><script>{get_plotlyjs()}</script></head>"
                    f"<body style='margin:0;background:white'>"
                    f"{_figure_div(shown, 'figure')}</body></html>")
                page.wait_for_selector("#figure .main-svg", timeout=30_000)
                path = target / f"{name}.png"
                page.locator("#figure").screenshot(path=str(path))
                written[name] = path
            browser.close()
    except PlaywrightError:
        return written
    return written


# -- writing --------------------------------------------------------------------------------------


class ReportResult(BaseModel):
    """What `write_report` wrote."""

    path: Path = Field(description="The report file.")
    images: list[Path] = Field(default_factory=list, description="PNG figures (Markdown only).")
    note: str = Field("", description="What could not be included, if anything.")


def write_report(trace: Trace, output: str | Path, labels: list[LabelRecord] = (),
                 bookmarks: list[Bookmark] = (), *, format: Format = "html",
                 threads: Sequence[DisputeThread] = ()) -> ReportResult:
    """Write the case study of a trace (its current label records and bookmarks, as
    `ws.bookmarks.case_study` gives them, and the disputes on it with their threads, as
    `ws.disputes.on_trace` does) as HTML, or as Markdown with its figures as PNG files in
    `<name>_files/` beside it."""
    labels, bookmarks = list(labels), list(bookmarks)
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    if format == "html":
        target.write_text(report_html(trace, labels, bookmarks, threads=threads), "utf-8")
        return ReportResult(path=target)
    folder = target.with_name(target.stem + "_files")
    pngs = figure_pngs(report_figures(analyze(trace), bookmarks), folder)
    images = {name: f"{folder.name}/{p.name}" for name, p in pngs.items()}
    target.write_text(report_markdown(trace, labels, bookmarks, images=images,
                                      threads=threads), "utf-8")
    note = "" if pngs else ("figures left out: rendering PNGs needs Playwright and Chromium "
                            f"(looked for {CHROMIUM}; set ORCHVIZ_CHROMIUM)")
    return ReportResult(path=target, images=list(pngs.values()), note=note)
