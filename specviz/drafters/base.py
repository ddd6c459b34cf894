"""The drafter protocol: propose up to γ tokens and the q each was drawn from.

Every drafter (a small LM, a prompt-lookup table, a trained head) is a `Drafter`: `begin` starts
a prompt and `propose` drafts after the tokens generated so far; the decoder verifies whatever
comes back, fewer than γ tokens or none included. A drafter that reads the target's features
(`reads_features`, an EAGLE head) receives them through `observe`. `vocab` is the size of the
vocabulary q is over: the target's, or the ids a draft LM shares with it. The autoregressive
drafters share one loop, `draft_loop`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from specviz.tree import chain
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
    reads_features: bool = False

    def begin(self, prompt_ids: list[int]) -> None:
        """Forget the previous run; the next proposals continue this prompt."""
        raise NotImplementedError

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0) -> Draft:
        """Draft up to gamma tokens after prompt + generated; stop where the drafter is unsure
        (its most likely next token has probability below `confidence`; 0 never stops)."""
        raise NotImplementedError

    def observe(self, hidden: torch.Tensor) -> None:
        """The target's last hidden states [m, d] of the next m committed positions, in order;
        the decoder computes and hands them over only when `reads_features`."""


def draft_loop(logits: torch.Tensor, step: Callable[[torch.Tensor], torch.Tensor], gamma: int, warper: Warper,
               generator: torch.Generator, confidence: float = 0.0) -> Draft:
    """Leviathan et al., Algorithm 1, lines 2-4: for i = 1..γ, qᵢ = warp(M_q(prefix, x̃₁..x̃ᵢ₋₁)) and
    x̃ᵢ ~ qᵢ. `logits` [V] are the first position's, from one forward pass; `step(x̃ᵢ)` feeds a
    drafted token and returns the next position's logits.

    The confidence stop (llama.cpp's p_min) ends the draft before position i when max qᵢ falls
    below `confidence`. It reads qᵢ, never the token drawn from it: every kept x̃ᵢ is still a draw
    from the very qᵢ the ratio p/qᵢ uses, so lossless sampling stays exact. (Dropping a token
    because its own q(x̃ᵢ) is small would bias the accepted tokens towards confident ones.)
    """
    tokens, qs, calls, unsure = [], [], 1, False
    for i in range(gamma):
        q = warper.probs(logits)
        if confidence and q.max() < confidence:
            unsure = True
            break
        token = warper.pick(q, generator)
        tokens.append(token)
        qs.append(q)
        if i + 1 < gamma:
            logits = step(token)
            calls += 1
    if not tokens:
        return empty_draft(logits.shape[-1], logits.device, calls, unsure)
    return Draft(torch.stack(tokens), torch.stack(qs), calls, unsure)


def empty_draft(vocab: int, device: torch.device, calls: int = 0, unsure: bool = False) -> Draft:
    return Draft(torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab, device=device), calls, unsure)
