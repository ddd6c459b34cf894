"""The default (adaptive trees, lookup+eagle) with one module constant changed, against itself, in one process.

Timings taken in separate processes on this shared machine drift by more than most policy changes move
them, so each prompt runs the target alone, then the default as it is, then once per variant, and
again for each repeat; each ratio is over the target alone's median on that prompt. Prints one JSON line
per prompt (speedups and tokens per iteration) and, per arm, the geometric mean, the worst prompt and how
many fell below 0.98×. Every run writes all 48 tokens (`default_pair`: no early end). Tune on
training-split prompts only (`corpus:N` below), never on a public benchmark's. Usage, from the
repository root:

    PYTHONPATH=. python benchmarks/constant_ab.py PROMPTS TEMPERATURE specviz.adaptive.MARGIN=0.08 \\
        specviz.drafters.eagle.WINDOW=256

`PROMPTS` is any prompt set `bench` reads; `corpus:N` builds N training-split prompts of each corpus kind.
"""

from __future__ import annotations

import importlib
import json
import math
import statistics
import sys
import time
from collections import defaultdict
from dataclasses import replace

from accepted_counts import default_pair

from specviz.bench.prompts import BenchPrompt, load_prompts
from specviz.corpus.prompts import KINDS, build_prompts
from specviz.decoder import generate
from specviz.settings import DecodeSettings
from specviz.sizing import prepare
from specviz.tree_size import DEPTHS

REPEATS = 2


def corpus_prompts(per_kind: int, seed: int = 5909) -> list[BenchPrompt]:
    """`per_kind` training-split prompts of every corpus kind (`build_prompts`), as a bench prompt set."""
    return [BenchPrompt(f"{kind}-{i}", kind, [dict(m) for m in p.messages])
            for kind in KINDS for i, p in enumerate(build_prompts(kind, per_kind, "train", seed))]


def variant(assignment: str) -> tuple[object, str, float]:
    """`package.module.NAME=value` as (module, NAME, value)."""
    target, value = assignment.split("=")
    module, name = target.rsplit(".", 1)
    return importlib.import_module(module), name, float(value) if "." in value else int(value)


path, temperature, assignments = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
prompts = corpus_prompts(int(path.split(":")[1])) if path.startswith("corpus:") else load_prompts(path)
arms = {"as is": None, **{a: variant(a) for a in assignments}}
target, drafter = default_pair()
base = DecodeSettings(temperature=temperature, max_new_tokens=48, record=False)
prepared = prepare(target, drafter, replace(base, adaptive=True, gamma=max(DEPTHS), auto_size=True))
rows = []
for prompt in prompts:
    seconds, per_iteration = defaultdict(list), defaultdict(list)
    for seed in range(REPEATS):
        start = time.perf_counter()
        generate(target, None, prompt.text, replace(base, seed=seed))
        seconds["alone"].append(time.perf_counter() - start)
        for arm, change in arms.items():
            if change:
                module, name, value = change
                kept = getattr(module, name)
                setattr(module, name, value)
            start = time.perf_counter()
            trace = generate(target, drafter, prompt.text, replace(prepared.settings, seed=seed),
                             sizing=prepared.sizing)
            seconds[arm].append(time.perf_counter() - start)
            per_iteration[arm].append(len(trace.generated_ids) / len(trace.iterations))
            if change:
                setattr(module, name, kept)
    alone = statistics.median(seconds["alone"])
    row = {"id": prompt.id, **{arm: round(alone / statistics.median(seconds[arm]), 4) for arm in arms},
           **{f"tokens/iteration {arm}": round(statistics.mean(per_iteration[arm]), 3) for arm in arms}}
    rows.append(row)
    print(json.dumps(row), flush=True)
for arm in arms:
    ratios = [row[arm] for row in rows]
    print(f"{arm}: geomean {math.exp(statistics.mean(map(math.log, ratios))):.3f}×, worst {min(ratios):.3f}×, "
          f"{sum(r < 0.98 for r in ratios)} of {len(ratios)} below 0.98×")
