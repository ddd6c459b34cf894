"""`python -m specviz half-precision`: bf16 against fp32 on this machine, speed and faithfulness.

One run, both dtypes, the embedded target: every drafter as a chain and as a token tree, greedy, on
the bench prompts (`gpu_check.embedded_rows`: each row in `--repeats` rounds, each timed right after
the target alone in the same dtype; a speedup is the median of the rounds' ratios). Reported
(`benchmarks/half-precision.{json,md}`):
- the target alone's tokens/s in each dtype (median and range over the rows' baselines) and their
  ratio: what half precision buys on this CPU;
- each drafter's speedup over the target alone in its own dtype, fp32 beside bf16;
- divergences (`divergence`): for every run whose greedy output leaves the target alone's, where,
  the two best tokens of both computations with their logit margins, and how far its token trailed
  the target alone's best. fp32 is the control: it must never part. In bf16 every parting must be
  a near tie (gap below `NEAR_TIE` logits).
"""

from __future__ import annotations

import argparse
import datetime
import json
import time
from dataclasses import asdict
from pathlib import Path
from statistics import median

import torch

from specviz.arguments import at_least_one, drafter_kinds, output_file
from specviz.bench.command import command_line, machine
from specviz.bench.gpu_check import EqualityRow, embedded_rows
from specviz.bench.markdown import num
from specviz.bench.prompts import DEFAULT_PROMPTS, load_prompts
from specviz.device import native_bf16, pick_device
from specviz.divergence import NEAR_TIE
from specviz.errors import SpecvizError
from specviz.tree import parse_shape

DTYPES = (torch.float32, torch.bfloat16)


def add_half_precision_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--drafters", default="eagle,lookup+eagle,tiny,medusa,specdrafter,ngram",
                        help="drafters of the embedded target (default %(default)s)")
    parser.add_argument("--shapes", default="4x1x0,4x2x8",
                        help="draft shapes as DEPTHxTOPKxNODES, 4x1x0 being a γ=4 chain (default %(default)s)")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="tokens per prompt (default 48)")
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS), help="prompt set JSON (default: the bench's)")
    parser.add_argument("--per-category", type=int, default=0, help="prompts per category (default 0: all)")
    parser.add_argument("--repeats", type=at_least_one, default=3,
                        help="alternating rounds of the target alone and each row (default %(default)s)")
    parser.add_argument("--threads", type=at_least_one, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--out", default="benchmarks/half-precision.json", type=output_file,
                        help="report JSON (default %(default)s)")
    parser.add_argument("--markdown", default="benchmarks/half-precision.md", type=output_file,
                        help="report Markdown (default %(default)s)")


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    try:
        shapes = [parse_shape(item) for item in text.split(",") if item.strip()]
    except SpecvizError:
        shapes = []
    if not shapes:
        raise SpecvizError(f"--shapes: {text!r} is not a list of DEPTHxTOPKxNODES (e.g. 4x1x0,4x2x8)")
    return shapes


def run_half_precision(args: argparse.Namespace) -> None:
    shapes = parse_shapes(args.shapes)
    torch.set_num_threads(args.threads)
    device = pick_device("cpu")
    kinds = drafter_kinds(args.drafters)
    prompts = load_prompts(args.prompts, per_category=args.per_category or None)
    started = time.monotonic()
    rows = {str(dtype).removeprefix("torch."): embedded_rows(device, dtype, kinds, shapes, prompts,
                                                             args.max_new_tokens, args.repeats)
            for dtype in DTYPES}
    result = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
              "command": command_line(), "machine": machine(device, torch.bfloat16) | {"native_bf16": native_bf16()},
              "seconds": round(time.monotonic() - started, 1), "half_margin": NEAR_TIE,
              "prompts": [p.id for p in prompts], "max_new_tokens": args.max_new_tokens, **summary(rows)}
    for path, text in ((args.out, json.dumps(result, indent=1) + "\n"), (args.markdown, to_markdown(result))):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    print(to_markdown(result))


def summary(rows: dict[str, list[EqualityRow]]) -> dict:
    """The target alone's speed per dtype, each row with its speedup, and every divergence."""
    alone = {dtype: {"median": median(r.baseline_tokens_per_s for r in rs),
                     "low": min(r.baseline_tokens_per_s for r in rs), "high": max(r.baseline_tokens_per_s for r in rs)}
             for dtype, rs in rows.items()}
    divergences = {dtype: [{"drafter": r.drafter, "shape": _shape(r), **p} for r in rs for p in r.partings]
                   for dtype, rs in rows.items()}
    return {"target_alone_tokens_per_s": alone,
            "bf16_over_fp32": alone["bfloat16"]["median"] / alone["float32"]["median"],
            "runs": {dtype: sum(r.prompts for r in rs) for dtype, rs in rows.items()},
            "rows": [asdict(r) | {"shape": _shape(r), "speedup": r.speedup, "promise_kept": r.promise_kept}
                     for rs in rows.values() for r in rs],
            "divergences": divergences}


def _shape(row: EqualityRow) -> str:
    return f"γ={row.gamma}" if row.branches == 1 else f"{row.gamma}x{row.branches}x{row.nodes}"


def to_markdown(result: dict) -> str:
    m, alone = result["machine"], result["target_alone_tokens_per_s"]
    lines = ["# Half precision on this CPU: bf16 against fp32", "",
             f"- date: {result['date']}; command: `{result['command']}`; {result['seconds'] / 60:.1f} min",
             f"- device: {m['device_name']}; native bf16: {'yes' if m['native_bf16'] else 'no (emulated)'}; "
             f"torch {m['torch']}, {m['threads']} thread(s); {len(result['prompts'])} prompts, "
             f"{result['max_new_tokens']} greedy tokens each", "",
             "## The target alone", "", "| dtype | tokens/s (median) | range |", "| --- | --- | --- |"]
    for dtype, a in alone.items():
        lines.append(f"| {dtype} | {a['median']:.1f} | {a['low']:.1f}–{a['high']:.1f} |")
    lines += ["", f"bf16 runs **{result['bf16_over_fp32']:.2f}×** the fp32 target's tokens/s.", "",
              "## Speculative speedup over the target alone in the same dtype", "",
              "| drafter | shape | fp32 | bf16 | bf16 α̂ | bf16 accepted length |",
              "| --- | --- | --- | --- | --- | --- |"]
    by_key = {(r["dtype"], r["drafter"], r["shape"]): r for r in result["rows"]}
    for (dtype, drafter, shape), r in by_key.items():
        if dtype != "float32":
            continue
        half = by_key.get(("bfloat16", drafter, shape))
        lines.append(f"| {drafter} | {shape} | {r['speedup']:.2f}× | {half['speedup']:.2f}× | "
                     f"{half['alpha']:.3f} | {half['accepted_length']:.2f} |" if half else
                     f"| {drafter} | {shape} | {r['speedup']:.2f}× | | | |")
    lines += ["", "## Where greedy speculative output parts from the target alone's", "",
              f"A parting is a near tie when the speculative run's token trailed the target alone's best by less "
              f"than {result['half_margin']} logits in the target alone's own step.", ""]
    for dtype, found in result["divergences"].items():
        lines.append(f"- {dtype}: {len(found)} of {result['runs'][dtype]} runs part"
                     + ("" if found or dtype != "float32" else " (the control: exact equality)"))
    lines += ["", "| dtype | drafter | shape | prompt | at token | gap | target alone's top 2 (margin) | "
              "verification pass's top 2 (margin) |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for dtype, found in result["divergences"].items():
        for d in found:
            lines.append(f"| {dtype} | {d['drafter']} | {d['shape']} | {d['prompt']} | {d['token']} | "
                         f"{num(d['gap'], 3) or 'outside top-k'} | {_top2(d['alone'])} | "
                         f"{_top2(d['ours'])} |")
    return "\n".join(lines) + "\n"


def measured_note(result: dict) -> str:
    """A report's findings in two sentences, for the Theory page's note on floating point."""
    parted = result["divergences"]
    half = parted.get("bfloat16", [])
    gaps = [d["gap"] for d in half if d["gap"] is not None]
    widest = f", every one where the target's two best tokens lay within {max(gaps):.3f} logits" if gaps else ""
    return (f"Measured on {result['machine']['device_name']} ({result['date']}, {len(result['prompts'])} prompts × "
            f"{result['max_new_tokens']} greedy tokens, every drafter in chains and trees): float32 speculative "
            f"output parted from the target alone's in {len(parted.get('float32', []))} of "
            f"{result['runs']['float32']} runs; bfloat16 in {len(half)} of {result['runs']['bfloat16']}{widest}. "
            f"bfloat16 ran the target alone {result['bf16_over_fp32']:.2f}× as fast as float32.")


def _top2(top: dict | None) -> str:
    return "" if top is None else f"{' / '.join(repr(t) for t in top['tokens'])} ({top['margin']:.3f})"
