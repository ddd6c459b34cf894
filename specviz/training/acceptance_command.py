"""`python -m specviz acceptance`: each drafter's α̂, accepted length and acceptance by draft position
on a prompt set (by default the benchmark's, which no drafter was trained or tuned on), measured by
the decoder loop (`evaluate.pooled`) and printed as a Markdown table, over all the prompts chosen and
then over each category of them; `--out` saves the rows as JSON (format "specviz-acceptance"; version 2 adds
each row's `reached_by_position`, version 3 its `category`, "all" for the pooled row)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from specviz.arguments import at_least_one, output_file


def add_acceptance_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.bench.prompts import DEFAULT_PROMPTS
    from specviz.drafters import STANDALONE_KINDS

    parser.add_argument("--kinds", nargs="+", default=list(STANDALONE_KINDS), choices=STANDALONE_KINDS,
                        help=f"the drafters (default: {' '.join(STANDALONE_KINDS)})")
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS),
                        help="a prompt set JSON like the benchmark's, or a benchmark's question.jsonl (default: the "
                             "benchmark's, prompts no drafter was trained or tuned on)")
    parser.add_argument("--categories", default=None,
                        help="comma-separated prompt categories (default: every one in the set)")
    parser.add_argument("--per-category", type=at_least_one, default=None,
                        help="at most this many prompts per category")
    parser.add_argument("--temperatures", nargs="+", type=float, default=[0.0, 1.0],
                        help="0 = greedy; else lossless sampling (default: 0 1)")
    parser.add_argument("--gamma", type=at_least_one, default=4, help="draft length (default 4)")
    parser.add_argument("--max-new-tokens", type=at_least_one, default=48, help="new tokens per prompt (default 48)")
    parser.add_argument("--threads", type=at_least_one, default=None, help="CPU threads for torch")
    parser.add_argument("--out", default=None, type=output_file, help="also save the rows as JSON here")


def run_acceptance(args: argparse.Namespace) -> None:
    """α̂, accepted length and acceptance by position of each drafter on a prompt set, as a Markdown table."""
    import torch

    from specviz.bench.prompts import load_prompts
    from specviz.drafters import build_drafter
    from specviz.models import load_model
    from specviz.training.evaluate import chain_settings, held_out_traces, pooled

    if args.out:   # its folder made before the measuring, not found missing after it
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    if args.threads:
        torch.set_num_threads(args.threads)
    target = load_model(None)
    chosen = load_prompts(args.prompts, args.categories.split(",") if args.categories else None, args.per_category)
    categories = list(dict.fromkeys(p.category for p in chosen))
    rows = []
    print(f"| drafter | T | prompts | α̂ | accepted length | acceptance at positions 1..{args.gamma} | tokens |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for kind in dict.fromkeys(args.kinds):
        drafter = build_drafter(kind, target)
        for temperature in args.temperatures:
            settings = chain_settings(temperature, args.gamma, args.max_new_tokens)
            traces = {c: held_out_traces(target, drafter, [p.text for p in chosen if p.category == c], settings)
                      for c in categories}
            groups = {"all": [t for c in categories for t in traces[c]]} | (traces if len(categories) > 1 else {})
            for category, runs in groups.items():
                r = pooled(runs, temperature, args.gamma)
                rows.append({"kind": kind, "drafter": drafter.name, "category": category, **r.to_dict()})
                positions = ", ".join("–" if a is None else f"{a:.2f}" for a in r.by_position)
                print(f"| {kind} | {temperature:g} | {category} ({r.prompts}) | {r.alpha:.3f} | "
                      f"{r.accepted_length:.2f} | {positions} | {r.tokens} |", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"format": "specviz-acceptance", "version": 3, "target": target.name,
                                              "prompts": args.prompts, "max_new_tokens": args.max_new_tokens,
                                              "command": shlex.join(["python", "-m", "specviz", *sys.argv[1:]]),
                                              "rows": rows}, indent=1) + "\n")
