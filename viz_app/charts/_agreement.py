"""The agreement history figure: how each producer's agreement with the reviewers moved over
time."""

from __future__ import annotations

from collections.abc import Collection, Iterable

import plotly.graph_objects as go

from viz_app.text import plotly_text

PRODUCER_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf",
                    "#e377c2", "#7f7f7f")
"""One colour per producer on the agreement-over-time chart, in the order producers are met
(no red: red rings the versions that moved)."""


def agreement_history_figure(points: Iterable, question: str, *,
                             shifted: Collection[tuple[str, str]] = (),
                             reviewers: float | None = None) -> go.Figure:
    """Each producer version's alpha on one question against blind labels, over time: a line
    per producer through its versions (x: when the version's first suggestion was stored), a
    95 % bootstrap interval as error bars, the versions outside their predecessor's interval
    (`shifted`: (producer, version)) ringed in red, and the reviewers' own alpha among
    themselves as a dashed line when given. `points` are `labels.agreement.VersionPoint`s;
    producer names and versions are escaped for Plotly (a judge's model name is anyone's
    text)."""
    from datetime import UTC, datetime

    from viz_app.labels import short_version

    def when(stamp: str) -> datetime:  # naive UTC: Plotly reads no time zone
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        return (moment.astimezone(UTC) if moment.tzinfo else moment).replace(tzinfo=None)

    mine = sorted((p for p in points if p.question == question and p.alpha.value is not None
                   and p.created_at),
                  key=lambda p: (p.rater, p.created_at, p.version))
    fig = go.Figure()
    raters = list(dict.fromkeys(p.rater for p in mine))
    for i, rater in enumerate(raters):
        line = [p for p in mine if p.rater == rater]
        colour = PRODUCER_COLOURS[i % len(PRODUCER_COLOURS)]
        value = [p.alpha.value for p in line]
        high = [(p.alpha.high - p.alpha.value) if p.alpha.high is not None else 0.0
                for p in line]
        low = [(p.alpha.value - p.alpha.low) if p.alpha.low is not None else 0.0
               for p in line]
        hover = [f"<b>{plotly_text(rater, 60)}</b> {plotly_text(short_version(p.version), 40)}"
                 f"<br>alpha {p.alpha.value:.3f}"
                 + (f" [{p.alpha.low:.3f}, {p.alpha.high:.3f}]" if p.alpha.low is not None
                    else " (no interval)")
                 + f"<br>{p.targets} targets, {p.pairs} pairs<br>since "
                 f"{plotly_text(p.created_at[:16].replace('T', ' '))} UTC" for p in line]
        fig.add_trace(go.Scatter(
            x=[when(p.created_at) for p in line], y=value, mode="lines+markers",
            name=plotly_text(rater, 40), line=dict(color=colour, width=2),
            marker=dict(size=9, color=colour),
            error_y=dict(type="data", symmetric=False, array=high, arrayminus=low,
                         color=colour, thickness=1.5, width=6),
            hovertext=hover, hoverinfo="text"))
        for p in line:  # the version beside its point, clear of the error bar and the ring
            fig.add_annotation(x=when(p.created_at), y=p.alpha.value, showarrow=False,
                               text=plotly_text(p.version.split(" · ")[-1][:8]),
                               xanchor="left",
                               xshift=14, yshift=8, font=dict(size=11, color=colour))
    moved = [p for p in mine if (p.rater, p.version) in set(shifted)]
    if moved:
        fig.add_trace(go.Scatter(
            x=[when(p.created_at) for p in moved], y=[p.alpha.value for p in moved],
            mode="markers",
            name="outside the previous version's interval",
            marker=dict(size=20, color="rgba(0,0,0,0)", line=dict(color="#d62728", width=3)),
            hoverinfo="skip"))
    if reviewers is not None:
        fig.add_hline(y=reviewers, line=dict(color="#555555", dash="dash", width=1),
                      annotation_text=f"reviewers among themselves {reviewers:.2f}",
                      annotation_position="bottom right")
    lows = [p.alpha.low for p in mine if p.alpha.low is not None] + [0.0]
    fig.update_layout(height=380, margin=dict(l=10, r=10, t=30, b=10),
                      xaxis_title="version first suggested (UTC)",
                      yaxis_title="Krippendorff's alpha vs blind labels",
                      yaxis=dict(range=[min(-0.05, min(lows) - 0.05), 1.05], zeroline=True),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
                      hovermode="closest")
    return fig
