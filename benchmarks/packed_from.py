"""The default head's drafter step, chain and tree, with its block linears packed from N rows against never.

`drafters.layers.pack_head` packs a float32 drafter's linears other than its LM head from
`FLOAT32_PACKED_FROM` rows on: one row runs faster through torch's plain path, two or more (a tree's
frontier, the catch-up after a verification) through oneDNN's packed one. This times the EAGLE head's
drafter step (`tree_size.drafter_step`: drafting time over drafter calls) on the sizing calibration's four
prompts, greedy, 48 tokens, in chains and in trees, switching the row count in place and alternating the
order each round, with each run's time after the prompt's prefill (the drafting and the verifications); prints
a table of the medians with their min–max and writes every round to a JSON file.
Usage, from the repository root:

    PYTHONPATH=. python benchmarks/packed_from.py --rounds 6 --out benchmarks/packed-from-two.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace
from pathlib import Path

import torch

from specviz.decoder import generate
from specviz.drafters.eagle import load_eagle
from specviz.drafters.layers import FLOAT32_PACKED_FROM
from specviz.limits import NO_LIMITS
from specviz.models import load_model
from specviz.packed_linear import PackedLinear
from specviz.settings import DecodeSettings
from specviz.sizing import CALIBRATION, TREE
from specviz.tree_size import drafter_step

NEVER = 10**9   # a row count no draft step reaches: the plain path throughout


def spread(name: str, ms: list[float]) -> dict[str, float | list[float]]:
    """The median of `ms` as `name`, with its min, max and every round."""
    return {name: round(statistics.median(ms), 3), f"{name}_min": round(min(ms), 3), f"{name}_max": round(max(ms), 3),
            f"{name}_rounds": [round(x, 3) for x in ms]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--out", required=True, help="JSON file of every round")
    args = parser.parse_args()
    torch.set_num_threads(1)
    target = load_model(None, "cpu", "float32")
    drafter = load_eagle(target)
    block = [m for m in drafter.head.modules() if isinstance(m, PackedLinear)]
    if not block or {m.from_rows for m in block} != {FLOAT32_PACKED_FROM}:
        raise SystemExit("the head is not packed from FLOAT32_PACKED_FROM rows here (not float32 on a oneDNN CPU?)")
    chain = DecodeSettings(gamma=4, temperature=0.0, max_new_tokens=48)
    depth, branches, nodes = TREE
    shapes = {"chain γ=4": chain, f"tree {depth}x{branches}x{nodes}": replace(chain, gamma=depth, branches=branches,
                                                                              nodes=nodes),
              "tree 3x3x6": replace(chain, gamma=3, branches=3, nodes=6)}
    arms = {f"packed from {FLOAT32_PACKED_FROM} rows": FLOAT32_PACKED_FROM, "never packed": NEVER}
    generate(target, drafter, CALIBRATION[0], replace(chain, max_new_tokens=4), limits=NO_LIMITS)  # warm-up
    steps = {(shape, arm): [] for shape in shapes for arm in arms}
    decode = {(shape, arm): [] for shape in shapes for arm in arms}
    for r in range(args.rounds):
        for shape, settings in shapes.items():
            for arm, rows in (arms.items() if r % 2 == 0 else reversed(arms.items())):
                for m in block:
                    m.from_rows = rows
                traces = [generate(target, drafter, prompt, settings, limits=NO_LIMITS) for prompt in CALIBRATION]
                steps[(shape, arm)].append(drafter_step(traces) * 1e3)
                decode[(shape, arm)].append(sum(t.wall_time - t.iterations[0].elapsed for t in traces) * 1e3)
    rows = [{"shape": shape, "arm": arm, **spread("step_ms", steps[(shape, arm)]),
             **spread("after_prefill_ms", decode[(shape, arm)])} for shape in shapes for arm in arms]
    Path(args.out).write_text(json.dumps({"rounds": args.rounds, "prompts": len(CALIBRATION), "rows": rows},
                                         indent=1) + "\n")
    lines = ["| shape | what | " + " | ".join(arms) + " | ratio |", "| --- | --- | " + " | ".join("---" for _ in arms) +
             " | --- |"]
    for shape in shapes:
        cells = [next(r for r in rows if r["shape"] == shape and r["arm"] == arm) for arm in arms]
        for what, label in (("step_ms", "drafter step"), ("after_prefill_ms", "4 runs after the prefill")):
            lines.append(f"| {shape} | {label} | " + " | ".join(
                f"{c[what]:.2f} ms ({c[what + '_min']:.2f}–{c[what + '_max']:.2f})" for c in cells) +
                f" | {cells[0][what] / cells[1][what]:.3f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
