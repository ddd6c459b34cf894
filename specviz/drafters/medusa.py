"""Blockwise heads (Stern et al. 2018, "Blockwise Parallel Decoding"; Medusa, Cai et al. 2024).

k heads sit on the target's last hidden state h_t, the feature that the target's own LM head
turns into x_{t+1}. Head i predicts the token i positions further, x_{t+1+i}, through one
residual block and the target's frozen LM head (Medusa's eq. 1):

    q_i = softmax(LM head(h_t + SiLU(W_i h_t + b_i)))        i = 1..k

Only W_i and b_i are trained; W_i starts at zero, so a fresh head repeats the target's own
prediction. All heads read the same h_t and run as one batched step: every drafted position
shares one query. That is SpecDec's Principle I objection (Xia et al. 2023, §3.1): a head cannot
see the tokens drafted before its position, so its accuracy decays with distance, where a drafter
with a distinct query per position (the Spec-Drafter, `specdrafter`) decays less.

When drafting after prompt + generated (length L), the newest feature the decoder has handed over
is h_{L-2}, whose own prediction x_{L-1} is already committed; heads 1..k then draft x_L..x_{L+k-1}.
The LM head is restricted to a draft vocabulary (see `layers.spread`).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from specviz.drafters.base import Draft, Drafter, block_draft
from specviz.drafters.layers import head_rows, pack_head, spread
from specviz.drafters.weights import DRAFTERS_DIR, load_weights
from specviz.errors import SpecvizError
from specviz.models import LoadedModel
from specviz.warpers import Warper

KIND = "medusa"
DEFAULT_WEIGHTS = DRAFTERS_DIR / "medusa-smollm2-135m.safetensors"


class MedusaHeads(nn.Module):
    """h [..., d] -> the k heads' features h + SiLU(W_i h + b_i) [..., k, d], in one einsum."""

    def __init__(self, hidden_size: int, heads: int, target: LoadedModel, vocab: torch.Tensor):
        super().__init__()
        self.config = {"hidden_size": hidden_size, "heads": heads}
        self.weight = nn.Parameter(torch.zeros(heads, hidden_size, hidden_size))
        self.bias = nn.Parameter(torch.zeros(heads, hidden_size))
        self.register_buffer("vocab", vocab.to(target.device))
        # the target's frozen LM head rows, held outside the module's parameters
        self.shared = (head_rows(target.model.get_output_embeddings(), vocab),)

    @classmethod
    def from_target(cls, target: LoadedModel, vocab: torch.Tensor, heads: int = 4) -> MedusaHeads:
        return cls(target.model.config.hidden_size, heads, target, vocab).to(target.device)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        z = torch.einsum("...d,ked->...ke", hidden, self.weight.to(hidden.dtype)) + self.bias.to(hidden.dtype)
        return hidden.unsqueeze(-2) + F.silu(z)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """Logits over the draft vocabulary [..., N]."""
        return self.shared[-1](features)


class MedusaDrafter(Drafter):
    """Drafts a block of up to k tokens from the newest target feature, in one call of the heads."""

    reads_features = True

    def __init__(self, heads: MedusaHeads, vocab: int, name: str = "blockwise heads"):
        self.name = name
        self.heads = heads.eval()
        self.vocab = vocab
        p = next(heads.parameters())
        self.device, self.dtype = p.device, p.dtype
        self.block = heads.config["heads"]   # one draft pass, every head's position
        self.prompt: list[int] = []
        self.known = 0                      # features handed over so far
        self.last: torch.Tensor | None = None

    def begin(self, prompt_ids: list[int]) -> None:
        self.prompt, self.known, self.last = list(prompt_ids), 0, None

    def observe(self, hidden: torch.Tensor) -> None:
        if len(hidden):
            self.known += len(hidden)
            self.last = hidden[-1].detach().to(self.dtype)

    @torch.no_grad()
    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        committed = len(self.prompt) + len(generated)
        if self.last is None or self.known != committed - 1:
            had = "none" if self.last is None else \
                f"{self.known} of the {committed - 1} committed positions before the newest"
            raise SpecvizError(f"the blockwise heads draft from the target's features and have {had}: run them "
                               f"through the decoder, whose first iteration (the prompt's prefill) hands them over")
        logits = spread(self.heads.logits(self.heads(self.last)), self.heads.vocab, self.vocab)
        return block_draft(logits, gamma, warper, generator, confidence, branches, nodes)


def load_medusa(target: LoadedModel, path: Path | str | None = None) -> MedusaDrafter:
    """The trained heads in `path` (default: the shipped ones), refused unless they belong to `target`."""
    path = Path(path) if path else DEFAULT_WEIGHTS
    state, config = load_weights(path, KIND, target)
    heads = MedusaHeads(config["hidden_size"], config["heads"], target, state["vocab"])
    heads.load_state_dict(state)
    # the target's dtype, not `layers.draft_dtype`: the heads' block is one einsum over every head, which
    # oneDNN does not pack, and in bfloat16 a call took 3.45 ms against 2.99 ms in float32 (9 held-out
    # prompts, γ = 4, one thread)
    heads = heads.to(device=target.device, dtype=target.dtype)
    pack_head(heads)
    return MedusaDrafter(heads, target.vocab_size)
