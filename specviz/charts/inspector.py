"""Pictures of one iteration, straight from its records: p vs q, the acceptance test, the
residual a rejected position is resampled from, and the bonus token's distribution."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from specviz.charts.style import (
    ACCEPT_COLOR,
    KINDS,
    NEUTRAL,
    P_COLOR,
    Q_COLOR,
    REJECT_COLOR,
    RESIDUAL_COLOR,
    VERDICT_MARKS,
    layout,
    markdown_escape,
    markdown_token,
    show_token,
)
from specviz.charts.tree import node_labels, node_test, ratio_text
from specviz.settings import rule_name
from specviz.trace import DraftStep, FinalToken, Iteration, TopK

VERDICT_COLORS = {"accepted": ACCEPT_COLOR, "rejected": REJECT_COLOR, "unverified": NEUTRAL}
# The verdict written right of the plot, where no bar or u can cover it: a glyph, and bold / struck / italic words.
VERDICT_LABELS = {"accepted": f"<b>{VERDICT_MARKS['accepted'].glyph} accepted</b>",
                  "rejected": f"{VERDICT_MARKS['rejected'].glyph} <s>rejected</s>",
                  "unverified": f"<i>{VERDICT_MARKS['unverified'].glyph} unverified</i>"}
VERDICT_INK = {"accepted": KINDS["accepted"].color, "rejected": KINDS["rejected"].color, "unverified": "#555555"}
MARK = {"color": "#000000", "width": 4}
RULE_TESTS = {"greedy": "x̃ must be argmax p", "spec": "x̃ in p's top-β, within τ of its top-1",
              "sampling": "accept while u ≤ min(1, p/q)"}


def _known(top: TopK | None) -> dict[int, float]:
    """Recorded probabilities by token id; zeros (e.g. a one-hot q's filler) are left out."""
    return {i: v for i, v in zip(top.ids, top.probs) if v > 0} if top is not None else {}


def pq_bars(step: DraftStep) -> go.Figure:
    """p(x) and q(x) side by side over the union of their recorded top tokens.

    The drafted token x̃ is outlined and labelled; a missing bar means "not in that top-k".
    """
    p, q = _known(step.p_top), _known(step.q_top)
    p[step.token_id], q[step.token_id] = step.p, step.q
    names = {i: t for top in (step.p_top, step.q_top) if top for i, t in zip(top.ids, top.tokens)}
    names[step.token_id] = step.token
    ids = sorted(set(p) | set(q), key=lambda i: (-p.get(i, 0.0), -q.get(i, 0.0)))
    labels = [show_token(names[i]) + (" ◀" if i == step.token_id else "") for i in ids]   # the title names it
    line = [MARK if i == step.token_id else {"width": 0} for i in ids]
    fig = go.Figure()
    for name, values, color in (("p (target)", p, P_COLOR), ("q (drafter)", q, Q_COLOR)):
        fig.add_bar(x=labels, y=[values.get(i) for i in ids], name=name, marker_color=color,
                    marker_line_color=[m.get("color", color) for m in line],
                    marker_line_width=[m["width"] for m in line])
    fig.update_layout(barmode="group", yaxis_title="probability", xaxis_tickangle=-35)
    ratio = f"  p/q={r}" if (r := ratio_text(step)) else ""
    # two lines, each short enough for a 500 px chart (a 1024 px screen with the sidebar open)
    title = f"Position {step.position}: drafted '{show_token(step.token)}'<br>p={step.p:.3g}  q={step.q:.3g}{ratio}"
    # Rotated token labels fill the space under the plot: the legend goes above it, on the right.
    return layout(fig, title, height=490, margin={"t": 140, "b": 110},
                  legend={"y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"})


def acceptance_test(iteration: Iteration) -> go.Figure:
    """One row per drafted node (its depth, and a letter for a tree's nodes of one depth): the bar is
    min(1, p/q), the diamond is u; accept when u ≤ bar. The verdict is written right of the plot, so a
    bar of any width and the diamond leave it readable.

    Leviathan et al., Algorithm 1. For the greedy and Spec-Verification rules (no u) the bar shows
    p(x̃) and the verdict comes from the rule. A tree's sibling tried after a rejected one was tested
    against what that rejection left, p′: its recorded ratio, and so its bar, is p′/q
    (`charts.tree.node_test` says it in words).
    """
    steps = iteration.drafts
    labels = [f"{name}: {show_token(s.token)}" for name, s in zip(node_labels(iteration), steps)]
    lossless = any(s.u is not None for s in steps)
    bars = [min(1.0, s.ratio if s.ratio is not None else 1.0) if lossless else s.p for s in steps]
    fig = go.Figure()
    fig.add_bar(y=labels, x=bars, orientation="h", name="min(1, p/q)" if lossless else "p(x̃)",
                marker_color=[VERDICT_COLORS[s.verdict] for s in steps],
                marker_pattern_shape=["" if s.verdict == "accepted" else "x" if s.verdict == "rejected" else "."
                                      for s in steps])
    fig.update_layout(annotations=[   # at once: plotly copies every earlier one on each add_annotation
        {"x": 1, "xref": "paper", "xanchor": "left", "xshift": 12, "y": label, "yref": "y", "showarrow": False,
         "text": VERDICT_LABELS[s.verdict], "font": {"color": VERDICT_INK[s.verdict]}}
        for label, s in zip(labels, steps)])
    if lossless:   # an unverified position's u was never compared with anything: no diamond
        fig.add_scatter(y=labels, x=[None if s.verdict == "unverified" else s.u for s in steps], mode="markers",
                        name="u ~ U(0, 1)",
                        marker={"symbol": "diamond", "size": 18, "color": "#000000", "line": {"color": "white",
                                                                                           "width": 2}})
    fig.update_xaxes(range=[0, 1.02], title_text="probability" if lossless else
                     "p(x̃): the target's probability of the drafted token")
    fig.update_yaxes(autorange="reversed", title_text="depth: drafted token")
    rows = 60 * max(1, len(steps))
    rule = steps[0].rule if steps else ""
    return layout(fig, "Acceptance test: accept while u ≤ min(1, p/q)" if lossless else
                  f"Acceptance test, {rule_name(rule)}: {RULE_TESTS[rule]}" if steps else "Acceptance test",
                  height=180 + rows, margin={"r": 170, "b": 100},
                  legend={"y": -60 / rows},   # below the axis title, whatever the number of rows
                  showlegend=lossless)   # a lone bar's legend would repeat the axis


def residual_bars(step: DraftStep, sampled: FinalToken | None) -> go.Figure:
    """max(0, p − q) over its recorded top tokens before and after normalising, sampled token marked.

    The mass before normalising is 1 − Σ min(p, q): the probability this position was rejected.
    """
    top = step.residual_top
    mass = step.residual_mass or 0.0
    labels = [show_token(t) + (" ◀ sampled" if sampled and i == sampled.token_id else "")
              for i, t in zip(top.ids, top.tokens)]
    line = [MARK["width"] if sampled and i == sampled.token_id else 0 for i in top.ids]
    fig = make_subplots(rows=1, cols=2, shared_xaxes=False, subplot_titles=(
        f"max(0, p − q)  (mass {mass:.3f})", "norm(max(0, p − q))  (sums to 1)"))
    fig.add_bar(x=labels, y=[v * mass for v in top.probs], marker_color=RESIDUAL_COLOR, name="before normalising",
                marker_line_width=line, marker_line_color="#000000", marker_pattern_shape="/", row=1, col=1)
    fig.add_bar(x=labels, y=top.probs, marker_color=RESIDUAL_COLOR, name="after normalising",
                marker_line_width=line, marker_line_color="#000000", row=1, col=2)
    fig.update_xaxes(tickangle=-35)
    token = show_token(sampled.token) if sampled else "?"
    return layout(fig, f"Residual at position {step.position}:<br>the correction '{token}' is drawn from it",
                  height=490, margin={"t": 110, "b": 110}, showlegend=False)


def final_bars(final: FinalToken) -> go.Figure:
    """The distribution the bonus (or plain target) token was drawn from, the drawn token marked; a greedy
    rule's token is not drawn but taken as p's most likely."""
    top = final.top
    greedy = final.sampled_from == "argmax p"
    mark = " ◀ argmax" if greedy else " ◀ sampled"
    labels = [show_token(t) + (mark if i == final.token_id else "") for i, t in zip(top.ids, top.tokens)]
    fig = go.Figure()
    fig.add_bar(x=labels, y=top.probs, marker_color=P_COLOR, name=f"p ({final.sampled_from})",
                marker_line_width=[MARK["width"] if i == final.token_id else 0 for i in top.ids],
                marker_line_color="#000000")
    how = "taken as" if greedy else "drawn from"
    return layout(fig, f"{final.kind.capitalize()} token '{show_token(final.token)}' {how} {final.sampled_from}",
                  margin={"b": 110}, yaxis_title="probability", xaxis_tickangle=-35)


def iteration_heading(iteration: Iteration) -> str:
    """The inspector's heading (Markdown): what the iteration drafted, kept and emitted last."""
    final = iteration.final
    outcome = "no token (stopped at EOS or the token budget)" if final is None else \
        f"{final.kind} token '{markdown_token(final.token)}' (from {final.sampled_from})"
    return f"Iteration {iteration.index}: drafted {iteration.drafted}, accepted {iteration.accepted}, then {outcome}"


def phase_caption(iteration: Iteration, rule: str) -> str:
    """The rule and the iteration's three phases' times."""
    return (f"rule: {rule_name(rule)}  ·  draft {iteration.draft_time * 1000:.1f} ms  ·  verify "
            f"{iteration.verify_time * 1000:.1f} ms  ·  sample {iteration.sample_time * 1000:.1f} ms")


def node_names(iteration: Iteration) -> list[str]:
    """Each drafted node's tab name (Markdown): its label, token and verdict mark."""
    mark = {"accepted": "✓", "rejected": "✗", "unverified": "·"}
    return [f"{name}: {markdown_token(d.token)} {mark[d.verdict]}"
            for name, d in zip(node_labels(iteration), iteration.drafts)]


def node_note(iteration: Iteration, node: int) -> str:
    """Drafted node's test in words (Markdown); for a node tested by a rule that draws no u, the chance a
    draft sampled from q would have passed lossless sampling's test there, Σ min(p, q)."""
    draft = iteration.drafts[node]
    ruled = draft.u is None and draft.verdict != "unverified"
    beta = (f"  ·  a draft sampled from q here passes lossless sampling's test with probability "
            f"Σ min(p, q) = {draft.beta:.3f}" if ruled else "")
    return f"**{markdown_escape(node_test(iteration, node))}**{beta}"
