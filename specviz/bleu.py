"""BLEU (Papineni et al. 2002), on token ids: how much of a reference's wording an output keeps.

SpecDec's Table 4 scores each (β, τ) by BLEU against reference translations; a prompt here has no
reference, so the grid scores each run against the target's own greedy output. A position-by-position
match stops counting at the first divergence (everything after it is shifted); BLEU counts the n-grams
the two share wherever they stand: the geometric mean of the clipped n-gram precisions p_n, n = 1..4,
times the brevity penalty min(1, exp(1 − r/c)) for an output of c tokens against a reference of r.
A precision of n ≥ 2 is smoothed by adding one to its count and its total (Lin and Och 2004), so one
missing 4-gram in a short output does not zero the score.
"""

from __future__ import annotations

import math
from collections import Counter

MAX_N = 4


def ngrams(ids: list[int], n: int) -> Counter:
    return Counter(tuple(ids[i:i + n]) for i in range(len(ids) - n + 1))


def bleu(output: list[int], reference: list[int]) -> float:
    """BLEU-4 of `output` against `reference`, from 0 (no token in common) to 1 (the same sequence)."""
    if not output or not reference:
        return float(output == reference)
    log_precision = 0.0
    for n in range(1, MAX_N + 1):
        mine, theirs = ngrams(output, n), ngrams(reference, n)
        clipped = sum(min(count, theirs[gram]) for gram, count in mine.items())
        total = max(len(output) - n + 1, 0)
        if n == 1 and clipped == 0:
            return 0.0
        smooth = int(n > 1)
        log_precision += math.log((clipped + smooth) / (total + smooth)) / MAX_N
    return min(1.0, math.exp(1 - len(reference) / len(output))) * math.exp(log_precision)
