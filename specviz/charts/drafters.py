"""Drafters side by side, from a "drafters" study: acceptance at each draft position, α̂ against c, and
the speedup each one measured.

Left: P(position i accepted | positions < i accepted) for every drafter at one γ (hover: how many
iterations tested position i). A position few reach is a noisy estimate (1 of 1 reads 1.0): its marker is
open where fewer than `FEW` iterations tested it. A drafter that
drafts autoregressively conditions each guess on the ones before it; a drafter whose guesses do not
see each other (SpecDec's Principle I, the drafter's capability; Xia et al.) loses accuracy with distance. Right: each
drafter's α̂ against its cost coefficient c (a parallel drafter's c is one step for its whole block): the
model-free drafters (prompt lookup, counts) sit at c ≈ 0 and pay only when they guess well (Leviathan et al.,
section 3: S grows with α and falls with c).
Last: what that trade came to, each drafter's measured walltime speedup over the target alone, the median
of its rounds with their min–max as a bar when the study was timed in rounds.

Drawn for a projector, from 480 px wide (the Speedup page at 1024 px or at 150% zoom) up: two-line panel
titles, α̂ against c zoomed to its points, each label there placed (`place_labels`) by its point or in a
callout so that none meets another, a marker or the panel's edge at any width, and each bar's name in white or
near-black, whichever reads on the bar.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.labels import place_labels
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

# one look per drafter the app offers (nine), no two alike
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star", "hexagon", "pentagon"]
COLORS = [P_COLOR, ACCEPT_COLOR, Q_COLOR, RESIDUAL_COLOR, REJECT_COLOR, "#56B4E9", "#882255", NEUTRAL, "#999933"]
# Okabe-Ito, but a dark wine for its black (a pure black line is lost on a dark background) and Tol's olive for
# its yellow (1.3:1 on white; olive 3:1)
DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot"]
NEAR = (0.01, 0.02)   # (Δc, Δα̂) within which two drafters' points share one label
FEW = 10   # a draft position tested by fewer iterations is drawn with an open marker
# The geometry, chosen for the narrowest the Speedup page draws the chart: 480 px, at 1024 px or at 150% zoom.
NARROWEST = 480
WIDEST = 1400      # and the widest, on a wide screen: its labels are placed to stay clear at every width between
HEIGHT = 560
MARGIN = {"l": 55, "r": 20, "t": 105, "b": 210}   # two-line panel titles above; ticks and legend below
LEGEND_TOP = 120   # px above the chart's bottom edge: under the axis titles
COLUMNS = [0.28, 0.44, 0.28]
SPACING = 0.085    # between panels, room for the next one's y tick labels
TITLE_SIZE = 14
LABEL_SIZE = 14    # the drafter names by the points of α̂ against c
MARKER = 13
DARK_INK = "#111111"   # a name on a light bar (the style's INK falls short of 4.5:1 on the vermilion)


def block_note(block: int) -> str:
    """What a parallel drafter's c prices: one step for its whole block (`Trace.block`)."""
    return f" (one step drafts a block of {block})" if block else ""


def drafters_chart(study: Study) -> go.Figure:
    fig = make_subplots(rows=1, cols=3, column_widths=COLUMNS, horizontal_spacing=SPACING,
                        subplot_titles=(f"acceptance<br>open: < {FEW} tested", "α̂ against c",
                                        "speedup over<br>target alone"))
    fig.update_annotations(font_size=TITLE_SIZE)
    names = [str(v.varied.get("drafter", v.trace.drafter)) for v in study.variants]
    summaries = [v.trace.summary() for v in study.variants]
    labels = point_labels(names, summaries)
    highest = max((s.c or 0.0 for s in summaries), default=0.0)
    c_range = [-0.15 * highest - 0.005, 1.8 * highest + 0.01]
    top = max((s.alpha for s in summaries if s.alpha is not None), default=1.0)
    alpha_range = [0.0, min(1.05, top * 1.3 + 0.05)]   # the points spread over the panel's height
    stretch = (WIDEST - MARGIN["l"] - MARGIN["r"]) / (NARROWEST - MARGIN["l"] - MARGIN["r"])
    places = place_labels(tuple((s.c or 0.0, s.alpha) for s in summaries), tuple(labels), tuple(c_range),
                          tuple(alpha_range), panel_size(fig, "xaxis2"), stretch, MARKER, LABEL_SIZE)
    for i, (variant, row, name, s) in enumerate(zip(study.variants, study.rows()[1:], names, summaries)):
        color = COLORS[i % len(COLORS)]
        style = {"symbol": SYMBOLS[i % len(SYMBOLS)], "size": MARKER, "color": color}
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
            place = places[i]
            ink = color if labels[i] == name else "#444444"
            # The label is the point's text; where no text position is clear of the rest it is shown instead
            # in a callout, a line's length away.
            fig.add_scatter(x=[s.c or 0.0], y=[s.alpha], mode="markers+text", text=[labels[i]], cliponaxis=False,
                            textposition=place.position or "middle right",
                            texttemplate=None if place.text == labels[i] and place.offset is None
                            else ["" if place.offset else place.text],
                            textfont={"color": ink, "size": LABEL_SIZE},
                            marker=style, name=name, legendgroup=name, showlegend=False,
                            hovertemplate=f"{name}<br>c = %{{x:.3f}}{block_note(variant.trace.block)}, "
                            "α̂ = %{y:.2f}<extra></extra>", row=1, col=2)
            if place.offset is not None:
                fig.add_annotation(x=s.c or 0.0, y=s.alpha, text=place.text, ax=place.offset[0], ay=-place.offset[1],
                                   xanchor="center", yanchor="middle", showarrow=True, arrowhead=0, arrowwidth=1,
                                   arrowcolor=NEUTRAL, standoff=MARKER / 2, font={"color": ink, "size": LABEL_SIZE},
                                   row=1, col=2)
        if row.speedup is not None:
            bars = range_bars([row.speedup], [row.speedup_low], [row.speedup_high], "#444444", 2, 6) \
                if row.speedup_low is not None else None
            fig.add_bar(x=[name], y=[row.speedup], marker_color=color, error_y=bars, name=name, legendgroup=name,
                        text=[name], textposition="inside", textangle=-90, insidetextanchor="start",
                        insidetextfont={"color": ink_on(color)}, showlegend=False, row=1, col=3,
                        hovertemplate=f"{name}<br>%{{y:.2f}}× over {row.rounds} round(s)<extra></extra>")
    gamma = max((v.trace.settings.gamma for v in study.variants), default=1)
    fig.update_xaxes(title_text="draft position", dtick=1, range=[0.5, gamma + 0.5], row=1, col=1)
    fig.update_xaxes(title_text="c = drafter step<br>/ verify pass", range=c_range, nticks=4, row=1, col=2)
    fig.update_yaxes(range=[0, 1.05], row=1, col=1)
    fig.update_yaxes(range=alpha_range, row=1, col=2)
    # Each bar says its name (a narrow panel hides some ticks), in a line a little wider than the bar: room at the ends.
    speedups = sum(t.type == "bar" for t in fig.data)
    fig.update_xaxes(showticklabels=False, range=[-0.65, speedups - 0.35], row=1, col=3)
    fig.add_hline(y=1.0, line_dash="dot", line_color=NEUTRAL, row=1, col=3)
    return layout(fig, f"Drafters side by side at γ = {gamma}", height=HEIGHT, margin=MARGIN,
                  legend={"yref": "container", "y": LEGEND_TOP / HEIGHT, "yanchor": "top"}, bargap=0.1,
                  uniformtext={"minsize": 12, "mode": "show"})


def ink_on(color: str) -> str:
    """The text colour for a name on a bar of `color`: white or `DARK_INK`, whichever contrasts more (at least
    4.5:1 on every colour of `COLORS`)."""
    return max(("#ffffff", DARK_INK), key=lambda ink: contrast(ink, color))


def contrast(one: str, other: str) -> float:
    """WCAG's contrast ratio of two #rrggbb colours (1 to 21)."""
    def luminance(color: str) -> float:
        channels = [int(color[k:k + 2], 16) / 255 for k in (1, 3, 5)]
        r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * r + 0.7152 * g + 0.0722 * b
    light, dark = sorted((luminance(one), luminance(other)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def panel_size(fig: go.Figure, axis: str, width: int = NARROWEST) -> tuple[float, float]:
    """A panel's plot area in px, (width, height), when the whole chart is `width` px wide, less a twentieth: the
    fonts a browser has, and margins plotly widens for a long tick label, make it smaller than planned."""
    left, right = fig.layout[axis].domain
    return 0.95 * (right - left) * (width - MARGIN["l"] - MARGIN["r"]), 0.95 * (HEIGHT - MARGIN["t"] - MARGIN["b"])


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
