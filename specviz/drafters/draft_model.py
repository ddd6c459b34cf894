"""An independent draft LM with its own KV cache (Leviathan et al.; decoder-only or seq2seq)."""

from __future__ import annotations

import torch

from specviz.drafters.base import Draft, Drafter, draft_loop
from specviz.kv_cache import CachedLM
from specviz.models import LoadedModel
from specviz.warpers import Warper


class DraftModelDrafter(Drafter):
    """Runs the small model γ times autoregressively: qᵢ = M_q(prefix, x̃₁..x̃ᵢ₋₁), x̃ᵢ ~ qᵢ."""

    def __init__(self, loaded: LoadedModel, vocab: int | None = None, use_cache: bool = True):
        self.name = loaded.name
        self.lm = CachedLM(loaded, use_cache=use_cache)
        self.vocab = vocab or loaded.vocab_size
        self.start: list[int] = []

    def begin(self, prompt_ids: list[int]) -> None:
        self.start = self.lm.start(prompt_ids)

    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0) -> Draft:
        seq = self.start + generated

        def step(token: torch.Tensor) -> torch.Tensor:
            seq.append(int(token))
            return self.lm.logits(seq)[0, : self.vocab]

        return draft_loop(self.lm.logits(seq)[0, : self.vocab], step, gamma, warper, generator, confidence)
