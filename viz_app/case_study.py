"""A case study: one trace with its bookmarks in the order of the run, the labels on each
bookmarked moment, and the marks that show those moments on the tree and the timeline.

Pure functions over a trace, its labels (current records) and its bookmarks, so the
presentation page, the report and the tests see the same steps.
"""

from __future__ import annotations

from collections.abc import Iterable

import plotly.graph_objects as go
from pydantic import BaseModel, Field

from viz_app.analysis import Analysis
from viz_app.labels import Bookmark, LabelRecord

MARK = "#f03e3e"
"""Colour of bookmark marks (red: apart from every event type's colour but safety's hexagon)."""


class Step(BaseModel):
    """One step of a presentation: a bookmark, where it is, and the labels on it."""

    number: int = Field(description="1-based place in the presentation.")
    bookmark: Bookmark = Field(description="The bookmark shown.")
    agent: str | None = Field(description="The agent of the bookmarked event (None for a range).")
    events: list[str] = Field(description="The events it covers: its event, or those in range.")
    labels: list[dict] = Field(description="Current labels on those events (records).")


def covered(analysis: Analysis, bookmark: Bookmark) -> list[str]:
    """The events a bookmark covers: its event, or every event whose time falls in its range."""
    if bookmark.event_id is not None:
        return [bookmark.event_id] if bookmark.event_id in analysis.position else []
    first = float(analysis.order[0].t)
    return [e.id for e in analysis.order
            if bookmark.start_s - 1e-9 <= float(e.t) - first <= bookmark.end_s + 1e-9]


def steps(analysis: Analysis, bookmarks: Iterable[Bookmark],
          labels: Iterable[LabelRecord] = ()) -> list[Step]:
    """The presentation's steps: the trace's bookmarks in the order of the run, each with the
    current labels on the events it covers."""
    trace_id = analysis.trace.trace_id
    records = [r for r in labels if r["trace_id"] == trace_id and r["event_id"]]
    ordered = sorted((b for b in bookmarks if b.trace_id == trace_id and not b.removed),
                     key=lambda b: (b.start_s, b.end_s, b.created_at, b.bookmark_id))
    found = []
    for number, bookmark in enumerate(ordered, 1):
        events = covered(analysis, bookmark)
        inside = set(events)
        found.append(Step(
            number=number, bookmark=bookmark, events=events,
            agent=analysis.actor[bookmark.event_id] if bookmark.event_id in inside else None,
            labels=[r for r in records if r["event_id"] in inside]))
    return found


def timeline_marks(analysis: Analysis, bookmarks: Iterable[Bookmark],
                   current: str | None = None) -> list[go.Scatter]:
    """Traces that show bookmarks on the timeline (`charts.timeline_figure`): a numbered flag
    above each bookmarked event, a band over each time range, and a thick ring on the current
    bookmark (by bookmark id)."""
    first = float(analysis.order[0].t)
    lanes = len(analysis.agents)
    drawn: list[go.Scatter] = []
    xs, ys, texts = [], [], []
    for step in steps(analysis, bookmarks):
        b = step.bookmark
        if b.event_id is not None and step.agent is not None:
            xs.append(float(analysis.trace.event(b.event_id).t) - first)
            ys.append(analysis.lanes.index(step.agent) + 0.32)  # just under its event
            texts.append(f"<b>{step.number}</b>")
        else:
            start, end = b.start_s, max(b.end_s, b.start_s + analysis.makespan / 400)
            drawn.append(go.Scatter(
                x=[start, end, end, start, start], y=[-0.5, -0.5, lanes - 0.5, lanes - 0.5, -0.5],
                fill="toself", mode="lines", line=dict(width=0), hoverinfo="skip",
                fillcolor="rgba(240,62,62,0.22)" if b.bookmark_id == current
                else "rgba(240,62,62,0.08)", showlegend=False, name=f"bookmark {step.number}"))
            xs.append(start)
            ys.append(-0.32)
            texts.append(f"<b>{step.number}</b>")
        if b.bookmark_id == current and b.event_id is not None and step.agent is not None:
            drawn.append(go.Scatter(
                x=[xs[-1]], y=[ys[-1] - 0.32], mode="markers", showlegend=False, hoverinfo="skip",
                name="current bookmark",
                marker=dict(size=42, color="rgba(0,0,0,0)", line=dict(color=MARK, width=4))))
    if xs:
        drawn.append(go.Scatter(
            x=xs, y=ys, mode="markers+text", text=texts, textposition="middle right",
            textfont=dict(size=13, color=MARK), name="bookmark", hoverinfo="skip",
            marker=dict(symbol="diamond-tall", size=9, color=MARK)))
    return drawn
