"""The drafter protocol: propose up to γ tokens and the q each was drawn from.

Every drafter, a small LM, a prompt-lookup table or a trained head, implements `begin` (a new
prompt) and `propose` (a draft continuing the tokens generated so far). The decoder verifies
whatever comes back; a drafter may return fewer than γ tokens, or none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from specviz.warpers import Warper


@dataclass
class Draft:
    tokens: torch.Tensor   # [n] drafted token ids, n <= γ
    q: torch.Tensor        # [n, V] float32: the distribution each token was drawn from
    calls: int = 0         # drafter forward passes spent (0 for model-free drafters)


class Drafter(Protocol):
    name: str

    def begin(self, prompt_ids: list[int]) -> None:
        """Forget the previous run; the next proposals continue this prompt."""

    def propose(self, generated: list[int], gamma: int, warper: Warper,
                generator: torch.Generator) -> Draft:
        """Draft up to gamma tokens after prompt + generated."""


def empty_draft(vocab: int, device: torch.device) -> Draft:
    return Draft(torch.empty(0, dtype=torch.long, device=device), torch.empty(0, vocab, device=device))
