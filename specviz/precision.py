"""The number format the target computes in, and what half precision buys on this machine.

float32 is the CPU default: greedy speculative output then equals the target alone's greedy
output token for token. bfloat16 keeps float32's 8-bit exponent and 7 of its 23 mantissa bits, so
a pass moves half the bytes; on a CPU that computes it in hardware (AVX512-BF16, AMX) a decoding
step runs about 1.4× faster. The price is rounding: greedy speculative output may part from the
target alone's at a near tie (`specviz.divergence`). GPUs default to bf16 (fp16 where bf16 is
missing).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.device import cuda_bf16, native_bf16, pick_dtype
from specviz.plural import count
from specviz.verify_cost import Setup, stored


def name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def choices(device: torch.device) -> list[str]:
    """The dtypes offered on `device`, its default first."""
    if device.type == "cuda":
        half = ["bfloat16", "float16"] if cuda_bf16() else ["float16"]
        return [*half, "float32"]
    return ["float32", "bfloat16"]


def default(device: torch.device) -> str:
    return name(pick_dtype(device))


@dataclass
class Gain:
    """One target pass over one new token (the verify-cost curve's first point) in float32 and in
    bfloat16, measured on this machine with the same model and thread count."""

    threads: int
    fp32_s: float
    bf16_s: float

    @property
    def speedup(self) -> float:
        return self.fp32_s / self.bf16_s


def measured_gain(model: str, device: str, threads: int) -> Gain | None:
    """bf16 against fp32 from the verify-cost curves this machine has measured (each is measured by the
    first sized run in its dtype); None until both exist."""
    curves = [stored(Setup(model, device, str(dtype), threads)) for dtype in (torch.float32, torch.bfloat16)]
    if None in curves:
        return None
    return Gain(threads, curves[0].seconds[0], curves[1].seconds[0])


def gain_note(model: str, device: torch.device, threads: int) -> str:
    """What bf16 buys here, in a sentence: measured where possible, or how to measure it."""
    if device.type == "cuda":
        return "GPUs compute bf16 and fp16 in their tensor cores; float32 moves twice the bytes per pass."
    if not native_bf16():
        return "This CPU has no bf16 instructions: bf16 is emulated and usually slower than float32 here."
    gain = measured_gain(model, str(device), threads)
    if gain is None:
        return ("This CPU computes bf16 in hardware. Run once in each precision with the auto size or adaptive "
                "drafts on (each measures the target's passes) and this says how much faster bf16 is here.")
    return (f"This CPU computes bf16 in hardware: one target step took {gain.bf16_s * 1e3:.1f} ms in bf16 against "
            f"{gain.fp32_s * 1e3:.1f} ms in float32, {gain.speedup:.2f}× faster (measured on this machine, "
            f"{count(gain.threads, 'torch thread')}).")
