"""Pictures of the toy losslessness experiment (the analytic formulas are `specviz.charts.explorer`)."""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.charts.style import ACCEPT_COLOR, P_COLOR, Q_COLOR, RESIDUAL_COLOR, layout
from specviz.toy import ToySplit


def toy_split_chart(split: ToySplit, labels: list[str]) -> go.Figure:
    """Per token: min(p, q) (kept drafts) stacked with max(0, p − q) (corrections) reaches p exactly."""
    fig = go.Figure()
    fig.add_bar(x=labels, y=split.accepted, name="min(p, q): draft kept", marker_color=ACCEPT_COLOR)
    fig.add_bar(x=labels, y=split.residual, name=f"max(0, p − q): correction (total {split.rejection:.2f})",
                marker={"color": RESIDUAL_COLOR, "pattern": {"shape": "/"}})
    fig.add_scatter(x=labels, y=split.p, mode="markers", name="p (target)",
                    marker={"symbol": "line-ew", "size": 46, "line": {"width": 4, "color": P_COLOR}})
    fig.add_scatter(x=labels, y=split.q, mode="markers", name="q (drafter)",
                    marker={"symbol": "circle-open", "size": 16, "color": Q_COLOR, "line": {"width": 3}})
    fig.update_layout(barmode="stack", yaxis_title="probability", yaxis_range=[0, max(split.p + split.q) * 1.15])
    return layout(fig, "min(p, q) + max(0, p − q) = p", height=520)


def toy_histogram(counts: list[int], p: list[float], labels: list[str]) -> go.Figure:
    """Empirical frequency of many speculative samples next to p."""
    total = sum(counts) or 1
    fig = go.Figure()
    fig.add_bar(x=labels, y=[n / total for n in counts], name=f"{total} simulated outputs", marker_color=Q_COLOR)
    fig.add_scatter(x=labels, y=p, mode="markers", name="p (target)",
                    marker={"symbol": "line-ew", "size": 46, "line": {"width": 4, "color": P_COLOR}})
    top = max([n / total for n in counts] + p)
    fig.update_layout(yaxis_title="frequency", yaxis_range=[0, top * 1.15])
    return layout(fig, "Simulated outputs vs p", height=520)
