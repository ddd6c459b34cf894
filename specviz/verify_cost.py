"""The target's verify-cost curve: one forward pass over m new tokens, relative to one token.

Verifying a draft of N nodes feeds m = N + 1 tokens: the last committed token and the nodes.

Speculative decoding buys tokens with wider target passes. On a GPU a pass over dozens of tokens
costs about what one token costs (the weights are read once either way), so large trees pay; on
a CPU the pass grows with m soon, so the best tree is small (Sequoia, Chen et al. 2024, sizes its
trees by exactly this curve). The curve is measured once per model, device, dtype and thread
count, on a cached context, with a tree mask like the one verification uses, and kept
as JSON beside the converted weights (`KEY`).

On one CPU thread the pass is bound by reading the weights, not by arithmetic, so its cost is flat up
to a knee and then climbs: 53 ms for 1 to 6 new tokens here, 59 ms for 7, 60 ms for 8, 77 ms for 16.
The sizes measured are every one up to 8, where a chain's or a small tree's width falls, so the knee is
measured rather than drawn as a straight line: from 4 to 8 tokens that line priced a 9-token pass 4%
above one token, where it costs 15% more; from 6 to 8 it priced a 7-token pass (a 6-node tree) at 56 ms,
and decodes measured the 7-token passes 17% above the 6-token ones, so the policy drafted 6-node trees
where a chain of 4 ran faster.

Each new token also attends to every cached one, so every pass costs more over a long context: one
thread, the embedded target took 50, 57 and 73 ms for 1, 8 and 16 new tokens over 128 cached tokens;
66, 78 and 101 ms over 1 024; 84, 101 and 135 ms over 2 048. The curve is therefore measured at two
contexts, `CONTEXT` and `LONG_CONTEXT`, interleaved, and `at_context` moves each size's cost linearly
between them and beyond (attention's work grows linearly with the context; the line through 128 and
1 024 priced those passes at 2 048 within 3%). An adaptive run over a long prompt then prices its
drafts at the passes it pays, against a drafter step that does not grow as fast.

A pass here takes a quarter longer or shorter from one moment to the next, so a curve is only as good as its
rounds. Two curves of 9 disjoint rounds each, drawn from 40 (one thread, sizes 1 to 8 over 128 cached tokens),
put sizes 2 to 8 against the one-token pass 6.2-7.0% apart on average and the one-token passes 6.8-9.2%; two of
20 rounds, 4.6-5.0% and 5.4% (`benchmarks/curve_rounds.py`, two runs). The differences a draft shape is chosen by
are of that order (a tree against a chain, 2-5%), so the sizes up to `DENSE`, where a CPU's drafts fall, are timed
`DENSE_TIMES` times a round.
"""

from __future__ import annotations

import functools
import json
import re
import statistics
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch

from specviz.contention import Contention
from specviz.device import Clock, device_name
from specviz.files import write_whole
from specviz.kv_cache import CachedLM
from specviz.models import LoadedModel, cache_dir

SIZES = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64)
# v7: sizes up to DENSE timed DENSE_TIMES a round (v6 was a fitted curve, since withdrawn); v5: no timed pass
# copies the whole cache (`CachedLM._keep_path`); v4: 7 measured; v3: a second curve at LONG_CONTEXT; v2: dense
# below 8; v1: 1, 2, 4, ... 64
KEY = "verify-cost-v7"
DENSE = 8
DENSE_TIMES = 3
CONTEXT = 128
LONG_CONTEXT = 1024


@dataclass
class VerifyCost:
    model: str
    device: str
    dtype: str
    threads: int
    sizes: list[int]
    seconds: list[float]        # median seconds of one pass over m new tokens, made non-decreasing (`monotone`)
    context: int = CONTEXT      # the cached tokens each pass attended to
    longer: VerifyCost | None = None   # the same sizes measured over a longer context
    others: float | None = None        # cores other processes kept busy meanwhile (`contention`); None: not known

    def __post_init__(self):
        self.seconds = monotone(self.seconds)
        if isinstance(self.longer, dict):   # read back from JSON
            self.longer = VerifyCost(**self.longer)

    def at_context(self, context: int) -> VerifyCost:
        """The curve over `context` cached tokens: each size's cost moved linearly from this curve's
        context towards (and past) the longer curve's. Contexts shorter than this curve's keep it."""
        if self.longer is None or context <= self.context:
            return self
        w = (context - self.context) / (self.longer.context - self.context)
        seconds = [t + w * (self.longer.at(m) - t) for m, t in zip(self.sizes, self.seconds)]
        return replace(self, seconds=seconds, context=context, longer=None)

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


def monotone(values: list[float], weights: list[float] | None = None) -> list[float]:
    """The non-decreasing curve closest to the measured values, each of weight 1 or its `weights` entry
    (weighted least squares: pool adjacent violators).

    A pass over more tokens does at least the work of a pass over fewer, so a wider pass measured cheaper
    is noise (a busy machine, a cold cache). Left in, a dip at 4 tokens below the one-token pass would make
    every 3-token draft look free, and a sizer or adaptive policy would draft on text it never guesses."""
    blocks: list[tuple[float, float, int]] = []   # (mean, weight, values) of each pooled run
    for value, weight in zip(values, weights or [1.0] * len(values)):
        blocks.append((value, weight, 1))
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            (a, n, i), (b, m, j) = blocks.pop(-2), blocks.pop()
            blocks.append(((a * n + b * m) / (n + m), n + m, i + j))
    return [mean for mean, _, count in blocks for _ in range(count)]


def measure(target: LoadedModel, sizes: tuple[int, ...] = SIZES, rounds: int = 9,
            contexts: tuple[int, ...] = (CONTEXT, LONG_CONTEXT)) -> VerifyCost:
    """Median time of one pass over each size at each context (`timed_passes`). The curve at the first context,
    holding those at the others as `longer`."""
    contention = Contention()
    times = timed_passes(target, sizes, rounds, contexts)
    cost, others = None, contention.others()
    for c in reversed(range(len(contexts))):
        cost = VerifyCost(target.name, str(target.device), str(target.dtype).removeprefix("torch."),
                          torch.get_num_threads(), list(sizes), [statistics.median(times[c, m]) for m in sizes],
                          contexts[c], cost, others)
    return cost


def timed_passes(target: LoadedModel, sizes: tuple[int, ...], rounds: int, contexts: tuple[int, ...],
                 dense_times: int = DENSE_TIMES) -> dict[tuple[int, int], list[float]]:
    """Seconds of each pass over m new tokens at context index c, {(c, m): [...]}: the (size, context) pairs
    interleaved round by round in a fresh order each round, since a pass right after the widest one runs slower
    (its caches are cold), and in a fixed order that would always be the one-token pass, the curve's unit; sizes
    up to `DENSE` come `dense_times` times a round. A first round warms up and is dropped."""
    clock = Clock(target.device)
    generator = torch.Generator().manual_seed(0)
    vocab = target.vocab_size
    models, prefixes = [], []
    for length in contexts:
        lm, prefix = CachedLM(target), torch.randint(0, vocab, (length,), generator=generator).tolist()
        lm.start(prefix)
        lm.logits(prefix)
        models.append(lm)
        prefixes.append(prefix)
    pairs = [(c, m) for c in range(len(contexts)) for m in sizes for _ in range(dense_times if m <= DENSE else 1)]
    times: dict[tuple[int, int], list[float]] = {pair: [] for pair in pairs}
    for r in range(rounds + 1):
        for c, m in [pairs[i] for i in torch.randperm(len(pairs), generator=generator).tolist()]:
            new = torch.randint(0, vocab, (m,), generator=generator).tolist()
            start = clock.now()
            # the cache keeps the context: each pass feeds only the m new tokens
            models[c].logits(prefixes[c] + new, last=m, parents=[-1] * m if m > 1 else None)
            if r:
                times[c, m].append(clock.now() - start)
    return times


def stored(setup: Setup) -> VerifyCost | None:
    """The curve kept for `setup` (`KEY`), or None while it has not been measured."""
    path = setup.path(KEY)
    return VerifyCost(**json.loads(path.read_text())) if path.is_file() else None


def cached(target: LoadedModel) -> VerifyCost:
    """The curve for this model, device, dtype and thread count: read from the cache or measured once."""
    setup = Setup.of(target)
    cost = stored(setup)
    if cost is None:
        cost = measure(target)
        keep(cache_path(target, KEY), cost)
        _now[setup] = None   # measured by this process, just now: nothing to check it against
    return cost


STALE = 0.3   # a kept curve whose one-token pass is this share off one timed now is stale
_now: dict[Setup, float | None] = {}


def one_token_now(target: LoadedModel) -> float | None:
    """Seconds of a one-token pass over `CONTEXT` cached tokens timed now (`measure`, 3 rounds of `DENSE_TIMES`;
    about 1.2 s on one CPU thread), once per process and setup: what a kept curve is checked against (`stale`).
    None where this process measured the curve itself (`cached`)."""
    setup = Setup.of(target)
    if setup not in _now:
        _now[setup] = measure(target, (1,), rounds=3, contexts=(CONTEXT,)).seconds[0]
    return _now[setup]


def stale(cost: VerifyCost, now: float | None) -> str | None:
    """A one-line warning when the kept curve prices a one-token pass more than `STALE` off the pass timed `now`
    (None: not checked). The curve is measured once and kept, but a machine on a shared host runs at the speed
    its memory bus allows: here a kept curve priced the one-token pass at 76 ms where it later took 56 ms, and
    within the next hour the same pass took 60 to 82 ms, while no process on the machine was busy. The verify
    pass is bound by reading the weights, the drafter step much less, so such a drift prices every draft off."""
    if now is None or abs(now / cost.seconds[0] - 1) <= STALE:
        return None
    return (f"the kept verify-cost curve prices a one-token pass at {cost.seconds[0] * 1000:.1f} ms and one timed "
            f"now took {now * 1000:.1f} ms, so drafts are priced for another speed of this machine; if that lasts, "
            f"take the curve again while nothing else runs (python -m specviz sizing --again)")


def keep(path: Path, record) -> None:
    """Write a measurement (a dataclass) to the cache as JSON, whole or not at all: other processes read it
    at any moment (each app session reads the sizing as it starts) and may measure and write it at the same
    time, so a half-written file must never be visible under its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, lambda temporary: temporary.write_text(json.dumps(asdict(record))))


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
        """Where a measurement `what` in this setup is kept: named by the hardware too, since a cache folder may
        move to another machine (a host's persistent volume), where the times are another GPU's or CPU's."""
        key = f"{what}-{self.model}-{self.device}-{hardware(self.device)}-{self.dtype}-{self.threads}t"
        return cache_dir() / "sizing" / (re.sub(r"[^A-Za-z0-9.]+", "_", key).strip("_") + ".json")


@functools.cache
def hardware(device: str) -> str:
    """`device.device_name` of a device's name, once per process."""
    return device_name(torch.device(device))


def cache_path(target: LoadedModel, what: str) -> Path:
    """Where a measurement of this model on this device, dtype and thread count is kept."""
    return Setup.of(target).path(what)
