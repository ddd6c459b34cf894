"""An adaptive run along its iterations: the draft shape chosen before each one, what it accepted, and the
running acceptance estimate that chose it (`specviz.adaptive`)."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.style import ACCEPT_COLOR, NEUTRAL, P_COLOR, Q_COLOR, layout
from specviz.trace import Trace


def adaptive_frame(trace: Trace) -> list[dict]:
    """One row per iteration that recorded a choice: iteration, depth and nodes chosen, probe, accepted,
    the depth-1 acceptance estimate α̂, the predicted gain and the drafter's situation whose estimates chose."""
    return [{"iteration": it.index, "depth": it.choice.gamma, "nodes": it.choice.nodes if it.choice.gamma else 0,
             "branches": it.choice.branches, "probe": it.choice.probe, "accepted": it.accepted,
             "alpha": it.choice.alpha, "gain": it.choice.gain, "expected_tokens": it.choice.expected_tokens,
             "situation": it.choice.situation}
            for it in trace.iterations if it.choice is not None]


def adaptive_chart(trace: Trace) -> go.Figure:
    """Top: the depth (a tree's too, with its node count in the hover) chosen before each iteration, probes
    outlined, and the drafts it accepted. Bottom: the estimate of depth 1's acceptance each choice read,
    and the speedup over the target alone it predicted."""
    rows = adaptive_frame(trace)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14, row_heights=[0.6, 0.4],
                        subplot_titles=("draft chosen before each iteration", "what the choice read and predicted"))
    x = [r["iteration"] for r in rows]
    fig.add_bar(x=x, y=[r["depth"] for r in rows], name="depth chosen (0: no draft)",
                marker={"color": ["#ffffff" if r["probe"] else Q_COLOR for r in rows],
                        "line": {"color": Q_COLOR, "width": 2}},
                customdata=[[r["branches"], r["nodes"], "probe" if r["probe"] else "predicted faster",
                             f", {r['situation']}" if r["situation"] else ""] for r in rows],
                hovertemplate="iteration %{x}: depth %{y}, top-%{customdata[0]}, N = %{customdata[1]} "
                              "(%{customdata[2]}%{customdata[3]})<extra></extra>", row=1, col=1)
    fig.add_scatter(x=x, y=[r["accepted"] for r in rows], mode="markers", name="drafts accepted",
                    marker={"size": 9, "color": ACCEPT_COLOR, "symbol": "diamond"}, row=1, col=1)
    fig.add_scatter(x=x, y=[r["alpha"] for r in rows], mode="lines+markers", name="α̂ at depth 1 (estimate)",
                    line={"color": P_COLOR, "width": 3}, row=2, col=1)
    fig.add_scatter(x=x, y=[r["gain"] for r in rows], mode="lines", name="predicted speedup of the choice",
                    line={"color": NEUTRAL, "width": 2, "dash": "dash"}, row=2, col=1)
    fig.add_hline(y=1.0, line_dash="dot", line_color=NEUTRAL, row=2, col=1)
    fig.update_yaxes(title_text="depth / tokens", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="α̂, × target alone", rangemode="tozero", row=2, col=1)
    fig.update_xaxes(title_text="iteration", row=2, col=1)
    fig.update_xaxes(tick0=0, dtick=max(1, math.ceil(len(rows) / 10)))   # whole iterations, ten ticks at most
    return layout(fig, "Adaptive drafts along the run", height=560)
