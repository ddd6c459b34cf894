"""The tree-size picture: the target's verify-cost curve beside the predicted tokens/s of every
tree size, the chosen one starred (see `specviz.tree_size`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.style import NEUTRAL, P_COLOR, Q_COLOR, REJECT_COLOR, layout

if TYPE_CHECKING:  # the sizing's record only: charts never import the decoder that measures it
    from specviz.tree_size import Sizing

BRANCH_SYMBOLS = ["circle", "square", "diamond", "triangle-up"]


def sizing_chart(sizing: Sizing) -> go.Figure:
    """Left: one target pass over m new tokens relative to one token, as measured. Right: for each
    top-k, the predicted tokens/s of the best tree per node budget (its best depth), chains by
    depth; the size `auto` runs is starred."""
    cost, chosen = sizing.cost, sizing.chosen
    fig = make_subplots(rows=1, cols=2, subplot_titles=(
        f"verify cost on {cost.device} ({cost.threads} thread(s))", "predicted tokens/s by tree size"))
    fig.add_scatter(x=cost.sizes, y=cost.relative, mode="lines+markers", name="one pass / one token",
                    line={"color": P_COLOR, "width": 3}, marker={"size": 10},
                    hovertemplate="m = %{x}: %{y:.2f}× one token<extra></extra>", row=1, col=1)
    fig.add_hline(y=1.0, line_dash="dot", line_color=NEUTRAL, row=1, col=1)
    for k, symbol in zip(sorted({s.branches for s in sizing.candidates}), BRANCH_SYMBOLS):
        best: dict[int, object] = {}
        for size in sizing.candidates:
            if size.branches == k and (size.nodes not in best or size.tokens_per_s > best[size.nodes].tokens_per_s):
                best[size.nodes] = size
        sizes = [best[n] for n in sorted(best)]
        fig.add_scatter(x=[s.nodes for s in sizes], y=[s.tokens_per_s for s in sizes], mode="lines+markers",
                        name="chain (N = depth)" if k == 1 else f"top-{k} tree",
                        marker={"symbol": symbol, "size": 9}, line={"color": Q_COLOR if k == 1 else None},
                        customdata=[[s.gamma, s.expected_tokens] for s in sizes],
                        hovertemplate="N = %{x}, depth %{customdata[0]}: %{y:.1f} tokens/s predicted, "
                                      "%{customdata[1]:.2f} tokens per pass<extra></extra>", row=1, col=2)
    fig.add_scatter(x=[chosen.nodes], y=[chosen.tokens_per_s], mode="markers+text",
                    name=f"auto: depth {chosen.gamma}, top-{chosen.branches}, N = {chosen.nodes}",
                    text=[f"auto {chosen.gamma}×{chosen.branches}×{chosen.nodes}"], textposition="middle right",
                    marker={"size": 22, "symbol": "star", "color": REJECT_COLOR}, row=1, col=2)
    fig.update_xaxes(type="log", dtick=0.30103, title_text="m: new tokens in one pass", row=1, col=1)
    fig.update_xaxes(type="log", dtick=0.30103, title_text="N: tree nodes (a chain's N is its depth)", row=1, col=2)
    fig.update_yaxes(title_text="× one token", rangemode="tozero", row=1, col=1)
    top = max(s.tokens_per_s for s in sizing.candidates)
    fig.update_yaxes(title_text="tokens/s", range=[0, top * 1.15], row=1, col=2)
    return layout(fig, "Sizing the tree for this machine", height=520)
