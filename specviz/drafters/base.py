"""The drafter protocol: propose a token tree (a chain by default) and the q each node was drawn from.

Every drafter (a small LM, a prompt-lookup table, a trained head) is a `Drafter`: `begin` starts
a prompt and `propose` drafts after the tokens generated so far, a tree of depth up to γ with up to
`branches` children per node and at most `nodes` nodes; the decoder verifies whatever comes back,
a shorter or empty draft included. A drafter that reads the target's features
(`reads_features`, an EAGLE head) receives them through `observe`. `vocab` is the size of the
vocabulary q is over: the target's, or the ids a draft LM shares with it. The autoregressive
drafters share one loop, `draft_loop`; the parallel ones (one pass for a whole block), `block_draft`.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from dataclasses import dataclass

import torch

from specviz.tree import chain, depths
from specviz.warpers import Warper


@dataclass
class Draft:
    """A token tree (see `specviz.tree`); a chain unless `parents` says otherwise.

    Node i's token was proposed from q[i], the drafter's distribution after its parent. A node is
    `sampled` when its token is a draw from q[i] whose place in the tree did not depend on its value;
    otherwise (the top-k children of a node, a pruned tree, a copied continuation) it was picked,
    and the lossless rule tests it as a draw from the one-hot distribution on its token.
    """

    tokens: torch.Tensor   # [n] drafted token ids, parents before children
    q: torch.Tensor        # [n, V] float32: the drafter's distribution each token came from
    calls: int = 0         # drafter forward passes spent (0 for model-free drafters)
    unsure: bool = False   # drafting stopped early: the drafter's most likely token fell below the confidence
    parents: list[int] | None = None   # node -> parent node, -1 for the root's children; None: a chain
    sampled: list[bool] | None = None  # node -> drawn from q[i] (None: every node)

    def __post_init__(self) -> None:
        n = len(self.tokens)
        self.parents = chain(n) if self.parents is None else list(self.parents)
        self.sampled = [True] * n if self.sampled is None else list(self.sampled)
        if len(self.parents) != n or len(self.sampled) != n or any(not -1 <= p < i for i, p in enumerate(self.parents)):
            raise ValueError("a draft's parents must list, for each node, -1 or an earlier node")


class Drafter:
    name: str
    vocab: int
    weights: str = ""   # digest of the trained weights or table it was loaded from (`weights.digest`); '' for none
    reads_features: bool = False
    feature_layers: tuple[int, ...] = (-1,)   # which of the target's hidden states `observe` gets (see CachedLM)
    block: int = 0   # positions one forward pass drafts at once (a parallel drafter, `block_draft`); 0: one a pass

    def begin(self, prompt_ids: list[int]) -> None:
        """Forget the previous run; the next proposals continue this prompt."""
        raise NotImplementedError

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        """Draft a tree of depth up to gamma after prompt + generated, with up to `branches`
        children per node (1: a chain) and at most `nodes` nodes (0: no budget; a chain's is γ); stop where the
        drafter is unsure (its most likely next token has probability below `confidence`; 0 never
        stops)."""
        raise NotImplementedError

    def situation(self, generated: list[int]) -> str:
        """What the drafter knows of its chances after prompt + generated before drafting (prompt
        lookup: how long a suffix it found earlier); the adaptive policy keeps one acceptance estimate
        per situation. One situation, "", unless a drafter tells them apart."""
        return ""

    chain_situations: tuple[str, ...] = ()
    """Situations in which the drafter has one continuation far likelier than any other (a copy backed by a
    long match): the adaptive policy drafts only chains there, and prices them with no drafter step, since its
    chain of γ nodes there is the copy, which runs no model. In order: a later one's copy is kept at least as
    often as an earlier one's (prompt lookup: a longer match)."""

    def copy(self, generated: list[int], gamma: int) -> list[int]:
        """The chain of at most γ tokens the drafter copies after prompt + generated in a `chain_situations`
        one, running no model (the sizing measures each chain situation's acceptance with it); none here."""
        return []

    def observe(self, hidden: torch.Tensor) -> None:
        """The target's hidden states [m, len(feature_layers)·d] of the next m committed positions, in
        order; the decoder computes and hands them over only when `reads_features`."""


Step = Callable[[torch.Tensor, list[int]], torch.Tensor]


def draft_loop(logits: torch.Tensor, step: Step, gamma: int, warper: Warper, generator: torch.Generator,
               confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
    """The autoregressive drafters' one loop: a chain (`branches` 1) or a tree grown depth by depth.

    Chain: Leviathan et al., Algorithm 1, lines 2-4: for i = 1..γ, qᵢ = warp(M_q(prefix, x̃₁..x̃ᵢ₋₁))
    and x̃ᵢ ~ qᵢ (`sampled`). Tree: EAGLE-2's dynamic draft tree (Li et al. 2024, §4.1-4.2). A node's
    value is its path's draft probability Π q (kept as Σ log q), the head's estimate of the chance
    that the target accepts it. Each expanded node gets its k = `branches` most likely children
    (picked by rank: `sampled` False); at each depth the k most valuable of the newest nodes are
    expanded, all in one `step`; at the end the N = `nodes` most valuable nodes are kept (0: all).
    A child is never worth more than its parent, so the N best include every kept node's ancestors.

    Sampling (T > 0), a tree's first child is drawn from q, as a chain's is, and the k − 1 most likely
    others beside it are picked (`_children`): at T = 0.7 the shipped head's first guess was kept 0.555
    of the time drawn against 0.504 picked (teacher-forced, 5 269 validation positions). The lossless
    rule (SpecInfer's, `verification.lossless`) needs a drawn node's presence and first place among its
    siblings not to depend on the token drawn; pruning by its own Σ log q would keep likely draws and drop
    unlikely ones. So a drawn node and its ancestors are always kept (`forced`), and a node is given a
    drawn child only while the budget still holds every forced node. What a drawn token decides is the
    rest: its own subtree, and which of its siblings are picked, which are tried only once it was
    rejected, against the residual, which they leave exact whatever they are.

    `logits` [V] are the root's, from one forward pass. `step(tokens, parents)` feeds the m newest
    expanded nodes' tokens [m]; `parents` is the tree (see `specviz.tree`) of every node fed so far
    in this draft, the m new ones last, so earlier ones are in the drafter's cache; it returns the
    m nodes' next-token logits [m, V].

    The confidence stop (llama.cpp's p_min) does not expand a node whose max q falls below
    `confidence` (for a chain: the draft ends there). It reads q, never the token drawn from it:
    every kept x̃ᵢ is still a draw from the very qᵢ the ratio p/qᵢ uses, so lossless sampling stays
    exact. (Dropping a token because its own q(x̃ᵢ) is small would bias the accepted tokens towards
    confident ones.)

    Tokens and values stay on the drafter's device: a chain reads the values back to the host once, at the
    end (and once a depth with a confidence stop), a tree a few times a depth (its ranked children, its drawn
    ones, the values the frontier is chosen by), so a GPU is not made to wait on every node.
    """
    tokens: list[torch.Tensor] = []
    qs: list[torch.Tensor] = []
    parents: list[int] = []
    sampled: list[bool] = []
    value: list[torch.Tensor] = []       # Σ log q along each node's path, float64 as Python's floats
    fed: list[int] = []                  # the tree of the nodes fed to `step`, in feeding order
    slot = {-1: -1}                      # node -> its index in `fed`
    forced: set[int] = set()             # drawn nodes and their ancestors: never pruned
    q, frontier, calls, unsure = warper.probs(logits)[None], [-1], 1, False
    gamma = min(gamma, nodes) if nodes else gamma   # a path of depth d takes d nodes
    for depth in range(gamma):
        new = []
        stops = (q.max(dim=-1).values < confidence).tolist() if confidence else [False] * len(frontier)
        likely = [None] * len(frontier)
        if branches > 1:   # each row's likeliest tokens, read back once
            top = q.topk(min(branches + 1, q.shape[-1]))
            likely = list(zip(top.values.tolist(), top.indices.tolist(), top.indices))
        for row, node in enumerate(frontier):
            if stops[row]:
                unsure = True
                continue
            base = value[node] if node >= 0 else 0.0
            draw = branches == 1
            if branches > 1 and not warper.greedy:   # a drawn child, if the budget still holds it and its line
                line = _line(node, parents) - forced
                draw = not nodes or len(forced | line) < nodes
            first = warper.pick(q[row], generator) if draw else None
            for rank, token in enumerate(_children(first, likely[row], branches)):
                if draw and rank == 0 and branches > 1:
                    forced |= line | {len(tokens)}
                new.append(len(tokens))
                tokens.append(token)
                qs.append(q[row])
                parents.append(node)
                sampled.append(draw and rank == 0)
                value.append(base + q[row, token].log().double())
        if not new or depth + 1 == gamma:
            break
        if len(new) > branches:   # the k most valuable of the newest nodes (one read of their values)
            worth = dict(zip(new, torch.stack([value[i] for i in new]).tolist()))
            new = sorted(new, key=lambda i: -worth[i])[:branches]
        frontier = sorted(new)
        for node in frontier:
            slot[node] = len(fed)
            fed.append(slot[parents[node]])
        q = warper.probs(step(torch.stack([tokens[i] for i in frontier]), fed))
        calls += 1
    if not tokens:
        return empty_draft(logits.shape[-1], logits.device, calls, unsure)
    keep = best(torch.stack(value).tolist(), parents, nodes, forced)
    return Draft(torch.stack([tokens[i] for i in keep]), torch.stack([qs[i] for i in keep]), calls, unsure,
                 prune(parents, keep), [sampled[i] for i in keep])


def block_draft(logits: torch.Tensor, gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
    """Parallel drafting: all k positions' logits [k, V] came from one forward pass (Stern et al.
    2018's blockwise heads, Medusa's heads, SpecDec's mask-predict), so q_i does not depend on the
    tokens drafted before position i.

    Chain: x̃_i ~ q_i for i = 1..min(γ, k), each a draw from its own q_i (a proper conditional, if
    one that ignores x̃_<i), so lossless sampling stays exact. Tree: Medusa's candidate tree, the
    `branches` most likely tokens of q_i under each expanded node at depth i, grown and pruned by
    `draft_loop` (node value Σ log q along the path). The whole draft is one drafter call.
    """
    if min(gamma, len(logits)) == 0:
        return empty_draft(logits.shape[-1], logits.device)
    later = iter(logits[1:])

    def step(tokens: torch.Tensor, parents: list[int]) -> torch.Tensor:
        return next(later).expand(len(tokens), -1)   # position i's q is the same under every parent

    draft = draft_loop(logits[0], step, min(gamma, len(logits)), warper, generator, confidence, branches, nodes)
    draft.calls = 1
    return draft


def _children(first: torch.Tensor | None, likely: tuple[list[float], list[int], torch.Tensor] | None,
              branches: int) -> list[torch.Tensor]:
    """A node's children: `first`, the token drawn from its q (if one was), then its most likely other tokens
    up to `branches` in all. `likely`: q's top k + 1 probabilities and ids, read back, and the ids on the device."""
    drawn = [] if first is None else [first]
    if branches == len(drawn):
        return drawn
    probs, ids, on_device = likely
    taken = int(first) if first is not None else None   # a drawn token is read back to leave it out of the rest
    others = [rank for rank, (p, token) in enumerate(zip(probs, ids)) if p > 0 and token != taken]
    return drawn + [on_device[rank] for rank in others[: branches - len(drawn)]]


def _line(node: int, parents: list[int]) -> set[int]:
    """The node and its ancestors (the root, -1, left out)."""
    line = set()
    while node >= 0:
        line.add(node)
        node = parents[node]
    return line


def best(value: list[float], parents: list[int], nodes: int, forced: Set[int] = frozenset()) -> list[int]:
    """The `forced` nodes and then the most valuable others, `nodes` in all, in node order (all with 0);
    ties go to the shallower node, so a parent (never worth less than its child) always ranks before its
    children, and `forced` is closed under ancestors."""
    if not nodes or len(value) <= nodes:
        return list(range(len(value)))
    depth = depths(parents)
    return sorted(sorted(range(len(value)), key=lambda i: (i not in forced, -value[i], depth[i]))[:nodes])


def prune(parents: list[int], keep: list[int]) -> list[int]:
    """The parents of the kept nodes (a list closed under ancestors, in node order), renumbered."""
    index = {-1: -1} | {node: i for i, node in enumerate(keep)}
    return [index[parents[node]] for node in keep]


def empty_draft(vocab: int, device: torch.device, calls: int = 0, unsure: bool = False) -> Draft:
    return Draft(torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab, device=device), calls, unsure)


def one_hot_draft(tokens: list[int], parents: list[int], vocab: int, device: torch.device) -> Draft:
    """A tree of copied tokens (prompt lookup, retrieval): no distribution of its own, so q is one-hot on
    each node's token and the lossless rule accepts it with probability p(token)."""
    if not tokens:
        return empty_draft(vocab, device)
    ids = torch.tensor(tokens, device=device)
    q = torch.zeros(len(tokens), vocab, device=device)
    q[torch.arange(len(tokens), device=device), ids] = 1.0
    return Draft(ids, q, parents=parents)
