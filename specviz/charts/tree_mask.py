"""The attention mask of one verify pass: which earlier positions each fed position may read.

A verify pass feeds the last committed token (the root) and every drafted node at once. Row i is
the query of one fed position, column j a key; a filled cell is a 0 in the additive mask, an empty
one the dtype's minimum (`specviz.tree.attention_mask`). A node reads the cached prefix, the root,
its ancestors and itself, and sits at position id t + depth, so siblings share a position and its
logits equal those of feeding its path alone (SpecInfer's tree attention; Medusa and EAGLE verify
the same way). For a chain the mask is the causal triangle. The picture is drawn from
`specviz.tree.visibility`, the function the decoder's mask is built with, with the whole cached
prefix folded into one column.
"""

from __future__ import annotations

import plotly.graph_objects as go

from specviz.charts.style import ACCEPT_COLOR, layout, show_token
from specviz.charts.tree import node_labels
from specviz.trace import Iteration
from specviz.tree import ancestry, is_chain, visibility

HIDDEN, SEEN, KEPT = 0, 1, 2   # a cell: masked out; read; read by a position whose draft was kept
COLORS = {HIDDEN: "#ffffff", SEEN: "#7f7f7f", KEPT: ACCEPT_COLOR}
CELL = 30   # pixels a row: the token names stay readable down the left
SMALL_TICKS = 24   # past this many fed positions the names get a smaller font
MAX_NODES = 64   # past this many drafted nodes the grid is too large to read: the page says so instead


def mask_cells(iteration: Iteration) -> list[list[int]]:
    """[1 + n][2 + n] cells (rows: root, nodes; columns: prefix, root, nodes), each HIDDEN, SEEN or KEPT:
    `visibility` with the prefix as one cached position and the root as the one committed token fed first."""
    seen = visibility(iteration.parents, past=1, lead=1).tolist()
    kept = {0} | {1 + i for i in iteration.path}   # the root and the accepted nodes, as rows
    return [[KEPT if cell and r in kept else SEEN if cell else HIDDEN for cell in row] for r, row in enumerate(seen)]


def _relation(row: int, col: int, above: list[list[bool]]) -> str:
    """Why row (0 root, 1 + i node i) may or may not read col (0 prefix, 1 root, 2 + i node i)."""
    if col == 0:
        return "every position reads it"
    if col == 1:
        return "the root (the last committed token)" if row else "itself"
    node, other = row - 1, col - 2
    if row == 0:
        return "a draft, fed after it"
    if node == other:
        return "itself"
    if above[node][other]:
        return "its ancestor"
    if above[other][node]:
        return "its descendant, fed after it"
    return "on another branch, not its path"


def tree_mask(iteration: Iteration, root: str) -> go.Figure:
    """The verify pass's attention mask as a grid: rows are the queries fed in this pass, columns the keys
    they may read; the accepted path's rows are green. Hover a cell for why it is read or masked."""
    names = [f"root: {show_token(root)}"] + [f"{label} {show_token(d.token)}"
                                             for label, d in zip(node_labels(iteration), iteration.drafts)]
    depth = [0] + [d.position for d in iteration.drafts]
    rows = [f"{name} (t+{k})" if k else f"{name} (t)" for name, k in zip(names, depth)]
    cols = ["cached prefix", *names]
    cells = mask_cells(iteration)
    above = ancestry(iteration.parents).tolist()
    hover = [[f"{rows[r]} {'reads' if v else 'may not read'} {cols[c]}: {_relation(r, c, above)}"
              for c, v in enumerate(line)] for r, line in enumerate(cells)]
    scale = [[0.0, COLORS[HIDDEN]], [1 / 3, COLORS[HIDDEN]], [1 / 3, COLORS[SEEN]], [2 / 3, COLORS[SEEN]],
             [2 / 3, COLORS[KEPT]], [1.0, COLORS[KEPT]]]
    fig = go.Figure(go.Heatmap(z=cells, x=list(range(len(cols))), y=list(range(len(rows))), zmin=-0.5,
                               zmax=2.5, colorscale=scale, showscale=False, xgap=2, ygap=2, hoverinfo="text",
                               text=hover, name="mask"))
    tick = 12 if len(rows) > SMALL_TICKS else None
    fig.update_xaxes(tickvals=list(range(len(cols))), ticktext=cols, tickangle=-45, showgrid=False,
                     tickfont={"size": tick} if tick else None)
    fig.update_yaxes(tickvals=list(range(len(rows))), ticktext=rows, autorange="reversed", showgrid=False,
                     tickfont={"size": tick} if tick else None, title="fed position")
    kind = "causal" if is_chain(iteration.parents) else "tree"
    return layout(fig, f"Iteration {iteration.index}: {kind} attention in the verify pass",
                  height=220 + CELL * len(rows), margin={"t": 60, "l": 160, "b": 140}, plot_bgcolor="#eeeeee")


def mask_note(iteration: Iteration) -> str:
    """The mask in words, with this iteration's numbers."""
    n, kept = len(iteration.drafts), len(iteration.path)
    fed = f"One forward pass feeds {n + 1} positions: the last committed token (the root, at position t) and " \
          f"{n} drafted {'node' if n == 1 else 'nodes'}. A filled cell is attention allowed; an empty one is masked."
    if is_chain(iteration.parents):
        return (f"{fed} In a chain each draft reads every draft before it: the usual causal mask, so one pass "
                f"scores all {n} at once. Green rows are the root's and the {kept} kept drafts'.")
    return (f"{fed} A node at depth d sits at position t+d and reads the prefix, the root, its ancestors and "
            f"itself, never a sibling's branch: siblings share a position, and each node's p is what the target "
            f"would give its path fed alone. Green rows are the root's and the accepted path's ({kept} of {n}).")
