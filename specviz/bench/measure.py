"""The timed loop: every method on every prompt, interleaved, repeated, after a warm-up.

The order of methods rotates from one (repeat, prompt) to the next, so a burst of load from
another process spreads over all methods instead of hitting one. The engine's baseline runs each
prompt once first; its greedy output is the reference every other run is checked against.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from specviz.bench.memory import peak_mb, reset_peak
from specviz.bench.methods import Method
from specviz.bench.prompts import BenchPrompt

BASELINE = "engine baseline"


@dataclass
class RunRecord:
    method: str
    prompt: str
    category: str
    repeat: int
    tokens: int
    seconds: float
    matches: bool | None          # greedy output equals the baseline's (None when sampling)
    first_mismatch: int | None    # index of the first differing token
    memory_mb: float
    accepted: int | None = None
    evaluated: int | None = None
    iterations: int | None = None
    c: float | None = None


def measure(methods: list[Method], prompts: list[BenchPrompt], repeats: int, warmup: int,
            greedy: bool, log=sys.stderr) -> list[RunRecord]:
    baseline = next(m for m in methods if m.spec.name == BASELINE)
    reference = {p.id: baseline.run(p).ids for p in prompts}
    for method in methods:
        for _ in range(warmup):
            method.run(prompts[0])
    records = []
    for repeat in range(repeats):
        for i, prompt in enumerate(prompts):
            shift = (repeat * len(prompts) + i) % len(methods)
            for method in methods[shift:] + methods[:shift]:
                records.append(_timed(method, prompt, repeat, reference[prompt.id] if greedy else None))
            done = [r for r in records if r.repeat == repeat and r.prompt == prompt.id]
            times = "  ".join(f"{r.method}: {r.tokens / r.seconds:.1f}" for r in done)
            print(f"[repeat {repeat + 1}/{repeats}, {prompt.id}] tokens/s  {times}", file=log, flush=True)
    return records


def _timed(method: Method, prompt: BenchPrompt, repeat: int, reference: list[int] | None) -> RunRecord:
    device = method.models[0].device
    reset_peak(device)
    out = method.run(prompt)
    memory = peak_mb(device, method.models, out.prompt_tokens + len(out.ids) + (method.spec.gamma or 0))
    matches = mismatch = None
    if reference is not None:
        matches = out.ids == reference
        if not matches:
            mismatch = next((i for i, (a, b) in enumerate(zip(out.ids, reference)) if a != b),
                            min(len(out.ids), len(reference)))
    return RunRecord(method.spec.name, prompt.id, prompt.category, repeat, len(out.ids), out.seconds, matches,
                     mismatch, memory, out.accepted, out.evaluated, out.iterations, out.c)
