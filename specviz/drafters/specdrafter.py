"""SpecDec's Spec-Drafter (Xia et al. 2023, "Speculative Decoding: Exploiting Speculative
Execution for Accelerating Seq2seq Generation", §3.1): a whole block drafted in one pass, with a
distinct query for every drafted position.

A small independent LM (decoder layers on the target's frozen embedding and LM head, like `tiny`)
reads prompt + generated through its own causal KV cache. After the L committed tokens come k
learned [MASK] queries at positions L..L+k-1; each mask sees the whole context and every other
mask (mask-predict), and mask j's output gives q_j, the drafter's distribution for x_{L+j}:

    q_j = softmax(LM head(LM([x_<L ; m_1 .. m_k])_{L+j}))        j = 0..k-1, one forward pass

Each mask has its own embedding and position, hence its own attention query: SpecDec's Principle I
against the blockwise heads (`medusa`), whose k heads all read one hidden state. The masks are
never kept in the cache: the next proposal feeds the newly committed tokens and fresh masks.
The LM head is restricted to a draft vocabulary (see `layers.spread`).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from specviz.drafters.base import Draft, block_draft
from specviz.drafters.layers import (
    KV,
    Block,
    BlockConfig,
    CachedDrafter,
    RMSNorm,
    crop,
    draft_dtype,
    head_rows,
    pack_head,
    spread,
)
from specviz.drafters.weights import DRAFTERS_DIR, load_weights
from specviz.models import LoadedModel
from specviz.warpers import Warper

KIND = "specdrafter"
DEFAULT_WEIGHTS = DRAFTERS_DIR / "specdrafter-smollm2-135m.safetensors"


class MaskPredictLM(nn.Module):
    """Decoder layers over context tokens followed by [MASK] queries, under an explicit mask."""

    def __init__(self, c: BlockConfig, n_layers: int, masks: int, target: LoadedModel, vocab: torch.Tensor):
        super().__init__()
        self.config = c
        self.blocks = nn.ModuleList(Block(c) for _ in range(n_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.masks = nn.Parameter(torch.zeros(masks, c.hidden_size))
        self.register_buffer("vocab", vocab.to(target.device))
        # the target's frozen embedding and LM head rows, held outside the module's parameters
        self.shared = (target.model.get_input_embeddings(), head_rows(target.model.get_output_embeddings(), vocab))

    @classmethod
    def from_target(cls, target: LoadedModel, vocab: torch.Tensor, masks: int = 4,
                    init_layers: tuple[int, ...] = (0, 1), std: float = 0.02) -> MaskPredictLM:
        """Layers copied from the target's `init_layers`; each mask starts at the mean token
        embedding plus a little noise, so the masks differ from the first step on."""
        lm = cls(BlockConfig.from_target(target.model.config), len(init_layers), masks, target, vocab)
        lm = lm.to(target.device)
        for block, index in zip(lm.blocks, init_layers):
            block.load_state_dict(target.model.model.layers[index].state_dict(), strict=False)
        with torch.no_grad():
            lm.norm.weight.copy_(target.model.model.norm.weight)
            mean = target.model.get_input_embeddings().weight.float().mean(0)
            lm.masks.copy_(mean + torch.randn_like(lm.masks) * std)
        return lm

    def forward(self, tokens: torch.Tensor, queries: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor,
                past: list[KV] | None = None) -> tuple[torch.Tensor, list[KV]]:
        """tokens [n] then masks `queries` [m] (indices into the masks), at positions [n + m] under
        `mask` [n + m, past + n + m] (True: may attend) -> the queries' logits [m, N] over the draft
        vocabulary, and the extended caches (batch 1: training packs sequences into one row)."""
        x = torch.cat([self.shared[0](tokens).to(self.masks.dtype), self.masks[queries]])[None]
        caches = []
        for i, block in enumerate(self.blocks):
            x, cache = block(x, positions, past[i] if past else None, mask)
            caches.append(cache)
        return self.shared[1](self.norm(x[0, len(tokens):])), caches


def block_mask(new: int, past: int, masks: int, device: torch.device) -> torch.Tensor:
    """[new + masks, past + new + masks]: the new tokens causal after the `past` cached ones; the masks
    see every token and each other."""
    width = past + new + masks
    mask = torch.ones(new + masks, width, dtype=torch.bool, device=device)
    mask[:new] = torch.ones(new, width, dtype=torch.bool, device=device).tril(past)
    return mask


class SpecDrafter(CachedDrafter):
    """Drafts a block of up to k tokens after prompt + generated in one forward pass, keeping the
    causal cache of the committed prefix between proposals."""

    def __init__(self, lm: MaskPredictLM, vocab: int, name: str = "Spec-Drafter"):
        super().__init__()
        self.name = name
        self.lm = lm.eval()
        self.vocab = vocab
        self.device = lm.masks.device
        self.block = len(lm.masks)   # one draft pass, every mask's position

    @torch.no_grad()
    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        seq = self.prompt + generated
        keep = self.reuse(seq, len(seq))   # the masks bring the logits: every committed token may be reused
        k = min(gamma, len(self.lm.masks))
        new = torch.tensor(seq[keep:], dtype=torch.long, device=self.device)
        positions = torch.arange(keep, len(seq) + k, device=self.device)
        logits, cache = self.lm(new, torch.arange(k, device=self.device), positions,
                                block_mask(len(new), keep, k, self.device), self.cache)
        self.cache, self.fed = [crop(c, len(seq)) for c in cache], list(seq)
        return block_draft(spread(logits, self.lm.vocab, self.vocab), gamma, warper, generator,
                           confidence, branches, nodes)


def load_specdrafter(target: LoadedModel, path: Path | str | None = None) -> SpecDrafter:
    """The trained Spec-Drafter in `path` (default: the shipped one), refused unless it belongs to `target`."""
    path = Path(path) if path else DEFAULT_WEIGHTS
    state, config = load_weights(path, KIND, target)
    lm = MaskPredictLM(BlockConfig(**config["block"]), config["n_layers"], config["masks"], target, state["vocab"])
    lm.load_state_dict(state)
    lm = lm.to(device=target.device, dtype=draft_dtype(target))
    pack_head(lm)
    return SpecDrafter(lm, target.vocab_size)
