"""Peak memory of one run, measured where it can be and estimated honestly where it cannot.

On CUDA, the run's rise in `torch.cuda.max_memory_allocated` (KV caches, activations) plus the weights
of the models the method holds: every other model the process keeps loaded stays out of its number.
On the CPU torch has no allocator statistics and the process RSS only grows (the allocator keeps
what it freed), so the number is an estimate from tensor shapes: the weights of every model the
method holds plus their KV caches at the run's longest sequence (prompt + output + γ).
"""

from __future__ import annotations

import torch

from specviz.models import LoadedModel

CUDA_SOURCE = ("measured: the run's rise in torch.cuda.max_memory_allocated, plus the weights of the models "
               "the method holds")
CPU_SOURCE = "estimated from tensor shapes: weights of the models held + their KV caches at the longest sequence"


def memory_source(device: torch.device) -> str:
    return CUDA_SOURCE if device.type == "cuda" else CPU_SOURCE


def reset_peak(device: torch.device) -> int:
    """Start a run's peak; the bytes already allocated there (0 off CUDA), for `peak_mb`."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
        return torch.cuda.memory_allocated(device)
    return 0


def peak_mb(device: torch.device, models: tuple[LoadedModel, ...], tokens: int, before: int = 0) -> float:
    """MiB used by the run that just ended; `tokens` is the longest sequence it held, `before` what
    `reset_peak` found allocated as it started."""
    if device.type == "cuda":
        return (torch.cuda.max_memory_allocated(device) - before + sum(map(weight_bytes, models))) / 2**20
    return sum(weight_bytes(m) + kv_cache_bytes(m, tokens) for m in models) / 2**20


def weight_bytes(loaded: LoadedModel) -> int:
    # tied weights counted once; oneDNN-packed copies (`packed_linear`) have no data pointer and count in full
    tensors = [*loaded.model.parameters(), *loaded.model.buffers()]
    unique = {id(t) if t.is_mkldnn else t.data_ptr(): t for t in tensors}
    return sum(t.numel() * t.element_size() for t in unique.values())


def kv_cache_bytes(loaded: LoadedModel, tokens: int) -> int:
    config = loaded.model.config.get_text_config()
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "num_layers", 0)
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "num_heads", 1)
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    hidden = getattr(config, "hidden_size", None) or getattr(config, "d_model", 0)
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    return 2 * layers * kv_heads * head_dim * tokens * loaded.dtype.itemsize
