"""The target's verify-cost curve: one forward pass over m new tokens, relative to one token.

Verifying a draft of N nodes feeds m = N + 1 tokens: the last committed token and the nodes.

Speculative decoding buys tokens with wider target passes. On a GPU a pass over dozens of tokens
costs about what one token costs (the weights are read once either way), so large trees pay; on
a CPU the pass grows with m soon, so the best tree is small (Sequoia, Chen et al. 2024, sizes its
trees by exactly this curve). The curve is measured once per model, device, dtype and thread
count, on a cached 128-token context, with a tree mask like the one verification uses, and kept
as JSON beside the converted weights (`KEY`).

On one CPU thread the pass is bound by reading the weights, not by arithmetic, so its cost is flat up
to a knee and then climbs: 49 ms for 1 to 6 new tokens here, 57 ms for 8, 74 ms for 16. The sizes
measured are dense below 8, where a chain's or a small tree's width falls, so the knee is measured
rather than drawn as a straight line from 4 to 8 tokens (that line priced a 9-token pass 4% above
one token, where it costs 15% more).
"""

from __future__ import annotations

import json
import os
import re
import statistics
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from specviz.device import Clock
from specviz.kv_cache import CachedLM
from specviz.models import LoadedModel, cache_dir

SIZES = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64)
KEY = "verify-cost-v2"   # v2: the sizes above (v1 measured 1, 2, 4, 8, 16, 32, 64)
CONTEXT = 128


@dataclass
class VerifyCost:
    model: str
    device: str
    dtype: str
    threads: int
    sizes: list[int]
    seconds: list[float]        # median seconds of one pass over m new tokens, made non-decreasing (`monotone`)

    def __post_init__(self):
        self.seconds = monotone(self.seconds)

    @property
    def relative(self) -> list[float]:
        """Cost of each size over the cost of one token."""
        return [s / self.seconds[0] for s in self.seconds]

    def at(self, m: int) -> float:
        """Seconds of a pass over m new tokens, interpolated linearly between measured sizes."""
        sizes, seconds = self.sizes, self.seconds
        if m <= sizes[0]:
            return seconds[0]
        for (a, ta), (b, tb) in zip(zip(sizes, seconds), zip(sizes[1:], seconds[1:])):
            if m <= b:
                return ta + (tb - ta) * (m - a) / (b - a)
        return seconds[-1] * m / sizes[-1]


def monotone(seconds: list[float]) -> list[float]:
    """The non-decreasing curve closest to the measured medians (least squares: pool adjacent violators).

    A pass over more tokens does at least the work of a pass over fewer, so a wider pass measured cheaper
    is noise (a busy machine, a cold cache). Left in, a dip at 4 tokens below the one-token pass would make
    every 3-token draft look free, and a sizer or adaptive policy would draft on text it never guesses."""
    blocks: list[list[float]] = []   # [mean, count] of each pooled run
    for t in seconds:
        blocks.append([t, 1])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (a, n), (b, m) = blocks.pop(-2), blocks.pop()
            blocks.append([(a * n + b * m) / (n + m), n + m])
    return [mean for mean, count in blocks for _ in range(int(count))]


def measure(target: LoadedModel, sizes: tuple[int, ...] = SIZES, rounds: int = 9) -> VerifyCost:
    """Median time of one pass over each size, the sizes interleaved round by round in a fresh order each
    round: a pass right after the widest one runs slower (its caches are cold), and in a fixed order that
    would always be the one-token pass, the curve's unit."""
    lm, clock = CachedLM(target), Clock(target.device)
    generator = torch.Generator().manual_seed(0)
    vocab = target.vocab_size
    context = torch.randint(0, vocab, (CONTEXT,), generator=generator).tolist()
    lm.start(context)
    lm.logits(context)
    times: dict[int, list[float]] = {m: [] for m in sizes}
    for _ in range(rounds + 1):                      # the first round warms up and is dropped
        for m in [sizes[i] for i in torch.randperm(len(sizes), generator=generator).tolist()]:
            new = torch.randint(0, vocab, (m,), generator=generator).tolist()
            start = clock.now()
            lm.logits(context + new, last=m, parents=[-1] * m if m > 1 else None)   # the cache keeps the context
            times[m].append(clock.now() - start)
    return VerifyCost(target.name, str(target.device), str(target.dtype).removeprefix("torch."),
                      torch.get_num_threads(), list(sizes), [statistics.median(times[m][1:]) for m in sizes])


def stored(setup: Setup) -> VerifyCost | None:
    """The curve kept for `setup` (`KEY`), or None while it has not been measured."""
    path = setup.path(KEY)
    return VerifyCost(**json.loads(path.read_text())) if path.is_file() else None


def cached(target: LoadedModel) -> VerifyCost:
    """The curve for this model, device, dtype and thread count: read from the cache or measured once."""
    cost = stored(Setup.of(target))
    if cost is None:
        cost = measure(target)
        keep(cache_path(target, KEY), cost)
    return cost


def keep(path: Path, record) -> None:
    """Write a measurement (a dataclass) to the cache as JSON, whole or not at all: other processes read it
    at any moment (each app session reads the sizing as it starts) and may measure and write it at the same
    time, so a half-written file must never be visible under its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    staging.write_text(json.dumps(asdict(record)))
    staging.replace(path)


@dataclass(frozen=True)
class Setup:
    """What a measurement depends on: the model, its device and dtype, and the torch thread count."""

    model: str
    device: str
    dtype: str
    threads: int

    @classmethod
    def of(cls, target: LoadedModel) -> Setup:
        """The loaded model's setup, with this process's torch threads."""
        return cls(target.name, str(target.device), str(target.dtype), torch.get_num_threads())

    def path(self, what: str) -> Path:
        """Where a measurement `what` in this setup is kept."""
        key = f"{what}-{self.model}-{self.device}-{self.dtype}-{self.threads}t"
        return cache_dir() / "sizing" / (re.sub(r"[^A-Za-z0-9.]+", "_", key).strip("_") + ".json")


def cache_path(target: LoadedModel, what: str) -> Path:
    """Where a measurement of this model on this device, dtype and thread count is kept."""
    return Setup.of(target).path(what)
