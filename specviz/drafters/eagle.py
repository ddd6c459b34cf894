"""EAGLE-style draft head (Li et al. 2024, "EAGLE: Speculative Sampling Requires Rethinking
Feature Uncertainty").

The head reads the target's own features: at position t it fuses the target's last hidden
state f_t with the embedding of the next token x_{t+1} (fc: [f_t; e_{t+1}] -> d), runs one
decoder layer over that sequence and predicts the next feature f̂_{t+1}; the target's frozen LM
head turns f̂ into q(x_{t+2}). Only the fusion layer, the decoder layer and an output norm are
trained; the embedding and LM head are the target's, shared rather than copied.

While drafting, the committed positions use the true features the target computed when it
verified them (handed over through `observe`), and each further draft step feeds the head its
own prediction f̂, because the feature of a token the target has not seen yet is unknown. The
head's own attention starts at most `WINDOW` positions before the first draft; training cuts long
records to their last positions too (`specviz.training.prefill`), so a start inside the text is one
the head has learnt from. The first draft catches up over the whole window: over 1 024 positions that
took 145-183 ms on one thread, two to three target steps, on a long prompt most of what a 48-token
answer's drafts save. Over 128 it kept the same tokens per iteration on 12 of 14 long training-split
prompts (558-1 754 tokens, greedy, 48 tokens) and the run after the prefill went 7% faster; on shorter
prompts (65 tokens or more) it kept them on 15 of 17 and ran 1% faster than over 256
(`benchmarks/head-window.md`).
The LM head is restricted to a draft vocabulary (see `layers.spread`).

EAGLE-3 (Li et al. 2025, "EAGLE-3: Scaling up Inference Acceleration of Large Language Models via
Training-Time Test") reads more than the last layer: a head with `feature_layers` (l, m, h) takes
the target's hidden states at a low, a middle and a high layer, side by side, and fuses them into
one feature (fuse: [h_l; h_m; h_h] -> d) before the fusion with the token. Its own predictions f̂
need no fusing: they are already what the layer computes. The single-layer head (`feature_layers`
(-1,), the final normed state) is the first EAGLE's and stays loadable.

Both papers' heads run one decoder layer. A head may run more (`layers`): the first is `block`, as in
every head saved before, the others `deeper`, each on the residual stream the one before it left, with a
KV cache of its own. A deeper head is grown from a trained one (`train-drafter --init … --head-layers 2`):
its new layers start small, so it first drafts almost as the head it grew from.

A state inside the target's residual stream grows with depth and carries a few huge dimensions
(SmolLM2-135M: RMS 6.6 at layer 4 and 28 at layer 29, single entries above 500, against 1.9 for the
final normed state), so each one is scaled to unit RMS, h / sqrt(mean(h²) + ε), before the fuse: the
fuse's weights then meet inputs of one size, whatever the layer.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from specviz.drafters.base import Draft, Drafter, draft_loop
from specviz.drafters.layers import (
    KV,
    Block,
    BlockConfig,
    RMSNorm,
    crop,
    draft_dtype,
    frontier,
    head_rows,
    pack_head,
    spread,
)
from specviz.drafters.weights import DRAFTERS_DIR, load_weights
from specviz.errors import SpecvizError
from specviz.models import LoadedModel
from specviz.warpers import Warper

KIND = "eagle"
WINDOW = 128    # the most committed positions the head attends to when it starts
DEFAULT_WEIGHTS = DRAFTERS_DIR / "eagle-smollm2-135m.safetensors"


class EagleHead(nn.Module):
    """fc([f_t; e(x_{t+1})]) -> `layers` decoder layers -> norm = f̂_{t+1}; logits = LM head(f̂_{t+1}); with
    several `feature_layers`, f_t = fuse([h_l; h_m; h_h]) of the target's states at those layers."""

    def __init__(self, c: BlockConfig, target: LoadedModel, vocab: torch.Tensor,
                 feature_layers: tuple[int, ...] = (-1,), layers: int = 1):
        super().__init__()
        self.config = c
        self.feature_layers = tuple(feature_layers)
        final = (-1, target.model.config.num_hidden_layers)   # transformers' last state is already normed
        self.residual = tuple(layer not in final for layer in self.feature_layers)
        if len(self.feature_layers) > 1:
            self.fuse = nn.Linear(len(self.feature_layers) * c.hidden_size, c.hidden_size, bias=False)
        self.fc = nn.Linear(2 * c.hidden_size, c.hidden_size)
        self.block = Block(c)
        self.deeper = nn.ModuleList(Block(c) for _ in range(layers - 1))
        self.norm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.register_buffer("vocab", vocab.to(target.device))
        # the target's frozen embedding and LM head rows, held outside the module's parameters
        self.shared = (target.model.get_input_embeddings(), head_rows(target.model.get_output_embeddings(), vocab))

    @classmethod
    def from_target(cls, target: LoadedModel, vocab: torch.Tensor, std: float = 0.02,
                    feature_layers: tuple[int, ...] = (-1,), layers: int = 1) -> EagleHead:
        """A fresh head that starts by passing f_t through: fc = [I | small], small random
        decoder layers on the residual stream, and the target's final norm weights; a fused head's
        fuse starts as [small | small | I], the highest layer's state."""
        head = cls(BlockConfig.from_target(target.model.config), target, vocab, feature_layers, layers)
        head = head.to(target.device)
        d = head.config.hidden_size
        with torch.no_grad():
            for module in (m for block in head.blocks for m in block.modules()):
                if isinstance(module, nn.Linear):
                    nn.init.normal_(module.weight, std=std)
            nn.init.normal_(head.fc.weight, std=std)
            head.fc.weight[:, :d] = torch.eye(d)
            head.fc.bias.zero_()
            if hasattr(head, "fuse"):
                nn.init.normal_(head.fuse.weight, std=std)
                head.fuse.weight[:, -d:] = torch.eye(d)
            head.norm.weight.copy_(target.model.model.norm.weight)
        return head

    def feature(self, states: torch.Tensor) -> torch.Tensor:
        """The head's input feature f [..., d] from the target's states at `feature_layers` [..., k·d],
        each residual-stream state at unit RMS."""
        if not hasattr(self, "fuse"):
            return states
        parts = states.split(self.config.hidden_size, dim=-1)
        eps = self.config.rms_norm_eps
        return self.fuse(torch.cat([h * torch.rsqrt(h.float().pow(2).mean(-1, keepdim=True) + eps).to(h.dtype)
                                    if residual else h for h, residual in zip(parts, self.residual)], dim=-1))

    def forward(self, features: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor,
                past: list[KV] | None = None, mask: torch.Tensor | None = None) -> tuple[torch.Tensor, list[KV]]:
        """features [B, T, d] (f_t), tokens [B, T] (x_{t+1}), positions [T] (t) -> f̂ [B, T, d], each layer's
        cache; `mask` [T, past + T] for a token tree (see `layers.frontier`), else causal."""
        embed = self.shared[0](tokens).to(features.dtype)
        h, caches = self.fc(torch.cat([features, embed], dim=-1)), []
        for i, block in enumerate(self.blocks):
            h, cache = block(h, positions, past[i] if past else None, mask)
            caches.append(cache)
        return self.norm(h), caches

    @property
    def blocks(self) -> list[Block]:
        """The decoder layers in order: `block`, then `deeper`."""
        return [self.block, *self.deeper]

    def logits(self, predicted: torch.Tensor) -> torch.Tensor:
        """Logits over the draft vocabulary [..., N]."""
        return self.shared[1](predicted)


class EagleDrafter(Drafter):
    """Drafts with an `EagleHead` on the features the decoder hands over through `observe`."""

    reads_features = True

    def __init__(self, head: EagleHead, vocab: int, name: str = "EAGLE head"):
        self.name = name
        self.head = head.eval()
        self.feature_layers = head.feature_layers
        self.vocab = vocab
        p = next(head.parameters())
        self.device, self.dtype = p.device, p.dtype
        self.prompt: list[int] = []
        self.states: list[torch.Tensor] = []   # the target's states at the committed positions the head has not read
        self.known = 0   # committed positions whose states were handed over
        self.cache: list[KV] | None = None
        self.cached = 0  # committed positions up to which `cache` holds true target features
        self.start = 0   # the first committed position in `cache` (`WINDOW`); head positions count from it

    def begin(self, prompt_ids: list[int]) -> None:
        self.prompt, self.states, self.known, self.cache, self.cached, self.start = list(prompt_ids), [], 0, None, 0, 0

    def observe(self, hidden: torch.Tensor) -> None:
        """The target's states [m, k·d] at `feature_layers` of the next m committed positions, in order. They
        are fused into the head's features only when a draft reads them (`propose`): the first draft reads
        the last `WINDOW` positions of a prompt's prefill, and fusing all 1 227 of a long one took 31 ms on
        one thread."""
        self.states.append(hidden.detach())
        self.known += len(hidden)

    @torch.no_grad()
    def propose(self, generated: list[int], gamma: int, warper: Warper, generator: torch.Generator,
                confidence: float = 0.0, branches: int = 1, nodes: int = 0) -> Draft:
        """A chain, or EAGLE-2's dynamic tree (`draft_loop`): each depth's expanded nodes go through
        the head in one call, with a tree mask over the head's cache."""
        seq = self.prompt + generated
        known = self.known  # the last token's feature is not known yet
        if known == 0 or known != len(seq) - 1:
            had = "none" if known == 0 else f"{known} of the {len(seq) - 1} committed positions before the newest"
            raise SpecvizError(f"the EAGLE head drafts from the target's features and has {had}: run it through "
                               f"the decoder, whose first iteration (the prompt's prefill) hands them over")
        if self.cache is None:   # the first draft: the head reads the last WINDOW positions at most
            self.start = self.cached = max(0, known - WINDOW)
        else:
            self.cache = [crop(c, self.cached - self.start) for c in self.cache]  # drop the last draft's nodes
        states = torch.cat(self.states)[self.cached - known:]   # those of the positions the head has not read
        self.states = []
        new = torch.arange(self.cached - self.start, known - self.start, device=self.device)
        tokens = torch.tensor(seq[self.cached + 1: known + 1], device=self.device)
        feats = self.head.feature(states.to(self.dtype))
        predicted, self.cache = self.head(feats[None], tokens[None], new, self.cache)
        self.cached = known
        features = [predicted[0, -1:]]  # f̂ of the root, then of each node fed, in feeding order

        def step(tokens: torch.Tensor, parents: list[int]) -> torch.Tensor:
            """Feed each new node x̃ with its parent's predicted feature f̂: the target has not seen x̃ yet."""
            m = len(tokens)
            parent = torch.cat([features[i + 1] for i in parents[-m:]])
            at, mask = frontier(parents, known - self.start, m, self.device)
            out, self.cache = self.head(parent[None], tokens[None], at, self.cache, mask)
            features.extend(out[0].split(1))
            return self.logits(out[0])

        return draft_loop(self.logits(features[0])[0], step, gamma, warper, generator, confidence, branches, nodes)

    def logits(self, features: torch.Tensor) -> torch.Tensor:
        """Next-token logits [..., V] over the target's vocabulary from predicted features [..., d]."""
        return spread(self.head.logits(features), self.head.vocab, self.vocab)


def load_eagle(target: LoadedModel, path: Path | None = None) -> EagleDrafter:
    """The trained head in `path` (default: the shipped one), refused unless it belongs to `target`,
    drafting in `draft_dtype`."""
    path = Path(path) if path else DEFAULT_WEIGHTS
    state, config = load_weights(path, KIND, target)
    layers = tuple(config.pop("feature_layers", (-1,)))  # heads saved before EAGLE-3 read the last layer
    depth = config.pop("layers", 1)   # and before deeper heads, one decoder layer
    head = EagleHead(BlockConfig(**config), target, state["vocab"], layers, depth)
    head.load_state_dict(state)
    head = head.to(device=target.device, dtype=draft_dtype(target))
    pack_head(head)
    return EagleDrafter(head, target.vocab_size)
