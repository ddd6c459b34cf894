"""The losslessness experiment on a toy vocabulary: rejection sampling recovers p exactly.

For one drafted position (Leviathan et al., Algorithm 1, γ = 1): x̃ ~ q is kept with probability
min(1, p(x̃)/q(x̃)), so token x comes out of the accept branch with mass min(p(x), q(x)); a rejection
happens with probability 1 − Σ min(p, q) and draws from norm(max(0, p − q)), adding
max(0, p(x) − q(x)). The two add up to p(x). `simulate` runs the engine's own rule
(`verification.lossless`) many times to show it empirically.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.errors import SpecvizError
from specviz.verification import lossless, residual

# The Theory page's table to start from: p and q differ enough that accepts and corrections both show.
TABLE = {"token": ["the", "a", "cat", "dog", "sat"], "p": [5.0, 3.0, 1.0, 1.0, 0.0], "q": [1.0, 1.0, 4.0, 2.0, 2.0]}


@dataclass
class ToySplit:
    p: list[float]
    q: list[float]
    accepted: list[float]   # min(p, q): mass kept from the draft
    residual: list[float]   # max(0, p − q): mass added by corrections
    rejection: float        # 1 − Σ min(p, q)


def normalise(weights: list[float]) -> torch.Tensor:
    t = torch.tensor(weights, dtype=torch.float64)
    if not torch.isfinite(t).all() or (t < 0).any() or t.sum() <= 0:   # a cleared table cell arrives as NaN
        raise SpecvizError("toy weights must be numbers >= 0, not all zero, and no cell left empty")
    return t / t.sum()


def split(p_weights: list[float], q_weights: list[float]) -> ToySplit:
    p, q = normalise(p_weights), normalise(q_weights)
    accepted = torch.minimum(p, q)
    return ToySplit(p.tolist(), q.tolist(), accepted.tolist(), residual(p, q).tolist(), 1.0 - float(accepted.sum()))


def simulate(p_weights: list[float], q_weights: list[float], draws: int, seed: int = 0) -> list[int]:
    """Counts per token of `draws` outputs of speculative sampling with γ = 1."""
    p, q = normalise(p_weights).float(), normalise(q_weights).float()
    generator = torch.Generator().manual_seed(seed)
    rows_p, rows_q = torch.stack([p, p]), q.unsqueeze(0)
    drafts = torch.multinomial(q, draws, replacement=True, generator=generator)
    counts = [0] * len(p)
    for token in drafts.tolist():
        verdict = lossless(rows_p, rows_q, torch.tensor([token]), generator)
        counts[token if verdict.accepted else verdict.recovered] += 1
    return counts
