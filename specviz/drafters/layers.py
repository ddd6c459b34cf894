"""The decoder layer the trained drafters are built from: a Llama block with its own KV cache.

Pre-norm attention (rotary positions, grouped-query heads) and a SwiGLU MLP, named like the
target's `LlamaDecoderLayer` so a block can start from a copy of one of the target's layers.
`Block.forward` takes the cache of earlier positions and returns the extended one, so a drafter
can feed a few committed positions at once, draft one token at a time and cut the cache back.

A draft vocabulary (the N tokens the target uses most) makes the draft LM head N/V as costly;
`spread` puts those logits back on the full vocabulary with -inf elsewhere, so q is a proper
distribution over all V tokens that is zero outside the subset and verification stays lossless.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

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
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rotary(positions: torch.Tensor, head_dim: int, theta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin [T, head_dim] of rotary position embeddings (Su et al., RoFormer eq. 34)."""
    inv_freq = 1.0 / theta ** (torch.arange(0, head_dim, 2, device=positions.device).float() / head_dim)
    angles = positions.float()[:, None] * inv_freq[None]
    angles = torch.cat([angles, angles], dim=-1)
    return angles.cos(), angles.sin()


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    def __init__(self, c: BlockConfig):
        super().__init__()
        self.c = c
        self.q_proj = nn.Linear(c.hidden_size, c.num_attention_heads * c.head_dim, bias=False)
        self.k_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.v_proj = nn.Linear(c.hidden_size, c.num_key_value_heads * c.head_dim, bias=False)
        self.o_proj = nn.Linear(c.num_attention_heads * c.head_dim, c.hidden_size, bias=False)

    def forward(self, x: torch.Tensor, positions: torch.Tensor, past: KV | None) -> tuple[torch.Tensor, KV]:
        c, (b, t, _) = self.c, x.shape
        q = self.q_proj(x).view(b, t, c.num_attention_heads, c.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, c.num_key_value_heads, c.head_dim).transpose(1, 2)
        cos, sin = rotary(positions, c.head_dim, c.rope_theta)
        q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        groups = c.num_attention_heads // c.num_key_value_heads
        kk, vv = k.repeat_interleave(groups, dim=1), v.repeat_interleave(groups, dim=1)
        n_past = kk.shape[2] - t
        mask = None
        if t > 1:  # causal among the new positions, everything before them visible
            mask = torch.ones(t, kk.shape[2], dtype=torch.bool, device=x.device).tril(n_past)
        y = F.scaled_dot_product_attention(q, kk, vv, attn_mask=mask)
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

    def forward(self, x: torch.Tensor, positions: torch.Tensor, past: KV | None = None) -> tuple[torch.Tensor, KV]:
        a, cache = self.self_attn(self.input_layernorm(x), positions, past)
        x = x + a
        return x + self.mlp(self.post_attention_layernorm(x)), cache


def spread(logits: torch.Tensor, vocab: torch.Tensor, size: int) -> torch.Tensor:
    """Logits [..., N] over the draft vocabulary `vocab` [N] -> [..., size], -inf outside it."""
    full = logits.new_full((*logits.shape[:-1], size), float("-inf"))
    return full.index_copy(-1, vocab, logits)


def head_rows(lm_head: nn.Module, vocab: torch.Tensor) -> torch.Tensor:
    """The target's LM head rows [N, d] of the draft vocabulary (a frozen copy, not a parameter)."""
    return lm_head.weight.detach()[vocab].clone()


def crop(cache: KV, length: int) -> KV:
    """The cache of the first `length` positions (drops rejected or speculative entries)."""
    return cache[0][:, :, :length], cache[1][:, :, :length]
