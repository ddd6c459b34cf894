"""One palette and one set of marks for every picture, readable on a projector and in grey.

Colours are the Okabe-Ito colour-blind-safe set; every token kind also has a mark that is not a
hue (strike-through, outline, underline, icon), so a grey projector still tells them apart.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    "correction": KindStyle("correction (drawn after a rejection)", "#7a4b00", "#fdebc8",
                            "outline: 2px solid #E69F00; font-weight: 700;", "↻", "/"),
    "bonus": KindStyle("bonus token (all drafts accepted)", "#004f80", "#d6e9f6",
                       "outline: 2px dashed #0072B2; font-weight: 700;", "★", "."),
    "target": KindStyle("target step (no draft)", "#333333", "transparent", "", "", ""),
}

# Bars and lines.
PHASES = {"draft": "#56B4E9", "verify": "#0072B2", "sample": "#E69F00"}
P_COLOR = "#0072B2"        # target distribution p
Q_COLOR = "#E69F00"        # draft distribution q
RESIDUAL_COLOR = "#CC79A7"
ACCEPT_COLOR = "#009E73"
REJECT_COLOR = "#D55E00"
NEUTRAL = "#999999"

FONT_SIZE = 18


def layout(fig: go.Figure, title: str, height: int = 420, **kwargs) -> go.Figure:
    """The shared look: large fonts, white background, legend under the plot (clear of all titles)."""
    margin = {"l": 60, "r": 20, "t": 80, "b": 60, **fig.layout.margin.to_plotly_json()}
    fig.update_layout(
        title={"text": title, "font": {"size": FONT_SIZE + 4}}, height=height, template="plotly_white",
        font={"size": FONT_SIZE}, margin=margin,
        legend={"orientation": "h", "yanchor": "top", "y": -0.22, "xanchor": "left", "x": 0},
        **kwargs)
    return fig


def show_token(token: str) -> str:
    """A token as a readable label: visible spaces and newlines."""
    return token.replace("\n", "↵").replace(" ", "␣") or "∅"


MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|$<>~")


def markdown_token(token: str) -> str:
    """`show_token`, escaped so a label rendered as Markdown shows the token itself."""
    return "".join("\\" + ch if ch in MARKDOWN_SPECIALS else ch for ch in show_token(token))
