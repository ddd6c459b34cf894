"""Drafters side by side, from a "drafters" study: acceptance at each draft position, α̂ against c, and
the speedup each one measured.

Left: P(position i accepted | positions < i accepted) for every drafter at one γ (hover: how many
iterations tested position i). A position few reach is a noisy estimate (1 of 1 reads 1.0): its marker is
open where fewer than `FEW` iterations tested it. A drafter that
drafts autoregressively conditions each guess on the ones before it; a drafter whose guesses do not
see each other (SpecDec's Principle I, Xia et al.) loses accuracy with distance. Right: each
drafter's α̂ against its cost coefficient c (a parallel drafter's c is one step for its whole block): the
model-free drafters (prompt lookup, counts) sit at c ≈ 0 and pay only when they guess well (Leviathan et al.,
section 3: S grows with α and falls with c).
Last: what that trade came to, each drafter's measured walltime speedup over the target alone, the median
of its rounds with their min–max as a bar when the study was timed in rounds.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.style import (
    ACCEPT_COLOR,
    NEUTRAL,
    P_COLOR,
    Q_COLOR,
    REJECT_COLOR,
    RESIDUAL_COLOR,
    layout,
    range_bars,
)
from specviz.study import Study
from specviz.trace import Summary

SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star", "hexagon"]
COLORS = [P_COLOR, ACCEPT_COLOR, Q_COLOR, RESIDUAL_COLOR, REJECT_COLOR, "#56B4E9", "#000000", NEUTRAL]  # Okabe-Ito
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
NEAR = (0.01, 0.02)   # (Δc, Δα̂) within which two drafters' points share one label
FEW = 10   # a draft position tested by fewer iterations is drawn with an open marker


def block_note(block: int) -> str:
    """What a parallel drafter's c prices: one step for its whole block (`Trace.block`)."""
    return f" (one step drafts a block of {block})" if block else ""


def drafters_chart(study: Study) -> go.Figure:
    fig = make_subplots(rows=1, cols=3, column_widths=[0.38, 0.34, 0.28],
                        subplot_titles=(f"acceptance by draft position (open: < {FEW} tested)", "α̂ against c",
                                        "speedup over the target alone"))
    names = [str(v.varied.get("drafter", v.trace.drafter)) for v in study.variants]
    labels = point_labels(names, [v.trace.summary() for v in study.variants])
    for i, (variant, row, name) in enumerate(zip(study.variants, study.rows()[1:], names)):
        s = variant.trace.summary()
        color = COLORS[i % len(COLORS)]
        style = {"symbol": SYMBOLS[i % len(SYMBOLS)], "size": 13, "color": color}
        reached = [sum(it.evaluated > k for it in variant.trace.iterations) for k in range(len(s.position_acceptance))]
        positions = [(k + 1, a, n) for k, (a, n) in enumerate(zip(s.position_acceptance, reached)) if a is not None]
        symbols = [style["symbol"] + ("-open" if n < FEW else "") for _, _, n in positions]
        fig.add_scatter(x=[k for k, _, _ in positions], y=[a for _, a, _ in positions], mode="lines+markers",
                        customdata=[n for _, _, n in positions], name=name, legendgroup=name,
                        marker={**style, "symbol": symbols},
                        line={"dash": DASHES[i % len(DASHES)], "width": 3, "color": color},
                        hovertemplate=f"{name}<br>position %{{x}}: %{{y:.2f}} of %{{customdata}} tested<extra></extra>",
                        row=1, col=1)
        if s.alpha is not None:
            fig.add_scatter(x=[s.c or 0.0], y=[s.alpha], mode="markers+text", text=[labels[i]], cliponaxis=False,
                            textposition="top right" if i % 2 else "bottom right",
                            textfont={"color": color if labels[i] == name else "#444444"},
                            marker=style, name=name, legendgroup=name, showlegend=False,
                            hovertemplate=f"{name}<br>c = %{{x:.3f}}{block_note(variant.trace.block)}, "
                            "α̂ = %{y:.2f}<extra></extra>", row=1, col=2)
        if row.speedup is not None:
            bars = range_bars([row.speedup], [row.speedup_low], [row.speedup_high], "#444444", 2, 6) \
                if row.speedup_low is not None else None
            fig.add_bar(x=[name], y=[row.speedup], marker_color=color, error_y=bars, name=name, legendgroup=name,
                        text=[name], textposition="inside", textangle=-90, insidetextanchor="start",
                        showlegend=False, row=1, col=3,
                        hovertemplate=f"{name}<br>%{{y:.2f}}× over {row.rounds} round(s)<extra></extra>")
    gamma = max((v.trace.settings.gamma for v in study.variants), default=1)
    fig.update_xaxes(title_text="draft position", dtick=1, range=[0.5, gamma + 0.5], row=1, col=1)
    highest = max((v.trace.summary().c or 0.0 for v in study.variants), default=0.0)
    fig.update_xaxes(title_text="c = drafter step / target step", range=[-0.1 * highest - 0.005, 1.8 * highest + 0.01],
                     row=1, col=2)
    fig.update_yaxes(range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)
    fig.update_xaxes(showticklabels=False, row=1, col=3)   # each bar says its name: a narrow panel hides some ticks
    fig.add_hline(y=1.0, line_dash="dot", line_color=NEUTRAL, row=1, col=3)
    return layout(fig, f"Drafters side by side at γ = {gamma}", height=520, uniformtext={"minsize": 12, "mode": "show"})


def point_labels(names: list[str], summaries: list[Summary]) -> list[str]:
    """Each drafter's label in the α̂-against-c panel: drafters whose points lie within `NEAR` (Δc, Δα̂) of
    the first of a group (the default and the EAGLE head alone where prompt lookup never fires) share one
    label, on that first one (drawn in grey), the others none, so no two names are printed over each other."""
    groups: list[tuple[float, float, list[int]]] = []
    for i, s in enumerate(summaries):
        if s.alpha is None:
            continue
        c = s.c or 0.0
        group = next((g for g in groups if abs(g[0] - c) <= NEAR[0] and abs(g[1] - s.alpha) <= NEAR[1]), None)
        if group is None:
            groups.append((c, s.alpha, [i]))
        else:
            group[2].append(i)
    labels = [""] * len(names)
    for _, _, members in groups:
        labels[members[0]] = ", ".join(names[i] for i in members)
    return labels
