"""The timed loop: every method on every prompt, interleaved, repeated, after a warm-up.

The order of methods rotates from one (repeat, prompt) to the next, so a burst of load from
another process spreads over all methods instead of hitting one. Repeat r runs every method with
seed r: sampled, a method's median is then over r texts of its own rather than r timings of one
text, whose luck (a few early rejections, an early end) would otherwise decide its row. The engine
baseline's greedy output in the first repeat is the reference every run (its own later ones
included) is checked against. Each run records wall-clock and process CPU time: on a shared CPU the wall clock also
measures the neighbours, while CPU time (with one torch thread) counts only this run's work.
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
    seconds: float                # wall clock
    cpu_seconds: float            # process CPU time: robust to other processes' load at 1 torch thread
    matches: bool | None          # greedy output equals the baseline's (None when sampling)
    first_mismatch: int | None    # index of the first differing token
    memory_mb: float
    accepted: int | None = None
    evaluated: int | None = None
    iterations: int | None = None
    c: float | None = None
    draft_seconds: float | None = None    # engine and app: summed over the run's iterations
    verify_seconds: float | None = None
    first_seconds: float | None = None    # engine and app: time to the first iteration's tokens (prefill included)
    first_tokens: int | None = None       # and how many it committed


def measure(methods: list[Method], prompts: list[BenchPrompt], repeats: int, warmup: int,
            greedy: bool, log=sys.stderr) -> list[RunRecord]:
    for method in methods:
        first = next(p for p in prompts if method.prompts is None or p.id in method.prompts)
        for _ in range(warmup):
            method.run(first)
    timed: list[tuple[RunRecord, list[int]]] = []
    for repeat in range(repeats):
        for i, prompt in enumerate(prompts):
            shift = (repeat * len(prompts) + i) % len(methods)
            for method in methods[shift:] + methods[:shift]:
                if method.prompts is None or prompt.id in method.prompts:
                    timed.append(_timed(method, prompt, repeat))
            done = [r for r, _ in timed if r.repeat == repeat and r.prompt == prompt.id]
            rates = "  ".join(f"{r.method}: {r.tokens / r.seconds:.1f}" for r in done)
            print(f"[repeat {repeat + 1}/{repeats}, {prompt.id}] tokens/s  {rates}", file=log, flush=True)
    if greedy:
        reference = {r.prompt: ids for r, ids in timed if r.method == BASELINE and r.repeat == 0}
        for record, ids in timed:
            _check(record, ids, reference[record.prompt])
    return [record for record, _ in timed]


def _timed(method: Method, prompt: BenchPrompt, repeat: int) -> tuple[RunRecord, list[int]]:
    device = method.models[0].device
    before = reset_peak(device)
    out = method.run(prompt, repeat)
    memory = peak_mb(device, method.models, out.prompt_tokens + len(out.ids) + (method.spec.gamma or 0), before)
    return RunRecord(method.spec.name, prompt.id, prompt.category, repeat, len(out.ids), out.seconds, out.cpu_seconds,
                     None, None, memory, out.accepted, out.evaluated, out.iterations, out.c, out.draft_seconds,
                     out.verify_seconds, out.first_seconds, out.first_tokens), out.ids


def _check(record: RunRecord, ids: list[int], reference: list[int]) -> None:
    """Greedy equality with the baseline's first timed output; the first differing index if not."""
    record.matches = ids == reference
    if not record.matches:
        record.first_mismatch = next((i for i, (a, b) in enumerate(zip(ids, reference)) if a != b),
                                     min(len(ids), len(reference)))
