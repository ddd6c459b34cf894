"""How often prompt lookup's copy is the target's next text, by the length of the match behind it: no model run.

Reads the target's greedy answers in the training corpus (never the held-out prompts), `--per-kind` of each
kind, and at every position of an answer's first `--answer-tokens` tokens drafts prompt lookup's copy of 8
tokens (`sizing.copy_counts`, as the sizing measures each chain situation) with matches up to `--max-ngram`
tokens, and again with matches up to 3. Prints, by match length, the copy's acceptance at each depth given the
depths before it were right (a chain's), and, per kind, the copied tokens kept where a match of 3 tokens or
more exists: after the longest match, and after the leftmost 3-token one.

    PYTHONPATH=. python benchmarks/match_length.py [--per-kind 40] [--max-ngram 8] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import random
from collections import Counter

import torch

from specviz.corpus.store import load_records
from specviz.drafters.ngram import NgramDrafter
from specviz.sizing import copy_counts


def kept(hits: dict[str, list[int]], tries: dict[str, list[int]], lengths: range) -> tuple[int, int]:
    """Positions with a match of one of `lengths`, and the copied tokens kept there (a hit keeps its token)."""
    situations = [f"match {n}" for n in lengths]
    return sum(tries[s][0] for s in situations), sum(sum(hits[s]) for s in situations)


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
    answers: dict[str, list[tuple[list[int], list[int]]]] = {}
    for r in records:
        if len(mine := answers.setdefault(r.kind, [])) < args.per_kind:
            ids = r.tokens.tolist()
            mine.append((ids[:r.n_prompt], ids[r.n_prompt:r.n_prompt + args.answer_tokens]))
    longest, three = (NgramDrafter(0, torch.device("cpu"), max_ngram=n) for n in (args.max_ngram, 3))
    tries, hits, rows = Counter(), Counter(), {}
    for kind in sorted(answers):
        kind_hits, kind_tries = copy_counts(longest, answers[kind])
        for s in longest.chain_situations:
            for d, (h, t) in enumerate(zip(kind_hits[s], kind_tries[s])):
                hits[s, d] += h
                tries[s, d] += t
        positions, by_longest = kept(kind_hits, kind_tries, range(3, args.max_ngram + 1))
        by_three = kept(*copy_counts(three, answers[kind]), range(3, 4))[1]
        rows[kind] = {"positions": positions, "leftmost 3": by_three / positions, "longest": by_longest / positions}
    kinds = list(rows.values())
    total = sum(r["positions"] for r in kinds)
    rows["all"] = {"positions": total, **{key: sum(r[key] * r["positions"] for r in kinds) / total
                                          for key in ("leftmost 3", "longest")}}
    depths = max(d for _, d in tries) + 1
    rates = {s.split()[1]: [hits[s, d] / tries[s, d] if tries[s, d] else None for d in range(depths)]
             for s in longest.chain_situations}
    print(f"records: { {kind: len(a) for kind, a in answers.items()} }")
    print("match  positions  acceptance at copy depth 1..8 (given the depths before right)")
    for n, row in rates.items():
        print(f"{n:>5}  {tries[f'match {n}', 0]:>9}  " + " ".join(f"{r:.2f}" if r is not None else "  - " for r in row))
    print("kind: positions with a 3-token match or longer, copied tokens kept (of 8): leftmost 3-token, longest")
    for kind, row in rows.items():
        print(f"{kind}: {row['positions']}, {row['leftmost 3']:.2f}, {row['longest']:.2f}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"settings": vars(args), "records": {kind: len(a) for kind, a in answers.items()},
                       "acceptance": rates, "positions": {n: tries[f"match {n}", 0] for n in rates},
                       "kept": {kind: {k: round(v, 3) for k, v in row.items()} for kind, row in rows.items()}},
                      out, indent=1)


if __name__ == "__main__":
    main()
