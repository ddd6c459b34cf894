"""Pictures of the toy losslessness experiment (the analytic formulas are `specviz.charts.explorer`).

The Theory page draws the two side by side, each in half the page: as little as 230 px wide on a projector at
150% zoom. So both put token i at x = i (every token a tick, a repeated token its own bar), draw p as a bar-wide
line in data units (it stays over its own bar at any width), and share one geometry, title of two short lines
and legend in a bottom margin of its own, so their plots line up and nothing is cut.
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.charts.style import ACCEPT_COLOR, P_COLOR, Q_COLOR, RESIDUAL_COLOR, layout
from specviz.toy import ToySplit

BARGAP = 0.25            # a bar fills 1 − BARGAP of its slot; p's line spans the bar
HEIGHT = 520
MARGIN = {"l": 60, "r": 10, "t": 95, "b": 185}   # the bottom holds ticks and a legend of one entry a row
LEGEND_TOP = 140         # px above the figure's bottom edge: under the tick labels


def toy_split_chart(split: ToySplit, labels: list[str]) -> go.Figure:
    """Per token: min(p, q) (kept drafts) stacked with max(0, p − q) (corrections) reaches p exactly."""
    x = list(range(len(labels)))
    fig = go.Figure()
    fig.add_bar(x=x, y=split.accepted, name="min(p, q): draft kept", marker_color=ACCEPT_COLOR,
                customdata=labels, hovertemplate="%{customdata}: %{y:.3f} kept<extra></extra>")
    fig.add_bar(x=x, y=split.residual, name=f"max(0, p − q):<br>correction (total {split.rejection:.2f})",
                marker={"color": RESIDUAL_COLOR, "pattern": {"shape": "/"}},
                customdata=labels, hovertemplate="%{customdata}: %{y:.3f} by correction<extra></extra>")
    fig.add_trace(p_lines(split.p, labels))
    fig.add_scatter(x=x, y=split.q, mode="markers", name="q (drafter)", customdata=labels,
                    marker={"symbol": "circle-open", "size": marker_size(len(labels)), "color": Q_COLOR,
                            "line": {"width": 3}},
                    hovertemplate="q(%{customdata}) = %{y:.3f}<extra></extra>")
    fig.update_layout(barmode="stack", yaxis_title="probability", yaxis_range=[0, max(split.p + split.q) * 1.15])
    return toy_look(fig, "min(p, q) +<br>max(0, p − q) = p", labels)


def toy_histogram(counts: list[int], p: list[float], labels: list[str]) -> go.Figure:
    """Empirical frequency of many speculative samples next to p."""
    total = sum(counts) or 1
    fig = go.Figure()
    fig.add_bar(x=list(range(len(labels))), y=[n / total for n in counts], name=f"{total} simulated outputs",
                marker_color=Q_COLOR, customdata=labels, hovertemplate="%{customdata}: %{y:.3f}<extra></extra>")
    fig.add_trace(p_lines(p, labels))
    top = max([n / total for n in counts] + p)
    fig.update_layout(yaxis_title="frequency", yaxis_range=[0, top * 1.15])
    return toy_look(fig, "Simulated outputs<br>vs p", labels)


def p_lines(p: list[float], labels: list[str]) -> go.Scatter:
    """p as one level line per token, as wide as its bar (in data units, so never over a neighbour)."""
    half = (1 - BARGAP) / 2
    xs: list[float | None] = []
    ys: list[float | None] = []
    names: list[str | None] = []
    for i, (value, label) in enumerate(zip(p, labels)):
        xs += [i - half, i + half, None]
        ys += [value, value, None]
        names += [label, label, None]
    return go.Scatter(x=xs, y=ys, mode="lines", name="p (target)", line={"width": 4, "color": P_COLOR},
                      customdata=names, hovertemplate="p(%{customdata}) = %{y:.3f}<extra></extra>")


def marker_size(bars: int) -> int:
    """q's circle: 16 px for up to five tokens, smaller with more, so it stays within its bar's slot."""
    return max(8, min(16, 80 // max(bars, 1)))


def toy_look(fig: go.Figure, title: str, labels: list[str]) -> go.Figure:
    """The shared look, with every token a tick and the legend in the bottom margin (the plots of the two charts
    side by side line up)."""
    fig.update_xaxes(tickmode="array", tickvals=list(range(len(labels))), ticktext=labels,
                     range=[-0.5, len(labels) - 0.5])
    return layout(fig, title, height=HEIGHT, margin=MARGIN,
                  legend={"yref": "container", "y": LEGEND_TOP / HEIGHT, "yanchor": "top"}, bargap=BARGAP)
