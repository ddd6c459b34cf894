"""One palette and one set of marks for every picture, plotly or Altair, readable on a projector and in grey.

Colours are the Okabe-Ito colour-blind-safe set; every token kind also has a mark that is not a
hue (strike-through, outline, underline, icon; in Altair a fill's lightness, an outline's dash
and a glyph), so a grey projector still tells them apart.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import altair as alt
import plotly.graph_objects as go


@dataclass(frozen=True)
class KindStyle:
    label: str       # legend text
    color: str       # text / bar colour
    background: str  # token background
    css: str         # non-hue marks: decoration, border, weight
    icon: str        # glyph after the token ("" for none)
    pattern: str     # plotly bar pattern shape ("" for solid)


KINDS: dict[str, KindStyle] = {
    "accepted": KindStyle("accepted draft", "#00694d", "#d5f2e8", "border-bottom: 3px solid #009E73;", "", ""),
    "rejected": KindStyle("rejected draft (not in the output)", "#a8431a", "#fbe3d6",
                          "text-decoration: line-through 2px; opacity: 0.75;", "", "x"),
    "correction": KindStyle("correction (chosen by the target after a rejection)", "#7a4b00", "#fdebc8",
                            "outline: 2px solid #E69F00; font-weight: 700;", "↻", "/"),
    "bonus": KindStyle("bonus token (all drafts accepted)", "#004f80", "#d6e9f6",
                       "outline: 2px dashed #0072B2; font-weight: 700;", "★", "."),
    "target": KindStyle("target step (no draft)", "#333333", "#ececec", "", "", ""),
}

INK = "#262730"   # text on a background of our own (a dark theme's light text would vanish on it)

# Bars and lines.
PHASES = {"draft": "#56B4E9", "verify": "#0072B2", "sample": "#E69F00"}
P_COLOR = "#0072B2"        # target distribution p
Q_COLOR = "#E69F00"        # draft distribution q
RESIDUAL_COLOR = "#CC79A7"
ACCEPT_COLOR = "#009E73"
REJECT_COLOR = "#D55E00"
NEUTRAL = "#999999"

FONT_SIZE = 18


def layout(fig: go.Figure, title: str, height: int = 420, margin: dict | None = None, legend: dict | None = None,
           **kwargs) -> go.Figure:
    """The shared look: large fonts, white background, legend under the plot (clear of all titles); `margin` and
    `legend` change what a chart needs of them."""
    fig.update_layout(
        title={"text": title, "font": {"size": FONT_SIZE + 4}}, height=height, template="plotly_white",
        font={"size": FONT_SIZE}, margin={"l": 60, "r": 20, "t": 80, "b": 60, **(margin or {})},
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "xanchor": "left", "x": 0, **(legend or {})},
        **kwargs)
    # Streamlit's chart theme sizes ticks and legends itself (13.5 px on a projector): ours, unless a chart set its own.
    for axis in [*fig.select_xaxes(), *fig.select_yaxes()]:
        axis.tickfont.size = axis.tickfont.size or FONT_SIZE - 2
        axis.title.font.size = axis.title.font.size or FONT_SIZE
    fig.layout.legend.font.size = fig.layout.legend.font.size or FONT_SIZE - 2
    return fig


def range_bars(middles: list[float | None], lows: list[float | None], highs: list[float | None], color: str,
               thickness: int = 3, width: int = 10) -> dict:
    """Plotly's asymmetric error bars from each median to its rounds' min and max (none where one is unknown)."""
    known = [None not in (m, lo, hi) for m, lo, hi in zip(middles, lows, highs)]
    return {"type": "data", "symmetric": False, "thickness": thickness, "width": width, "color": color,
            "array": [hi - m if k else 0.0 for m, hi, k in zip(middles, highs, known)],
            "arrayminus": [m - lo if k else 0.0 for m, lo, k in zip(middles, lows, known)]}


def scrolling(table: str) -> str:
    """An HTML table that scrolls sideways where the page's column is narrower than it."""
    return f'<div style="overflow-x: auto;">{table}</div>'


def show_token(token: str) -> str:
    """A token as a readable label: visible spaces and newlines."""
    return token.replace("\n", "↵").replace(" ", "␣") or "∅"


MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|$<>~")


def markdown_escape(text: str) -> str:
    """Text that Markdown shows as it is."""
    return "".join("\\" + ch if ch in MARKDOWN_SPECIALS else ch for ch in text)


def markdown_token(token: str) -> str:
    """`show_token`, escaped so a label rendered as Markdown shows the token itself."""
    return markdown_escape(show_token(token))


@dataclass(frozen=True)
class VegaMark:
    """How an Altair chart draws one kind: apart from its hue, by lightness, outline dash and glyph."""
    fill: str
    stroke: str
    dash: tuple[int, ...]  # outline dash (empty: solid)
    glyph: str             # written in the mark when there is room ("" for none)
    ink: str = "#ffffff"   # the glyph's colour


# The tokens an iteration emitted, stacked. In grey: light (accepted; ACCEPT_COLOR at 40% on
# white), mid (correction), dark with a dashed outline (bonus), darkest (a plain target step).
TOKEN_MARKS: dict[str, VegaMark] = {
    "accepted": VegaMark("#99d8c7", ACCEPT_COLOR, (), ""),
    "correction": VegaMark(Q_COLOR, KINDS["correction"].color, (), KINDS["correction"].icon),
    "bonus": VegaMark(P_COLOR, "#000000", (5, 3), KINDS["bonus"].icon),
    "target": VegaMark(KINDS["target"].color, "#000000", (), ""),
}

# One drafted position's verdict. In grey: dark (accepted), mid (rejected), pale (never tested).
VERDICT_MARKS: dict[str, VegaMark] = {
    "accepted": VegaMark(KINDS["accepted"].color, "#000000", (), "✓"),
    "rejected": VegaMark(REJECT_COLOR, "#000000", (4, 2), "✗"),
    "unverified": VegaMark("#eeeeee", NEUTRAL, (2, 2), "·", "#000000"),
}


def vega_marks(field: str, marks: dict[str, VegaMark], title: str) -> dict[str, alt.FieldChannelMixin]:
    """Fill and outline encodings of `field` through `marks`, in one legend."""
    kind = f"{field}:N"
    domain = list(marks)
    return {"fill": alt.Fill(kind, scale=alt.Scale(domain=domain, range=[m.fill for m in marks.values()]),
                             title=title),
            "stroke": alt.Stroke(kind, scale=alt.Scale(domain=domain, range=[m.stroke for m in marks.values()]),
                                 title=title)}


def vega_per_mark(field: str, values: dict[str, object]) -> alt.ExprRef:
    """A mark property chosen by each mark's `field` (`values` by kind, the last one the default): the
    outline dash and the glyph colour, which Vega-Lite takes per mark but not as channels of a rect or text."""
    *choices, (_, default) = values.items()
    expr = json.dumps(default)
    for kind, value in reversed(choices):
        expr = f"datum.{field} === {json.dumps(kind)} ? {json.dumps(value)} : {expr}"
    return alt.expr(expr)


def vega_look() -> dict:
    """The shared look for Altair as top-level properties: the plotly pictures' large fonts, white
    background and legends below; sized by its content and a padding of its own (Streamlit would
    otherwise pad the bottom only, and a title's or axis label's overhang is cut)."""
    config = alt.Config(
        background="white", view=alt.ViewConfig(stroke=None),
        axis=alt.AxisConfig(labelFontSize=FONT_SIZE - 2, titleFontSize=FONT_SIZE, titleFontWeight="normal",
                            labelColor=INK, titleColor=INK, gridColor="#dddddd", domainColor="#888888",
                            tickColor="#888888"),
        legend=alt.LegendConfig(labelFontSize=FONT_SIZE - 2, titleFontSize=FONT_SIZE, orient="bottom",
                                direction="horizontal", symbolSize=220, symbolStrokeWidth=2, labelColor=INK,
                                titleColor=INK),
        title=alt.TitleConfig(fontSize=FONT_SIZE + 4, anchor="start", fontWeight="normal", offset=12, color=INK,
                              subtitleColor=INK),
        text=alt.MarkConfig(fontSize=FONT_SIZE - 2, color=INK))
    return {"autosize": alt.AutoSizeParams(type="pad", contains="padding"),
            "padding": {"left": 12, "top": 12, "right": 12, "bottom": 20}, "config": config}


# Vega renders a chart's sliders as plain HTML under it; sized here for a projector (over Streamlit's own rules).
VEGA_BINDINGS_CSS = """<style>
.vega-bindings { flex-wrap: wrap !important; gap: 0.5rem 2.5rem !important; margin-top: 0.5rem; }
.vega-bind label span { font-size: 1.15rem !important; }
.vega-bind .vega-bind-name { display: inline-block !important; min-width: 15rem !important; }
.vega-bind input[type=range] { width: 14rem !important; }
.vega-bind input[type=checkbox] { width: 1.3rem; height: 1.3rem; }
</style>"""
