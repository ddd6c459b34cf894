"""`python -m specviz count-drafter --kind unigram|bigram`: count the target's own answers into a table.

The target answers the training prompts greedily (the same cached answers `train-drafter` learns
from), every answer token is counted (after the token before it, for a bigram table), and the
table is written as `<out>.safetensors` (sparse int32 counts and the smoothing k, tied to the
target's fingerprint) with `<out>.json` beside it (the card: target, data size, table size,
held-out α̂ at T=0 and T=1 and the command that reproduces it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from specviz.arguments import at_least_one, output_file
from specviz.drafters.counts import ORDERS, SMOOTHING
from specviz.training.config import TrainConfig


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def add_count_arguments(parser: argparse.ArgumentParser) -> None:
    d = TrainConfig()
    parser.add_argument("--kind", choices=tuple(ORDERS), required=True,
                        help="unigram: q(x); bigram: q(x | previous token), backing off to the unigram")
    parser.add_argument("--smoothing", type=positive, default=SMOOTHING,
                        help=f"add-k smoothing k, added to every token's count (default {SMOOTHING:g})")
    parser.add_argument("--target", default=None, help="target model (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--device", default=None, help="cuda, cpu ... (default: cuda when available)")
    parser.add_argument("--out", default=None, type=output_file,
                        help="table file (default: the shipped assets/drafters/"
                        "<kind>-smollm2-135m.safetensors; a JSON card is written beside it)")
    parser.add_argument("--max-new-tokens", type=at_least_one, default=d.max_new_tokens,
                        help=f"target answer length (default {d.max_new_tokens}, as train-drafter's, whose cached "
                             "answers are shared)")
    parser.add_argument("--eval-prompts", type=at_least_one, default=d.eval_prompts,
                        help=f"held-out prompts for the card's α̂ (default {d.eval_prompts})")
    parser.add_argument("--eval-tokens", type=at_least_one, default=d.eval_tokens,
                        help=f"new tokens per held-out prompt (default {d.eval_tokens})")
    parser.add_argument("--threads", type=at_least_one, default=None,
                        help="CPU threads for torch (1 is fastest on a busy 2-core machine)")


def run_count(args: argparse.Namespace) -> None:
    import torch

    from specviz.drafters.counts import CountTable, default_table, load_counts, save_counts
    from specviz.drafters.weights import fingerprint
    from specviz.models import load_model
    from specviz.training.command import heldout_acceptance, provenance, rounded_sum
    from specviz.training.data import cached_samples

    if args.threads:
        torch.set_num_threads(args.threads)
    began = time.time()
    target = load_model(args.target, device=args.device, dtype="float32")
    mark = fingerprint(target)
    answers = cached_samples(target, "train", mark, args.max_new_tokens, TrainConfig().top_k)
    data_time = time.time() - began
    table = CountTable.count(((s.tokens, s.n_prompt) for s in answers.samples), target.vocab_size, ORDERS[args.kind])
    out = Path(args.out) if args.out else default_table(args.kind)
    save_counts(out, table, args.smoothing, target)
    results = heldout_acceptance(target, load_counts(target, args.kind, out), args.eval_prompts, args.eval_tokens)
    card = {
        "kind": args.kind, "weights": out.name, "target": target.name, "target_fingerprint": mark,
        "smoothing": args.smoothing, "bytes": out.stat().st_size,
        "table": {"answer_tokens": int(table.unigram.sum()), "distinct_tokens": int((table.unigram > 0).sum()),
                  "contexts": len(table.contexts.unique()), "bigrams": len(table.counts)},
        "data": {"train_prompts": len(answers.samples), "max_new_tokens": args.max_new_tokens, "answers": "greedy",
                 "generation_s": rounded_sum(answers.seconds)},
        "heldout_acceptance": results,
        "wall_time_s": {"data": round(data_time, 1), "total_with_eval": round(time.time() - began, 1)},
        **provenance(target),
    }
    out.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"saved {out} ({out.stat().st_size / 1e6:.2f} MB) and its card; {time.time() - began:.0f} s in all")
