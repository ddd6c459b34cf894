"""The token tree of one iteration, and the residuals left as a node's children are rejected in turn.

The tree is laid out left to right by depth: the root is the last committed token, each drafted
node sits one column right of its parent, and every node is centred on its children (leaves take
one row each, in the drafter's order). The accepted path is drawn thick and filled dark, rejected
nodes are struck through with ✗, never-reached nodes are grey, and the iteration's final token
(↻ correction or ★ bonus) ends the accepted path as one more child.

Under the lossless rule a node's children are tried one at a time (SpecInfer's multi-step
speculative sampling): after a rejection the target's p is replaced by norm(max(0, p' − q)), and
the next sibling is tested against what is left. `residual_sequence` draws that sequence.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.style import ACCEPT_COLOR, KINDS, NEUTRAL, P_COLOR, REJECT_COLOR, RESIDUAL_COLOR, layout, show_token
from specviz.settings import rule_name
from specviz.trace import DraftStep, Iteration, TopK, Trace
from specviz.tree import children, is_chain

ROOT = -1
ROW_HEIGHT = 64  # pixels per leaf: room for an 18 px label in its box
CROWDED_ROW_HEIGHT = 42  # per leaf beyond 12 leaves, so a big tree still fits a projector's screen or two
# Labels share the plot's width, about 460 px in the app's page at 1024 px with the sidebar open, one column per
# depth. The font shrinks (to no less than MIN_FONT) until the labels that tell the iteration (the root, the
# accepted path, the final token: `STORY`) fit their column with their box's padding and border. A label still too
# long there drops its glyph (its box's colours and strike-through still say what it is); one off that path is
# then cut short with "…" (its node's hover has it whole), so the nodes that were never kept never crowd the rest.
PLOT_WIDTH = 460
LABEL_FONT = 18
MIN_FONT = 12
CHAR_WIDTH = 0.55   # a label character's width in ems: 0.50 measured in chromium at 11 px, bold a little wider
STORY = ("root", "accepted", "correction", "bonus", "target")


@dataclass(frozen=True)
class BoxStyle:
    """A node's box. In grey: dark fill and white bold text (accepted), light fill with a heavy
    outline and a glyph (rejected ✗ struck through, correction ↻, bonus ★), white and grey (never reached)."""
    fill: str
    ink: str
    border: str
    width: int
    glyph: str = ""
    bold: bool = False
    strike: bool = False


BOXES: dict[str, BoxStyle] = {
    "root": BoxStyle("#eeeeee", "#000000", "#000000", 2, bold=True),
    "accepted": BoxStyle(KINDS["accepted"].color, "#ffffff", "#000000", 2, "✓", bold=True),
    "rejected": BoxStyle(KINDS["rejected"].background, KINDS["rejected"].color, REJECT_COLOR, 3, "✗", strike=True),
    "unverified": BoxStyle("#ffffff", "#888888", "#bbbbbb", 1),
    "correction": BoxStyle(KINDS["correction"].background, "#000000", "#E69F00", 4, KINDS["correction"].icon,
                           bold=True),
    "bonus": BoxStyle(KINDS["bonus"].background, "#000000", P_COLOR, 4, KINDS["bonus"].icon, bold=True),
    "target": BoxStyle("#ffffff", "#000000", "#000000", 3, bold=True),
}

# Edges into a node, by the node's kind: (legend name, colour, width, dash).
EDGES: dict[str, tuple[str, str, float, str]] = {
    "accepted": ("accepted path", ACCEPT_COLOR, 6, "solid"),
    "rejected": ("tested and rejected", REJECT_COLOR, 2.5, "solid"),
    "unverified": ("never reached", NEUTRAL, 1.5, "dot"),
    "final": ("final token", P_COLOR, 4, "dash"),   # the target's own token; black would vanish on a dark theme
}


def node_labels(iteration: Iteration) -> list[str]:
    """Each node's short name: its depth, and a letter when its depth holds several nodes ("2b")."""
    counts: dict[int, int] = {}
    for d in iteration.drafts:
        counts[d.position] = counts.get(d.position, 0) + 1
    seen: dict[int, int] = {}
    labels = []
    for d in iteration.drafts:
        k = seen[d.position] = seen.get(d.position, 0) + 1
        letter = "" if counts[d.position] == 1 else chr(ord("a") + k - 1) if k <= 26 else f"#{k}"
        labels.append(f"{d.position}{letter}")
    return labels


def last_committed(trace: Trace, index: int) -> str:
    """The token the iteration drafted after: the previous iteration's last emitted token."""
    if index == 0:
        return "prompt"
    before = trace.iterations[index - 1]
    if before.final is not None:
        return before.final.token
    return before.drafts[before.path[-1]].token if before.path else "…"


def ratio_text(d: DraftStep) -> str | None:
    """The p/q a lossless test read for this draft ("∞" where q is 0), to 3 significant digits; None under the
    greedy rules, which test no ratio."""
    if d.rule != "sampling":
        return None
    return "∞" if d.ratio is None else f"{d.ratio:.3g}"


def tested_against(iteration: Iteration, node: int) -> DraftStep | None:
    """The rejected sibling whose residual this node was tested against (None: tested against p)."""
    siblings = children(iteration.parents)[iteration.parents[node]]
    before = [s for s in siblings[: siblings.index(node)] if iteration.drafts[s].verdict == "rejected"]
    return iteration.drafts[before[-1]] if before else None


def confidence_stop(iteration: Iteration, trace: Trace) -> str:
    """What the confidence stop did this iteration, in words ('' where it did nothing). A chain ends at the first
    node the drafter is unsure after; a tree leaves only that node unexpanded, and its other branches may reach
    the full depth. The depth allowed is the adaptive policy's choice where it chose one, else γ."""
    if not iteration.unsure:
        return ""
    gamma = iteration.choice.gamma if iteration.choice is not None else trace.settings.gamma
    why = (f"its most likely next token had probability below {trace.settings.draft_confidence:.2f} (the "
           "confidence stop)")
    if is_chain(iteration.parents):
        return f"The drafter stopped after {iteration.drafted} of γ = {gamma}: {why}."
    deepest = max((d.position for d in iteration.drafts), default=0)
    return (f"The drafter left a node unexpanded where {why}; its deepest branch reached depth {deepest} of "
            f"γ = {gamma}.")


def node_test(iteration: Iteration, node: int) -> str:
    """The node's test in words: what it was compared with and what came out (plain text)."""
    d = iteration.drafts[node]
    if d.verdict == "unverified":
        return "never reached: its parent was rejected, a sibling before it was accepted, or the run stopped"
    if d.u is None:
        return f"{d.verdict} by the {rule_name(d.rule)} rule"
    test = "≤" if d.verdict == "accepted" else ">"
    earlier = tested_against(iteration, node)
    name = "p" if earlier is None else "p′"
    where = "" if earlier is None else f" (p′: what was left after rejecting '{show_token(earlier.token)}')"
    bound = "?" if d.ratio is None else f"{min(1.0, d.ratio):.3f}"   # the ratio the test used (q = 1 if picked)
    if not d.sampled:
        return f"picked by rank (a one-hot q): u = {d.u:.3f} {test} {name}(x) = {bound} → {d.verdict}{where}"
    return f"u = {d.u:.3f} {test} min(1, {name}(x) / q(x)) = {bound} → {d.verdict}{where}"


def _escape(text: str) -> str:
    """Text for Plotly, which reads <b> and <br> but shows entities such as &quot; as they are written."""
    return html.escape(text, quote=False)


def _top_line(top: TopK | None) -> str:
    """A distribution's three most likely tokens, for a hover."""
    if top is None:
        return ""
    return ", ".join(f"'{show_token(t)}' {p:.2f}" for t, p in zip(top.tokens[:3], top.probs[:3]))


def _node_hover(iteration: Iteration, node: int, label: str) -> str:
    d = iteration.drafts[node]
    ratio = f"   p/q = {r}" if (r := ratio_text(d)) else ""
    lines = [f"<b>'{_escape(show_token(d.token))}'</b>  node {label}, depth {d.position}",
             f"p = {d.p:.3f}   q = {d.q:.3f}{ratio}",
             _escape(node_test(iteration, node)),
             f"rule: {rule_name(d.rule)}" + ("" if d.sampled else " · picked by rank, not sampled")]
    if d.residual_top is not None:
        lines.append(f"left after this rejection: mass {d.residual_mass or 0:.3f}; "
                     f"{_escape(_top_line(d.residual_top))}")
    return "<br>".join(lines)


@dataclass
class Box:
    key: int          # node index; ROOT; len(drafts) for the final token
    parent: int | None
    depth: int
    kind: str         # a key of BOXES
    text: str
    hover: str
    row: float = 0.0


def tree_boxes(iteration: Iteration, root: str = "") -> list[Box]:
    """The boxes of the picture, root first, with rows from a tidy layered layout."""
    labels, parents = node_labels(iteration), iteration.parents
    boxes = {ROOT: Box(ROOT, None, 0, "root", show_token(root) if root else "·",
                       "the last committed token: every drafted node continues from it")}
    for i, d in enumerate(iteration.drafts):
        boxes[i] = Box(i, parents[i], d.position, d.verdict, show_token(d.token), _node_hover(iteration, i, labels[i]))
    tree = children(parents)
    final = iteration.final
    if final is not None:
        end = iteration.path[-1] if iteration.path else ROOT
        source = {"residual": "the residual left after the last rejected sibling", "p": "p after the accepted path",
                  "argmax p": "argmax p after the accepted path"}.get(final.sampled_from, final.sampled_from)
        key = len(iteration.drafts)
        how = "taken as" if final.sampled_from == "argmax p" else "drawn from"
        boxes[key] = Box(key, end, boxes[end].depth + 1, final.kind, show_token(final.token),
                         f"<b>'{_escape(show_token(final.token))}'</b>  {final.kind} token<br>{how} "
                         f"{_escape(source)}" + (f"<br>{_escape(_top_line(final.top))}" if final.top else ""))
        tree.setdefault(end, []).append(key)
    rows = iter(range(len(boxes)))

    def place(key: int) -> float:
        """Leaves take the next row; a node sits halfway between its first and last child."""
        placed = [place(kid) for kid in tree.get(key, [])]
        boxes[key].row = (placed[0] + placed[-1]) / 2 if placed else next(rows)
        return boxes[key].row

    place(ROOT)
    return list(boxes.values())


def _padding(size: int) -> int:
    """A box's padding around its label: 6 px at the full size, less with a smaller font."""
    return max(3, size // 3)


def label_room(boxes: list[Box]) -> tuple[int, int]:
    """The labels' font size (`LABEL_FONT`, or less where the longest label of the `STORY` would run into the next
    depth's) and the characters a label may have at that size, its glyph counted."""
    column = PLOT_WIDTH / (max(b.depth for b in boxes) + 1.2)   # the x range runs half a column past each end

    def chars(size: int) -> int:   # what fits between the box's padding and borders (4 px at most)
        return int((column - 2 * _padding(size) - 8) / (CHAR_WIDTH * size))

    longest = max(len(b.text) + 2 * bool(BOXES[b.kind].glyph) for b in boxes if b.kind in STORY)
    size = next((s for s in range(LABEL_FONT, MIN_FONT, -1) if chars(s) >= longest), MIN_FONT)
    return size, chars(size)


def _box_note(box: Box, size: int, chars: int) -> dict:
    """The box drawn for a node: a plotly annotation at its place, styled by its kind (`BOXES`), in `chars`
    characters: without its glyph where that does not fit, and off the `STORY`, cut short with "…" where the token
    does not."""
    style = BOXES[box.kind]
    glyph = style.glyph if len(box.text) + 2 * bool(style.glyph) <= chars else ""
    whole = len(box.text) <= chars or box.kind in STORY
    text = _escape(box.text if whole else box.text[:max(1, chars - 1)] + "…")
    if style.strike:
        text = f"<s>{text}</s>"
    if style.bold:
        text = f"<b>{text}</b>"
    return {"x": box.depth, "y": box.row, "text": f"{text} {glyph}" if glyph else text,
            "showarrow": False, "bgcolor": style.fill, "bordercolor": style.border, "borderwidth": style.width,
            "borderpad": _padding(size), "font": {"color": style.ink, "size": size}, "captureevents": False}


def token_tree(iteration: Iteration, root: str = "") -> go.Figure:
    """One iteration's token tree, left to right by depth; hover a node for its p, q, u and rule.
    `root` is the last committed token's text (see `last_committed`)."""
    boxes = tree_boxes(iteration, root)
    by_key = {b.key: b for b in boxes}
    fig = go.Figure()
    for kind, (name, color, width, dash) in EDGES.items():
        xs: list[float | None] = []
        ys: list[float | None] = []
        for b in boxes:
            edge = "final" if b.kind in ("correction", "bonus", "target") else b.kind
            if b.parent is not None and edge == kind:
                xs += [by_key[b.parent].depth, b.depth, None]
                ys += [by_key[b.parent].row, b.row, None]
        if xs:
            fig.add_scatter(x=xs, y=ys, mode="lines", name=name, hoverinfo="skip",
                            line={"color": color, "width": width, "dash": dash})
    fig.add_scatter(x=[b.depth for b in boxes], y=[b.row for b in boxes], mode="markers", name="nodes",
                    showlegend=False, hovertext=[b.hover for b in boxes], hoverinfo="text",
                    marker={"size": 40, "color": "rgba(0, 0, 0, 0)"})
    size, chars = label_room(boxes)
    # all at once: add_annotation copies the whole list at every call
    fig.update_layout(annotations=[_box_note(b, size, chars) for b in boxes])
    deepest = max(b.depth for b in boxes)
    rows = max(b.row for b in boxes) + 1
    fig.update_xaxes(range=[-0.6, deepest + 0.6], tickvals=list(range(deepest + 1)),
                     ticktext=["root", *(str(d) for d in range(1, deepest + 1))], title_text="depth",
                     showgrid=False, zeroline=False)
    fig.update_yaxes(visible=False, range=[rows - 0.4, -0.6])
    shape = "chain" if is_chain(iteration.parents) else "tree"
    title = (f"Iteration {iteration.index}: the token {shape}, {len(iteration.drafts)} drafted, "
             f"{iteration.accepted} accepted")
    height = 190 + (ROW_HEIGHT if rows <= 12 else CROWDED_ROW_HEIGHT) * rows
    return layout(fig, title, height=int(height), margin={"l": 20, "b": 110},   # no y axis: its room goes to the depths
                  legend={"yref": "container", "y": 0, "yanchor": "bottom"}, hoverlabel={"font": {"size": 16}})


def rejection_points(iteration: Iteration) -> list[int]:
    """Nodes (ROOT for the root) with a rejected child whose residual was recorded, shallowest first."""
    points = []
    for parent, kids in children(iteration.parents).items():
        if any(iteration.drafts[k].verdict == "rejected" and iteration.drafts[k].residual_top for k in kids):
            points.append(parent)
    return sorted(points, key=lambda n: -1 if n == ROOT else iteration.drafts[n].position)


@dataclass
class Panel:
    title: str
    top: TopK
    token_id: int | None   # the token tried (or drawn) against this distribution
    mark: str              # "✗ tried", "✓ kept", "↻ drawn"


def residual_panels(iteration: Iteration, parent: int) -> list[Panel]:
    """The distributions the children of `parent` met in turn: p, then what was left after each
    rejected child; the last one is where the kept child or the correction came from."""
    kids = [k for k in children(iteration.parents).get(parent, []) if iteration.drafts[k].verdict != "unverified"]
    panels: list[Panel] = []
    top = iteration.drafts[kids[0]].p_top
    title = "p (target)"
    for k in kids:
        d = iteration.drafts[k]
        if top is None:
            break
        kept = d.verdict == "accepted"
        panels.append(Panel(f"{title}<br>tried '{show_token(d.token)}' {'✓' if kept else '✗'}", top, d.token_id,
                            "✓ kept" if kept else "✗ tried"))
        if kept or d.residual_top is None:
            return panels
        top, title = d.residual_top, f"left after '{show_token(d.token)}'<br>(mass {d.residual_mass or 0:.2f})"
    final = iteration.final
    ends_here = final is not None and final.kind == "correction" and all(
        iteration.drafts[k].verdict == "rejected" for k in kids)
    if ends_here and top is not None:
        panels.append(Panel(f"{title}<br>drew the correction '{show_token(final.token)}' ↻", top, final.token_id,
                            "↻ drawn"))
    return panels


def residual_sequence(iteration: Iteration, parent: int = ROOT) -> go.Figure:
    """p, then norm(max(0, p' − q)) after each rejected child of `parent` (SpecInfer, multi-step
    speculative sampling), then the correction drawn from the last one, or the child kept."""
    panels = residual_panels(iteration, parent)
    cols = min(2, len(panels))   # two side by side still read in a 500 px column
    rows = math.ceil(len(panels) / cols)
    fig = make_subplots(rows=rows, cols=cols, shared_yaxes=True, subplot_titles=[p.title for p in panels],
                        vertical_spacing=0.4 / rows, horizontal_spacing=0.06)
    for n, panel in enumerate(panels):
        marked = [i == panel.token_id for i in panel.top.ids]
        color = P_COLOR if n == 0 else RESIDUAL_COLOR
        fig.add_bar(x=[show_token(t) + (f" {panel.mark}" if m else "") for t, m in zip(panel.top.tokens, marked)],
                    y=panel.top.probs, name=panel.title, marker_color=color,
                    marker_pattern_shape=["x" if m and panel.mark.startswith("✗") else "" for m in marked],
                    marker_line_color="#000000", marker_line_width=[4 if m else 0 for m in marked],
                    row=n // cols + 1, col=n % cols + 1)
    fig.update_xaxes(tickangle=-35)
    fig.update_yaxes(range=[0, 1], title_text="probability", col=1)
    fig.update_annotations(font_size=15)
    where = "the root" if parent == ROOT else f"'{show_token(iteration.drafts[parent].token)}'"
    return layout(fig, f"Children of {where} tried in turn:<br>what is left after each rejection",
                  height=150 + 380 * rows, margin={"t": 150, "b": 110}, showlegend=False)
