"""The distillation loss: KL(p_target ‖ p_draft) + λ·CE on the target's own tokens.

p_target is known only on its k most likely tokens (cached once, see `data`); the KL is taken
over those, Σ_k p_k (log p_k − log q_k), which drops the tail's (small) share. Draft
distributions live on a draft vocabulary: target tokens outside it cannot be drafted and are left
out of both terms. `acceptance` is Leviathan et al.'s β = Σₓ min(p(x), q(x)) on the same top-k:
a lower bound of the probability that a draft from q is accepted at temperature 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F


@dataclass
class Targets:
    """What one batch's draft positions are compared with: rows [N] of target top-k (ids mapped
    into the draft vocabulary, -1 outside it), their log-probs, and the token that followed."""

    top_index: torch.Tensor   # [N, K] long, -1 outside the draft vocabulary
    top_logp: torch.Tensor    # [N, K] float
    next_index: torch.Tensor  # [N] long, -1 outside the draft vocabulary


def distill(logits: torch.Tensor, t: Targets, ce_weight: float) -> tuple[torch.Tensor, dict[str, float]]:
    """Loss of draft logits [N, V_draft]; also the KL, CE, β and top-1 agreement for the log."""
    logq = torch.log_softmax(logits.float(), dim=-1)
    inside = t.top_index >= 0
    logq_top = logq.gather(-1, t.top_index.clamp(min=0))
    p = t.top_logp.exp() * inside
    kl = (p * (t.top_logp - logq_top)).sum(-1).mean()
    known = t.next_index >= 0
    ce = F.nll_loss(logq[known], t.next_index[known]) if bool(known.any()) else logq.new_zeros(())
    with torch.no_grad():
        beta = torch.minimum(p, logq_top.exp()).sum(-1).mean()
        top1 = (logq.argmax(-1) == t.top_index[:, 0]).float().mean()
    parts = {"kl": kl.item(), "ce": ce.item(), "beta": beta.item(), "top1": top1.item()}
    return kl + ce_weight * ce, parts


def by_slot(logits: torch.Tensor, t: Targets, slot: torch.Tensor, ce_weight: float,
            slots: int) -> tuple[torch.Tensor, dict[str, float]]:
    """`distill` over all rows of a parallel drafter, logged per drafted position: "top11" is the
    top-1 agreement of position 1 (head 1, mask 1), "beta2" position 2's β, and so on."""
    loss, _ = distill(logits, t, ce_weight)
    parts = {}
    with torch.no_grad():
        for j in range(slots):
            rows = slot == j
            if bool(rows.any()):
                _, part = distill(logits[rows], Targets(t.top_index[rows], t.top_logp[rows], t.next_index[rows]), 0.0)
                parts |= {f"{name}{j + 1}": value for name, value in part.items()}
    return loss, parts
