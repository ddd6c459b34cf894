"""`python -m specviz corpus grow|heldout|stats|coverage`: the distillation corpus in assets/corpus/.

grow      answer N more new prompts into a new shard (stop it at any moment: finished batches are kept)
heldout   write the held-out prompts once (evaluation only)
stats     what the corpus holds: records and tokens by kind, the temperature mix, size, target time and
          the target that answered
coverage  how large a draft vocabulary must be: for each size, the share of the validation slice's
          greedy answer tokens outside the vocabulary of the training answers' most used tokens

stats and coverage load no model; they refuse a folder whose shards different targets answered.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from pathlib import Path

from specviz.arguments import at_least_one


def add_corpus_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.corpus.grow import GrowSettings
    from specviz.corpus.store import CORPUS_DIR

    d = GrowSettings(answers=0)
    parser.add_argument("action", choices=("grow", "heldout", "stats", "coverage"),
                        help="grow: answer new prompts and add them; heldout: write the held-out prompts; stats: what "
                             "the corpus holds, kind by kind; coverage: the draft vocabulary's share of the held-out "
                             "greedy tokens")
    parser.add_argument("--answers", type=int, default=256, help="grow: new prompts to answer (default 256)")
    parser.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens,
                        help=f"grow: longest answer (default {d.max_new_tokens})")
    parser.add_argument("--batch-size", type=int, default=d.batch_size,
                        help=f"grow: prompts answered at once (default {d.batch_size})")
    parser.add_argument("--greedy-share", type=float, default=d.greedy_share,
                        help=f"grow: share of greedy answers; the rest are sampled at T 0.7-1.0 (default "
                             f"{d.greedy_share})")
    parser.add_argument("--seed", type=int, default=d.seed, help="grow: seed of the prompt and temperature choices")
    parser.add_argument("--per-kind", type=int, default=24, help="heldout: prompts per kind (default 24)")
    parser.add_argument("--force", action="store_true", help="heldout: replace an existing held-out file")
    parser.add_argument("--dtype", default=None, choices=("float32", "bfloat16"),
                        help="the target's dtype while answering (default: the GPU's half precision on a GPU, "
                             "bfloat16 on a CPU with native bf16, "
                             "else float32)")
    parser.add_argument("--threads", type=at_least_one, default=None, help="CPU threads for torch")
    parser.add_argument("--dir", default=str(CORPUS_DIR), help=f"the corpus folder (default {CORPUS_DIR})")


def run_corpus(args: argparse.Namespace) -> None:
    from specviz.corpus.store import load_records, shard_paths
    from specviz.errors import SpecvizError

    folder = Path(args.dir)
    if args.action in ("stats", "coverage") and not folder.is_dir():
        raise SpecvizError(f"no corpus folder at {folder} (python -m specviz corpus grow --dir {folder} starts one)")
    if args.action == "stats":
        print(stats(load_records(folder), shard_paths(folder)))
        return
    if args.action == "coverage":
        print(coverage(load_records(folder)))
        return
    if min(args.answers, args.max_new_tokens, args.batch_size, args.per_kind) < 1:
        raise SpecvizError("--answers, --max-new-tokens, --batch-size and --per-kind must be at least 1")
    if not 0 <= args.greedy_share <= 1:
        raise SpecvizError("--greedy-share must be between 0 and 1")
    target, meta = _target(args)
    if args.action == "heldout":
        from specviz.corpus.heldout import write_heldout

        print(f"wrote {write_heldout(target, args.per_kind, folder, args.force)}")
        return
    from specviz.corpus.grow import GrowSettings, grow

    settings = GrowSettings(args.answers, args.max_new_tokens, args.batch_size, args.greedy_share, seed=args.seed)
    grow(target, settings, meta, folder)


def _target(args: argparse.Namespace):
    """The embedded target in the chosen dtype, and what a shard records about how it answered."""
    import torch

    from specviz.device import native_bf16, pick_device
    from specviz.models import load_model

    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = args.dtype or (None if pick_device().type == "cuda" else "bfloat16" if native_bf16() else "float32")
    target = load_model(dtype=dtype)
    return target, {"dtype": str(target.dtype).removeprefix("torch."), "threads": torch.get_num_threads(),
                    "command": shlex.join(["python", "-m", "specviz", *sys.argv[1:]])}


def stats(records: list, shards: list[Path]) -> str:
    """A Markdown summary of the corpus."""
    import json

    import numpy as np

    from specviz.corpus.prompts import KINDS, SHARES

    by_kind = Counter(r.kind for r in records)
    lines = ["| kind | share goal | records | share | prompt tokens (median) | answer tokens (median) | "
             "answers ≥ 500 tokens |", "|---|---|---|---|---|---|---|"]
    for kind in KINDS:
        mine = [r for r in records if r.kind == kind]
        prompt = int(np.median([r.n_prompt for r in mine])) if mine else 0
        answer = int(np.median([r.n_answer for r in mine])) if mine else 0
        long = sum(r.n_answer >= 500 for r in mine)
        lines.append(f"| {kind} | {SHARES[kind]:.0%} | {by_kind[kind]} | {by_kind[kind] / max(1, len(records)):.0%} "
                     f"| {prompt} | {answer} | {long} |")
    metas = [json.loads(str(np.load(p)["meta"])) for p in shards]
    seconds = sum(m.get("seconds", 0) for m in metas)
    answerer = metas[0].get("target", "an unnamed target") if metas else "nobody yet"   # one: load_records checked
    temperatures = Counter(f"T={r.temperature:g}" for r in records)
    lines += ["", f"{len(records)} records in {len(shards)} shards, "
              f"{sum(r.n_prompt for r in records)} prompt and {sum(r.n_answer for r in records)} answer tokens, "
              f"{sum(p.stat().st_size for p in shards) / 1e6:.1f} MB on disk, {seconds / 3600:.2f} h of target time; "
              + ", ".join(f"{k} {v}" for k, v in sorted(temperatures.items()))
              + f"; answered by {answerer}"]
    return "\n".join(lines)


def coverage(records: list, sizes: tuple[int, ...] = (2048, 4096, 8192, 12288, 16384, 24576, 32768)) -> str:
    """A Markdown table: each draft-vocabulary size against the share of greedy answer tokens outside it."""
    import numpy as np

    from specviz.corpus.store import split_validation
    from specviz.errors import SpecvizError
    from specviz.training.batches import corpus_vocabulary

    train, validation = split_validation(records)
    greedy = [r.answer for r in validation if r.temperature == 0]
    if not train or not greedy:
        raise SpecvizError("the corpus has no greedy validation answers yet: python -m specviz corpus grow adds some")
    tokens = np.concatenate(greedy).astype(np.int64)
    ids = 1 + max(int(tokens.max()), *(int(r.answer.max()) for r in train if r.n_answer))   # ids seen so far
    lines = [f"{len(tokens)} greedy answer tokens of {len(greedy)} validation records; vocabularies from "
             f"{len(train)} training records", "", "| draft vocabulary | tokens outside it |", "|---|---|"]
    for size in sizes:
        vocab = corpus_vocabulary([r.answer for r in train], size, ids)
        lines.append(f"| {size} | {1 - np.isin(tokens, vocab.numpy()).mean():.1%} |")
    return "\n".join(lines)
