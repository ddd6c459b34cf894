"""Several drafters in one tree: prompt lookup's copied continuation beside the EAGLE head's guesses.

Prompt lookup wins where the output copies the prompt (edits, rewrites, code changes) and drafts
nothing for open chat; the EAGLE head drafts everywhere but rarely guesses a long copy. One token
tree holds both (as SpecInfer merges the trees of several small models): after a match long enough
for a chain the copied continuation is the first branch and the head's tree the others; after a
shorter one, or sampling, the head's tree comes first (see `merge`). Nodes with the same token under
the same parent are merged, so the target verifies each distinct continuation once.

A chain copies only after a match of two tokens or more. After a one-token match the copy's first
token was the target's in 16% of the held-out kinds' iterations (greedy, 48 tokens, one prompt per
kind), where the head's first guess was in 54%: copied there, it took the head's place in the chain.
After a two-token match the copy's first token was right 50-62% of the time, after a longer match the
more often the longer it is (64% after exactly three tokens, 94% after eight: `ngram`'s docstring), and the
copy runs far deeper than the head's guesses. A tree keeps the short match's copy as one branch
beside the head's: dropping it there lost 2% of the tokens per iteration at T = 0.7. But it follows
the head's tree there, greedy too, so that a tree's first child is the head's first guess as a
chain's is, and the adaptive policy's one table for that situation prices both with the head's hits
(copy first, the table learnt the copy's 8-25% and priced the head's chain by them; priced, greedy,
18 training-split prompts: +0.80% ± 0.44%, `benchmarks/short-match-tree.md`).
"""

from __future__ import annotations

import torch

from specviz.drafters.base import Draft, Drafter
from specviz.drafters.eagle import EagleDrafter
from specviz.drafters.ngram import NgramDrafter
from specviz.warpers import Warper


class MixedDrafter(Drafter):
    reads_features = True

    def __init__(self, lookup: NgramDrafter, head: EagleDrafter):
        self.name = f"{lookup.name} + {head.name}"
        self.lookup, self.head = lookup, head
        self.vocab, self.feature_layers, self.weights = head.vocab, head.feature_layers, head.weights
        self.chain_situations = lookup.chain_situations

    def begin(self, prompt_ids: list[int]) -> None:
        self.lookup.begin(prompt_ids)
        self.head.begin(prompt_ids)

    def observe(self, hidden: torch.Tensor) -> None:
        self.head.observe(hidden)

    def situation(self, generated: list[int]) -> str:
        """The lookup's: how long a match holds the copied branch decides how far the tree is worth
        drafting, more than the head's guesses do."""
        return self.lookup.situation(generated)

    def copy(self, generated: list[int], gamma: int) -> list[int]:
        return self.lookup.copy(generated, gamma)

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        """The lookup's first continuation and the head's tree (with what is left of the budget N) in one
        tree (`merge`); a chain after a match too short to copy (not a `chain_situations` one) is the head's
        alone. A chain of γ is γ nodes, as every drafter's: the copy takes its places and the head fills what
        the copy leaves. (The head's chain beside the copy made the target verify up to 2γ + 1 tokens, and
        ran 1.5% ± 1.8% slower at γ 2 and 4.9% ± 1.9% at γ 4: `benchmarks/chain-budget-t0.md`.)"""
        short = self.situation(generated) not in self.chain_situations
        if branches == 1 and short:
            return self.head.propose(generated, gamma, warper, generator, confidence, branches, nodes)
        nodes = nodes or (gamma if branches == 1 else 0)
        copy = self.lookup.propose(generated, gamma, warper, generator, nodes=nodes)
        left = nodes - len(copy.tokens) if nodes else 0
        guess = self.head.propose(generated, gamma, warper, generator, confidence, branches, left) \
            if not nodes or left > 0 else None
        if guess is None or not len(copy.tokens):
            return guess or copy
        return merge(copy, guess, head_first=branches > 1 and (short or any(guess.sampled)))


def merge(copy: Draft, guess: Draft, head_first: bool) -> Draft:
    """One tree of the copied continuation and the head's tree; a node whose parent already has a child
    with its token becomes that child, and holds the head's q (a model's real distribution).

    Greedy, every node is picked (`sampled` False), and the copy's branch comes first after a match that
    copies a chain (`head_first` False; after a shorter one the head's tree does): a head node merged into
    a copied one is there whatever the head drew. Sampling, the head's tree drew its first children
    (`draft_loop`), and a drawn node must keep its place whatever its token (`head_first`): the head's tree
    comes first, each node as it was drafted, and the copy's nodes, picked, join it where they agree (a
    drawn node's subtree may depend on its token) or follow it as later siblings."""
    tokens: list[int] = []
    qs: list[torch.Tensor] = []
    parents: list[int] = []
    sampled: list[bool] = []
    child: dict[tuple[int, int], int] = {}
    for draft in (guess, copy) if head_first else (copy, guess):
        where = {-1: -1}
        for i, (parent, token) in enumerate(zip(draft.parents, draft.tokens.tolist())):
            key = (where[parent], token)
            if key not in child:
                child[key] = len(tokens)
                tokens.append(token)
                qs.append(draft.q[i])
                parents.append(key[0])
                sampled.append(head_first and draft is guess and draft.sampled[i])
            elif draft is guess:
                qs[child[key]] = draft.q[i]
            where[i] = child[key]
    return Draft(torch.tensor(tokens, device=copy.tokens.device), torch.stack(qs), guess.calls, guess.unsure,
                 parents, sampled)
