"""The iteration timeline: one stacked bar per iteration (draft / verify / sample time) and the
tokens each iteration emitted."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.style import KINDS, NEUTRAL, PHASES, layout
from specviz.trace import Trace


def timeline(trace: Trace) -> go.Figure:
    """Top: seconds per phase per iteration. Bottom: accepted drafts + the final token per iteration."""
    its = trace.iterations
    x = [it.index for it in its]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.55, 0.45],
                        subplot_titles=("time per iteration (ms)", "tokens emitted per iteration"))
    for phase, color in PHASES.items():
        fig.add_bar(x=x, y=[getattr(it, f"{phase}_time") * 1000 for it in its], name=phase,
                    marker_color=color, legendgroup="time", row=1, col=1)
    fig.add_bar(x=x, y=[it.accepted for it in its], name="accepted drafts",
                marker={"color": KINDS["accepted"].background, "line": {"color": "#009E73", "width": 2}},
                legendgroup="tokens", row=2, col=1)
    for kind in ("correction", "bonus", "target"):
        color = NEUTRAL if kind == "target" else KINDS[kind].color
        fig.add_bar(x=x, y=[1 if it.final is not None and it.final.kind == kind else 0 for it in its],
                    name=kind, marker={"color": color, "pattern": {"shape": KINDS[kind].pattern}},
                    legendgroup="tokens", row=2, col=1)
    fig.update_layout(barmode="stack")
    fig.update_xaxes(title_text="iteration", row=2, col=1)
    layout(fig, "Iteration timeline", height=520)
    fig.update_layout(legend={"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left", "yanchor": "top"})
    return fig
