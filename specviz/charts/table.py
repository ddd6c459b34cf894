"""SpecDec Table 16 as HTML: a Draft row and a Verify row per iteration, aligned by depth.

Before the bifurcation both rows hold the kept drafts; at the bifurcation (boxed) the Verify row
holds the verifier's own token; drafts and verifier tokens after it are discarded (struck through).
Spec-Verification keeps drafts the target ranks below its top-1 (within top-β and τ, Xia et al. eq. 8-9):
there the Verify row holds the target's top-1, as SpecDec's "outputs of the AR verification", marked.
A token tree is shown along its accepted path: the bifurcation lists every child tried there, and
a Branches row counts the children drafted at each depth of the path. A draft that came out of one
drafter pass (a parallel drafter's block) is marked "one pass" on its Draft row.
`paths` may override the recorded verdicts with a re-verification's (see `specviz.reverify`):
the verifier's token at a new bifurcation is then the target's top-1 there (Spec-Verification).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from specviz.charts.style import INK, KINDS, scrolling, show_token
from specviz.trace import Iteration, Trace
from specviz.tree import children, is_chain


@dataclass
class Cell:
    draft: list[str] | None   # drafted token(s) at this depth (several: siblings of a tree; None past the draft)
    verify: str | None        # verifier's token (None when the trace does not know it)
    state: str                # "kept" | "bifurcation" | "discarded" | "bonus" | "target" (no draft)
    branches: int = 1         # drafted children of the node before this depth


def iteration_cells(it: Iteration, path: list[int] | None = None) -> list[Cell]:
    """Cells along the accepted path, then the bifurcation (every child tried there), the first
    child's discarded continuation, or the bonus. `path` = the nodes kept under another rule
    (`specviz.reverify`); the recorded path by default.
    A run that ended on an accepted draft (end-of-sequence, or the token budget: the iteration has no final
    token) shows nothing after it: no bifurcation, no bonus."""
    recorded = it.path
    path = recorded if path is None else path
    ended = it.final is None and bool(recorded) and recorded[-1] in path
    if ended:
        path = path[: path.index(recorded[-1]) + 1]
    relaxed = path != recorded
    tree = children(it.parents)
    ranked = relaxed or any(d.rule == "spec" for d in it.drafts)   # a kept draft need not be the top-1

    def verifier(i: int) -> str:
        top = it.drafts[i].p_top
        return top.tokens[0] if ranked and top else it.drafts[i].token

    cells = [Cell([it.drafts[i].token], verifier(i), "kept", len(tree[it.parents[i]])) for i in path]
    if ended:
        return cells
    kids = tree.get(path[-1] if path else -1, [])
    if not kids:
        bonus = it.final.token if it.final is not None and not relaxed else None
        return [*cells, Cell(None, bonus, "bonus" if it.drafts else "target")]
    top1 = it.drafts[kids[0]].p_top.tokens[0] if it.drafts[kids[0]].p_top else None
    own = top1 if relaxed or it.final is None else it.final.token
    cells.append(Cell([it.drafts[k].token for k in kids], own, "bifurcation", len(kids)))
    node = kids[0]
    while node in tree:
        siblings, node = tree[node], tree[node][0]
        step = it.drafts[node]
        cells.append(Cell([step.token], step.p_top.tokens[0] if step.p_top else None, "discarded", len(siblings)))
    return cells


CELL_CSS = {
    "kept": f"background: {KINDS['accepted'].background}; color: {INK}; border-bottom: 3px solid #009E73;",
    "bifurcation": f"outline: 3px solid #D55E00; outline-offset: -3px; font-weight: 700; background: #fbe3d6; "
                   f"color: {INK};",
    "discarded": "text-decoration: line-through 2px; color: #777777;",
    "bonus": "outline: 2px dashed #0072B2; outline-offset: -3px; font-weight: 700; "
             f"background: {KINDS['bonus'].background}; color: {INK};",
    "target": "",   # the target's own step, no draft: plain, as on the other pages
}


OTHER_TOP1 = " font-style: italic; text-decoration: underline dotted 2px;"   # kept, though not the target's top-1


def _td(tokens: list[str] | str | None, state: str, row: str, other: bool = False) -> str:
    if tokens is None:
        return "<td></td>" if row == "draft" else '<td style="color: #999999;">?</td>'
    if isinstance(tokens, str):
        tokens = [tokens]
    css = CELL_CSS[state] + (" text-decoration: line-through 2px;" if state == "bifurcation" and row == "draft" else "")
    css += OTHER_TOP1 if other else ""
    title = ' title="the target\'s top-1 here; the draft above was kept within top-β and τ"' if other else ""
    mark = " ★" if state == "bonus" else ""
    return f'<td style="{css}"{title}>{" | ".join(html.escape(show_token(t)) for t in tokens)}{mark}</td>'


def draft_verify_table(trace: Trace, paths: list[list[int]] | None = None, limit: int | None = None) -> str:
    """The whole run as one HTML table (`limit` = first iterations only); a tree run also gets a
    Branches row: how many children were drafted at each depth of the path."""
    its = trace.iterations[:limit]
    grid = [iteration_cells(it, None if paths is None else paths[it.index]) for it in its]
    width = max((len(cells) for cells in grid), default=1)
    trees = any(not is_chain(it.parents) for it in its)
    head = "".join(f"<th>{i}</th>" for i in range(1, width + 1))
    rows = []
    for it, cells in zip(its, grid):
        pad = "<td></td>" * (width - len(cells))
        label = f'<th rowspan="{3 if trees else 2}" style="text-align: left; white-space: nowrap;">it. {it.index}</th>'
        draft = ('<th title="the whole block came out of one drafter pass">Draft<br>'
                 '<small style="color: #0072B2;">one pass</small></th>' if it.one_pass else "<th>Draft</th>")
        rows.append(f'<tr style="border-top: 2px solid #cccccc;">{label}{draft}'
                    + "".join(_td(c.draft, c.state, "draft") for c in cells) + pad + "</tr>")
        verify = (_td(c.verify, c.state, "verify", c.state == "kept" and [c.verify] != c.draft) for c in cells)
        rows.append("<tr><th>Verify</th>" + "".join(verify) + pad + "</tr>")
        if trees:
            rows.append('<tr style="opacity: 0.7;"><th>Branches</th>' + "".join(
                f"<td>{c.branches if c.draft else ''}</td>" for c in cells) + pad + "</tr>")
    # a row wider than the page's column scrolls sideways; drafts deeper than 4 get a smaller font that shows more of
    # a row at once (by the run's γ, so every table of one run has the same size, whatever its iterations accepted)
    size = "1.15rem" if trace.settings.gamma <= 4 else "0.95rem"
    return scrolling(f'<table class="specviz-table" style="font-size: {size}; '
                     'font-family: ui-monospace, monospace; border-collapse: separate; border-spacing: 4px 2px; '
                     f'white-space: nowrap;"><tr><th></th><th>depth</th>{head}</tr>{"".join(rows)}</table>')
