"""How many rounds a verify-cost curve needs: two curves taken from disjoint rounds, how far apart they lie.

Times the embedded target's passes over 1 to 8 new tokens at 128 and 1 024 cached tokens, `--rounds` rounds
interleaved as the sizing times them (`verify_cost.timed_passes`, one pass of each size a round), then draws
two disjoint sets of R rounds `--draws` times and compares the two curves made from them (each size's median,
made non-decreasing as the sizing keeps it): how far sizes 2 to 8, relative to the one-token pass, lie apart on
average and at the size farthest apart, and how far the one-token passes do. Usage, from the repository root,
on an idle machine:

    PYTHONPATH=.:benchmarks python benchmarks/curve_rounds.py --rounds 40 --of 9,13,20
"""

from __future__ import annotations

import argparse
import random
import statistics

from accepted_counts import default_pair

from specviz.verify_cost import CONTEXT, LONG_CONTEXT, monotone, timed_passes

SIZES = tuple(range(1, 9))


def curve(times: list[list[float]], rounds: list[int]) -> list[float]:
    """The non-decreasing medians of each size's passes in `rounds`."""
    return monotone([statistics.median(passes[i] for i in rounds) for passes in times])


def apart(times: list[list[float]], r: int, draws: int, rng: random.Random) -> tuple[float, float, float]:
    """Mean over draws of: sizes 2-8's mean relative gap, their largest gap, the one-token passes' gap."""
    gaps, widest, unit = [], [], []
    for _ in range(draws):
        order = rng.sample(range(len(times[0])), 2 * r)
        a, b = curve(times, order[:r]), curve(times, order[r:])
        rel = [abs(x / a[0] - y / b[0]) / (y / b[0]) for x, y in zip(a[1:], b[1:])]
        gaps.append(statistics.mean(rel))
        widest.append(max(rel))
        unit.append(abs(a[0] / b[0] - 1))
    return statistics.mean(gaps), statistics.mean(widest), statistics.mean(unit)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--of", default="9,13,20", help="rounds per curve compared (each at most half of --rounds)")
    parser.add_argument("--draws", type=int, default=400)
    args = parser.parse_args()
    target, _ = default_pair()
    contexts = (CONTEXT, LONG_CONTEXT)
    times = timed_passes(target, SIZES, args.rounds, contexts, dense_times=1)
    rng = random.Random(0)
    for c, context in enumerate(contexts):
        passes = [times[c, m] for m in SIZES]
        whole = curve(passes, list(range(args.rounds)))
        ms = " ".join(f"{t * 1000:.1f}" for t in whole)
        print(f"over {context} cached tokens, all {args.rounds} rounds, ms: {ms}")
        for r in (int(x) for x in args.of.split(",")):
            gap, widest, unit = apart(passes, r, args.draws, rng)
            print(f"  two curves of {r} rounds: sizes 2-8 against the one-token pass {gap:.1%} apart on average, "
                  f"{widest:.1%} at the size farthest apart; the one-token passes {unit:.1%}")


if __name__ == "__main__":
    main()
