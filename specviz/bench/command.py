"""`python -m specviz bench`: build the methods, time them, write JSON and Markdown."""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shlex
import sys
from dataclasses import replace
from pathlib import Path

import torch
import transformers

from specviz import verify_cost
from specviz.arguments import at_least_one, at_least_zero, drafter_kinds, number_list, output_file
from specviz.bench.markdown import to_markdown
from specviz.bench.measure import measure
from specviz.bench.memory import memory_source
from specviz.bench.methods import Method, app_method, engine_method, hf_method
from specviz.bench.prompts import DEFAULT_PROMPTS, load_prompts
from specviz.bench.report import BenchResult, summarize
from specviz.bench.truncated import truncated_drafter_dir
from specviz.decoder_process import DecoderProcess, ModelSpec
from specviz.device import device_name
from specviz.drafters.ngram import MAX_NGRAM
from specviz.errors import SpecvizError
from specviz.packed_linear import PackedLinear
from specviz.settings import MAX_GAMMA, DecodeSettings
from specviz.sizing import prepare, warnings
from specviz.tree import parse_shape
from specviz.tree_size import DEPTHS

HF_DRAFTERS = ("ngram", "model")   # drafters transformers' generate can run too
HEADER = """# Benchmarks

Speculative decoding in the specviz engine against its own autoregressive baseline and against
transformers' `generate` (prompt lookup and assisted generation) on the same target, prompts, γ
and max_new_tokens, measured interleaved in one process; the app rows run the same settings
through the app's decoder process. Regenerate with the command below; the
same numbers are in `benchmarks/latest.json` (format `specviz-bench`, version 1).

"""


def add_bench_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", default=None, help="target model (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--drafters", default=None,
                        help="comma-separated drafter kinds (default: ngram, model and every trained drafter "
                             "whose weights load)")
    parser.add_argument("--drafter-model", default=None,
                        help="draft LM for the 'model' drafter (default: the target's first --drafter-layers layers)")
    parser.add_argument("--drafter-layers", type=at_least_one, default=4,
                        help="layers of the target kept in the default draft LM (default 4)")
    parser.add_argument("--gammas", default="4",
                        help="comma-separated draft lengths (default 4); empty: no fixed chains, e.g. with --adaptive")
    parser.add_argument("--draft-confidences", default="0",
                        help="comma-separated confidence stops, each timed as its own rows: a draft ends before a "
                             "position whose most likely token has probability below it (default 0: off)")
    parser.add_argument("--trees", default="",
                        help="comma-separated token trees DEPTHxTOPKxNODES (e.g. 5x3x16), or auto (the size "
                             "tree_size predicts fastest), each timed with recording off beside the chains "
                             "(default: none)")
    parser.add_argument("--adaptive", action="store_true",
                        help="also time each drafter adaptive (specviz.adaptive), with recording off: chains up to "
                             "depth 8, and trees over the sizer's whole range")
    parser.add_argument("--learn-costs", action="store_true",
                        help="with --adaptive: also the adaptive trees pricing their drafts by the costs timed "
                             "during the bench (specviz.learnt_costs), beside those priced by the costs measured once")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0 = greedy, outputs checked against the baseline (default 0)")
    parser.add_argument("--max-new-tokens", type=int, default=64, help="tokens per prompt (default 64)")
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS),
                        help="prompt set JSON (or a benchmark's question.jsonl, MT-bench's format), or several "
                             "comma-separated for one run (default: the shipped one)")
    parser.add_argument("--categories", default=None, help="comma-separated categories (default: all)")
    parser.add_argument("--per-category", type=at_least_one, default=None,
                        help="at most this many prompts per category")
    parser.add_argument("--model-per-category", type=at_least_one, default=None,
                        help="run the 'model' drafter and its transformers twin on only this many prompts per "
                             "category (they are slow while α is low; default: all)")
    parser.add_argument("--repeats", type=at_least_one, default=3, help="timed passes over the prompts (default 3)")
    parser.add_argument("--warmup", type=at_least_zero, default=1, help="untimed runs per method first (default 1)")
    parser.add_argument("--threads", type=at_least_one, default=2,
                        help="torch CPU threads, fixed for the run (default 2)")
    parser.add_argument("--device", default=None, help="cuda, cpu ... (default: cuda when available)")
    parser.add_argument("--dtype", default=None, choices=["float32", "float16", "bfloat16"], help="model dtype")
    parser.add_argument("--no-hf", action="store_true", help="skip transformers' generate")
    parser.add_argument("--no-app", action="store_true",
                        help="skip the app rows (each drafter's runs through the app's decoder process)")
    parser.add_argument("--no-pack", action="store_true",
                        help="on the CPU, keep torch's default linear layers (no oneDNN weight packing)")
    parser.add_argument("--no-chat", action="store_true", help="feed prompts as raw text, no chat template")
    parser.add_argument("--out", default="benchmarks/latest.json", type=output_file,
                        help="results JSON (default: %(default)s)")
    parser.add_argument("--markdown", default="BENCHMARKS.md", type=output_file,
                        help="results Markdown (default: %(default)s)")


def run_bench(args: argparse.Namespace) -> None:
    from specviz.drafters import build_drafter
    from specviz.models import load_model

    if args.repeats < 1 or args.warmup < 0 or args.threads < 1:
        raise SpecvizError("--repeats and --threads must be >= 1, --warmup >= 0")
    torch.set_num_threads(args.threads)
    gammas = number_list(args.gammas, "--gammas", below=MAX_GAMMA + 1, empty=True)
    confidences = number_list(args.draft_confidences, "--draft-confidences", float, low=0, below=1)
    trees = [t.strip() for t in args.trees.split(",") if t.strip()]
    kinds = drafter_kinds(args.drafters) if args.drafters else _default_kinds()
    if args.drafter_model and "model" not in kinds:
        raise SpecvizError("--drafter-model is the 'model' drafter's draft LM: add model to --drafters")
    categories = args.categories.split(",") if args.categories else None
    prompts = load_prompts(args.prompts, categories, args.per_category)
    target = load_model(args.target, device=args.device, dtype=args.dtype, pack=not args.no_pack)
    packed = any(isinstance(m, PackedLinear) for m in target.model.modules())
    chat = not args.no_chat
    base = DecodeSettings(temperature=args.temperature, max_new_tokens=args.max_new_tokens, record=False)
    print(f"torch threads: {torch.get_num_threads()}; device {target.device}; {len(prompts)} prompts", file=sys.stderr)

    methods: list[Method] = [engine_method(target, None, "none", base, chat)]
    if not args.no_hf:
        methods.append(hf_method(target, "none", base, chat))
    notes = ["Speedups are over the engine's baseline with recording off (the fastest plain decoding it has)."]
    if packed:
        notes.append("The models' linear layers are packed once for oneDNN (`specviz/packed_linear.py`), so "
                     "verifying γ+1 tokens costs about one step; transformers' generate runs on the same model "
                     "objects. `--no-pack` measures torch's default path.")
    process = _app_process(args, notes)
    used: list[str] = []
    for kind in kinds:
        assistant, path = None, None
        if kind == "model":
            path = args.drafter_model or str(truncated_drafter_dir(target, args.drafter_layers))
            assistant = load_model(path, device=str(target.device), dtype=str(target.dtype).removeprefix("torch."),
                                   pack=not args.no_pack)
            if not args.drafter_model:
                notes.append(f"The 'model' drafter is the target's first {args.drafter_layers} layers with its "
                             "final norm and LM head, untrained: its α is low, so it slows decoding down. It is "
                             "here to compare the engine's loop with transformers' assisted generation on a "
                             "real same-tokenizer pair, not as a useful drafter.")
        try:
            drafter = build_drafter(kind, target, path)
        except SpecvizError as error:
            if args.drafters:
                raise
            notes.append(f"The trained drafter '{kind}' was left out: {error}")
            continue
        used.append(kind)
        held = (assistant,) if assistant else ()
        subset = None
        if kind == "model" and args.model_per_category is not None:
            subset = frozenset(p.id for p in load_prompts(args.prompts, categories, args.model_per_category))
            notes.append(f"The 'model' rows cover {len(subset)} of the {len(prompts)} prompts "
                         f"({args.model_per_category} per category); their ratios pair runs on those prompts only.")
        for gamma in gammas:
            for confidence in confidences:
                for record in (True, False):
                    settings = DecodeSettings(gamma=gamma, temperature=args.temperature, draft_confidence=confidence,
                                              max_new_tokens=args.max_new_tokens, record=record)
                    methods.append(replace(engine_method(target, drafter, kind, settings, chat, held),
                                           prompts=subset))
                if process is not None:  # the app records, as the rows with recording on do
                    methods.append(replace(app_method(process, ModelSpec(args.target, kind, path), target,
                                                      replace(settings, record=True), chat), prompts=subset))
            if not args.no_hf and kind in HF_DRAFTERS:
                hf_settings = DecodeSettings(gamma=gamma, temperature=args.temperature,
                                             max_new_tokens=args.max_new_tokens)
                methods.append(replace(hf_method(target, kind, hf_settings, chat, assistant), prompts=subset))
        for shape in trees:
            settings = _tree_settings(shape, target, drafter, args)
            methods.append(replace(engine_method(target, drafter, kind, settings, chat, held,
                                                 label="auto" if shape == "auto" else ""), prompts=subset))
        if args.adaptive:
            for trees_too, learnt in ((False, False), (True, False), (True, True))[: 2 + args.learn_costs]:
                prepared = prepare(target, drafter, replace(base, adaptive=True, gamma=max(DEPTHS),
                                                            auto_size=trees_too, learn_costs=learnt))
                methods.append(replace(engine_method(target, drafter, kind, prepared.settings, chat, held,
                                                     sizing=prepared.sizing), prompts=subset))
            notes += [f"The adaptive {kind} runs' sizing: {warning}." for warning in warnings(prepared.sizing)]
    if "ngram" in kinds and not args.no_hf:
        notes.append(f"transformers' prompt lookup matches up to 3-grams; the engine's follows the longest match up "
                     f"to {MAX_NGRAM} tokens (a longer match copies better), so their drafts can differ.")

    try:
        runs = measure(methods, prompts, args.repeats, args.warmup, greedy=base.greedy)
    finally:
        if process is not None:
            process.close()
    specs = [m.spec for m in methods]
    rows, targets = summarize(specs, runs)
    result = BenchResult(
        machine=machine(target.device, target.dtype), command=command_line(),
        date=datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        settings={"target": target.name, "drafters": used, "gammas": gammas, "draft_confidences": confidences,
                  "trees": trees, "verify_cost": _curve(target) if trees else None,
                  "temperature": args.temperature,
                  "greedy": base.greedy, "max_new_tokens": args.max_new_tokens, "repeats": args.repeats,
                  "warmup": args.warmup, "prompts": len(prompts),
                  "prompt_set": ",".join(Path(one).name for one in args.prompts.split(",")),
                  "categories": {c: sum(p.category == c for p in prompts) for c in dict.fromkeys(
                      p.category for p in prompts)},
                  "memory_source": memory_source(target.device)},
        methods=specs, rows=rows, targets=targets, runs=runs, notes=notes)
    result.save(args.out)
    markdown = to_markdown(result)
    Path(args.markdown).write_text(HEADER + markdown)
    print(markdown)
    print(f"results saved to {args.out} and {args.markdown}", file=sys.stderr)


def _curve(target) -> dict:
    """The verify-cost curve measured now, at this run's thread count."""
    cost = verify_cost.measure(target)
    return {"sizes": cost.sizes, "seconds": cost.seconds, "relative": cost.relative}


def _tree_settings(shape: str, target, drafter, args: argparse.Namespace) -> DecodeSettings:
    """DecodeSettings of a tree given as DEPTHxTOPKxNODES, or of the size `tree_size` picks for `auto`."""
    settings = DecodeSettings(temperature=args.temperature, max_new_tokens=args.max_new_tokens, record=False)
    if shape == "auto":
        return prepare(target, drafter, replace(settings, auto_size=True)).settings
    try:
        gamma, branches, nodes = parse_shape(shape)
    except SpecvizError as error:
        raise SpecvizError(f"--trees: {error}, nor auto") from None
    return replace(settings, gamma=gamma, branches=branches, nodes=nodes)


def _app_process(args: argparse.Namespace, notes: list[str]) -> DecoderProcess | None:
    """The app's decoder process for the app rows, with the bench's thread count; None to skip them."""
    if args.no_app:
        return None
    if args.device or args.dtype or args.no_pack:
        notes.append("No app rows: the app loads its models with the default device, dtype and packing, and this "
                     "run set --device, --dtype or --no-pack.")
        return None
    notes.append(f"The app rows run in the app's decoder process with {args.threads} torch thread(s), as this process "
                 "does; the app itself uses every core but one (set SPECVIZ_THREADS to choose).")
    return DecoderProcess(threads=args.threads)


def _default_kinds() -> list[str]:
    from specviz.drafters import DRAFTER_KINDS

    return ["ngram", "model", *(k for k in DRAFTER_KINDS if k not in ("ngram", "model", "none"))]


def machine(device: torch.device, dtype: torch.dtype) -> dict:
    name = device_name(device) + ("" if device.type == "cuda" else f", {os.cpu_count()} cores")
    return {"device": str(device), "device_name": name, "platform": platform.platform(terse=True),
            "python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "threads": torch.get_num_threads(),
            "dtype": str(dtype).removeprefix("torch.")}


def command_line() -> str:
    """The command as it was typed, for a results file."""
    return "python -m specviz " + " ".join(shlex.quote(a) for a in sys.argv[1:])
