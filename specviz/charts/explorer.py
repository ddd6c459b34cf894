"""The theory explorer: Leviathan et al.'s curves as one Altair chart whose sliders live in the browser.

α, c, a marked γ and a parallel drafter's block B are params bound to sliders, and E(γ), S(γ) and
α(1 − α^γ)/(1 − α) are Vega expressions (`specviz.charts.formulas`), so moving a slider redraws the
chart with no page script run. Top: E(γ) with the accepted drafts alone for contrast, and S(γ) with
the optimal γ starred. Bottom: S over the (α, γ) plane at the chosen c, with the optimal-γ ridge. A
trace's measured α̂ and c are marked on both.
"""

from __future__ import annotations

import functools
import itertools
import json
from dataclasses import dataclass

import altair as alt
import pandas as pd

from specviz import theory
from specviz.charts import formulas
from specviz.charts.style import FONT_SIZE, NEUTRAL, P_COLOR, Q_COLOR, REJECT_COLOR, vega_look
from specviz.trace import Trace

MAX_GAMMA = 16
MAX_BLOCK = MAX_GAMMA   # the block slider's end (the shipped parallel drafters draft 4; SpecDec's Table 3 reaches 30)
ALPHA_STEP = 0.02  # the plane's cell width
WIDTH, HEIGHT = 400, 220   # panels stacked, each with its axes fits the page column at 1024 px with the sidebar open
START = (0.8, 0.05, 4)   # where the α, c and marked-γ sliders start
STAR = ("M0,-1L0.235,-0.324L0.951,-0.309L0.38,0.124L0.588,0.809L0,0.4L-0.588,0.809L-0.38,0.124L-0.951,-0.309"
        "L-0.235,-0.324Z")
GAMMA_TICKS = list(range(2, MAX_GAMMA + 1, 2))
LEFT_FROM = MAX_GAMMA // 2   # a diamond past this γ is labelled on its left, so the label stays in the plot


def explorer_params(alpha: float, c: float, gamma: int, block: int) -> list[alt.Parameter]:
    """α, c, the marked γ and the block B on sliders, and a toggle for the accepted-drafts curve."""
    def slider(name: str, value: float, low: int, high: int, step: float, label: str) -> alt.Parameter:
        return alt.param(name=name, value=value, bind=alt.binding_range(min=low, max=high, step=step, name=label))

    return [slider("alpha", alpha, 0, 1, 0.01, "α: acceptance rate "),
            slider("c", c, 0, 1, 0.01, "c: drafter step / target step "),
            slider("gamma", gamma, 1, MAX_GAMMA, 1, "γ marked "),
            slider("block", block, 0, MAX_BLOCK, 1, "B: block drafted in one pass "),   # 0: one token a pass
            alt.param(name="show_drafts", value=False,
                      bind=alt.binding_checkbox(name="show the accepted drafts alone, α(1 − α^γ)/(1 − α) "))]


def best_gamma(chart: alt.Chart, groupby: list[str]) -> alt.Chart:
    """Keep the rows of the γ that maximises S (ties to the smaller γ, as `theory.optimal_gamma`)."""
    return (chart.transform_joinaggregate(best_S="max(S)", groupby=groupby).transform_filter("datum.S == datum.best_S")
            .transform_joinaggregate(best_gamma="min(gamma)", groupby=groupby)
            .transform_filter("datum.gamma == datum.best_gamma"))


def marked_rule(channel: str, param: str, axis: dict) -> list[alt.Chart]:
    """A dashed line at a slider's value, haloed so it reads on any background; `axis` as the picture's."""
    datum = {channel: alt.datum(alt.expr(param), type="quantitative", **axis)}
    return [alt.Chart().mark_rule(color="#ffffff", strokeWidth=5).encode(**datum),
            alt.Chart().mark_rule(color="#333333", strokeWidth=2, strokeDash=[6, 4]).encode(**datum)]


def measured_marks(measured: pd.DataFrame, x: alt.X, y: alt.Y, text: alt.Text, right: str,
                   below: str = "false") -> list[alt.Chart]:
    """A black diamond at the trace's own (x, y), labelled in black on a white halo: above and to its right, to
    its left where the expression `right` holds (a diamond in the right half, whose label would run out of the
    plot), below where `below` holds (the trace's curve rises above the point on the label's side)."""
    own = alt.Chart(measured).transform_filter("datum.own")
    marks = [own.mark_point(shape="diamond", size=300, filled=True, color="#000000", stroke="#ffffff", strokeWidth=2,
                            opacity=1).encode(x=x, y=y)]
    for (align, dx, side), (baseline, dy, level) in itertools.product(
            (("left", 14, f"!({right})"), ("right", -14, right)), (("bottom", -8, f"!({below})"), ("top", 8, below))):
        words = {"align": align, "dx": dx, "baseline": baseline, "dy": dy, "fontSize": FONT_SIZE - 2,
                 "fontWeight": "bold"}
        marks += [own.transform_filter(f"({side}) && ({level})").mark_text(
            **words, color=ink, stroke=ink, strokeWidth=width).encode(x=x, y=y, text=text)
            for ink, width in (("#ffffff", 4), ("#000000", 0))]
    return marks


def curve(base: alt.Chart, field: str, color: str, title: str, measured: pd.DataFrame | None,
          extra: list[alt.Chart]) -> alt.LayerChart:
    """One formula over γ: its line, its value at the marked γ, and the trace's curve dotted."""
    along = {"title": "γ (tokens drafted per iteration)", "axis": alt.Axis(values=GAMMA_TICKS),
             "scale": alt.Scale(domain=[1, MAX_GAMMA], nice=False)}
    x, y = alt.X("gamma:Q", **along), alt.Y(f"{field}:Q", title=title, scale=alt.Scale(zero=True))
    layers = [*marked_rule("x", "gamma", along), *extra,
              base.mark_line(color=color, strokeWidth=4, point=alt.OverlayMarkDef(size=80, filled=True, color=color))
              .encode(x=x, y=y, tooltip=["gamma:Q", alt.Tooltip(f"{field}:Q", format=".3f")]),
              base.transform_filter("datum.gamma == gamma").transform_calculate(
                  label=f"'{field}(' + datum.gamma + ') = ' + format(datum.{field}, '.2f')").mark_text(
                  align=alt.expr("gamma > 10 ? 'right' : 'left'"), dx=alt.expr("gamma > 10 ? -8 : 8"),
                  baseline="bottom", fontSize=FONT_SIZE, fontWeight="bold", color="#000000").encode(
                  x=x, y=alt.value(HEIGHT - 6), text="label:N")]
    if measured is not None:
        layers += [alt.Chart(measured).mark_line(color="#000000", strokeWidth=2, strokeDash=[2, 3]).encode(x=x, y=y),
                   *measured_marks(measured, x, y, alt.value("this trace"), "datum.left", f"datum.{field}_above")]
    return alt.layer(*layers)


def curves(measured: pd.DataFrame | None) -> alt.VConcatChart:
    """E(γ) (and the accepted drafts alone) and S(γ) for γ = 1 … MAX_GAMMA at the sliders' α and c."""
    base = alt.Chart(pd.DataFrame({"gamma": range(1, MAX_GAMMA + 1)})).transform_calculate(
        E=formulas.expected_tokens("alpha", formulas.drafted("datum.gamma", "block")),
        S=formulas.walltime_improvement("alpha", "datum.gamma", "c", "block"),
        drafts=formulas.expected_accepted_drafts("alpha", formulas.drafted("datum.gamma", "block")))
    x = alt.X("gamma:Q")
    drafts = base.transform_filter("show_drafts")
    contrast = [drafts.mark_line(color=Q_COLOR, strokeWidth=3, strokeDash=[8, 4]).encode(x=x, y="drafts:Q"),
                drafts.transform_filter(f"datum.gamma == {MAX_GAMMA}").mark_text(
                    align="right", dy=24, color="#7a4b00", fontSize=FONT_SIZE - 2).encode(
                    x=x, y="drafts:Q", text=alt.value("accepted drafts alone"))]
    # The best γ drawn is the optimum only inside the chart: at its edge the optimum may lie further, and with
    # free drafting (c = 0, no block) S grows with γ and none is optimal (`theory.optimal_gamma`).
    optimum = best_gamma(base, []).transform_calculate(label=(
        f"c == 0 && block == 0 ? 'no γ*: at c = 0, S grows with γ' : datum.gamma == {MAX_GAMMA} && block == 0 ? "
        f"'γ* ≥ {MAX_GAMMA}: the chart ends here' : 'γ* = ' + datum.gamma"))
    # The label goes above the star, or below it where the trace's diamond sits over the star (its γ within 2,
    # its S higher), whose own label would run into it.
    under = "false"
    if measured is not None:
        own = measured[measured["own"]].iloc[0]
        under = f"abs(datum.gamma - {own['gamma']}) <= 2 && datum.S <= {own['S']}"
    star = [optimum.transform_filter("c > 0 || block > 0").mark_point(
                shape=STAR, size=800, filled=True, color=REJECT_COLOR, stroke="#000000", strokeWidth=1,
                opacity=1).encode(x=x, y="S:Q"),
            *(optimum.transform_filter(f"({where}) && ({side})").mark_text(
                dy=dy, fontSize=FONT_SIZE, fontWeight="bold", color=REJECT_COLOR, align=align).encode(
                x=x, y="S:Q", text="label:N")
              for (where, align), (side, dy) in itertools.product(   # a label in the right half ends at its γ
                ((f"datum.gamma <= {MAX_GAMMA // 2}", "center"), (f"datum.gamma > {MAX_GAMMA // 2}", "right")),
                ((f"!({under})", -30), (under, 30)))),
            alt.Chart().mark_rule(strokeDash=[2, 3], color=NEUTRAL, strokeWidth=2).encode(y=alt.datum(1))]
    size = {"width": WIDTH, "height": HEIGHT}
    return alt.vconcat(
        curve(base, "E", P_COLOR, "tokens per iteration", measured, contrast).properties(
            title="E(γ): expected tokens per iteration", **size),
        curve(base, "S", Q_COLOR, "walltime improvement (×)", measured, star).properties(
            title="S(γ): expected walltime improvement", **size), spacing=30)


def plane_grid() -> pd.DataFrame:
    """Cells of the (α, γ) plane: α in steps of ALPHA_STEP, γ = 1 … MAX_GAMMA, with their edges."""
    alphas = [round(i * ALPHA_STEP, 10) for i in range(round(1 / ALPHA_STEP) + 1)]
    half = 0.6 * ALPHA_STEP  # cells overlap a little: no seams between them
    return pd.DataFrame([{"alpha": a, "gamma": g, "a0": a - half, "a1": a + half, "g0": g - 0.6, "g1": g + 0.6}
                         for a in alphas for g in range(1, MAX_GAMMA + 1)])


def plane(measured: pd.DataFrame | None) -> alt.LayerChart:
    """S over α × γ at the slider's c; the ridge joins each α's optimal γ."""
    base = alt.Chart(plane_grid()).transform_calculate(
        S=formulas.walltime_improvement("datum.alpha", "datum.gamma", "c", "block"))
    along = {"title": "α (acceptance rate)", "scale": alt.Scale(domain=[0, 1], nice=False),
             "axis": alt.Axis(values=[i / 10 for i in range(11)], grid=False)}
    up = {"title": "γ", "scale": alt.Scale(domain=[0.5, MAX_GAMMA + 0.5], nice=False),
          "axis": alt.Axis(values=GAMMA_TICKS, grid=False, labelOverlap=False, titlePadding=14)}   # clear of "8"
    x, y = alt.X("alpha:Q", **along), alt.Y("gamma:Q", **up)
    ridge = best_gamma(base, ["alpha"])
    layers = [
        base.mark_rect(strokeWidth=0).encode(
            x=alt.X("a0:Q", **along), x2="a1:Q", y=alt.Y("g0:Q", **up), y2="g1:Q",
            color=alt.Color("S:Q", scale=alt.Scale(scheme="viridis"), title="S (×)",
                            legend=alt.Legend(orient="right", direction="vertical", gradientLength=HEIGHT - 40)),
            tooltip=[alt.Tooltip("alpha:Q", title="α"), alt.Tooltip("gamma:Q", title="γ"),
                     alt.Tooltip("S:Q", title="S", format=".3f")]),
        ridge.mark_line(color="#000000", strokeWidth=7, interpolate="step").encode(x=x, y=y),
        ridge.mark_line(color="#ffffff", strokeWidth=3, interpolate="step").encode(x=x, y=y),
        *marked_rule("x", "alpha", along), *marked_rule("y", "gamma", up),
    ]
    if measured is not None:
        layers += measured_marks(measured, x, y, alt.value("this trace"), "datum.alpha > 0.7")
    title = ["S over (α, γ) at the chosen c;", "white line: the optimal γ of each α"]
    return alt.layer(*layers).properties(title=title, width=WIDTH - 60, height=HEIGHT)   # room for the colour legend


@dataclass(frozen=True)
class Measured:
    """What the explorer marks of a trace: its α̂, its drafter's c, its γ and its drafter's block."""

    alpha: float
    c: float
    gamma: int
    block: int


def measured_point(trace: Trace | None) -> Measured | None:
    """The trace's α̂ and c, its γ and block; None when α̂ or a drafter's c is unknown. A drafter that ran no
    forward pass (prompt lookup, the count tables, retrieval) has c = 0, as the γ sweep prices it
    (`Study.measured_alpha_c`)."""
    if trace is None:
        return None
    summary = trace.summary()
    no_pass = not any(it.draft_calls for it in trace.iterations)
    if summary.alpha is None or (summary.c is None and not no_pass):
        return None
    return Measured(summary.alpha, 0.0 if no_pass else summary.c, trace.settings.gamma, trace.block)


def frame_at(point: Measured) -> pd.DataFrame:
    """E and S through a trace's α̂ and c (and its drafter's block) for every γ, its own γ flagged."""
    own = min(point.gamma, MAX_GAMMA)
    label = f"this trace: α̂ = {point.alpha:.2f}, c = {point.c:.2f}"
    frame = pd.DataFrame([{"gamma": g, "alpha": point.alpha, "own": g == own, "label": label,
                           "E": theory.expected_tokens(point.alpha, theory.drafted(g, point.block)),
                           "S": theory.walltime_improvement(point.alpha, g, point.c, point.block)}
                          for g in range(1, MAX_GAMMA + 1)])
    left = own > LEFT_FROM   # the diamond's label goes on its left (`measured_marks`), spanning the γ before it
    frame["left"] = left
    beside = own - 1 if left else own + 1
    for field in ("E", "S"):   # the curve passes above the diamond under its label: the label goes below it
        frame[f"{field}_above"] = bool(frame[field][beside - 1] >= frame[field][own - 1])
    return frame


def theory_explorer(trace: Trace | None = None) -> dict:
    """Leviathan et al.'s curves and the (α, γ) plane, moved by in-chart sliders, as a Vega-Lite spec; `trace`
    adds its α̂ and c, and starts the block slider at its drafter's block. The spec is built once per measured
    point (`explorer_json`): its page runs again at every widget change, and Altair took about a second to build
    this chart and as long again to check it, on a CPU."""
    block = min(trace.block, MAX_BLOCK) if trace is not None else 0
    return json.loads(explorer_json(measured_point(trace), block))


@functools.lru_cache(maxsize=32)
def explorer_json(point: Measured | None, block: int) -> str:
    """The explorer's Vega-Lite spec as JSON, for the trace measured at `point` (None: no trace) and the block
    slider starting at `block`."""
    measured = None if point is None else frame_at(point)
    title = ("'α = ' + format(alpha, '.2f') + ',   c = ' + format(c, '.2f') + ',   γ marked = ' + gamma + "
             "(block > 0 ? ',   block B = ' + block : '')")
    if measured is not None:   # the diamonds' numbers, once, on a line of their own: a label beside each would crowd
        title = f"[{title}, '◆ {measured['label'][0]}']"
    return alt.vconcat(curves(measured), plane(measured), spacing=40,
                       params=[p.param for p in explorer_params(*START, block)],
                       title=alt.TitleParams(alt.expr(title)), **vega_look(),
                       resolve=alt.Resolve(legend=alt.LegendResolveMap(color="independent"))).to_json()
