"""How well the adaptive policy predicts its own iterations: E (tokens an iteration, `Choice.expected_tokens`)
against the tokens each iteration wrote, by the drafter's situation and the shape chosen; no clock read.

The policy picks the shape of the highest predicted tokens per second, so a situation whose E runs low is
drafted too short and one whose E runs high too long or too wide. Runs the default (lookup+eagle, adaptive
trees) on the first `--per-category` prompts of each category of `--prompts` (default: the shipped prompts,
the held-out kinds and random letters; `corpus:N`: N training-split prompts of each corpus kind, `--seed`),
48 tokens, one thread, no early stop. Usage, from the repository root:

    PYTHONPATH=. python benchmarks/predicted_tokens.py --per-category 2 --temperature 0
    PYTHONPATH=. python benchmarks/predicted_tokens.py --prompts corpus:3 --seed 5974

prints one row per group: iterations, mean E predicted, mean tokens written, and their ratio. Groups: the
situation and shape, early or late in the run; and what was drafted (a copy: no drafter call; the head's chain;
a tree) split by the depth-1 estimate α̂ the shape was chosen with (`Choice.alpha`, at least `HIGH` or below),
which shows whether the estimates regress to the mean: a shape chosen on a high α̂ writing less than its E.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace

from accepted_counts import default_pair
from constant_ab import prompt_set

from specviz.decoder import generate
from specviz.settings import DecodeSettings
from specviz.sizing import prepare
from specviz.tree_size import DEPTHS

PROMPTS = "assets/bench_prompts.json,assets/corpus/heldout.json,assets/bench_prompts_random.json"
EARLY = 6   # iterations counted as the start of a run, where the estimates are mostly the prior
HIGH = 0.5  # a depth-1 estimate at least this is a high one


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", default=PROMPTS, help="a prompt set `bench` reads, or corpus:N")
    parser.add_argument("--per-category", type=int, default=2)
    parser.add_argument("--seed", type=int, default=5909, help="corpus:N's prompt seed (default 5909)")
    parser.add_argument("--temperature", type=float, default=0.0)
    args = parser.parse_args()
    target, drafter = default_pair()
    prompts = prompt_set(args.prompts, target, args.seed, args.per_category)
    base = DecodeSettings(temperature=args.temperature, max_new_tokens=48, seed=0)
    prepared = prepare(target, drafter, replace(base, adaptive=True, gamma=max(DEPTHS), auto_size=True))
    groups: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
    for prompt in prompts:
        trace = generate(target, drafter, prompt.text, prepared.settings, sizing=prepared.sizing)
        for i, it in enumerate(trace.iterations):
            choice = it.choice
            if choice is None or choice.gamma == 0:
                continue
            shape = "chain" if choice.branches == 1 else "tree"
            when = "early" if i <= EARLY else "late"
            drafted = "copy" if it.draft_calls == 0 else "head's chain" if shape == "chain" else "tree"
            alpha = f"α̂ ≥ {HIGH}" if choice.alpha >= HIGH else f"α̂ < {HIGH}"
            for key in ("all", f"{choice.situation}: {shape}", f"{choice.situation}: {shape}, {when}",
                        f"{drafted}", f"{drafted}, {alpha}"):
                group = groups[key]
                group[0] += 1
                group[1] += choice.expected_tokens
                group[2] += len(it.emitted_ids)
    print(f"{len(prompts)} prompts, T={args.temperature:g}")
    print("| group | iterations | E predicted | tokens written | written / predicted |\n|---|---|---|---|---|")
    for key, (n, predicted, written) in sorted(groups.items()):
        print(f"| {key} | {n} | {predicted / n:.2f} | {written / n:.2f} | {written / predicted:.2f} |")


if __name__ == "__main__":
    main()
