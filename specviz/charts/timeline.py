"""The iteration timeline: one stacked bar per iteration (draft / verify / sample time, the verify
time split into the target's compute and the network's share when the target is remote or its latency
simulated) and the tokens each iteration emitted."""

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
    network = [it.network_time * 1000 for it in its]
    for phase, color in PHASES.items():
        ms = [getattr(it, f"{phase}_time") * 1000 for it in its]
        if phase == "verify" and any(network):  # the verify bar splits: the target's compute, then the wait
            fig.add_bar(x=x, y=[v - n for v, n in zip(ms, network)], name=_verify_name(trace),
                        marker_color=color, legendgroup="time", row=1, col=1)
            fig.add_bar(x=x, y=network, name="network (simulated)" if not trace.settings.target_url else "network",
                        marker={"color": color, "opacity": 0.45, "pattern": {"shape": "/"}},
                        legendgroup="time", row=1, col=1)
        else:
            fig.add_bar(x=x, y=ms, name=_verify_name(trace) if phase == "verify" else phase,
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
    return layout(fig, "Iteration timeline", height=520,
                  legend={"orientation": "v", "x": 1.02, "y": 1, "xanchor": "left", "yanchor": "top"})


def _verify_name(trace: Trace) -> str:
    """A remote target's verify time is a round trip; its compute shows apart only where the server reports it."""
    if not trace.settings.target_url:
        return "verify"
    timed = trace.iterations and all(it.server_time is not None for it in trace.iterations)
    return "verify (server compute)" if timed else "verify (round trip)"
