"""Verification rules: pure functions from (p, q, a drafted token tree) to a verdict.

The draft is a tree of n nodes (`specviz.tree`; a chain of γ tokens is the tree with one branch).
p [n+1, V] holds the target's next-token distributions: row 0 after the committed prefix (the
root), row i+1 after node i. Each rule walks down from the root, at each node trying its children
in the drafter's order, and returns the accepted `path`, then the `recovered` token drawn where
every child was rejected, or the `bonus` token drawn after a leaf. Exactly one of them is set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from specviz.tree import chain, children, walk
from specviz.warpers import sample


@dataclass
class Verdict:
    path: list[int]                     # accepted nodes, root's child first
    passed: torch.Tensor                # [n] bool: each node's own test against its parent's p
    tested: list[int] = field(default_factory=list)  # nodes tried, in order (the path's and rejected siblings)
    recovered: int | None = None        # token sampled where every child was rejected
    bonus: int | None = None            # token sampled from p after the last accepted node, a leaf
    u: torch.Tensor | None = None       # [n] the uniform draws (lossless rule only)
    residuals: dict[int, torch.Tensor] = field(default_factory=dict)  # rejected node -> max(0, p - q), unnormalised
    p_left: dict[int, float] = field(default_factory=dict)  # a later sibling -> p'(x), what its test compared

    @property
    def accepted(self) -> int:
        """Drafts kept: the accepted path's length."""
        return len(self.path)


def residual(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """max(0, p - q), unnormalised (Leviathan et al., Algorithm 1: p'(x) = norm(max(0, p(x) - q(x)))).

    Its mass is 1 - Σ min(p, q) = 1 - β: exactly the probability that the draft was rejected.
    """
    return (p - q).clamp_min(0.0)


def lossless(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor, generator: torch.Generator,
             parents: list[int] | None = None, sampled: list[bool] | None = None) -> Verdict:
    """Speculative sampling on a token tree: Leviathan et al., Algorithm 1, for a chain; SpecInfer's
    multi-step speculative sampling (Miao et al., Algorithm 2) at a node with several children.

    q [n, V]: the distribution node i was drawn from. At a node with current target distribution
    p', child x ~ q is kept when u < p'(x)/q(x), u ~ U[0, 1): the paper's u ≤ min(1, p'/q), but torch
    draws u = 0 once in 2^24, and u ≤ p'/q would then keep a token p' gives 0; on rejection p' becomes
    norm(max(0, p' − q)) before the next sibling is tried, and after the last sibling the
    correction is drawn from what is left. A child that was picked rather than sampled
    (`sampled` False: top-k children, a copied continuation) is the case q = one-hot(x): it is kept
    with probability p'(x), else x is removed from p'. Each step returns a token distributed
    exactly as p', so the output is distributed as p whatever the drafter proposed. A leaf whose
    token was kept is followed by the bonus token drawn from p after it.
    """
    n = len(draft)
    parents = chain(n) if parents is None else parents
    sampled = [True] * n if sampled is None else sampled
    u = torch.rand(n, generator=generator, device=p.device)
    rows = torch.arange(n, device=p.device)
    q_sampled = torch.tensor(sampled, dtype=torch.bool, device=p.device)
    q_draft = torch.where(q_sampled, q[rows, draft], 1.0)
    p_draft = p[_rows(parents, p.device), draft]
    passed = u * q_draft < p_draft           # u < p/q without dividing by a zero q
    tree, tokens = children(parents), draft.tolist()
    verdict = Verdict([], passed, u=u)
    node, first = -1, passed.tolist()
    while True:
        kids, target = tree.get(node, []), None   # target: p' once a sibling was rejected
        for child in kids:
            verdict.tested.append(child)
            if target is None:
                ok = first[child]
            else:
                verdict.p_left[child] = float(target[tokens[child]])
                ok = bool(u[child] * q_draft[child] < verdict.p_left[child])
            if ok:
                break
            q_child = q[child] if sampled[child] else torch.nn.functional.one_hot(
                draft[child], p.shape[-1]).to(p.dtype)
            current = p[node + 1] if target is None else target
            left = residual(current, q_child)
            verdict.residuals[child] = left
            mass = left.sum()
            target = left / mass if mass > 0 else current   # no mass left (rounding alone): p' as it was
        else:
            source = p[node + 1] if target is None else target
            token = int(sample(source, generator))
            if kids:
                verdict.recovered = token
            else:
                verdict.bonus = token
            return verdict
        verdict.path.append(child)
        node = child


def kept_chances(p: torch.Tensor, q: torch.Tensor, draft: torch.Tensor, parents: list[int] | None = None,
                 sampled: list[bool] | None = None) -> torch.Tensor:
    """[n] each node's chance of being kept by `lossless` as the first child its parent tries, as it was
    drafted: a node drawn from its row of q is kept with Σ_x min(p(x), q(x)) (Leviathan et al., §3.1: the
    acceptance rate α is the expectation of this over prefixes), a picked one (a tree's top-k, a copy,
    whose q is one-hot) with p(token). Known exactly once the target has scored the node, it is the 0/1
    verdict's mean without the coin flip's noise, and the drawn draft's chance without the luck of the
    draw: at a temperature above 0 a flat p keeps a drawn draft more often than its one likeliest token.
    Only the drawn nodes' rows of p are gathered whole (a tree's picked nodes outnumber them)."""
    rows = _rows(chain(len(q)) if parents is None else parents, p.device)
    if sampled is None:
        return torch.minimum(p[rows], q).sum(dim=-1)
    chances = p[rows, draft]
    drawn = torch.tensor(sampled, device=p.device).nonzero().squeeze(-1)
    chances[drawn] = torch.minimum(p[rows[drawn]], q[drawn]).sum(dim=-1)
    return chances


def greedy(p: torch.Tensor, draft: torch.Tensor, parents: list[int] | None = None) -> Verdict:
    """Greedy verification (Petals) on a tree: follow the child equal to argmax p, then emit the
    target's argmax. The output is token for token the target's own greedy decoding."""
    top1 = p.argmax(dim=-1)
    parents = chain(len(draft)) if parents is None else parents
    passed = draft == top1[_rows(parents, p.device)]
    return _walk(passed, parents, top1.tolist())


def spec_verification(logits: torch.Tensor, draft: torch.Tensor, beta: int, tau: float,
                      parents: list[int] | None = None) -> Verdict:
    """SpecDec Spec-Verification (Xia et al., eq. 8-9) on a tree.

    Accept x̃ when it ranks within the target's top-β (eq. 8) and its log-probability is at most
    τ below the top-1's (eq. 9); among a node's children take the one the target ranks best of
    those that pass; where none passes emit the target's top-1. Ranks break ties by token id, as
    argmax does, so β = 1 is exactly greedy verification.
    """
    logp = torch.log_softmax(logits.float(), dim=-1)
    parents = chain(len(draft)) if parents is None else parents
    rows = logp[_rows(parents, logp.device)]
    logp_draft = rows.gather(-1, draft[:, None])
    ids = torch.arange(logp.shape[-1], device=logp.device)
    ahead = (rows > logp_draft) | ((rows == logp_draft) & (ids < draft[:, None]))
    rank = ahead.sum(dim=-1)
    gap = rows.max(dim=-1).values - logp_draft.squeeze(-1)
    return _walk((rank < beta) & (gap <= tau), parents, logp.argmax(dim=-1).tolist(), rank.tolist())


def _walk(passed: torch.Tensor, parents: list[int], top1: list[int], rank: list[int] | None = None) -> Verdict:
    """Follow the passing children (`tree.walk`), then emit the target's top-1 after the last one."""
    path, tested = walk(passed.tolist(), parents, rank)
    verdict, last = Verdict(path, passed, tested), path[-1] if path else -1
    if any(parents[c] == last for c in tested):   # the last accepted node has children, none passed
        verdict.recovered = top1[last + 1]
    else:
        verdict.bonus = top1[last + 1]
    return verdict


def _rows(parents: list[int], device: torch.device) -> torch.Tensor:
    """Each node's row of p: the distribution after its parent."""
    return torch.tensor(parents, dtype=torch.long, device=device) + 1
