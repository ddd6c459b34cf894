"""The generated text as HTML, each piece marked by what decided it (see `trace.text_segments`)."""

from __future__ import annotations

import html

from specviz.charts.style import KINDS
from specviz.trace import Trace, text_segments

BOX = ("font-size: 1.35rem; line-height: 2.1; white-space: pre-wrap; word-break: break-word; "
       "font-family: ui-monospace, SFMono-Regular, Menlo, monospace;")


def token_span(piece: str, kind: str) -> str:
    """One piece of the output, marked as its kind. Its leading spaces stay outside the mark: a line that wraps
    there leaves no empty box at its end, and the word starts the next line whole."""
    style = KINDS[kind]
    word = piece.lstrip(" ") or piece   # a piece of spaces alone (indentation) keeps them: nothing else to mark
    lead = piece[: len(piece) - len(word)]
    # a newline breaks the line where the output has one; a rejected draft's is shown, struck through, in place
    text = html.escape(word).replace("\n", "↵" if kind == "rejected" else "↵<br>")
    icon = f"<sup>{style.icon}</sup>" if style.icon else ""
    return (f'{lead}<span class="tok tok-{kind}" title="{html.escape(style.label)}" style="color: {style.color}; '
            f'background: {style.background}; {style.css} border-radius: 3px; padding: 1px 0;">{text}{icon}</span>')


def colored_text(trace: Trace, show_rejected: bool = True) -> str:
    """HTML of the output: accepted, rejected (struck through), correction (boxed ↻), bonus (dashed box ★)."""
    spans = "".join(token_span(piece, kind) for piece, kind in text_segments(trace, show_rejected))
    return f'<div class="specviz-text" style="{BOX}">{spans or "&nbsp;"}</div>'


def legend() -> str:
    items = " &nbsp; ".join(f"{token_span('token', kind)} {html.escape(KINDS[kind].label)}" for kind in KINDS)
    return f'<div class="specviz-legend" style="font-size: 1.1rem; line-height: 2.2;">{items}</div>'
