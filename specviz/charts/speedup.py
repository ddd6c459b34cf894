"""The speedup picture: a measured γ sweep against Leviathan et al.'s curves (plotly: static points and
curves, hover for numbers; where drafts die is the linked Altair view, `specviz.charts.linked`)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz import theory
from specviz.charts.style import ACCEPT_COLOR, NEUTRAL, P_COLOR, Q_COLOR, REJECT_COLOR, layout, range_bars
from specviz.study import Row, Study

BENCH_SYMBOLS = ["square-open", "diamond-open", "triangle-up-open", "x-thin", "cross-thin"]


def _chains(study: Study) -> list[Row]:
    return [r for r in study.rows()[1:] if "gamma" in r.varied and not r.varied.get("adaptive")]


def sweep_chart(study: Study | None, max_gamma: int = 16, benchmark: list[dict] | None = None,
                before: Study | None = None) -> go.Figure:
    """A γ sweep's measured speedup and tokens per iteration per γ, beside the formulas through its
    α̂ and c (see `speedup_chart`), and its adaptive run's as a level across all γ. Without a study: the
    benchmark's points alone. `before`: the same sweep measured earlier, its points and bars drawn beside
    (do the new points land in the old bars?)."""
    rows = study.rows()[1:] if study is not None else []
    runs = _chains(study) if study is not None else []
    adaptive = next(((r.varied["gamma"], r.speedup, r.accepted_length, r.speedup_low, r.speedup_high) for r in rows
                     if r.varied.get("adaptive")), None)
    alpha, c = study.measured_alpha_c() if study is not None else (None, 0.0)
    block = max((v.trace.block for v in study.variants), default=0) if study is not None else 0
    earlier = [(r.varied["gamma"], r.speedup, r.speedup_low, r.speedup_high) for r in _chains(before)] if before else []
    adaptive_before = next(((r.speedup, r.speedup_low, r.speedup_high) for r in before.rows()[1:]
                            if r.varied.get("adaptive")), None) if before else None
    return speedup_chart(alpha, c, max_gamma, [(r.varied["gamma"], r.speedup, r.accepted_length) for r in runs],
                         benchmark, adaptive, [(r.speedup_low, r.speedup_high) for r in runs], block, earlier,
                         adaptive_before)


def speedup_chart(alpha: float | None, c: float, max_gamma: int = 16,
                  measured: list[tuple[int, float | None, float]] = (),
                  benchmark: list[dict] | None = None,
                  adaptive: tuple[int, float | None, float, float | None, float | None] | None = None,
                  spread: list[tuple[float | None, float | None]] | None = None, block: int = 0,
                  earlier: list[tuple[int, float | None, float | None, float | None]] = (),
                  adaptive_before: tuple[float | None, float | None, float | None] | None = None) -> go.Figure:
    """Left: S(γ) = (1 − α^(γ+1)) / ((1 − α)(γc + 1)) (Leviathan et al., Theorem 3.8) with the optimal
    γ starred (where drafting costs: with c = 0 and no block, S grows with γ and none is), and measured
    speedups. Right: E(γ) = (1 − α^(γ+1)) / (1 − α) (eq. 1) and measured
    tokens per iteration. A parallel drafter (`block` B > 0) drafts min(γ, B) tokens in one step, so its
    curves are E(min(γ, B)) and E(min(γ, B)) / (c + 1) (`theory.walltime_improvement`). `measured` holds
    (γ, speedup, tokens per iteration) points; `adaptive` an adaptive run's (largest γ it may draft, speedup,
    tokens per iteration, min, max), drawn as dashed levels, since it chose its own γ before every iteration,
    with its rounds' min–max as a band. `spread`: each measured point's lowest and highest speedup over its
    repeated rounds, drawn as error bars around the median (None: one round). `earlier`: (γ, speedup, min, max)
    of the same sweep measured before, drawn hollow just right of each γ, and `adaptive_before` its adaptive
    run's (speedup, min, max), a grey dashed level and band."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=("walltime speedup over the target alone",
                                                        "tokens per iteration"))
    gamma_of = [m[0] for m in measured]
    spread = spread or [(None, None)] * len(measured)
    repeated = any(low is not None for low, _ in spread)
    medians = [m[1] for m in measured]
    bars = range_bars(medians, [low for low, _ in spread], [high for _, high in spread], P_COLOR)
    fig.add_scatter(x=gamma_of, y=medians, mode="markers", error_y=bars,
                    name="measured (median, min–max)" if repeated else "measured",
                    marker={"size": 14, "color": P_COLOR, "symbol": "circle"}, row=1, col=1)
    if earlier:
        fig.add_scatter(x=[e[0] + 0.3 for e in earlier], y=[e[1] for e in earlier], mode="markers",
                        error_y=range_bars(*zip(*[e[1:] for e in earlier]), NEUTRAL),
                        name="the sweep before (median, min–max)",
                        marker={"size": 12, "color": "white", "line": {"color": NEUTRAL, "width": 3}}, row=1, col=1)
    fig.add_scatter(x=gamma_of, y=[m[2] for m in measured], mode="markers",
                    name="measured", showlegend=False, marker={"size": 14, "color": P_COLOR}, row=1, col=2)
    # with free drafting S grows with γ: no γ is optimal; elsewhere the curves run on to the optimum
    best = theory.optimal_gamma(alpha, c, block=block) if alpha is not None and (c > 0 or block) else None
    across = [1, max(max_gamma, *gamma_of, best or 1)]   # the γ drawn: a level spans them all
    if alpha is not None:
        gammas = list(range(1, across[1] + 1))
        one_pass = f", a block of {block} in one drafter step" if block else ""
        fig.add_scatter(x=gammas, y=[theory.walltime_improvement(alpha, g, c, block) for g in gammas],
                        mode="lines", name=f"theory (α̂ = {alpha:.2f}, c = {c:.3f}{one_pass})",
                        line={"color": Q_COLOR, "width": 3}, row=1, col=1)
        fig.add_scatter(x=gammas, y=[theory.expected_tokens(alpha, theory.drafted(g, block)) for g in gammas],
                        mode="lines", showlegend=False, line={"color": Q_COLOR, "width": 3}, row=1, col=2)
        if best is not None:
            fig.add_scatter(x=[best], y=[theory.walltime_improvement(alpha, best, c, block)], mode="markers",
                            name=f"optimal γ = {best}", marker={"size": 22, "symbol": "star", "color": REJECT_COLOR},
                            row=1, col=1)   # named in the legend: a label by the star would cover the measured bars
    for symbol, label in zip(BENCH_SYMBOLS, dict.fromkeys(b["label"] for b in benchmark or [])):
        mine = [b for b in benchmark if b["label"] == label]
        fig.add_scatter(x=[b["gamma"] for b in mine], y=[b["speedup"] for b in mine], mode="markers", name=label,
                        marker={"size": 14, "symbol": symbol, "color": "#000000", "line": {"width": 3}},
                        row=1, col=1)
    if adaptive is not None:
        most, speedup, tokens, low, high = adaptive
        label = f"adaptive, γ ≤ {most}" + (f": {speedup:.2f}×" if speedup is not None else "")
        _level(fig, across, speedup, low, high, label, ACCEPT_COLOR, 4)
        fig.add_scatter(x=across, y=[tokens] * 2, mode="lines", showlegend=False,
                        line={"color": ACCEPT_COLOR, "width": 4, "dash": "dash"}, row=1, col=2)
    if adaptive_before is not None and adaptive_before[0] is not None:
        _level(fig, across, *adaptive_before, f"adaptive before: {adaptive_before[0]:.2f}×", NEUTRAL, 3)
    fig.add_hline(y=1.0, line_dash="dot", line_color=NEUTRAL, row=1, col=1)
    highest = max([y for t in fig.data if t.xaxis == "x" for y in t.y if y is not None], default=1.0)
    fig.update_yaxes(range=[0, highest * 1.2], row=1, col=1)
    most = max([y for t in fig.data if t.xaxis == "x2" for y in t.y if y is not None], default=0.0)
    if most > 1:   # runs that emitted tokens: drawn from 1, the target alone's one token an iteration
        fig.update_yaxes(range=[1, 1 + (most - 1) * 1.15 + 0.05], row=1, col=2)
    fig.update_xaxes(title_text="γ (tokens drafted per iteration)", dtick=max(2, across[1] // 8))
    title = "γ sweep: measured points, analytic curves" if measured or benchmark else "S(γ) and E(γ) at α̂ and c"
    return layout(fig, title, height=540)


def _level(fig: go.Figure, across: list[int], speedup: float | None, low: float | None, high: float | None,
           label: str, color: str, width: int) -> None:
    """An adaptive run's speedup as a dashed level over every γ, and its rounds' min–max (when it was timed in
    rounds) as a band of the same colour: the error bar of a run that has no single γ."""
    band = low is not None and high is not None
    if band:
        fig.add_scatter(x=[across[0], across[1], across[1], across[0]], y=[low, low, high, high], fill="toself",
                        mode="none", fillcolor=color, opacity=0.15, hoverinfo="skip", showlegend=False, row=1, col=1)
    fig.add_scatter(x=across, y=[speedup] * 2, mode="lines", name=label + (" (band: min–max)" if band else ""),
                    line={"color": color, "width": width, "dash": "dash"}, row=1, col=1)
