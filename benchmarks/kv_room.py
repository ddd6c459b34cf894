"""The KV cache grown in place (`kv_cache.RoomyCache`) against transformers' `DynamicCache`, which concatenates the
whole cache at every pass.

One process, the two caches interleaved (the order turned each repeat), on training-split prompts of at least
`--min-tokens` tokens (where the copying costs most): the target alone and the default (lookup+eagle, adaptive
trees), greedy, 48 tokens, one thread, recording off. Prints each arm's milliseconds a token after the prefill
(median over the repeats) and, per prompt and method, whether both caches wrote the same tokens and the ratio of
their times. Usage, from the repository root:

    PYTHONPATH=.:benchmarks python benchmarks/kv_room.py [--prompts 2] [--min-tokens 800] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics

from accepted_counts import default_pair
from constant_ab import after_prefill, corpus_prompts
from transformers import DynamicCache

from specviz import kv_cache
from specviz.decoder import generate
from specviz.settings import DecodeSettings
from specviz.sizing import prepare

SEED = 5976   # the training-split prompts' seed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=2)
    parser.add_argument("--min-tokens", type=int, default=800)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    target, drafter = default_pair()
    prompts = corpus_prompts(1, SEED, target, min_tokens=args.min_tokens)[: args.prompts]
    alone = DecodeSettings(temperature=0, max_new_tokens=48, record=False)
    default = prepare(target, drafter, DecodeSettings(temperature=0, max_new_tokens=48, adaptive=True,
                                                      auto_size=True, record=False))
    methods = {"target alone": (None, alone, None), "default": (drafter, default.settings, default.sizing)}
    caches = {"in place": kv_cache.RoomyCache, "concatenated": DynamicCache}
    times: dict[tuple[str, str, str], list[float]] = {}
    tokens: dict[tuple[str, str], set[tuple[int, ...]]] = {}
    for repeat in range(args.repeats):
        for arm in list(caches)[:: 1 if repeat % 2 == 0 else -1]:
            kv_cache.RoomyCache = caches[arm]
            for prompt in prompts:
                for method, (draft, settings, sizing) in methods.items():
                    trace = generate(target, draft, prompt.text, settings, sizing=sizing)
                    later = len(trace.generated_ids) - len(trace.iterations[0].emitted_ids)
                    times.setdefault((arm, method, prompt.id), []).append(1000 * after_prefill(trace) / later)
                    tokens.setdefault((method, prompt.id), set()).add(tuple(trace.generated_ids))
    kv_cache.RoomyCache = caches["in place"]
    for (arm, method, prompt), values in sorted(times.items()):
        print(f"{arm}, {method}, {prompt}: {statistics.median(values):.1f} ms a token after the prefill "
              f"({', '.join(f'{v:.1f}' for v in values)})")
    for method, prompt in tokens:
        ratio = statistics.median(times["in place", method, prompt]) / statistics.median(
            times["concatenated", method, prompt])
        print(f"{method}, {prompt}: same tokens {len(tokens[method, prompt]) == 1}, "
              f"in place / concatenated {ratio:.3f}")


if __name__ == "__main__":
    main()
