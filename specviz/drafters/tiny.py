"""A distilled tiny LM: a two-layer causal LM on the target's tokenizer, embedding and LM head.

DistillSpec (Zhou et al. 2024) trains a small drafter to match the target's distributions on
the target's own generations. This one shares the target's frozen embedding and LM head and
trains only its decoder layers (started as copies of some of the target's layers) and the final
norm. It drafts on tokens alone, like any independent draft model, with its own KV cache.
Its LM head is restricted to a draft vocabulary (see `layers.spread`).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from specviz.drafters.base import Draft, draft_loop
from specviz.drafters.layers import (
    KV,
    Block,
    BlockConfig,
    CachedDrafter,
    RMSNorm,
    draft_dtype,
    frontier,
    head_rows,
    pack_head,
    spread,
)
from specviz.drafters.weights import DRAFTERS_DIR, load_weights
from specviz.models import LoadedModel
from specviz.warpers import Warper

KIND = "tiny"
DEFAULT_WEIGHTS = DRAFTERS_DIR / "tiny-smollm2-135m.safetensors"


class TinyLM(nn.Module):
    def __init__(self, c: BlockConfig, n_layers: int, target: LoadedModel, vocab: torch.Tensor):
        super().__init__()
        self.config = c
        self.blocks = nn.ModuleList(Block(c) for _ in range(n_layers))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.register_buffer("vocab", vocab.to(target.device))
        # the target's frozen embedding and LM head rows, held outside the module's parameters
        self.shared = (target.model.get_input_embeddings(), head_rows(target.model.get_output_embeddings(), vocab))

    @classmethod
    def from_target(cls, target: LoadedModel, vocab: torch.Tensor, init_layers: tuple[int, ...] = (0, 1)) -> TinyLM:
        """A fresh tiny LM whose layers start as copies of the target's layers `init_layers`."""
        lm = cls(BlockConfig.from_target(target.model.config), len(init_layers), target, vocab).to(target.device)
        layers = target.model.model.layers
        for block, index in zip(lm.blocks, init_layers):
            block.load_state_dict(layers[index].state_dict(), strict=False)
        lm.norm.weight.data.copy_(target.model.model.norm.weight.data)
        return lm

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor, past: list[KV] | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, list[KV]]:
        """tokens [B, T] at positions [T] -> logits [B, T, N] over the draft vocabulary, extended caches;
        `mask` [T, past + T] for a token tree (see `layers.frontier`), else causal."""
        x = self.shared[0](tokens).to(self.norm.weight.dtype)
        caches = []
        for i, block in enumerate(self.blocks):
            x, cache = block(x, positions, past[i] if past else None, mask)
            caches.append(cache)
        return self.shared[1](self.norm(x)), caches


class TinyDrafter(CachedDrafter):
    """Runs the tiny LM through `draft_loop` (a chain, or a tree one depth per call), keeping the
    cache of the committed prefix."""

    def __init__(self, lm: TinyLM, vocab: int, name: str = "tiny LM"):
        super().__init__()
        self.name = name
        self.lm = lm.eval()
        self.vocab = vocab
        self.device = next(lm.parameters()).device

    @torch.no_grad()
    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        seq = self.prompt + generated
        keep = self.reuse(seq, len(seq) - 1)   # the last token is fed again: its logits are the root's
        new = torch.tensor(seq[keep:], device=self.device)
        logits, self.cache = self.lm(new[None], torch.arange(keep, len(seq), device=self.device), self.cache)
        self.fed = list(seq)

        def step(tokens: torch.Tensor, parents: list[int]) -> torch.Tensor:
            at, mask = frontier(parents, len(seq), len(tokens), self.device)
            out, self.cache = self.lm(tokens[None], at, self.cache, mask)
            if mask is None:  # a chain so far: the cache is still that of one sequence
                self.fed.extend(tokens.tolist())
            return self.logits(out[0])

        return draft_loop(self.logits(logits[0, -1]), step, gamma, warper, generator, confidence, branches, nodes)

    def logits(self, logits: torch.Tensor) -> torch.Tensor:
        """Draft-vocabulary logits [..., N] spread over the target's vocabulary [..., V]."""
        return spread(logits, self.lm.vocab, self.vocab)


def load_tiny(target: LoadedModel, path: Path | None = None) -> TinyDrafter:
    """The trained tiny LM in `path` (default: the shipped one), refused unless it belongs to `target`."""
    path = Path(path) if path else DEFAULT_WEIGHTS
    state, config = load_weights(path, KIND, target)
    lm = TinyLM(BlockConfig(**config["block"]), config["n_layers"], target, state["vocab"])
    lm.load_state_dict(state)
    lm = lm.to(device=target.device, dtype=draft_dtype(target))
    pack_head(lm)
    return TinyDrafter(lm, target.vocab_size)
