"""The default (adaptive trees, lookup+eagle) at T = 0.7 on one bench prompt per kind, over ten seeds.

At T > 0 each run samples its own text, so one run per kind reads mostly the text drawn. This runs the
first prompt of each kind named with seeds 0-9 (48 tokens, one thread, no early stop) and prints the
mean tokens per iteration and the median tokens/s. Usage, from the repository root (the label names the
code version in the printed lines; run one process per version, alternating, to compare two):

    PYTHONPATH=. python benchmarks/adaptive_seeds.py multiturn,translation after
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import replace

from accepted_counts import default_pair

from specviz.bench.prompts import load_prompts
from specviz.decoder import generate
from specviz.settings import DecodeSettings
from specviz.sizing import prepare

kinds, label = sys.argv[1].split(","), sys.argv[2]
prompts = load_prompts("assets/bench_prompts.json,assets/corpus/heldout.json")
target, drafter = default_pair()
base = DecodeSettings(temperature=0.7, gamma=8, adaptive=True, auto_size=True, max_new_tokens=48, record=False)
for kind in kinds:
    prompt = next(p for p in prompts if p.category == kind)
    per_iteration, rates = [], []
    for seed in range(10):
        prepared = prepare(target, drafter, replace(base, seed=seed))
        start = time.perf_counter()
        trace = generate(target, drafter, prompt.text, prepared.settings, sizing=prepared.sizing)
        seconds = time.perf_counter() - start
        per_iteration.append(len(trace.generated_ids) / len(trace.iterations))
        rates.append(len(trace.generated_ids) / seconds)
    print(f"{label} {kind}: tokens/iteration {statistics.mean(per_iteration):.3f}, "
          f"tokens/s median {statistics.median(rates):.1f}")
