"""Pictures of the analytic formulas and of the toy losslessness experiment."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz import theory
from specviz.charts.style import ACCEPT_COLOR, P_COLOR, Q_COLOR, REJECT_COLOR, RESIDUAL_COLOR, layout
from specviz.toy import ToySplit


def theory_curves(alpha: float, c: float, gamma: int, max_gamma: int = 16) -> go.Figure:
    """E(γ) = (1 − α^(γ+1)) / (1 − α) and S(γ) = E(γ) / (γc + 1) (Leviathan et al., eq. 1 and thm. 3.8)."""
    gammas = list(range(1, max_gamma + 1))
    fig = make_subplots(rows=1, cols=2, subplot_titles=("expected tokens per iteration E(γ)",
                                                        "expected walltime improvement S(γ)"))
    fig.add_scatter(x=gammas, y=[theory.expected_tokens(alpha, g) for g in gammas], mode="lines+markers",
                    name="E(γ)", line={"color": P_COLOR, "width": 3}, row=1, col=1)
    fig.add_scatter(x=gammas, y=[theory.walltime_improvement(alpha, g, c) for g in gammas], mode="lines+markers",
                    name="S(γ)", line={"color": Q_COLOR, "width": 3}, row=1, col=2)
    best = theory.optimal_gamma(alpha, c, max_gamma)
    fig.add_scatter(x=[best], y=[theory.walltime_improvement(alpha, best, c)], mode="markers+text",
                    name=f"optimal γ = {best}", text=[f"γ* = {best}"], textposition="top center",
                    marker={"size": 22, "symbol": "star", "color": REJECT_COLOR}, row=1, col=2)
    for col in (1, 2):
        fig.add_vline(x=gamma, line_dash="dash", line_color="#555555", row=1, col=col)
    fig.add_hline(y=1.0, line_dash="dot", line_color="#999999", row=1, col=2)
    fig.update_xaxes(title_text="γ", dtick=2)
    return layout(fig, f"α = {alpha:.2f}, c = {c:.2f}; dashed line: γ = {gamma}", height=500)


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
