"""The linked trace view: the iteration timeline, the verdict map, the acceptance per draft position
and the accepted-length histogram as one Altair chart.

Brushing iterations on the timeline (`BRUSH`) filters the drafts and iterations of the two lower
pictures and aggregates them again in the browser (Vega transforms), so the opening of an answer
can be compared with its end without a page script run; the whole trace stays drawn as black ticks.
Clicking a cell of the verdict map selects its iteration (`PICK`): the app opens it in the inspector.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from specviz.charts.style import (
    FONT_SIZE,
    P_COLOR,
    TOKEN_MARKS,
    VERDICT_MARKS,
    VegaMark,
    show_token,
    vega_look,
    vega_marks,
    vega_per_mark,
)
from specviz.trace import Iteration, Trace

BRUSH, PICK = "brush", "pick"
WIDTH = 420   # with its axes, fits the page column at 1024 px with the sidebar open
ROOMY = 30  # iterations: up to this many, cells (16 px or more) are wide enough for outlines and ✓ ✗ · ↻ ★


def token_rows(trace: Trace) -> pd.DataFrame:
    """The timeline's segments: per iteration its accepted drafts, and its final token (correction,
    bonus or plain target step) on top."""
    rows = []
    for it in trace.iterations:
        final = [(it.final.kind, 1)] if it.final is not None else []
        y = 0
        for kind, n in [("accepted", it.accepted), *final]:
            if n:
                rows.append({"iteration": it.index, "kind": kind, "tokens": n, "y0": y, "y1": y + n,
                             "glyph": TOKEN_MARKS[kind].glyph})
                y += n
    return pd.DataFrame(rows, columns=["iteration", "kind", "tokens", "y0", "y1", "glyph"])


def depth_rows(it: Iteration) -> list[dict]:
    """One row per depth of an iteration's draft (a chain's positions; a tree's levels): accepted
    when the accepted path reaches it, rejected when its tested children all failed, never tested
    otherwise. The token is the path's node, or the children tried at the stopping depth."""
    rows = []
    for depth in range(1, max((d.position for d in it.drafts), default=0) + 1):
        nodes = [d for d in it.drafts if d.position == depth]
        verdicts = {d.verdict for d in nodes}
        verdict = next(v for v in ("accepted", "rejected", "unverified") if v in verdicts)
        shown = [d for d in nodes if d.verdict == verdict][:3]
        rows.append({"iteration": it.index, "position": depth, "verdict": verdict,
                     "token": " | ".join(show_token(d.token) for d in shown), "tested": depth <= it.evaluated,
                     "kept": int(depth <= it.accepted), "glyph": VERDICT_MARKS[verdict].glyph})
    return rows


def draft_rows(trace: Trace) -> pd.DataFrame:
    """One row per drafted depth (see `depth_rows`): its verdict, whether its test decided anything
    (`tested`: accepted or the first rejection, as `Trace.summary` counts α̂) and whether it was kept."""
    return pd.DataFrame([row for it in trace.iterations for row in depth_rows(it)],
                        columns=["iteration", "position", "verdict", "token", "tested", "kept", "glyph"])


def iteration_rows(trace: Trace) -> pd.DataFrame:
    """One row per iteration: the tokens it emitted (its accepted length, correction or bonus included)."""
    return pd.DataFrame([{"iteration": it.index, "emitted": len(it.emitted_ids)} for it in trace.iterations],
                        columns=["iteration", "emitted"])


def iteration_domain(trace: Trace) -> list[float]:
    """From the first iteration's start to the last one's end (each spans 0.9)."""
    its = trace.iterations
    return [its[0].index, its[-1].index + 0.9] if its else [0, 0.9]


def iteration_axis(trace: Trace) -> dict:
    """Iteration i is drawn over [i, i + 0.9], alike in the timeline and the verdict map; its tick
    and label sit at the middle of that span."""
    lo, hi = iteration_domain(trace)
    return {"title": "iteration", "scale": alt.Scale(domain=[lo, hi], nice=False, zero=False),
            "axis": alt.Axis(format="d", tickMinStep=1, tickOffset=0.45 * WIDTH / (hi - lo))}


def cells(data: alt.Chart, roomy: bool, along: dict, field: str, marks: dict[str, VegaMark], y: alt.Y,
          glyph_y: alt.Y, cursor: str, **encodings) -> list[alt.Chart]:
    """A rect per row from `iteration` to `iteration + 0.9`, drawn by `marks`; when `roomy`, outlined
    and with the row's glyph written in it."""
    dash = vega_per_mark(field, {kind: list(m.dash) for kind, m in marks.items()})
    rects = data.transform_calculate(end="datum.iteration + 0.9").mark_rect(
        strokeWidth=2 if roomy else 0, strokeDash=dash, cursor=cursor).encode(
        x=alt.X("iteration:Q", **along), x2="end:Q", y=y, **vega_marks(field, marks, field), **encodings)
    if not roomy:
        return [rects]
    ink = vega_per_mark(field, {kind: m.ink for kind, m in marks.items()})
    glyphs = data.transform_filter("datum.glyph != ''").transform_calculate(
        centre="datum.iteration + 0.45").mark_text(fontSize=FONT_SIZE, fontWeight="bold", fill=ink).encode(
        x=alt.X("centre:Q", **along), y=glyph_y, text="glyph:N")
    return [rects, glyphs]


def timeline(trace: Trace, along: dict, brush: alt.Parameter) -> alt.LayerChart:
    """Tokens each iteration emitted, stacked by kind; drag across it to brush a range of iterations."""
    data = alt.Chart(token_rows(trace)).transform_calculate(middle="(datum.y0 + datum.y1) / 2")
    tokens = alt.Y("y0:Q", title="tokens emitted", axis=alt.Axis(format="d", tickMinStep=1))
    rects, *glyphs = cells(data, len(trace.iterations) <= ROOMY, along, "kind", TOKEN_MARKS, tokens,
                           alt.Y("middle:Q"), "crosshair", y2="y1:Q",
                           tooltip=["iteration:Q", alt.Tooltip("kind:N", title="token"), "tokens:Q"])
    return alt.layer(rects.add_params(brush), *glyphs).properties(
        title=["Tokens per iteration:", "drag across it to choose iterations"], width=WIDTH, height=170)


def verdict_map(trace: Trace, drafts: pd.DataFrame, along: dict, brush: alt.Parameter,
                pick: alt.Parameter) -> alt.LayerChart:
    """Iteration × draft position: accepted, rejected or never tested; click a cell to inspect its iteration."""
    gamma = max([trace.settings.gamma, *drafts["position"]])
    y = alt.Y("position:O", title="draft position", scale=alt.Scale(domain=list(range(1, gamma + 1))))
    rects, *glyphs = cells(alt.Chart(drafts), len(trace.iterations) <= ROOMY, along, "verdict", VERDICT_MARKS, y, y,
                           "pointer", tooltip=["iteration:Q", "position:Q", "token:N", "verdict:N"])
    return alt.layer(rects.add_params(pick), *glyphs, *veil_outside(brush, along, iteration_domain(trace))).properties(
        title="Verdicts: click a cell to open its iteration", width=WIDTH, height=min(240, 34 * gamma))


def veil_outside(brush: alt.Parameter, along: dict, domain: list[int]) -> list[alt.Chart]:
    """Pale the iterations outside the brush with two rects: cheap to redraw, where a condition on
    every cell's opacity made each brush move repaint a thousand cells."""
    lo, hi = domain
    chosen = f"{brush.name}.iteration"

    def edge(expr: str) -> alt.DatumChannelMixin:
        return alt.datum(alt.expr(expr), type="quantitative", **along)

    veil = alt.Chart().mark_rect(color="#ffffff", opacity=0.7)
    return [veil.encode(x=edge(f"{lo}"), x2=alt.X2Datum(alt.expr(f"{chosen} ? {chosen}[0] : {lo}"))),
            veil.encode(x=edge(f"{chosen} ? {chosen}[1] : {hi}"), x2=alt.X2Datum(alt.expr(f"{hi}")))]


def selection_note(chart: alt.Chart, text: str) -> alt.Chart:
    """A line of text at the picture's top right, computed from the brushed rows."""
    return chart.transform_calculate(label=text).mark_text(
        align="right", baseline="top", fontSize=FONT_SIZE - 2).encode(x=alt.value(WIDTH // 2 - 40), y=alt.value(0),
                                                                      text="label:N")


def position_acceptance(drafts: pd.DataFrame, brush: alt.Parameter) -> alt.LayerChart:
    """P(position i accepted | positions before it accepted) over the brushed iterations, the whole
    trace as black ticks, and the brushed iterations' α̂ = accepted / tested drafts. The axis stays
    put while the brush moves (with room above for the note)."""
    tested = alt.Chart(drafts).transform_filter("datum.tested")
    chosen = tested.transform_filter(brush)
    x = alt.X("position:O", title="draft position", axis=alt.Axis(labelAngle=0))
    y = alt.Y("rate:Q", title="acceptance rate", scale=alt.Scale(domain=[0, 1.15], nice=False),
              axis=alt.Axis(values=[0, 0.2, 0.4, 0.6, 0.8, 1]))
    return alt.layer(
        chosen.transform_aggregate(rate="mean(kept)", tested="count()", groupby=["position"]).mark_bar(
            color=VERDICT_MARKS["accepted"].fill).encode(x=x, y=y, tooltip=[
                "position:O", alt.Tooltip("rate:Q", format=".2f"), alt.Tooltip("tested:Q", title="drafts tested")]),
        tested.transform_aggregate(rate="mean(kept)", groupby=["position"]).mark_tick(
            color="#000000", thickness=4, stroke="#ffffff", strokeWidth=1.5).encode(x=x, y=y),
        selection_note(chosen.transform_aggregate(alpha="mean(kept)"), "'α̂ = ' + format(datum.alpha, '.2f')"),
    ).properties(title=["Acceptance", "per draft position"], width=WIDTH // 2 - 40, height=220)


def accepted_lengths(iterations: pd.DataFrame, brush: alt.Parameter) -> alt.LayerChart:
    """Share of the brushed iterations that emitted 1, 2, … tokens, the whole trace as black ticks,
    and the brushed iterations' mean accepted length."""
    top = int(iterations["emitted"].max()) if len(iterations) else 1
    x = alt.X("emitted:O", title="tokens emitted", scale=alt.Scale(domain=list(range(1, top + 1))),
              axis=alt.Axis(labelAngle=0))
    y = alt.Y("share:Q", title="share of iterations", scale=alt.Scale(domain=[0, 1.15], nice=False),
              axis=alt.Axis(format="%", values=[0, 0.2, 0.4, 0.6, 0.8, 1]))

    def shares(chart: alt.Chart) -> alt.Chart:
        return (chart.transform_aggregate(n="count()", groupby=["emitted"])
                .transform_joinaggregate(total="sum(n)").transform_calculate(share="datum.n / datum.total"))

    every = alt.Chart(iterations)
    chosen = every.transform_filter(brush)
    return alt.layer(
        shares(chosen).mark_bar(color=P_COLOR).encode(x=x, y=y, tooltip=[
            "emitted:O", alt.Tooltip("n:Q", title="iterations"), alt.Tooltip("share:Q", format=".0%")]),
        shares(every).mark_tick(color="#000000", thickness=4, stroke="#ffffff", strokeWidth=1.5).encode(x=x, y=y),
        selection_note(chosen.transform_aggregate(mean="mean(emitted)"),
                       "format(datum.mean, '.2f') + ' per iteration'"),
    ).properties(title="Accepted length", width=WIDTH // 2 - 40, height=220)


def linked_view(trace: Trace) -> alt.VConcatChart:
    """The four linked pictures of one trace; `BRUSH` lives in the browser, `PICK` is for the app."""
    brush = alt.selection_interval(name=BRUSH, encodings=["x"])
    pick = alt.selection_point(name=PICK, fields=["iteration"], on="click")
    drafts = draft_rows(trace)
    along = iteration_axis(trace)
    return alt.vconcat(
        timeline(trace, along, brush), verdict_map(trace, drafts, along, brush, pick),
        alt.hconcat(position_acceptance(drafts, brush), accepted_lengths(iteration_rows(trace), brush), spacing=40),
        spacing=28, **vega_look(),
        resolve=alt.Resolve(scale=alt.ScaleResolveMap(fill="independent", stroke="independent")))
