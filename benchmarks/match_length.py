"""How often prompt lookup's copy is the target's next text, by the length of the match behind it: no model run.

Reads the target's greedy answers in the training corpus (never the held-out prompts), `--per-kind` of each
kind, and at every position of an answer's first `--answer-tokens` tokens looks for the longest suffix of
prompt + answer so far that occurs earlier (up to `--max-ngram` tokens, as `specviz.drafters.ngram.matches`
does) and copies the 8 tokens that followed its leftmost occurrence. Prints, by match length, the copy's
acceptance at each depth given the depths before it were right (a chain's), and, where a match of 3 tokens or
more exists, the copied tokens kept when following the longest match against the leftmost 3-token one.

    PYTHONPATH=. python benchmarks/match_length.py [--per-kind 40] [--max-ngram 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter, defaultdict

from specviz.corpus.store import load_records
from specviz.drafters.ngram import matches

COPY = 8   # tokens a copy drafts


def kept(seq: list[int], at: int, n: int, start: int, end: int) -> tuple[int, int]:
    """The copy after the occurrence at `start` of the n-token suffix: how many of its tokens match seq[at:end]
    in a row, and how many it could be checked on."""
    copy = seq[start + n:start + n + COPY][:end - at]
    right = next((d for d, token in enumerate(copy) if token != seq[at + d]), len(copy))
    return right, len(copy)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=40)
    parser.add_argument("--max-ngram", type=int, default=8)
    parser.add_argument("--answer-tokens", type=int, default=128)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--json", help="write the tables here too")
    args = parser.parse_args()
    records = [r for r in load_records() if r.temperature == 0]
    random.Random(args.seed).shuffle(records)
    taken: Counter = Counter()
    tries, hits = defaultdict(lambda: [0] * COPY), defaultdict(lambda: [0] * COPY)
    longest, leftmost3, positions = Counter(), Counter(), Counter()
    for record in records:
        if taken[record.kind] >= args.per_kind:
            continue
        taken[record.kind] += 1
        seq = [int(t) for t in record.tokens]
        end = min(len(seq), record.n_prompt + args.answer_tokens)
        for at in range(record.n_prompt + 1, end - 1):
            n, starts = matches(seq[:at], args.max_ngram, 2)
            if not n:
                continue
            right, checked = kept(seq, at, n, starts[0], end)
            for d in range(min(right + 1, checked)):
                tries[n][d] += 1
                hits[n][d] += d < right
            if n >= 3:
                n3, starts3 = matches(seq[:at], 3, 3)
                longest[record.kind] += right
                leftmost3[record.kind] += kept(seq, at, n3, starts3[0], end)[0]
                positions[record.kind] += 1
    rates = {n: [h / t if t else None for h, t in zip(hits[n], tries[n])] for n in sorted(tries)}
    print(f"records: {dict(taken)}")
    print("match  positions  acceptance at copy depth 1..8 (given the depths before right)")
    for n, row in rates.items():
        print(f"{n:>5}  {tries[n][0]:>9}  " + " ".join(f"{r:.2f}" if r is not None else "  - " for r in row))
    print("kind: positions with a 3-token match or longer, copied tokens kept (of 8): leftmost 3-token, longest")
    positions["all"], leftmost3["all"], longest["all"] = (sum(c.values()) for c in (positions, leftmost3, longest))
    kept_by_kind = {kind: {"positions": positions[kind], "leftmost 3": round(leftmost3[kind] / positions[kind], 3),
                           "longest": round(longest[kind] / positions[kind], 3)} for kind in sorted(positions)}
    for kind, row in kept_by_kind.items():
        print(f"{kind}: {row['positions']}, {row['leftmost 3']:.2f}, {row['longest']:.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"settings": vars(args), "records": dict(taken),
                       "acceptance": {str(n): row for n, row in rates.items()},
                       "positions": {str(n): tries[n][0] for n in tries},
                       "kept": kept_by_kind}, out, indent=1)


if __name__ == "__main__":
    main()
