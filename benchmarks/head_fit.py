"""Is the EAGLE head short of data or of size? Its teacher-forced agreement with the target on records it
trained on, against records of the same corpus it never saw.

The head's card says how many training records it learnt from (`data.corpus_records`): the corpus's first
ones, shard by shard. Records grown after it are drawn from the same prompt kinds and shares, so they
measure what the head makes of new data from its own distribution. For `--records` records of each set,
seen, unseen and the validation slice, this prints the same numbers training logs at each validation
(`specviz.training.train.validate`): top-1 agreement and β at draft positions 1-4 under training-time
test, and the KL at position 1. A head that fits what it saw much better than what it did not is limited
by its data (more records help); one that fits both alike, by its size. From the repository root:

    PYTHONPATH=. python benchmarks/head_fit.py --out benchmarks/head-fit.json
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch

from specviz.corpus.store import load_records, split_validation
from specviz.drafters.eagle import DEFAULT_WEIGHTS
from specviz.drafters.weights import load_weights
from specviz.models import load_model
from specviz.training.batches import index_map
from specviz.training.config import TrainConfig
from specviz.training.prefill import PrefilledRecords
from specviz.training.train import build_model, validate

LOGGED = ("top11", "top12", "top13", "top14", "beta1", "beta2", "beta3", "beta4", "kl1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--head", type=Path, default=DEFAULT_WEIGHTS)
    parser.add_argument("--records", type=int, default=48, help="records of each set")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    target = load_model(dtype="float32")
    card = json.loads(args.head.with_suffix(".json").read_text())
    seen_count = card["data"]["corpus_records"]
    training = card["training"]
    cfg = TrainConfig(kind="eagle", init=str(args.head), feature_layers=training["feature_layers"],
                      ttt=training["ttt"], unroll=training["unroll"], top_k=training["top_k"], bf16=True)
    vocab = load_weights(args.head, "eagle", target)[0]["vocab"].cpu()
    model = build_model(cfg, target, vocab).float()
    index = index_map(vocab, target.vocab_size)
    train_records, validation = split_validation(load_records())
    if len(train_records) <= seen_count:
        raise SystemExit(f"the corpus holds no record the head has not seen ({len(train_records)} training records, "
                         f"the head learnt from {seen_count}): grow it first (python -m specviz corpus grow)")
    rng = random.Random(0)
    n = min(args.records, len(train_records) - seen_count, len(validation))
    sets = {"seen": rng.sample(train_records[:seen_count], n), "unseen": rng.sample(train_records[seen_count:], n),
            "validation": validation[:n]}
    results = {}
    for name, records in sets.items():
        samples = PrefilledRecords(target, records, cfg.layers, cfg.top_k, cfg.window, cfg.bf16).samples()
        with torch.autocast(target.device.type, dtype=torch.bfloat16):
            parts = validate(cfg, model, samples, index, target.device)
        results[name] = {k: round(parts[k], 4) for k in LOGGED}
        print(name, results[name], flush=True)
    report = {"head": args.head.name, "seen_records": seen_count, "records_each": n,
              "corpus_training_records": len(train_records), "results": results}
    args.out.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
