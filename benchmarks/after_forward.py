"""What a little bookkeeping costs right after a target pass, against the same work done again at once.

The decoder's work between two passes (prompt lookup's match, the adaptive policy's search, the verdict's
bookkeeping) takes a fraction of a millisecond in a loop of its own, yet the phases timed inside the decoder
put milliseconds there. This times one such piece, prompt lookup's `matches` over a 1 400-token context, as
the first call after a one-token target pass over a 600-token prompt and as the next call, and a plain Python
sum over the same ids beside it. Usage, from the repository root:

    PYTHONPATH=.:benchmarks python benchmarks/after_forward.py [--rounds 20]

prints the median and range of each, in milliseconds (one thread, the embedded target in float32).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import torch
from accepted_counts import default_pair

from specviz.drafters.ngram import MAX_NGRAM, matches


def milliseconds(work) -> float:
    start = time.perf_counter()
    work()
    return 1000 * (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    target, _ = default_pair()
    rng = random.Random(0)
    ids = [rng.randrange(target.vocab_size) for _ in range(1_390)]
    ids += ids[-30:-20]   # the last ten tokens occur earlier: a 10-token match
    prompt = torch.tensor([ids[:600]])
    times: dict[str, list[float]] = {"matches, first after a pass": [], "matches, next": [],
                                     "sum of the ids, first after a pass": []}
    with torch.inference_mode():
        cache = target.model(prompt[:, :-1], use_cache=True).past_key_values
        for _ in range(args.rounds):
            for label, work in (("matches, first after a pass", lambda: matches(ids, MAX_NGRAM)),
                                ("sum of the ids, first after a pass", lambda: sum(ids))):
                target.model(prompt[:, -1:], past_key_values=cache, use_cache=True)
                cache.crop(-1)   # back to the prompt less its last token
                times[label].append(milliseconds(work))
                if label.startswith("matches"):
                    times["matches, next"].append(milliseconds(work))
    for label, values in times.items():
        print(f"{label}: {statistics.median(values):.3f} ms ({min(values):.3f}–{max(values):.3f})")


if __name__ == "__main__":
    main()
