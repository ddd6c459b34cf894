"""Where the models run and how we read clocks there.

On CUDA, kernels run asynchronously: a clock read right after a forward pass would time the
launch, not the work. `Clock.now()` synchronizes the device first, so every phase we record is
real wall time.
"""

from __future__ import annotations

import functools
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import torch

from specviz.errors import SpecvizError


def pick_device(device: str | None = None) -> torch.device:
    """CUDA when present, else the CPU; an explicit choice wins where this machine has it."""
    if not device:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        chosen = torch.device(device)
    except RuntimeError:
        raise SpecvizError(f"unknown device {device!r}: cpu, cuda or cuda:N") from None
    if chosen.type == "cuda" and not torch.cuda.is_available():
        raise SpecvizError(f"device {device!r} asked for, but this torch sees no CUDA device: use cpu")
    if chosen.type == "cuda" and (chosen.index or 0) >= torch.cuda.device_count():
        raise SpecvizError(f"device {device!r} asked for, but this machine has {torch.cuda.device_count()} "
                           "CUDA device(s), numbered from 0")
    if chosen.type not in ("cpu", "cuda"):
        raise SpecvizError(f"device {device!r} is not supported: cpu, cuda or cuda:N")
    return chosen


def steady_attention(device: torch.device) -> None:
    """On CUDA, attention without cuDNN's kernels (flash, memory-efficient or math ones instead).

    torch 2.11 sent bf16 attention on an H200 to cuDNN, which builds a plan for each new pair of query and
    key lengths. A decode meets new lengths at every step, and a speculative one more (each draft
    size is a new query length), so a prompt the process had not seen paid for plans all along. On an
    H200 (bf16, 32 tokens, the EAGLE head at γ 2, six prompts new to the process) the speculative
    runs took 0.63-1.70 s with cuDNN and 0.40-0.54 s without it; the target alone 0.54-1.26 s and
    0.54-0.57 s; a prompt run a second time, 0.44-0.58 s either way (`benchmarks/gpu-h200.md`).
    Process-wide: it is torch's switch."""
    if device.type == "cuda":
        torch.backends.cuda.enable_cudnn_sdp(False)


DTYPES = {"float32": torch.float32, "fp32": torch.float32, "float16": torch.float16, "fp16": torch.float16,
          "bfloat16": torch.bfloat16, "bf16": torch.bfloat16}


def pick_dtype(device: torch.device, dtype: str | None = None) -> torch.dtype:
    """bf16 (or fp16 on older GPUs) on CUDA, fp32 on the CPU; an explicit choice wins."""
    if dtype:
        if dtype not in DTYPES:
            raise SpecvizError(f"unknown dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
        return DTYPES[dtype]
    if device.type == "cuda":
        return torch.bfloat16 if cuda_bf16() else torch.float16
    return torch.float32


def cuda_bf16() -> bool:
    """Whether the GPU computes bf16 in hardware (Ampere and later). torch's own check also says yes where bf16
    is emulated (a T4), several times slower than the fp16 those GPUs run natively."""
    if _ask_a_child():
        return _gpu_facts()["bf16"]
    return torch.cuda.is_bf16_supported(including_emulation=False)


def _ask_a_child() -> bool:
    """Whether facts about the GPU should come from a child process. Reading them starts CUDA, and a process that
    has started it holds a context (hundreds of MB of the GPU's memory) until it exits. A process that has not
    (the web server, drawing its sidebar while the models live in the decoder process) asks a short-lived child."""
    return torch.cuda.is_available() and not torch.cuda.is_initialized()


PROBE_S = 120   # a child that has not answered by then (a hung driver) is given up on


@functools.cache
def _gpu_facts() -> dict:
    """The GPU's facts as a child process reads them: hardware bf16 (the current device) and each device's name.
    A child that fails or hangs leaves the cautious answer, kept like an answer (no new child on every page
    drawn): no hardware bf16, no names. The decoder process, which starts CUDA itself, asks torch directly."""
    probe = ("import json, torch; c = torch.cuda; print(json.dumps({'bf16': c.is_bf16_supported(including_emulation="
             "False), 'names': [c.get_device_name(i) for i in range(c.device_count())]}))")
    try:
        asked = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=PROBE_S)
        if asked.returncode == 0:
            return json.loads(asked.stdout.strip().splitlines()[-1])
    except (subprocess.TimeoutExpired, IndexError, json.JSONDecodeError):
        pass
    return {"bf16": False, "names": []}


def _cpuinfo() -> str:
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def native_bf16() -> bool:
    """Does this CPU compute bf16 in hardware (AVX512-BF16 or AMX), where bf16 runs faster than fp32?"""
    return any(flag in _cpuinfo().split() for flag in ("avx512_bf16", "amx_bf16"))


def device_name(device: torch.device) -> str:
    """The hardware behind `device`: the GPU's name, or the CPU's model ("AMD EPYC 7B13")."""
    if device.type == "cuda":
        if not _ask_a_child():
            return torch.cuda.get_device_name(device)
        names = _gpu_facts()["names"]
        return names[device.index or 0] if (device.index or 0) < len(names) else "GPU (its name unknown)"
    return next((line.split(":", 1)[1].strip() for line in _cpuinfo().splitlines() if line.startswith("model name")),
                platform.processor() or "CPU")


def decoder_threads(cores: int | None = None) -> int:
    """Torch CPU threads for a decoder that shares its host with a web server: every core but one.

    The server's Python threads (page scripts, websockets) then have a core of their own and never
    deschedule a torch thread in the middle of a parallel operation, where the other threads would
    wait for it. `SPECVIZ_THREADS` overrides the choice.
    """
    setting = os.environ.get("SPECVIZ_THREADS", "").strip()
    if setting:
        if not setting.isdigit() or int(setting) < 1:
            raise SpecvizError(f"SPECVIZ_THREADS must be a whole number >= 1, got {setting!r}")
        return int(setting)
    return max(1, (available_cores() if cores is None else cores) - 1)


def available_cores(quota: Path = Path("/sys/fs/cgroup/cpu.max")) -> int:
    """The cores this process may use: those it may run on, fewer where its cgroup (a container's CPU limit)
    grants less time than that, as `cpu.max` says ("QUOTA PERIOD" microseconds, or "max" for none)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        limit, period = quota.read_text().split()
        return min(cores, max(1, math.ceil(int(limit) / int(period)))) if limit != "max" else cores
    except (OSError, ValueError):
        return cores


def synchronize(device: torch.device) -> None:
    """Wait for the device to finish its queued work (a GPU returns before its kernels do)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Clock:
    """perf_counter that first waits for the device to finish its queued work."""

    def __init__(self, device: torch.device):
        self.device = device

    def now(self) -> float:
        synchronize(self.device)
        return time.perf_counter()
