"""Tokens per iteration of the default drafter, adaptive, over many prompts and seeds: no clock read.

Speed at T > 0 spreads widely over a few prompts, because each method samples its own text. Tokens per
target pass (accepted length) over 99 runs per mode does not, and a drafter change that leaves the
cost of a pass alone shows there first. Usage, from the repository root:

    PYTHONPATH=. python benchmarks/accepted_counts.py --temperature 0.7 --out counts.json

prints, for adaptive trees and adaptive chains (`--modes`), the tokens and drafted nodes per iteration overall
and per prompt kind (3 held-out prompts per kind and 2 shipped prompts per category, seeds 0-2,
48 tokens, lookup+eagle, one thread), and saves every run's (tokens, iterations, drafted nodes).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from dataclasses import replace

import torch

from specviz import tree_size
from specviz.bench.prompts import load_prompts
from specviz.decoder import generate
from specviz.drafters import build_drafter
from specviz.models import load_model
from specviz.settings import DecodeSettings
from specviz.sizing import prepare

SEEDS = (0, 1, 2)
COUNTS = ("tokens", "iterations", "drafted")


def default_pair():
    """The embedded target at one thread, writing every token it is asked for (no early end), and its
    default drafter, lookup+eagle."""
    torch.set_num_threads(1)
    target = load_model(None, "cpu", "float32")
    target.eos_ids = frozenset()
    return target, build_drafter("lookup+eagle", target)


def per_kind(runs: list[dict]) -> str:
    """Tokens and drafted nodes per iteration, over all runs and per prompt kind."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0] * len(COUNTS))
    for run in runs:
        for group in ("all", run["kind"]):
            totals[group] = [total + run[count] for total, count in zip(totals[group], COUNTS)]
    return " ".join(f"{group} {t / i:.3f} ({d / i:.2f} drafted)" for group, (t, i, d) in sorted(totals.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--modes", nargs="+", choices=("trees", "chains"), default=["trees", "chains"],
                        help="adaptive trees, adaptive chains or both (default)")
    parser.add_argument("--out", required=True, help="JSON of every run's tokens, iterations and drafted nodes")
    args = parser.parse_args()
    target, drafter = default_pair()   # every run writes 48 tokens
    prompts = (load_prompts("assets/corpus/heldout.json", per_category=3)
               + load_prompts("assets/bench_prompts.json", per_category=2))
    runs = []
    for mode in args.modes:
        trees = mode == "trees"
        prepared = prepare(target, drafter, DecodeSettings(
            temperature=args.temperature, max_new_tokens=48, record=False, adaptive=True,
            gamma=max(tree_size.DEPTHS), auto_size=trees))
        for prompt in prompts:
            for seed in SEEDS:
                trace = generate(target, drafter, prompt.text, replace(prepared.settings, seed=seed),
                                 sizing=prepared.sizing)
                runs.append({"mode": mode, "prompt": prompt.id, "kind": prompt.category, "seed": seed,
                             "tokens": len(trace.generated_ids), "iterations": len(trace.iterations),
                             "drafted": sum(it.drafted for it in trace.iterations)})
        print(mode, per_kind([run for run in runs if run["mode"] == mode]))
    with open(args.out, "w") as f:
        json.dump({"temperature": args.temperature, "runs": runs}, f, indent=1)


if __name__ == "__main__":
    main()
