"""The decoder layer the trained drafters are built from: a Llama block with its own KV cache.

Pre-norm attention (rotary positions, grouped-query heads) and a SwiGLU MLP, named like the
target's `LlamaDecoderLayer` so a block can start from a copy of one of the target's layers.
`Block.forward` takes the cache of earlier positions and returns the extended one, so a drafter
can feed a few committed positions at once, draft one token (or one depth of a token tree, with
`frontier`'s mask) at a time and cut the cache back.

A draft vocabulary (the N tokens the target uses most) makes the draft LM head N/V as costly;
`spread` puts those logits back on the full vocabulary with -inf elsewhere, so q is a proper
distribution over all V tokens that is zero outside the subset and verification stays lossless.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F
from torch import nn

from specviz.device import native_bf16
from specviz.drafters.base import Drafter
from specviz.packed_linear import PackedLinear, can_pack, pack_linears
from specviz.tree import common_prefix, depths, is_chain, visibility

if TYPE_CHECKING:
    from specviz.models import LoadedModel

KV = tuple[torch.Tensor, torch.Tensor]


@dataclass
class BlockConfig:
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    intermediate_size: int
    rms_norm_eps: float
    rope_theta: float

    @classmethod
    def from_target(cls, config) -> BlockConfig:
        """The block shape of a transformers Llama-style config."""
        rope = getattr(config, "rope_parameters", None) or {}
        theta = rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        return cls(config.hidden_size, config.num_attention_heads, config.num_key_value_heads, head_dim,
                   config.intermediate_size, float(config.rms_norm_eps), float(theta))

    def to_dict(self) -> dict:
        return asdict(self)


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # weight * x / sqrt(mean(x²) + eps) in one call (five separate small ops cost ~1.5x on the CPU)
        # (weight cast to x's dtype: under bf16 autocast x arrives in bf16)
        return F.rms_norm(x, self.weight.shape, self.weight.to(x.dtype), self.eps)


def rotary(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [T, head_dim] of rotary position embeddings (Su et al., RoFormer eq. 34)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim)
    angles = positions.float()[:, None] * inv_freq[None]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


class RotaryTable:
    """`rotary` computed once for positions 0..L-1 (L doubled when a later position comes), so a
    step only looks its rows up. The sin half that multiplies x₂ is stored negated, which turns
    rotate_half(x) = [-x₂, x₁] into a plain swap of the halves (`apply_rotary`)."""

    def __init__(self, head_dim: int, theta: float):
        self.head_dim, self.theta = head_dim, theta
        self.cos = self.sin = torch.empty(0, head_dim)

    def __call__(self, positions: torch.Tensor, dtype: torch.dtype, bound: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and signed sin [T, head_dim] at `positions`, every one below `bound`: a number the caller knows, so
        that no position is read back from a GPU (a host sync at every draft step)."""
        if bound > self.cos.shape[0] or self.cos.device != positions.device:
            length = max(1024, 2 * bound, self.cos.shape[0])
            cos, sin = rotary(torch.arange(length, device=positions.device), self.head_dim, self.theta)
            half = self.head_dim // 2
            self.cos, self.sin = cos, torch.cat([-sin[:, :half], sin[:, half:]], dim=-1)
        return self.cos[positions].to(dtype), self.sin[positions].to(dtype)


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """x·cos + rotate_half(x)·sin with rotate_half(x) = [-x₂, x₁]: the minus sits in `signed_sin`
    (see `RotaryTable`), so rotate_half is a roll of the last dimension by half its size."""
    return torch.addcmul(x * cos, x.roll(x.shape[-1] // 2, dims=-1), signed_sin)


class Attention(nn.Module):
    def __init__(self, c: BlockConfig):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)
        self.rotary = RotaryTable(c.head_dim, c.rope_theta)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, past: KV | None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, KV]:
        """`mask` [t, past + t] bool (True: may attend), e.g. a token tree's (`frontier`); default causal."""
        c, (b, t, _) = self.c, x.shape
        q = self.q_proj(x).view(b, t, c.num_attention_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        # every position is below the number of keys attended to (the cached ones, then these t)
        cos, sin = self.rotary(positions, q.dtype, (past[0].shape[2] if past is not None else 0) + t)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        if mask is None and t > 1:  # causal among the new positions, everything before them visible
            mask = torch.ones(t, k.shape[2], dtype=torch.bool, device=x.device).tril(k.shape[2] - t)
        # grouped-query attention: each K/V head serves num_attention_heads / num_key_value_heads query heads
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        return self.o_proj(y.transpose(1, 2).reshape(b, t, -1)), (k, v)


class MLP(nn.Module):
    def __init__(self, c: BlockConfig):
        super().__init__()
        self.gate_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.up_proj = nn.Linear(c.hidden_size, c.intermediate_size, bias=False)
        self.down_proj = nn.Linear(c.intermediate_size, c.hidden_size, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Block(nn.Module):
    def __init__(self, c: BlockConfig):
        super().__init__()
        self.input_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c.hidden_size, c.rms_norm_eps)
        self.mlp = MLP(c)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, past: KV | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, KV]:
        a, cache = self.self_attn(self.input_layernorm(x), positions, past, mask)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), cache


def spread(logits: torch.Tensor, vocab: torch.Tensor, size: int) -> torch.Tensor:
    """Logits [..., N] over the draft vocabulary `vocab` [N] -> [..., size], -inf outside it."""
    full = logits.new_full((*logits.shape[:-1], size), float("-inf"))
    return full.index_copy(-1, vocab, logits)


def head_rows(lm_head: nn.Module, vocab: torch.Tensor) -> nn.Linear:
    """The target's LM head rows [N, d] of the draft vocabulary as a frozen linear layer d -> N (a
    copy, held outside the drafter's parameters; the inference loaders pack it, `pack_head`)."""
    return frozen_linear(lm_head.weight.detach()[vocab].clone())


def frozen_linear(weight: torch.Tensor) -> nn.Linear:
    """A bias-free linear layer over `weight` [out, in], without gradients."""
    linear = nn.Linear(weight.shape[1], weight.shape[0], bias=False, device="meta")  # no random init
    linear.weight = nn.Parameter(weight, requires_grad=False)
    return linear


def draft_dtype(target: LoadedModel) -> torch.dtype:
    """The dtype a trained drafter drafts in: bfloat16 beside a float32 target on a CPU that computes
    bfloat16 in hardware (`device.native_bf16`), else the target's.

    A draft step is one row (a few for a tree's frontier) through every weight of the drafter: memory-bound
    work, so half the bytes is most of the time. Measured on the 2-core AMD EPYC, one thread, held-out
    prompts, 48 tokens, greedy (`benchmarks/head-dtype.md`): an EAGLE head call took 3.5 ms in bfloat16
    against 6.1 ms in float32, c 0.068 against 0.123, and the default drafter ran 1.75× the target alone
    against 1.70×. The guesses barely move: over 45 held-out prompts the default's chains took 966
    iterations against 967, its trees 889 against 881 (at T = 0.7, 1.89 tokens per iteration either way).
    The tiny LM's call took 5.2 ms against 7.1 and the Spec-Drafter's 7.7 against 12.7 (9 held-out prompts,
    γ = 4, greedy, one thread, interleaved), 1.06× and 1.15× the target alone against 1.00× and 1.09×; the
    Medusa heads stay in the target's dtype (`medusa.load_medusa` says why). Only the drafts change: the
    target verifies in its own dtype, so greedy output still equals the target alone's, and q is the
    distribution each draft was drawn from (the warper computes it in float32), as the lossless test
    needs."""
    if target.device.type == "cpu" and target.dtype == torch.float32 and native_bf16():
        return torch.bfloat16
    return target.dtype


def pack_head(model: nn.Module) -> None:
    """Inference only: pack a drafter's linear layers for oneDNN where that pays on the CPU.

    A draft step multiplies one row (a tree's frontier: a few) by each weight. Measured at one row on a
    2-core AMD EPYC in float32: the LM head rows (the last of the model's `shared` modules, N x d, 19 MB
    at N = 8192) take ~0.45 ms packed vs ~0.8-1.5 ms unpacked while in the L3 cache (about the same,
    ~1.6 ms, when read from DRAM), whereas the decoder layer's small matrices run slower packed at one
    row, so in float32 only the LM head is packed. Packing the block's linears from two rows on (a tree's
    frontier, the catch-up after a verification) made a tree's step 7-13% cheaper but no run measured faster
    (`benchmarks/packed-from-two.md`). In bfloat16 every linear runs faster packed (an EAGLE
    step's nine matrices read from DRAM at one row: 2.6 ms packed, 3.7 ms unpacked, against 3.7 ms in
    float32 with the LM head packed), so all are. The LM head rows take the model's dtype. No autograd
    through them.
    """
    if not can_pack(model):
        return
    dtype = next(model.parameters()).dtype
    if dtype == torch.bfloat16:
        pack_linears(model)
    rows = model.shared[-1]
    if rows.weight.dtype != dtype:
        rows = frozen_linear(rows.weight.to(dtype))
    model.shared = (*model.shared[:-1], PackedLinear(rows))


def frontier(parents: list[int], past: int, new: int,
             device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Positions [new] and attention mask [new, past + len(parents)] for feeding the last `new`
    nodes of a draft tree (`parents`, see `specviz.tree`) after `past` committed positions, the
    earlier nodes being already cached in feeding order. As in the target's tree pass, a node at
    depth d sits at position past + d - 1 and sees the committed prefix, its ancestors and itself.
    The mask is None for a chain: the block's causal default."""
    positions = torch.tensor([past - 1 + d for d in depths(parents)[-new:]], device=device)
    if is_chain(parents):
        return positions, None
    return positions, visibility(parents, past)[-new:].to(device)


class CachedDrafter(Drafter):
    """A drafter LM with a causal KV cache of its own over prompt + generated, kept between proposals."""

    def __init__(self) -> None:
        self.prompt: list[int] = []
        self.cache: list[KV] | None = None
        self.fed: list[int] = []   # the tokens whose causal cache `cache` starts with

    def begin(self, prompt_ids: list[int]) -> None:
        self.prompt, self.cache, self.fed = list(prompt_ids), None, []

    def reuse(self, seq: list[int], most: int) -> int:
        """Crop the cache to the leading tokens of `seq` it already holds, at most `most` of them (their
        common prefix with `fed`), and return how many: the LM is then fed the rest."""
        keep = min(common_prefix(self.fed, seq), most)
        if self.cache is not None:
            self.cache = [crop(c, keep) for c in self.cache]
        return keep


def crop(cache: KV, length: int) -> KV:
    """The cache of the first `length` positions (drops rejected or speculative entries)."""
    return cache[0][:, :, :length], cache[1][:, :, :length]
