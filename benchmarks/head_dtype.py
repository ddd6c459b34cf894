"""The EAGLE head drafting in bfloat16 against float32, beside the same float32 target, timed interleaved.

On a CPU that computes bfloat16 in hardware the head drafts in it (`specviz.drafters.layers.draft_dtype`);
this measures what that buys. The default drafter (prompt lookup + the head, adaptive trees) runs with
each head, every held-out prompt (`--per-kind` of each kind) in turn: the target alone, the bf16 head,
the float32 head, `--repeats` times after one warm-up round. Each head starts from a sizing measured
with it (its own drafter step), in a cache of its own. From the repository root, nothing else running:

    PYTHONPATH=. python benchmarks/head_dtype.py --out benchmarks/head-dtype

writes head-dtype.json (every run) and head-dtype.md (medians per prompt, means per kind).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import statistics
from dataclasses import replace
from pathlib import Path
from unittest import mock

import torch

from specviz import verify_cost
from specviz.bench.prompts import load_prompts
from specviz.decoder import generate
from specviz.device import Clock
from specviz.drafters import build_drafter
from specviz.models import cache_dir, load_model
from specviz.settings import DecodeSettings
from specviz.sizing import prepare
from specviz.tree_size import DEPTHS
from specviz.verify_cost import Setup

HEADS = ("bfloat16", "float32")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--out", default="benchmarks/head-dtype")
    args = parser.parse_args()
    torch.set_num_threads(1)
    target = load_model(None)
    base = DecodeSettings(temperature=0.0, max_new_tokens=args.max_new_tokens, record=False)
    home, setup = cache_dir(), Setup.of(target)
    curve = setup.path(verify_cost.KEY)   # measured once, shared by both heads' sizings
    heads = {"bfloat16": build_drafter("lookup+eagle", target)}
    with mock.patch("specviz.drafters.layers.native_bf16", lambda: False):
        heads["float32"] = build_drafter("lookup+eagle", target)
    if heads["bfloat16"].head.dtype != torch.bfloat16:
        raise SystemExit("this CPU does not draft in bfloat16: nothing to compare")
    plans = {}
    for name, drafter in heads.items():   # each head's sizing in a cache of its own
        os.environ["SPECVIZ_CACHE"] = str(home / "head-dtype" / name)
        if curve.is_file():
            setup.path(verify_cost.KEY).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(curve, setup.path(verify_cost.KEY))
        plans[name] = prepare(target, drafter, replace(base, adaptive=True, gamma=max(DEPTHS), auto_size=True))
    os.environ["SPECVIZ_CACHE"] = str(home)
    clock, runs = Clock(target.device), []
    for prompt in load_prompts("assets/corpus/heldout.json", None, args.per_kind):
        for repeat in range(args.repeats + 1):
            for name in ("alone", *HEADS):
                drafter, plan = (None, None) if name == "alone" else (heads[name], plans[name])
                settings = base if plan is None else plan.settings
                start = clock.now()
                trace = generate(target, drafter, prompt.text, replace(settings, seed=repeat),
                                 sizing=plan and plan.sizing)
                seconds = clock.now() - start
                if repeat:
                    summary = trace.summary()
                    runs.append({"prompt": prompt.id, "kind": prompt.category, "method": name, "repeat": repeat,
                                 "seconds": seconds, "tokens": len(trace.generated_ids),
                                 "iterations": len(trace.iterations), "draft_seconds": summary.draft_time,
                                 "draft_calls": sum(it.draft_calls for it in trace.iterations), "c": summary.c})
    result = {"command": f"PYTHONPATH=. python benchmarks/head_dtype.py --per-kind {args.per_kind} --repeats "
                         f"{args.repeats} --max-new-tokens {args.max_new_tokens} --out {args.out}",
              "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"), "runs": runs}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1))
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


def speedups(runs: list[dict], name: str) -> dict[str, float]:
    """Each prompt's median time alone over its median time with the head `name`."""
    def median(prompt: str, method: str) -> float:
        return statistics.median(r["seconds"] for r in runs if r["prompt"] == prompt and r["method"] == method)
    return {p: median(p, "alone") / median(p, name) for p in dict.fromkeys(r["prompt"] for r in runs)}


def markdown(result: dict) -> str:
    runs = result["runs"]
    kinds = list(dict.fromkeys(r["kind"] for r in runs))
    kind_of = {r["prompt"]: r["kind"] for r in runs}
    lines = ["# The EAGLE head drafting in bfloat16 and in float32", "",
             f"`{result['command']}` ({result['date']}): held-out prompts, greedy, one thread, the default drafter "
             "(prompt lookup + the head, adaptive trees) beside a float32 target; speedups are means over prompts "
             "of each prompt's median time alone over its median time with the head.", "",
             "| head | speedup over the target alone | tokens per iteration | ms per head call | c | "
             + " | ".join(kinds) + " |", "|---" * (5 + len(kinds)) + "|"]
    for name in HEADS:
        mine, ratio = [r for r in runs if r["method"] == name], speedups(runs, name)
        by_kind = [statistics.fmean(v for p, v in ratio.items() if kind_of[p] == k) for k in kinds]
        lines.append(f"| {name} | {statistics.fmean(ratio.values()):.3f}× "
                     f"| {sum(r['tokens'] for r in mine) / sum(r['iterations'] for r in mine):.3f} "
                     f"| {1000 * sum(r['draft_seconds'] for r in mine) / sum(r['draft_calls'] for r in mine):.2f} "
                     f"| {statistics.fmean(r['c'] for r in mine if r['c'] is not None):.3f} | "
                     + " | ".join(f"{v:.2f}×" for v in by_kind) + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
