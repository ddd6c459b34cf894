"""How far a bench's per-category speedups can be read: the adaptive rows against the best fixed size per
category, and the noise of one category's speedup in the same run.

Two rows that draft the same (a fixed γ with recording on and off) differ, category by category, by the
recording's overhead plus noise; the spread of that difference around its mean is the noise of comparing two
rows in one category (a little more: the overhead itself varies by category with the nodes recorded). From
it, the share of categories in which a policy exactly as fast as the best fixed size would still read more
than 3% below the best of the fixed rows, by chance alone: the best of three noisy rows sits above the true
best. Usage, from the repository root, with bench JSON files:

    python benchmarks/category_noise.py benchmarks/adaptive-t0-per2.json benchmarks/adaptive-t0-fit.json

With `--table`, each file's default (the adaptive trees; `--default=TEXT`: the row whose name holds TEXT, such as
`--default="adaptive trees, costs learnt"`) against the best fixed row, kind by kind, as a
markdown table: medians with the rounds' min–max, end to end and after the prefill; then each row pooled over
all its runs (total time over total tokens), which spreads a slowdown of the machine over every row alike as the
rows interleave, with its time per iteration outside the draft and the verify pass (the verdict, the policy's
search and its bookkeeping). With `--rounds`, that table once over all the files' rounds joined, for runs of one
command, whose policy reads no clock and whose rows are seeded, so that every file's rows draft (and at T > 0 sample)
alike: a kind's medians rest on more rounds of the clock, though at T > 0 on the same texts.
"""

from __future__ import annotations

import json
import math
import random
import statistics
import sys

LINE = 0.97   # within 3% of the best fixed size
DEFAULT = "adaptive trees ≤"   # the default's row ("adaptive trees, costs learnt": the learnt costs' row)


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


def _label(method: str) -> str:
    shape = method.split(" lookup+eagle ", 1)[-1].removesuffix(" rec off")
    return shape.replace("γ=", "chain γ=")


def pooled(path: str) -> str:
    """Each row with recording off: milliseconds per token and, where the row counts iterations (the engine's),
    the milliseconds per iteration outside the draft and the verify pass, then those of the verify pass and of
    the draft in the iterations after the prefill (the first iteration's time taken from the verify pass's)."""
    runs = [r for r in json.load(open(path))["runs"] if " rec on" not in r["method"]]
    lines = []
    for method in dict.fromkeys(r["method"] for r in runs):
        mine = [r for r in runs if r["method"] == method]
        seconds, iterations = sum(r["seconds"] for r in mine), sum(r["iterations"] or 0 for r in mine)
        draft, verify = (sum(r[key] or 0 for r in mine) for key in ("draft_seconds", "verify_seconds"))
        line = f"  {method}: {1000 * seconds / sum(r['tokens'] for r in mine):.1f} ms a token"
        if iterations:
            later = iterations - len(mine)
            verify_later = verify - sum(r["first_seconds"] for r in mine)
            line += (f", {1000 * (seconds - draft - verify) / iterations:.1f} ms an iteration outside the draft and "
                     f"the verify pass; after the prefill, verify {1000 * verify_later / later:.1f} ms and draft "
                     f"{1000 * draft / later:.1f} ms an iteration")
        lines.append(line)
    return "\n".join(lines)


def table(paths: list[str], default: str = DEFAULT) -> str:
    """Markdown: per kind, the default (the row whose name holds `default`) against the fastest fixed row with
    recording off, each the median (and min–max) over every round of every file of its speedup in that round,
    over the target alone in the same round as the bench pairs them (one file: its own table's numbers), end to
    end and after the prefill, the fastest chosen separately for each; the ratio in bold when below `LINE`."""
    runs = [r | {"file": i} for i, path in enumerate(paths) for r in json.load(open(path))["runs"]
            if " rec on" not in r["method"] and (r["method"] == "engine baseline" or fixed(r["method"])
                                                 or "adaptive trees" in r["method"])]
    alone = {(r["file"], r["prompt"], r["repeat"]): r for r in runs if r["method"] == "engine baseline"}

    def per_token(r: dict, after: bool) -> float:
        return (r["seconds"] - after * r["first_seconds"]) / (r["tokens"] - after * r["first_tokens"])

    lines = ["| kind | rounds | default | best fixed | default / best fixed | after the prefill: default "
             "| best fixed | default / best fixed |", "| --- " * 8 + "|"]
    for kind in sorted({r["category"] for r in runs}):
        mine = [r for r in runs if r["category"] == kind and r["method"] != "engine baseline"]
        row = next(r["method"] for r in mine if default in r["method"])
        cells = [kind, str(sum(r["method"] == row for r in mine))]
        for after in (False, True):
            speeds = {m: [per_token(alone[r["file"], r["prompt"], r["repeat"]], after) / per_token(r, after)
                          for r in mine if r["method"] == m] for m in dict.fromkeys(r["method"] for r in mine)}
            best = max((m for m in speeds if fixed(m)), key=lambda m: statistics.median(speeds[m]))
            ratio = statistics.median(speeds[row]) / statistics.median(speeds[best])
            cells += [_spread(speeds[row]), _spread(speeds[best], " " + _label(best)),
                      f"**{ratio:.3f}**" if ratio < LINE else f"{ratio:.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _spread(speeds: list[float], label: str = "") -> str:
    return f"{statistics.median(speeds):.2f}×{label} ({min(speeds):.2f}–{max(speeds):.2f})"


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
    chosen = [a.removeprefix("--default=") for a in sys.argv if a.startswith("--default=")]
    args = [a for a in sys.argv[1:] if not a.startswith("--default=")]
    if args[0] == "--table":
        for path in args[1:]:
            print(f"{path}\n\n{table([path], *chosen)}\n\npooled over every run:\n{pooled(path)}\n")
        sys.exit()
    if args[0] == "--rounds":
        print(table(args[1:], *chosen))
        sys.exit()
    tables = [speedups(path) for path in args]
    for path, speeds in zip(args, tables):
        print(path)
        within(speeds)
    sigma = noise(tables)
    print(f"one row's speedup in one category: ±{100 * sigma:.1f}% (one standard deviation, within a run)")
    for gaps in ((0.0, 0.0, 0.0), (0.0, 0.05, 0.10)):
        print(f"a policy as fast as the best fixed size, the fixed sizes {', '.join(f'{100 * g:.0f}%' for g in gaps)} "
              f"below it: reads more than 3% below in {100 * chance_of_a_miss(sigma, gaps):.0f}% of categories")
