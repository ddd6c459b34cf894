"""Analytic speedup of speculative decoding (Leviathan et al. 2023, section 3).

With per-token acceptance rate α, draft length γ and cost coefficient c (one drafter step /
one target step):
  expected tokens per iteration   E = (1 - α^(γ+1)) / (1 - α)                 (eq. 1)
  expected walltime improvement   S = (1 - α^(γ+1)) / ((1 - α)(γc + 1))       (theorem 3.8)
Not to be confused with α(1 - α^γ)/(1 - α), the expected number of accepted *drafts*, which
leaves out the correction or bonus token every iteration also emits.
"""

from __future__ import annotations

from specviz.errors import SpecvizError


def _check(alpha: float, gamma: int, c: float = 0.0) -> None:
    if not 0.0 <= alpha <= 1.0:
        raise SpecvizError(f"alpha must be in [0, 1], got {alpha}")
    if gamma < 0:
        raise SpecvizError(f"gamma must be >= 0, got {gamma}")
    if c < 0:
        raise SpecvizError(f"c must be >= 0, got {c}")


def expected_tokens(alpha: float, gamma: int) -> float:
    """E = 1 + α + α² + ... + α^γ; the closed form divides by zero at α = 1, where E = γ + 1."""
    _check(alpha, gamma)
    if alpha == 1.0:
        return float(gamma + 1)
    return (1.0 - alpha ** (gamma + 1)) / (1.0 - alpha)


def expected_accepted_drafts(alpha: float, gamma: int) -> float:
    """α(1 - α^γ)/(1 - α): accepted drafts alone, E - 1."""
    return expected_tokens(alpha, gamma) - 1.0


def walltime_improvement(alpha: float, gamma: int, c: float) -> float:
    """S = E / (γc + 1): one iteration costs γ drafter steps and one target step."""
    _check(alpha, gamma, c)
    return expected_tokens(alpha, gamma) / (gamma * c + 1.0)


def optimal_gamma(alpha: float, c: float, max_gamma: int = 64) -> int:
    """The γ in 1..max_gamma that maximises S (ties go to the smaller γ).

    α = 0 gives γ = 1 (drafting never pays; S < 1 for every γ > 0 unless c = 0);
    α = 1 with c = 0 gives max_gamma (every draft is accepted and free).
    """
    _check(alpha, max_gamma, c)
    return max(range(1, max_gamma + 1), key=lambda g: (walltime_improvement(alpha, g, c), -g))
