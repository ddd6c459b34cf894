"""Verification rules: pure functions from (p, q, drafted tokens) to a verdict.

Each rule looks at the γ drafted tokens x̃₁..x̃γ and the target's γ+1 next-token distributions
(position γ+1 is the one after the whole draft) and returns how many drafts are `accepted`, the
`recovered` token that replaces the first rejected draft, or the `bonus` token when all drafts
were accepted. Exactly one of recovered / bonus is set.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class Verdict:
    accepted: int                       # n: drafts kept, counted up to the first rejection
    passed: torch.Tensor                # [γ] bool: each position's own test, before taking the prefix
    recovered: int | None = None        # token sampled at position n+1 after a rejection
    bonus: int | None = None            # token sampled from p at position γ+1 when n = γ
    u: torch.Tensor | None = None       # [γ] the uniform draws (lossless rule only)
    residual: torch.Tensor | None = None  # [V] max(0, p - q) at the rejected position, unnormalised


def first_failure(passed: torch.Tensor) -> int:
    """n = number of leading True values: drafts after the first rejection never count."""
    failed = (~passed).nonzero()
    return int(failed[0]) if len(failed) else len(passed)


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """max(0, p - q), unnormalised (Leviathan et al., Algorithm 1: p'(x) = norm(max(0, p(x) - q(x)))).

    Its mass is 1 - Σ min(p, q) = 1 - β: exactly the probability that the draft was rejected.
    """
    return (p - q).clamp_min(0.0)


def lossless(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor,
             generator: torch.Generator) -> Verdict:
    """Speculative sampling (Leviathan et al., Algorithm 1).

    p: [γ+1, V] target distributions, q: [γ, V] draft distributions, draft: [γ] tokens drawn
    from q. Accept x̃ᵢ when uᵢ ≤ min(1, pᵢ(x̃ᵢ)/qᵢ(x̃ᵢ)); at the first rejection sample from
    norm(max(0, p - q)); if all γ pass, sample the bonus token from p at position γ+1.
    The output is distributed exactly as p, whatever q is.
    """
    gamma = len(draft)
    u = torch.rand(gamma, generator=generator, device=p.device)
    rows = torch.arange(gamma, device=p.device)
    p_draft, q_draft = p[rows, draft], q[rows, draft]
    passed = u * q_draft <= p_draft          # u <= p/q without dividing by a zero q
    n = first_failure(passed)
    if n == gamma:
        bonus = torch.multinomial(p[gamma], 1, generator=generator)
        return Verdict(n, passed, bonus=int(bonus), u=u)
    leftover = residual(p[n], q[n])
    mass = leftover.sum()
    target = leftover / mass if mass > 0 else p[n]
    recovered = torch.multinomial(target, 1, generator=generator)
    return Verdict(n, passed, recovered=int(recovered), u=u, residual=leftover)


def greedy(p: torch.Tensor, draft: torch.Tensor) -> Verdict:
    """Greedy verification (Petals): accept while x̃ᵢ = argmax pᵢ, then emit the target's argmax.

    The output is token for token the target's own greedy decoding.
    """
    top1 = p.argmax(dim=-1)
    return _take_top1(draft == top1[: len(draft)], top1)


def spec_verification(logits: torch.Tensor, draft: torch.Tensor, beta: int, tau: float) -> Verdict:
    """SpecDec Spec-Verification (Xia et al., eq. 8-9).

    Accept x̃ᵢ when it ranks within the target's top-β (eq. 8) and its log-probability is at most
    τ below the top-1's (eq. 9); at the first miss emit the target's top-1. Ranks break ties by
    token id, as argmax does, so β = 1 is exactly greedy verification.
    """
    logp = torch.log_softmax(logits.float(), dim=-1)
    gamma = len(draft)
    rows = torch.arange(gamma, device=logp.device)
    logp_draft = logp[rows, draft].unsqueeze(-1)
    ids = torch.arange(logp.shape[-1], device=logp.device)
    ahead = (logp[:gamma] > logp_draft) | ((logp[:gamma] == logp_draft) & (ids < draft.unsqueeze(-1)))
    rank = ahead.sum(dim=-1)
    gap = logp[:gamma].max(dim=-1).values - logp_draft.squeeze(-1)
    return _take_top1((rank < beta) & (gap <= tau), logp.argmax(dim=-1))


def _take_top1(passed: torch.Tensor, top1: torch.Tensor) -> Verdict:
    n = first_failure(passed)
    if n == len(passed):
        return Verdict(n, passed, bonus=int(top1[n]))
    return Verdict(n, passed, recovered=int(top1[n]))
