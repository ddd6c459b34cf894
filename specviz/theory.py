"""Analytic speedup of speculative decoding (Leviathan et al. 2023, section 3).

With per-token acceptance rate α, draft length γ and cost coefficient c (one drafter step /
one target step):
  expected tokens per iteration   E = (1 - α^(γ+1)) / (1 - α)                 (eq. 1)
  expected walltime improvement   S = (1 - α^(γ+1)) / ((1 - α)(γc + 1))       (theorem 3.8)
Not to be confused with α(1 - α^γ)/(1 - α), the expected number of accepted *drafts*, which
leaves out the correction or bonus token every iteration also emits.

The γc in S prices one drafter step per drafted token. A parallel drafter (Stern et al. 2018's blockwise
heads, Medusa, SpecDec's Spec-Drafter) drafts its whole block of B positions in one pass, and no more
than B: for it an iteration drafts min(γ, B) tokens for one step, and
  S = (1 - α^(min(γ,B)+1)) / ((1 - α)(c + 1)),
which grows with γ up to B and is flat past it, so its optimal γ is B.
"""

from __future__ import annotations

from specviz.errors import SpecvizError


def _check(alpha: float, gamma: int, c: float = 0.0, block: int = 0) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise SpecvizError(f"alpha must be in [0, 1], got {alpha}")
    if gamma < 0:
        raise SpecvizError(f"gamma must be >= 0, got {gamma}")
    if c < 0:
        raise SpecvizError(f"c must be >= 0, got {c}")
    if block < 0:
        raise SpecvizError(f"block must be >= 0, got {block}")


def expected_tokens(alpha: float, gamma: int) -> float:
    """E = 1 + α + α² + ... + α^γ; the closed form divides by zero at α = 1, where E = γ + 1."""
    _check(alpha, gamma)
    if alpha == 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def drafted(gamma: int, block: int = 0) -> int:
    """Tokens an iteration drafts at draft length γ: γ, or min(γ, B) for a parallel drafter of block B."""
    return min(gamma, block) if block else gamma


def drafter_steps(gamma: int, block: int = 0) -> int:
    """Drafter passes an iteration costs: one a token, or one for a parallel drafter's whole block."""
    return min(gamma, 1) if block else gamma


def walltime_improvement(alpha: float, gamma: int, c: float, block: int = 0) -> float:
    """S = E / (γc + 1): one iteration costs γ drafter steps and one target step; a parallel drafter of
    block B (> 0) drafts min(γ, B) tokens in one step, S = E(min(γ, B)) / (c + 1)."""
    _check(alpha, gamma, c, block)
    return expected_tokens(alpha, drafted(gamma, block)) / (drafter_steps(gamma, block) * c + 1.0)


def optimal_gamma(alpha: float, c: float, max_gamma: int = 64, block: int = 0) -> int:
    """The γ in 1..max_gamma that maximises S (ties go to the smaller γ).

    α = 0 gives γ = 1 (drafting never pays; S < 1 for every γ > 0 unless c = 0);
    α = 1 with c = 0 gives max_gamma (every draft is accepted and free);
    a parallel drafter (block B > 0) gives min(B, max_gamma) for any α > 0.
    """
    _check(alpha, max_gamma, c, block)
    return max(range(1, max_gamma + 1), key=lambda g: (walltime_improvement(alpha, g, c, block), -g))
