"""An independent draft LM with its own KV cache (Leviathan et al.; decoder-only or seq2seq)."""

from __future__ import annotations

import torch

from specviz.drafters.base import Draft, Drafter, draft_loop
from specviz.errors import SpecvizError
from specviz.kv_cache import CachedLM
from specviz.models import LoadedModel
from specviz.warpers import Warper


class DraftModelDrafter(Drafter):
    """Runs the small model through `draft_loop`: a chain qᵢ = M_q(prefix, x̃₁..x̃ᵢ₋₁), x̃ᵢ ~ qᵢ, or a
    top-k tree whose every depth is one pass of `CachedLM` over the new nodes (a tree mask)."""

    def __init__(self, loaded: LoadedModel, vocab: int | None = None, use_cache: bool = True):
        self.name = loaded.name
        self.lm = CachedLM(loaded, use_cache=use_cache)
        self.vocab = vocab or loaded.vocab_size
        self.start: list[int] = []

    def begin(self, prompt_ids: list[int]) -> None:
        self.start = self.lm.start(prompt_ids)

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        if branches > 1 and self.lm.loaded.is_encoder_decoder:
            raise SpecvizError(f"{self.name} is an encoder-decoder draft model: it drafts chains only; "
                               "set branches (top-k) to 1")
        seq = self.start + generated
        fed: list[int] = []   # the tokens of the nodes fed so far, in feeding order

        def step(tokens: torch.Tensor, parents: list[int]) -> torch.Tensor:
            fed.extend(tokens.tolist())
            return self.lm.logits(seq + fed, last=len(tokens), parents=parents)[:, : self.vocab]

        return draft_loop(self.lm.logits(seq)[0, : self.vocab], step, gamma, warper, generator, confidence,
                          branches, nodes)
