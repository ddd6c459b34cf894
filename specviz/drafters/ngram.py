"""Prompt lookup: copy what followed the longest earlier match of the current suffix.

The "copy" drafter of Leviathan et al. (and transformers' prompt_lookup_num_tokens): look for
the last `max_ngram` .. `min_ngram` tokens earlier in prompt + generated text and propose the
tokens that followed. The first (leftmost) match wins: it lies in the prompt whenever the prompt
has one, and the prompt is the text being copied or edited. It has no distribution of its own,
so q is one-hot on the proposal; the lossless rule then accepts x̃ with probability p(x̃) and
resamples from p with x̃ removed.
"""

from __future__ import annotations

import torch

from specviz.drafters.base import Draft, Drafter, empty_draft
from specviz.warpers import Warper


class NgramDrafter(Drafter):
    def __init__(self, vocab: int, device: torch.device, max_ngram: int = 3, min_ngram: int = 1):
        self.name = f"ngram (prompt lookup, n={min_ngram}..{max_ngram})"
        self.vocab = vocab
        self.device = device
        self.max_ngram = max_ngram
        self.min_ngram = min_ngram
        self.prompt: list[int] = []

    def begin(self, prompt_ids: list[int]) -> None:
        self.prompt = list(prompt_ids)

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0) -> Draft:
        """The looked-up continuation; its one-hot q is never unsure, so `confidence` never stops it."""
        tokens = lookup(self.prompt + generated, gamma, self.max_ngram, self.min_ngram)
        if not tokens:
            return empty_draft(self.vocab, self.device)
        ids = torch.tensor(tokens, device=self.device)
        q = torch.zeros(len(tokens), self.vocab, device=self.device)
        q[torch.arange(len(tokens), device=self.device), ids] = 1.0
        return Draft(ids, q)


def lookup(seq: list[int], gamma: int, max_ngram: int, min_ngram: int) -> list[int]:
    """Continuation (≤ gamma tokens) of the first earlier occurrence of the longest suffix."""
    for n in range(min(max_ngram, len(seq) - 1), min_ngram - 1, -1):
        suffix = seq[-n:]
        for start in range(len(seq) - n):
            if seq[start:start + n] == suffix:
                return seq[start + n:start + n + gamma]
    return []
