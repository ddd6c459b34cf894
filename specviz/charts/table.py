"""SpecDec Table 16 as HTML: a Draft row and a Verify row per iteration, aligned by position.

Before the bifurcation both rows hold the kept drafts; at the bifurcation (boxed) the Verify row
holds the verifier's own token; drafts and verifier tokens after it are discarded (struck through).
`accepted` may override the recorded verdicts with a re-verification (see `specviz.reverify`):
the verifier's token at a new bifurcation is then the target's top-1 there (Spec-Verification).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from specviz.charts.style import KINDS, show_token
from specviz.trace import Iteration, Trace


@dataclass
class Cell:
    draft: str | None     # drafted token (None past the draft, at position γ+1)
    verify: str | None    # verifier's token (None when the trace does not know it)
    state: str            # "kept" | "bifurcation" | "discarded" | "bonus"


def iteration_cells(it: Iteration, accepted: int | None = None) -> list[Cell]:
    """Cells for positions 1..γ(+1); `accepted` = n kept drafts, the recorded one by default."""
    n = it.accepted if accepted is None else accepted
    relaxed = accepted is not None and accepted != it.accepted
    cells = []
    for i, step in enumerate(it.drafts):
        top1 = step.p_top.tokens[0] if step.p_top else None
        if i < n:
            cells.append(Cell(step.token, step.token, "kept"))
        elif i == n:
            own = top1 if relaxed or it.final is None else it.final.token
            cells.append(Cell(step.token, own, "bifurcation"))
        else:
            cells.append(Cell(step.token, top1, "discarded"))
    if n >= len(it.drafts):
        bonus = it.final.token if it.final is not None and not relaxed else None
        cells.append(Cell(None, bonus, "bonus" if it.drafts else "kept"))
    return cells


CELL_CSS = {
    "kept": f"background: {KINDS['accepted'].background}; border-bottom: 3px solid #009E73;",
    "bifurcation": "outline: 3px solid #D55E00; outline-offset: -3px; font-weight: 700; background: #fbe3d6;",
    "discarded": "text-decoration: line-through 2px; color: #777777;",
    "bonus": "outline: 2px dashed #0072B2; outline-offset: -3px; font-weight: 700; "
             f"background: {KINDS['bonus'].background};",
}


def _td(token: str | None, state: str, row: str) -> str:
    if token is None:
        return "<td></td>" if row == "draft" else '<td style="color: #999999;">?</td>'
    css = CELL_CSS[state] + (" text-decoration: line-through 2px;" if state == "bifurcation" and row == "draft" else "")
    mark = " ★" if state == "bonus" else ""
    return f'<td style="{css}">{html.escape(show_token(token))}{mark}</td>'


def draft_verify_table(trace: Trace, accepted: list[int] | None = None, limit: int | None = None) -> str:
    """The whole run as one HTML table (`limit` = first iterations only)."""
    its = trace.iterations[:limit]
    width = max((len(it.drafts) + 1 for it in its), default=1)
    head = "".join(f"<th>{i}</th>" for i in range(1, width + 1))
    rows = []
    for it in its:
        cells = iteration_cells(it, None if accepted is None else accepted[it.index])
        pad = "<td></td>" * (width - len(cells))
        label = f'<th rowspan="2" style="text-align: left; white-space: nowrap;">it. {it.index}</th>'
        rows.append(f'<tr style="border-top: 2px solid #cccccc;">{label}<th>Draft</th>'
                    + "".join(_td(c.draft, c.state, "draft") for c in cells) + pad + "</tr>")
        rows.append("<tr><th>Verify</th>" + "".join(_td(c.verify, c.state, "verify") for c in cells) + pad + "</tr>")
    return ('<div style="overflow-x: auto;"><table class="specviz-table" style="font-size: 1.15rem; '
            'font-family: ui-monospace, monospace; border-collapse: separate; border-spacing: 4px 2px; '
            'white-space: nowrap;">'
            f"<tr><th></th><th>position</th>{head}</tr>{''.join(rows)}</table></div>")
