"""CPU linear layers with weights packed once for oneDNN, so verifying γ+1 tokens costs about one.

A decode step multiplies a few rows of activations by every weight matrix: memory-bound work,
where reading the weights once should serve all rows. torch's default CPU path (MKL sgemm)
instead costs about one matrix-vector product per row at small row counts: measured on a 2-core
AMD EPYC, the embedded target's forward on 5 new tokens took 1.7× the time of 1 token. Packing
each weight once into oneDNN's blocked layout (what torch.compile's CPU freezing does) makes
2-8 rows cost about what one does, which is the premise of speculative decoding (Leviathan et
al. 2023, §3: verifying γ+1 positions in parallel costs about one target step).

Only the forward pass is replaced: packed layers are for inference (no autograd). The original
`weight` stays on the module (tied embeddings and weight fingerprints read it); the packed copy
is a non-persistent buffer, so state dicts and saved checkpoints do not change.
"""

from __future__ import annotations

import torch
from torch import nn


class PackedLinear(nn.Module):
    """`nn.Linear` whose forward runs oneDNN's linear on a pre-packed weight."""

    def __init__(self, linear: nn.Linear):
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight, self.bias = linear.weight, linear.bias
        self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), None),
                             persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_autocast_enabled("cpu"):  # autocast picks the dtype per op: the plain path obeys it
            return nn.functional.linear(x, self.weight, self.bias)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")


def can_pack(model: nn.Module) -> bool:
    """Packing applies to fp32 models on the CPU when oneDNN is built in, and to bf16 ones where the
    CPU has the instructions oneDNN's bf16 path needs (AVX512 or AVX-NE-CONVERT)."""
    p = next(model.parameters())
    bf16 = p.dtype == torch.bfloat16 and torch.ops.mkldnn._is_mkldnn_bf16_supported()
    return p.device.type == "cpu" and (p.dtype == torch.float32 or bf16) and torch.backends.mkldnn.is_available()


def pack_linears(model: nn.Module) -> int:
    """Replace every `nn.Linear` of `model` by a `PackedLinear` in place; return how many."""
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is nn.Linear:
                setattr(parent, name, PackedLinear(child))
                swapped += 1
    return swapped
