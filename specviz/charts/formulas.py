"""Leviathan et al.'s formulas as Vega expressions: `specviz.theory` rendered a second time, for the browser.

Each function takes the names the expression reads α, γ, c and the block B from (a param such as
`alpha`, or a field such as `datum.gamma`) and returns the expression's text. A chart computes it in a
`calculate` transform, so a slider bound to α, c or B redraws the chart without a round trip to the
server. tests/test_explorer.py evaluates these strings against `specviz.theory` on a grid.
"""

from __future__ import annotations


def expected_tokens(alpha: str, gamma: str) -> str:
    """E = (1 − α^(γ+1)) / (1 − α) (eq. 1), and its limit γ + 1 at α = 1."""
    return f"({alpha} < 1 ? (1 - pow({alpha}, {gamma} + 1)) / (1 - {alpha}) : {gamma} + 1)"


def expected_accepted_drafts(alpha: str, gamma: str) -> str:
    """α(1 − α^γ)/(1 − α), accepted drafts alone (no correction or bonus token), γ at α = 1."""
    return f"({alpha} < 1 ? {alpha} * (1 - pow({alpha}, {gamma})) / (1 - {alpha}) : {gamma})"


def drafted(gamma: str, block: str) -> str:
    """Tokens an iteration drafts: γ, or min(γ, B) for a parallel drafter of block B > 0 (`theory.drafted`)."""
    return f"({block} > 0 ? min({gamma}, {block}) : {gamma})"


def walltime_improvement(alpha: str, gamma: str, c: str, block: str) -> str:
    """S = (1 − α^(γ+1)) / ((1 − α)(γc + 1)) (theorem 3.8): E over the cost of γ drafter steps and one target step;
    for a parallel drafter of block B > 0, E(min(γ, B)) over one drafter step and one target step."""
    steps = f"({block} > 0 ? 1 : {gamma})"
    return f"({expected_tokens(alpha, drafted(gamma, block))} / ({steps} * {c} + 1))"
