"""How far a bench's per-category speedups can be read: the adaptive rows against the best fixed size per
category, and the noise of one category's speedup in the same run.

Two rows that draft the same (a fixed γ with recording on and off) differ, category by category, by the
recording's overhead plus noise; the spread of that difference around its mean is the noise of comparing two
rows in one category (a little more: the overhead itself varies by category with the nodes recorded). From
it, the share of categories in which a policy exactly as fast as the best fixed size would still read more
than 3% below the best of the fixed rows, by chance alone: the best of three noisy rows sits above the true
best. Usage, from the repository root, with bench JSON files:

    python benchmarks/category_noise.py benchmarks/adaptive-t0-per2.json benchmarks/adaptive-t0-fit.json

With `--table`, each file's default (the adaptive trees) against the best fixed row, kind by kind, as a
markdown table: medians with the rounds' min–max, end to end and after the prefill; then each row pooled over
all its runs (total time over total tokens), which spreads a slowdown of the machine over every row alike as the
rows interleave, with its time per iteration outside the draft and the verify pass (the verdict, the policy's
search and its bookkeeping).
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys

LINE = 0.97   # within 3% of the best fixed size


def speedups(path: str) -> dict[str, dict[str, float]]:
    """Median speedup of each method (rows with the speedup measured) in each category but 'all'."""
    rows = json.load(open(path))["rows"]
    table: dict[str, dict[str, float]] = {}
    for row in rows:
        if row["category"] != "all" and row["speedup"]:
            table.setdefault(row["method"], {})[row["category"]] = row["speedup"]["median"]
    return table


def fixed(method: str) -> bool:
    """A fixed shape's row with recording off (the rows the adaptive ones are held against)."""
    return "rec off" in method and "adaptive" not in method


def within(table: dict[str, dict[str, float]]) -> None:
    """Each adaptive row's categories within `LINE` of the best fixed row with recording off."""
    shapes = [m for m in table if fixed(m)]
    for method in [m for m in table if "adaptive" in m]:
        misses = [f"{c} {v:.2f}× against {max(table[f][c] for f in shapes):.2f}×" for c, v in table[method].items()
                  if v < LINE * max(table[f][c] for f in shapes)]
        print(f"  {method}: {len(table[method]) - len(misses)} of {len(table[method])} within 3%; misses: "
              + (", ".join(misses) or "none"))


def _speed(row: dict, key: str, label: str = "") -> str:
    v = row[key]
    return f"{v['median']:.2f}×{label} ({v['low']:.2f}–{v['high']:.2f})"


def _label(method: str) -> str:
    shape = method.split(" lookup+eagle ", 1)[-1].removesuffix(" rec off")
    return shape.replace("γ=", "chain γ=")


def table(path: str) -> str:
    """Markdown: per kind, the default against the fastest fixed row with recording off, the ratio in bold when
    below `LINE`; the fastest is chosen separately end to end and after the prefill."""
    rows = [r for r in json.load(open(path))["rows"] if r["category"] != "all" and r["speedup"] and not r["record"]]
    lines = ["| kind | default | best fixed | default / best fixed | after the prefill: default | best fixed "
             "| default / best fixed |", "| --- " * 7 + "|"]
    for kind in sorted({r["category"] for r in rows}):
        mine = [r for r in rows if r["category"] == kind]
        default = next(r for r in mine if "adaptive trees" in r["method"])
        shapes = [r for r in mine if fixed(r["method"])]
        cells = [kind]
        for key in ("speedup", "after_first"):
            best = max(shapes, key=lambda r: r[key]["median"])
            ratio = default[key]["median"] / best[key]["median"]
            cells += [_speed(default, key), _speed(best, key, " " + _label(best["method"])),
                      f"**{ratio:.3f}**" if ratio < LINE else f"{ratio:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def pooled(path: str) -> str:
    """Each row with recording off: milliseconds per token and, where the row counts iterations (the engine's),
    the milliseconds per iteration outside the draft and the verify pass."""
    runs = [r for r in json.load(open(path))["runs"] if " rec on" not in r["method"]]
    lines = []
    for method in dict.fromkeys(r["method"] for r in runs):
        mine = [r for r in runs if r["method"] == method]
        seconds, iterations = sum(r["seconds"] for r in mine), sum(r["iterations"] or 0 for r in mine)
        outside = seconds - sum((r["draft_seconds"] or 0) + (r["verify_seconds"] or 0) for r in mine)
        line = f"  {method}: {1000 * seconds / sum(r['tokens'] for r in mine):.1f} ms a token"
        lines.append(line + (f", {1000 * outside / iterations:.1f} ms an iteration outside the draft and the verify "
                             "pass" if iterations else ""))
    return "\n".join(lines)


def noise(tables: list[dict[str, dict[str, float]]]) -> float:
    """Standard deviation of one row's log-speedup in a category: from the pairs recording on and off."""
    deviations = []
    for table in tables:
        for on in [m for m in table if m.endswith(" rec on")]:
            off = table.get(on.removesuffix(" rec on") + " rec off")
            if off:
                logs = [math.log(off[c] / table[on][c]) for c in table[on]]
                deviations += [x - statistics.mean(logs) for x in logs]
    return math.sqrt(sum(x * x for x in deviations) / max(len(deviations) - 1, 1) / 2)


def chance_of_a_miss(sigma: float, gaps: tuple[float, ...], draws: int = 100_000) -> float:
    """Share of categories where a policy as fast as the best fixed size reads below `LINE` of the best of the
    fixed rows, whose true log-speeds lie `gaps` below it, every row read with noise `sigma`."""
    rng = random.Random(0)
    return sum(rng.gauss(0, sigma) < max(rng.gauss(-g, sigma) for g in gaps) + math.log(LINE)
               for _ in range(draws)) / draws


if __name__ == "__main__":
    if sys.argv[1] == "--table":
        for path in sys.argv[2:]:
            print(f"{path}\n\n{table(path)}\n\npooled over every run:\n{pooled(path)}\n")
        sys.exit()
    tables = [speedups(path) for path in sys.argv[1:]]
    for path, speeds in zip(sys.argv[1:], tables):
        print(path)
        within(speeds)
    sigma = noise(tables)
    print(f"one row's speedup in one category: ±{100 * sigma:.1f}% (one standard deviation, within a run)")
    for gaps in ((0.0, 0.0, 0.0), (0.0, 0.05, 0.10)):
        print(f"a policy as fast as the best fixed size, the fixed sizes {', '.join(f'{100 * g:.0f}%' for g in gaps)} "
              f"below it: reads more than 3% below in {100 * chance_of_a_miss(sigma, gaps):.0f}% of categories")
