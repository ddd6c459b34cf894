"""Where the models run and how we read clocks there.

On CUDA, kernels run asynchronously: a clock read right after a forward pass would time the
launch, not the work. `Clock.now()` synchronizes the device first, so every phase we record is
real wall time.
"""

from __future__ import annotations

import time

import torch


def pick_device(device: str | None = None) -> torch.device:
    """CUDA when present, else the CPU; an explicit choice wins."""
    if device:
        return torch.device(device)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def pick_dtype(device: torch.device, dtype: str | None = None) -> torch.dtype:
    """bf16 (or fp16 on older GPUs) on CUDA, fp32 on the CPU; an explicit choice wins."""
    if dtype:
        names = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16,
                 "fp16": torch.float16, "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}
        return names[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


class Clock:
    """perf_counter that first waits for the device to finish its queued work."""

    def __init__(self, device: torch.device):
        self.sync = torch.cuda.synchronize if device.type == "cuda" else None
        self.device = device

    def now(self) -> float:
        if self.sync is not None:
            self.sync(self.device)
        return time.perf_counter()
