"""Two methods of one bench run compared prompt by prompt: the mean log-ratio of their per-prompt medians of
seconds per token, with its standard error.

A bench's tables pool each category's runs; this pairs the two methods on each prompt, so that what a prompt
costs both (its length, its text) cancels. Usage, from the repository root, with the methods named as in the
bench's tables (the first is reported against the second; positive: the first is faster):

    python benchmarks/paired_prompts.py benchmarks/adaptive-t0-fit.json \\
        "engine lookup+eagle adaptive trees ≤8 rec off" "engine lookup+eagle γ=3 rec off"
"""

from __future__ import annotations

import json
import math
import statistics
import sys


def paired(path: str, a: str, b: str) -> list[float]:
    """log(b's median seconds per token / a's) on each prompt both methods ran."""
    per: dict[tuple[str, str], list[float]] = {}
    for run in json.load(open(path))["runs"]:
        per.setdefault((run["method"], run["prompt"]), []).append(run["seconds"] / run["tokens"])
    prompts = sorted({prompt for method, prompt in per if method == a and (b, prompt) in per})
    return [math.log(statistics.median(per[b, p]) / statistics.median(per[a, p])) for p in prompts]


if __name__ == "__main__":
    path, a, b = sys.argv[1:4]
    logs = paired(path, a, b)
    if len(logs) < 2:
        sys.exit(f"{a!r} and {b!r} share {len(logs)} prompt(s) in {path}: need two or more")
    error = statistics.stdev(logs) / math.sqrt(len(logs))
    print(f"{a} against {b}: {100 * statistics.mean(logs):+.1f}% ± {100 * error:.1f}% per prompt, "
          f"faster on {sum(x > 0 for x in logs)} of {len(logs)}")
