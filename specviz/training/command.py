"""`python -m specviz train-drafter --kind eagle|tiny|medusa|specdrafter`: data, training, weights, card.

Writes `<out>.safetensors` (the trained parameters in fp16, tied to the target's fingerprint) and
`<out>.json` (the card: target, data size, steps, wall times, held-out α̂ at T=0 and T=1, the
learning curve, and the command that reproduces it).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from dataclasses import asdict, fields
from pathlib import Path

from specviz.arguments import at_least_one, at_least_zero, output_file
from specviz.training.config import KINDS, RESUMABLE, TrainConfig, run_key

ZERO_MEANS_NONE = ("warmup", "draft_vocab", "sampled_answers", "train_prompts", "first_record")   # 0: none, or all
RESUMED_OPTIONS = [f"--{k.replace('_', '-')}" for k in RESUMABLE if k not in ("curve", "resumed_from")]


def add_train_arguments(parser: argparse.ArgumentParser) -> None:
    d = TrainConfig()
    parser.add_argument("--kind", choices=KINDS, default=d.kind,
                        help="eagle: EAGLE-style head; tiny: 2-layer LM; medusa: blockwise heads on the target's last "
                             "hidden state; specdrafter: SpecDec's mask-predict drafter (one pass per block)")
    parser.add_argument("--target", default=None, help="target model (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--device", default=None, help="cuda, cpu ... (default: cuda when available)")
    parser.add_argument("--out", default=None, type=output_file,
                        help="weights file (default: the shipped assets/drafters/"
                        "<kind>-smollm2-135m.safetensors; a JSON card is written beside it)")
    for knob in (f for f in fields(TrainConfig) if "help" in f.metadata):   # the counts and rates (`config.knob`)
        default = getattr(d, knob.name)
        kind = float if isinstance(default, float) else int if knob.name == "seed" else \
            at_least_zero if knob.name in ZERO_MEANS_NONE else at_least_one
        parser.add_argument(f"--{knob.name.replace('_', '-')}", type=kind, default=default,
                            help=f"{knob.metadata['help']} (default: %(default)s)")
    parser.add_argument("--init", default=d.init,
                        help="specdrafter: start its layers and norm from this tiny LM weights file (train-drafter "
                             "--kind tiny writes one; default: copies of the target's first layers); eagle: go on "
                             "training this head (e.g. the shipped one), keeping its vocabulary (widened with the "
                             "data's --draft-vocab most used tokens when that is larger) and its feature layers, or "
                             "growing a head of the final state into a fused one (--feature-layers 4,15,-1), whose "
                             "fuse starts as the identity on that state")
    parser.add_argument("--bf16", action="store_true", help="train under bf16 autocast (weights stay fp32): faster on "
                        "a GPU or a CPU with bf16 instructions, several times slower where the CPU emulates it")
    parser.add_argument("--corpus", action="store_true",
                        help="learn from the corpus in assets/corpus (python -m specviz corpus grow), the target's "
                             "features recomputed by a prefill pass over each record a step takes, instead of the "
                             "shipped prompts")
    parser.add_argument("--store-features", action="store_true",
                        help="with --corpus: keep each record's prefilled features in the cache the first time a step "
                             "takes it, so that later epochs skip the target (about twice as fast a step; about 3.6 KB "
                             "per position, some 18 GB for 10 000 records; a full disk stops the storing, not the run)")
    parser.add_argument("--feature-layers", default=d.feature_layers,
                        help="eagle: the target's hidden states the head fuses, e.g. 4,15,27 (EAGLE-3: a low, a middle "
                             "and a high layer; default: the final normed state alone)")
    parser.add_argument("--ttt", action="store_true",
                        help="eagle: training-time test, each of --unroll steps reading the head's own predictions "
                             "under the attention a draft chain has (EAGLE-3)")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint of an interrupted run")
    parser.add_argument("--threads", type=at_least_one, default=None,
                        help="CPU threads for torch (1 is fastest on a busy 2-core machine)")


def run_train(args: argparse.Namespace) -> None:
    import torch

    from specviz.drafters import load_trained
    from specviz.drafters.weights import DRAFTERS_DIR, fingerprint, save_weights
    from specviz.models import cache_dir, load_model
    from specviz.training.prefill import other_stores, store_folder
    from specviz.training.train import model_config, train

    check_arguments(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    began = time.time()
    names = set(TrainConfig.__dataclass_fields__) - {"curve", "out", "kind", "resumed_from"}
    cfg = TrainConfig(kind=args.kind, **{k: getattr(args, k) for k in names})
    cfg.out = args.out or str(DRAFTERS_DIR / f"{args.kind}-smollm2-135m.safetensors")
    target = load_model(args.target, device=args.device, dtype="float32")
    target.model.requires_grad_(False)
    check_target(cfg, target.model.config.num_hidden_layers, target.vocab_size)
    mark = fingerprint(target)
    checkpoint = cache_dir() / "training" / f"checkpoint-{cfg.kind}-{mark}-{run_key(cfg)}.pt"
    check_checkpoint(checkpoint, args.resume)
    if cfg.corpus:
        store = store_folder(cache_dir() / "training", mark, cfg.layers, cfg.top_k, cfg.window, cfg.bf16) \
            if args.store_features else None
        if store is not None and (others := other_stores(store)):
            print(others)
        train_samples, heldout, vocab, data = corpus_data(cfg, target, store)
    else:
        (train_samples, heldout, data), vocab = shipped_data(cfg, target, mark), None
    data_time = time.time() - began
    out = Path(cfg.out)
    staged = out.with_name(out.stem + ".partial.safetensors")   # the shipped file is replaced only when all is done
    try:
        model = train(cfg, target, train_samples, heldout, checkpoint, vocab=vocab)
        train_time = time.time() - began - data_time
        save_weights(staged, model.state_dict(), cfg.kind, model_config(cfg, model), target)
        results = heldout_acceptance(target, load_trained(cfg.kind, target, staged), cfg.eval_prompts,
                                     cfg.eval_tokens)
    except KeyboardInterrupt:
        staged.unlink(missing_ok=True)
        if checkpoint.exists():
            print(f"stopped: the same command with --resume continues from {checkpoint}", file=sys.stderr)
        raise
    card = {
        "kind": cfg.kind, "weights": out.name, "target": target.name, "target_fingerprint": mark,
        "trainable_parameters": sum(p.numel() for p in model.parameters()), "bytes": staged.stat().st_size,
        "data": data,
        "training": {k: v for k, v in asdict(cfg).items() if k not in ("curve", "out")},
        "heldout_acceptance": results,
        "wall_time_s": {"data": round(data_time, 1), "train": round(train_time, 1),
                        "total_with_eval": round(time.time() - began, 1)},
        **provenance(target),
        "curve": cfg.curve,
    }
    staged.replace(out)
    out.with_suffix(".json").write_text(json.dumps(card, indent=1) + "\n")
    print(f"saved {out} ({out.stat().st_size / 1e6:.1f} MB) and its card; {time.time() - began:.0f} s in all")


def check_arguments(args: argparse.Namespace) -> None:
    """Refuse settings that cannot train before any model loads or data is prepared (minutes); warn of bf16
    on a CPU that only emulates it."""
    from specviz.device import native_bf16, pick_device
    from specviz.errors import SpecvizError

    if args.store_features and not args.corpus:
        raise SpecvizError("--store-features keeps the corpus's prefilled features: it needs --corpus")
    if args.first_record and not args.corpus:
        raise SpecvizError("--first-record picks the corpus's records to learn from: it needs --corpus")
    if args.kind != "eagle" and (args.feature_layers or args.ttt or args.head_layers != 1):
        raise SpecvizError(f"--feature-layers, --head-layers and --ttt shape an EAGLE head: they need --kind eagle, "
                           f"not {args.kind}")
    layers = args.feature_layers.split(",") if args.feature_layers else []
    if not all(x.strip().lstrip("-").isdigit() for x in layers):
        raise SpecvizError(f"--feature-layers takes layer numbers separated by commas, e.g. 4,15,-1; got "
                           f"{args.feature_layers!r}")
    if len(layers) > 1 and not (args.ttt and args.corpus):
        raise SpecvizError("a head of several feature layers learns from the corpus with training-time test: "
                           "add --corpus --ttt")
    for flag, value, positive in (("--lr", args.lr, True), ("--ce-weight", args.ce_weight, False),
                                  ("--reg-weight", args.reg_weight, False), ("--noise", args.noise, False)):
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise SpecvizError(f"{flag} must be {'> 0' if positive else '>= 0'} and finite, got {value}")
    if args.init and not Path(args.init).expanduser().is_file():
        raise SpecvizError(f"--init {args.init}: no such weights file")
    if args.target and not args.out:
        raise SpecvizError("--target trains a drafter for another model: name its weights file with --out "
                           "(the default is the embedded target's shipped drafter)")
    if args.bf16 and pick_device(args.device).type == "cpu" and not native_bf16():
        print("--bf16: this CPU has no bf16 instructions (AVX512-BF16 or AMX), so bf16 is emulated: a step runs "
              "about 6x slower than in float32 here; leave --bf16 out on this machine", file=sys.stderr)


def check_target(cfg: TrainConfig, n_layers: int, vocab_size: int) -> None:
    """Settings the loaded target must hold: feature layers index its hidden states (the embeddings 0, each
    layer's output, the final -1), and the cached top-k cannot exceed its vocabulary."""
    from specviz.errors import SpecvizError

    if wrong := [i for i in cfg.layers if not -(n_layers + 1) <= i <= n_layers]:
        raise SpecvizError(f"--feature-layers {','.join(map(str, wrong))}: the target has hidden states 0 to "
                           f"{n_layers} (or -1 to -{n_layers + 1} from the end)")
    if cfg.top_k > vocab_size:
        raise SpecvizError(f"--top-k {cfg.top_k}: the target's vocabulary holds {vocab_size} tokens")


def check_checkpoint(checkpoint: Path, resume: bool) -> None:
    """--resume needs this run's checkpoint; a run without it says which checkpoint it discards."""
    from specviz.errors import SpecvizError

    if resume and not checkpoint.exists():
        others = sorted(p.name for p in checkpoint.parent.glob(checkpoint.name.rsplit("-", 1)[0] + "-*.pt"))
        raise SpecvizError(f"--resume: no checkpoint of a run with these settings ({checkpoint})"
                           + (f"; runs with other settings left {', '.join(others)} (a resumed run may change "
                              f"only {', '.join(RESUMED_OPTIONS)})" if others else ""))
    if not resume and checkpoint.exists():
        print(f"starting over: the checkpoint an earlier run of these settings left is discarded (--resume "
              f"continues it): {checkpoint}", file=sys.stderr)
        checkpoint.unlink()


def shipped_data(cfg: TrainConfig, target, mark: str):
    """Cached samples of the shipped prompt sets: greedy answers, then `sampled_answers` more per training
    prompt (seeds 1, 2, ...); held-out: greedy only. Returns (train samples, held-out samples, card)."""
    from specviz.training.data import cached_samples

    answers = [cached_samples(target, "train", mark, cfg.max_new_tokens, cfg.top_k, seed=seed, limit=cfg.train_prompts)
               for seed in [None, *range(1, cfg.sampled_answers + 1)]]
    heldout = cached_samples(target, "heldout", mark, cfg.max_new_tokens, cfg.top_k)
    train_samples = [s for a in answers for s in a.samples]
    return train_samples, heldout.samples, {
        "train_prompts": len(answers[0].samples), "train_answers": len(train_samples),
        "answer_tokens": sum(s.n_answer for s in train_samples),
        "heldout_prompts": len(heldout.samples), "max_new_tokens": cfg.max_new_tokens, "top_k": cfg.top_k,
        "answers": "greedy" + (f" + {cfg.sampled_answers} sampled at T=1" if cfg.sampled_answers else ""),
        "generation_s": rounded_sum(*(a.seconds for a in answers), heldout.seconds)}


def corpus_data(cfg: TrainConfig, target, store: Path | None = None):
    """The corpus's training records from `first_record` on, prefilled as training takes them (kept in `store`
    when given), and its validation slice (`split_validation`; the held-out prompts stay unread). Returns
    (training records, validation samples, the draft vocabulary, card). The card's `corpus_records` counts the
    training records up to the last one learnt from, the records' own figures those this run learnt from."""
    import json
    from collections import Counter

    import numpy as np

    from specviz.corpus.store import CORPUS_DIR, load_records, shard_paths, split_validation
    from specviz.errors import SpecvizError
    from specviz.training.batches import corpus_vocabulary
    from specviz.training.prefill import PrefilledRecords

    records = load_records(target=target)
    if not records:
        raise SpecvizError(f"the corpus in {CORPUS_DIR} is empty: python -m specviz corpus grow adds answers")
    train_records, validation = split_validation(records)
    if cfg.first_record >= len(train_records):
        raise SpecvizError(f"--first-record {cfg.first_record}: the corpus holds {len(train_records)} training "
                           "records, so none is left to learn from (python -m specviz corpus grow adds answers)")
    vocab = corpus_vocabulary([r.answer for r in train_records], cfg.draft_vocab, target.vocab_size)
    learnt = train_records[cfg.first_record:]
    prefilled = PrefilledRecords(target, learnt, cfg.layers, cfg.top_k, cfg.window, cfg.bf16, store)
    val_samples = PrefilledRecords(target, validation, cfg.layers, cfg.top_k, cfg.window, cfg.bf16, store).samples()
    seconds = sum(json.loads(str(np.load(p)["meta"])).get("seconds", 0) for p in shard_paths())
    return prefilled, val_samples, vocab, {
        "corpus_records": len(train_records), "first_record": cfg.first_record, "validation_records": len(validation),
        "kinds": dict(Counter(r.kind for r in learnt)),
        "prompt_tokens": sum(r.n_prompt for r in learnt),
        "answer_tokens": sum(r.n_answer for r in learnt),
        "greedy_answers": sum(r.temperature == 0 for r in learnt), "top_k": cfg.top_k, "window": cfg.window,
        "features_stored": store is not None, "generation_s": round(seconds, 1)}


def heldout_acceptance(target, drafter, prompts: int, tokens: int) -> list[dict]:
    """α̂ and accepted length of `drafter` (γ = 4) on the first `prompts` held-out prompts, `tokens`
    new tokens each, at T = 0 and T = 1, printed as they come."""
    from specviz.training.data import load_prompts
    from specviz.training.evaluate import acceptance

    results = []
    for temperature in (0.0, 1.0):
        r = acceptance(target, drafter, load_prompts("heldout")[:prompts], temperature, max_new_tokens=tokens)
        print(f"held-out T={r.temperature:g}, gamma={r.gamma}: alpha {r.alpha:.3f}, "
              f"accepted length {r.accepted_length:.2f}, by position {r.by_position}")
        results.append(r.to_dict())
    return results


def provenance(target) -> dict:
    """Where and how a card's numbers were made: device, torch threads and the command."""
    import torch

    return {"device": str(target.device), "threads": torch.get_num_threads(),
            "command": shlex.join(["python", "-m", "specviz", *sys.argv[1:]])}


def rounded_sum(*seconds: float | None) -> float | None:
    """Total target time spent writing the answers (this run or an earlier one that cached them);
    None when some were cached without a recorded time."""
    return None if None in seconds else round(sum(seconds), 1)
