"""`python -m specviz acceptance`: each drafter's α̂, accepted length and acceptance by draft position
on a prompt set (by default the benchmark's, which no drafter was trained or tuned on), measured by
the decoder loop (`evaluate.acceptance`) and printed as a Markdown table; `--out` saves the rows as JSON
(format "specviz-acceptance"; version 2 adds each row's `reached_by_position`)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path


def add_acceptance_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.bench.prompts import DEFAULT_PROMPTS
    from specviz.drafters import STANDALONE_KINDS

    parser.add_argument("--kinds", nargs="+", default=list(STANDALONE_KINDS), choices=STANDALONE_KINDS,
                        help=f"the drafters (default: {' '.join(STANDALONE_KINDS)})")
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS),
                        help="a prompt set JSON like the benchmark's (default: the benchmark's, prompts no drafter "
                             "was trained or tuned on)")
    parser.add_argument("--temperatures", nargs="+", type=float, default=[0.0, 1.0],
                        help="0 = greedy; else lossless sampling (default: 0 1)")
    parser.add_argument("--gamma", type=int, default=4, help="draft length (default 4)")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="new tokens per prompt (default 48)")
    parser.add_argument("--threads", type=int, default=None, help="CPU threads for torch")
    parser.add_argument("--out", default=None, help="also save the rows as JSON here")


def run_acceptance(args: argparse.Namespace) -> None:
    """α̂, accepted length and acceptance by position of each drafter on a prompt set, as a Markdown table."""
    import torch

    from specviz.bench.prompts import load_prompts
    from specviz.drafters import build_drafter
    from specviz.models import load_model
    from specviz.training.evaluate import acceptance

    if args.threads:
        torch.set_num_threads(args.threads)
    target = load_model(None)
    prompts = [p.text for p in load_prompts(args.prompts)]
    rows = []
    print(f"| drafter | T | α̂ | accepted length | acceptance at positions 1..{args.gamma} | tokens |")
    print("| --- | --- | --- | --- | --- | --- |")
    for kind in dict.fromkeys(args.kinds):
        drafter = build_drafter(kind, target)
        for temperature in args.temperatures:
            r = acceptance(target, drafter, prompts, temperature, args.gamma, args.max_new_tokens)
            rows.append({"kind": kind, "drafter": drafter.name, **r.to_dict()})
            positions = ", ".join("–" if a is None else f"{a:.2f}" for a in r.by_position)
            print(f"| {kind} | {temperature:g} | {r.alpha:.3f} | {r.accepted_length:.2f} | {positions} | {r.tokens} |",
                  flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"format": "specviz-acceptance", "version": 2, "target": target.name,
                                              "prompts": args.prompts, "max_new_tokens": args.max_new_tokens,
                                              "command": shlex.join(["python", "-m", "specviz", *sys.argv[1:]]),
                                              "rows": rows}, indent=1) + "\n")
