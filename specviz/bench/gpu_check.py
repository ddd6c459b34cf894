"""`python -m specviz gpu-check`: the decoder on whatever device is present, with no download.

Two parts, one report (`benchmarks/gpu-check.{json,md}`):

1. The embedded target with its trained drafters, in fp32 and in half precision (bf16, or fp16
   where the GPU has no bf16): greedy speculative output against the target alone in the same
   dtype, tokens/s at each γ and its speedup over the target alone, α̂, accepted length and c. Each
   row alternates the target alone and the drafter for `--repeats` rounds (A B A B): a speedup is
   the median of the rounds' ratios, with their range, since on a GPU whose steps are bound by
   kernel launches the target alone's own speed moved 26-47 tokens/s from one round to the next.
   In half precision a (γ+1)-token verification pass need not round like γ+1 one-token passes, so
   the promise is weaker than fp32's exact equality: an output may part from the target alone's
   only where its token trailed the target alone's best by less than NEAR_TIE logits there (a near
   tie, `divergence`); each parting is listed with that gap.
2. A hosted-demo-sized pair built from configs with random weights (SmolLM2-1.7B-shaped target,
   360M- and 135M-shaped draft LMs): the verify-cost curve, c of each draft LM, peak memory, the
   speedup the analytic formula predicts from those costs at α 0.5-0.9 (a prediction: random
   weights have no real α), and the engine against transformers' assisted generation on the
   same pair, both timed with the device synchronized, in alternating rounds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from statistics import median

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from specviz.arguments import at_least_one, drafter_kinds, number_list, output_file
from specviz.bench.command import command_line, machine
from specviz.bench.markdown import num, ratio_range
from specviz.bench.memory import memory_source, peak_mb, reset_peak
from specviz.bench.methods import engine_method, hf_method
from specviz.bench.prompts import DEFAULT_PROMPTS, BenchPrompt, load_prompts
from specviz.bench.report import Spread, spread
from specviz.decoder import generate
from specviz.decoder_process import child_env
from specviz.device import Clock, pick_device, pick_dtype, steady_attention
from specviz.divergence import NEAR_TIE, first_divergence
from specviz.drafters import DraftModelDrafter, build_drafter
from specviz.models import LoadedModel, embedded_dir, load_model
from specviz.packed_linear import can_pack, pack_linears
from specviz.settings import MAX_GAMMA, DecodeSettings
from specviz.theory import expected_tokens
from specviz.trace import Trace
from specviz.verify_cost import VerifyCost
from specviz.verify_cost import measure as measure_verify_cost

ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)
# Llama shapes of SmolLM2-1.7B, -360M and -135M (hidden, MLP, layers, heads, KV heads); "tiny" for the tests.
SHAPES = {
    "hosted": {"target": (2048, 8192, 24, 32, 32), "draft-360M": (960, 2560, 32, 15, 5),
               "draft-135M": (576, 1536, 30, 9, 3)},
    "tiny": {"target": (128, 256, 4, 4, 2), "draft-a": (64, 128, 2, 2, 1), "draft-b": (32, 64, 1, 2, 1)},
}


@dataclass
class EqualityRow:
    """One drafter at one γ in one dtype, over every prompt, against the target alone in that dtype."""

    dtype: str
    drafter: str
    gamma: int
    tokens: int
    equal: int                  # prompts whose output equals the target alone's
    prompts: int
    partings: list[dict] = field(default_factory=list)   # {prompt, token, gap}: where an output parted and by
                                                          # how many logits its token trailed the target alone's
    tokens_per_s: float = 0.0            # over the median round
    baseline_tokens_per_s: float = 0.0   # the target alone in the same dtype, its median round
    alpha: float | None = None
    accepted_length: float | None = None
    c: float | None = None
    branches: int = 1           # a token tree's top-k (1: a chain of `gamma`)
    nodes: int = 0              # its node budget
    ratios: list[float] = field(default_factory=list)   # each round: the drafter's speed over the target alone's,
                                                         # timed right before it

    @property
    def speedup(self) -> float:
        return median(self.ratios)

    @property
    def promise_kept(self) -> bool:
        """fp32: every output equal; half precision: every parting at a near-tie."""
        if self.dtype == "float32":
            return self.equal == self.prompts
        return all(p["gap"] is not None and p["gap"] < NEAR_TIE for p in self.partings)


def add_gpu_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--device", default=None, help="cuda or cpu (default: CUDA when present)")
    parser.add_argument("--half", default=None, choices=["bf16", "fp16"],
                        help="the half-precision dtype (default: bf16 where the device has it, else fp16)")
    parser.add_argument("--drafters", default="eagle,tiny,ngram",
                        help="drafters of the embedded target (default %(default)s; ngram is prompt lookup)")
    parser.add_argument("--gammas", default="1,2,3,4,6,8", help="comma-separated γ values (default %(default)s)")
    parser.add_argument("--max-new-tokens", type=int, default=48, help="tokens per prompt (default 48)")
    parser.add_argument("--repeats", type=at_least_one, default=3,
                        help="alternating rounds of the target alone and each drafter row (default 3)")
    parser.add_argument("--prompts", default=str(DEFAULT_PROMPTS), help="prompt set JSON (default: the shipped one)")
    parser.add_argument("--per-category", type=int, default=1, help="prompts per category (default 1)")
    parser.add_argument("--pair", default="hosted", choices=sorted(SHAPES),
                        help="shapes of the pair built from configs (default %(default)s; tiny for a quick check)")
    parser.add_argument("--pair-tokens", type=int, default=32, help="tokens per prompt for the pair (default 32)")
    parser.add_argument("--pair-gamma", type=int, default=4, help="γ of the pair's engine and assisted runs")
    parser.add_argument("--pair-repeats", type=at_least_one, default=3,
                        help="alternating rounds of the engine and transformers on the pair (default 3)")
    parser.add_argument("--threads", type=at_least_one, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--out", default="benchmarks/gpu-check.json", type=output_file,
                        help="report JSON (default: %(default)s)")
    parser.add_argument("--markdown", default="benchmarks/gpu-check.md", type=output_file,
                        help="report Markdown (default: %(default)s)")


def run_gpu_check(args: argparse.Namespace) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    device = pick_device(args.device)
    half = pick_dtype(device, args.half or ("bf16" if device.type == "cpu" else None))  # CUDA: bf16 if supported
    gammas, kinds = number_list(args.gammas, "--gammas", below=MAX_GAMMA + 1), drafter_kinds(args.drafters)
    prompts = load_prompts(args.prompts, per_category=args.per_category)
    started = time.monotonic()
    rows = [row for dtype in (torch.float32, half)
            for row in embedded_rows(device, dtype, kinds, [(g, 1, 0) for g in gammas], prompts,
                                     args.max_new_tokens, args.repeats)]
    pair = pair_report(device, half if device.type == "cuda" else torch.float32, args.pair, prompts[:2],
                       args.pair_tokens, args.pair_gamma, args.pair_repeats)
    result = {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
              "command": command_line(), "machine": machine(device, half), "seconds": time.monotonic() - started,
              "server_starts_cuda": server_starts_cuda(),
              "half_margin": NEAR_TIE, "prompts": [p.id for p in prompts],
              "embedded": [asdict(r) | {"speedup": r.speedup, "promise_kept": r.promise_kept} for r in rows],
              "pair": pair}
    for path, text in ((args.out, json.dumps(result, indent=1)), (args.markdown, to_markdown(result))):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    print(to_markdown(result))


def server_starts_cuda() -> bool | None:
    """Whether a fresh process that draws what the app's server draws in its sidebar (the precision box and its
    default, the default γ) starts CUDA, and so holds a context of its own on the GPU beside the decoder's; None
    where that process failed (the report's measurements are kept all the same)."""
    probe = ("import torch; from specviz import precision; from specviz.device import pick_device; "
             "from specviz.tree_size import default_gamma; gpu = pick_device(); precision.choices(gpu); "
             "precision.default(gpu); default_gamma(1); print(torch.cuda.is_initialized())")
    asked = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=child_env())
    said = asked.stdout.strip().splitlines()
    return said[-1] == "True" if asked.returncode == 0 and said else None


def embedded_rows(device: torch.device, dtype: torch.dtype, kinds: list[str], shapes: list[tuple[int, int, int]],
                  prompts: list[BenchPrompt], tokens: int, repeats: int = 3) -> list[EqualityRow]:
    """Each drafter at each draft shape (depth γ, top-k branches, node budget; branches 1 is a chain)
    against the target alone, greedy, on the embedded target in `dtype`, in `repeats` alternating rounds."""
    name = str(dtype).removeprefix("torch.")
    target = load_model(None, str(device), name)
    target.eos_ids = frozenset()   # every run writes `tokens` tokens, so rates compare like with like
    clock = Clock(device)

    def timed(drafter, shape: tuple[int, int, int], warm_up: bool = True) -> tuple[list[Trace], float]:
        gamma, branches, nodes = shape
        settings = DecodeSettings(temperature=0.0, gamma=gamma, branches=branches, nodes=nodes,
                                  max_new_tokens=tokens, record=True)
        if warm_up:
            generate(target, drafter, prompts[0].text, settings)
        start, traces = clock.now(), [generate(target, drafter, p.text, settings) for p in prompts]
        return traces, clock.now() - start

    alone = (1, 1, 0)
    baseline, _ = timed(None, alone)
    rows = []
    for kind in kinds:
        drafter = build_drafter(kind, target)
        for shape in shapes:
            # the target alone right before the drafter in each round (A B A B): drift in the machine's speed
            # cancels in each round's ratio; the first round's traces are checked (greedy: every round's are alike)
            bases, times, traces = [], [], []
            for r in range(repeats):
                bases.append(timed(None, alone, warm_up=False)[1])
                drafted, drafted_seconds = timed(drafter, shape, warm_up=r == 0)
                times.append(drafted_seconds)
                traces = traces or drafted
            base_seconds, seconds = median(bases), median(times)
            partings = [{"prompt": p.id, "token": d.position, "gap": d.flip,
                         "ours": _asdict(d.ours_top2), "alone": _asdict(d.alone_top2)}
                        for p, t, b in zip(prompts, traces, baseline) if (d := first_divergence(t, b)) is not None]
            summaries = [t.summary() for t in traces]
            its = sum(len(t.iterations) for t in traces)
            row = EqualityRow(
                name, kind, shape[0], tokens, len(prompts) - len(partings), len(prompts), partings,
                tokens * len(prompts) / seconds, tokens * len(prompts) / base_seconds,
                _mean([s.alpha for s in summaries]), tokens * len(prompts) / its, _mean([s.c for s in summaries]),
                branches=shape[1], nodes=shape[2], ratios=[b / s for b, s in zip(bases, times)])
            rows.append(row)
            print(f"[{name} {kind} γ={row.gamma}] {row.tokens_per_s:.1f} tokens/s, the target alone "
                  f"{row.baseline_tokens_per_s:.1f} (medians of {repeats} rounds); {row.equal}/{row.prompts} equal",
                  file=sys.stderr, flush=True)
    return rows


def _asdict(record) -> dict | None:
    return None if record is None else asdict(record)


def build_pair_model(shape: tuple[int, int, int, int, int], device: torch.device, dtype: torch.dtype,
                     seed: int) -> LoadedModel:
    """A Llama with the embedded model's config and tokenizer but the given shape, random weights."""
    hidden, mlp, layers, heads, kv_heads = shape
    base = AutoConfig.from_pretrained(embedded_dir())
    config = type(base)(**{**base.to_dict(), "hidden_size": hidden, "intermediate_size": mlp,
                           "num_hidden_layers": layers, "num_attention_heads": heads,
                           "num_key_value_heads": kv_heads, "head_dim": hidden // heads})
    torch.manual_seed(seed)
    steady_attention(device)
    model = AutoModelForCausalLM.from_config(config, dtype=dtype).to(device).eval()
    model.generation_config.eos_token_id = None   # random weights: no early stop in either engine
    if can_pack(model):
        pack_linears(model)
    params = sum(p.numel() for p in model.parameters())
    return LoadedModel(f"random {params / 1e6:.0f}M", model, AutoTokenizer.from_pretrained(embedded_dir()),
                       device, dtype, frozenset())


def pair_report(device: torch.device, dtype: torch.dtype, shapes: str, prompts: list[BenchPrompt], tokens: int,
                gamma: int, repeats: int = 3) -> dict:
    """The verify-cost curve, c, memory, predicted speedups and the engine against assisted generation."""
    models = {name: build_pair_model(shape, device, dtype, seed)
              for seed, (name, shape) in enumerate(SHAPES[shapes].items())}
    target = models.pop("target")
    cost = measure_verify_cost(target)
    settings = DecodeSettings(temperature=0.0, gamma=gamma, max_new_tokens=tokens, record=False)
    drafts, runs = {}, []
    for name, draft in models.items():
        step = measure_verify_cost(draft, sizes=(1,)).seconds[0]
        c = step / cost.seconds[0]
        drafts[name] = {"model": draft.name, "c": c, "predicted": predictions(cost, c)}
        runs += paired_runs(engine_method(target, DraftModelDrafter(draft), "model", settings, chat=False,
                                          models=(draft,)),
                            hf_method(target, "model", settings, chat=False, assistant=draft),
                            name, prompts, device, tokens, repeats)
    alone = paired_runs(engine_method(target, None, "none", settings, chat=False),
                        hf_method(target, "none", settings, chat=False), "", prompts, device, tokens, repeats)
    runs += alone
    reference = alone[0]["ids"][0]   # the engine's target alone: every greedy method, every round, writes its tokens
    for run in runs:
        run["equal"] = all(ids == reference for ids in run.pop("ids"))
    return {"shapes": shapes, "target": target.name, "dtype": str(dtype).removeprefix("torch."),
            "verify_cost": asdict(cost), "relative": cost.relative, "drafts": drafts, "runs": runs,
            "memory_source": memory_source(device)}


def predictions(cost: VerifyCost, c: float, max_gamma: int = 16) -> list[dict]:
    """Leviathan et al.'s S = E(α, γ) / (γc + 1) with the measured verify cost T(γ+1)/T(1) for the 1,
    at the best γ for each α: what the pair would gain if its drafter matched the target that often."""
    out = []
    for alpha in ALPHAS:
        best = max(range(1, max_gamma + 1),
                   key=lambda g: expected_tokens(alpha, g) / (g * c + cost.at(g + 1) / cost.seconds[0]))
        out.append({"alpha": alpha, "gamma": best,
                    "speedup": expected_tokens(alpha, best) / (best * c + cost.at(best + 1) / cost.seconds[0])})
    return out


def paired_runs(engine, hf, draft: str, prompts: list[BenchPrompt], device: torch.device, tokens: int,
                repeats: int) -> list[dict]:
    """The engine and transformers' `generate` over every prompt: one warm-up round each (which also
    reads its peak memory), then `repeats` alternating rounds (A B A B), so that drift in the
    machine's speed falls on both alike. Each round gives the ratio of their times; the report keeps
    the median round's speed and the ratios' median and range."""
    out = []
    for method in (engine, hf):
        before = reset_peak(device)
        warm = [method.run(p) for p in prompts]
        longest = max(o.prompt_tokens for o in warm) + tokens + (method.spec.gamma or 0)
        out.append({"method": method.spec.name, "draft": draft, "rounds": [], "ids": [],
                    "peak_mb": peak_mb(device, method.models, longest, before)})
    for repeat in range(repeats):
        for run, method in zip(out, (engine, hf)):
            outcomes = [method.run(p) for p in prompts]
            run["rounds"].append(sum(o.seconds for o in outcomes))
            run["ids"].append([o.ids for o in outcomes])
        print(f"[pair {draft or 'target alone'}, round {repeat + 1}/{repeats}] engine {out[0]['rounds'][-1]:.2f} s, "
              f"transformers {out[1]['rounds'][-1]:.2f} s", file=sys.stderr, flush=True)
    for run in out:
        run["tokens_per_s"] = tokens * len(prompts) / median(run["rounds"])
    out[0]["vs_hf"] = asdict(spread([h / e for e, h in zip(out[0]["rounds"], out[1]["rounds"])]))
    return out


STARTS_CUDA = {True: "**yes**", False: "no", None: "unknown (the probe failed, or a report from before it)"}


def to_markdown(result: dict) -> str:
    m, pair = result["machine"], result["pair"]
    lines = ["# GPU check", "",
             f"- date: {result['date']}; command: `{result['command']}`; {result['seconds'] / 60:.1f} min",
             f"- device: {m['device_name']} ({m['device']}); torch {m['torch']}, transformers {m['transformers']}, "
             f"{m['threads']} CPU thread(s)",
             "- the app's server, drawing its sidebar, starts CUDA in its own process: "
             + STARTS_CUDA[result.get("server_starts_cuda")],
             f"- prompts: {', '.join(result['prompts'])}; the half-precision promise: a greedy output parts from the "
             f"target alone's only where its token trailed the best by less than {result['half_margin']} logits", "",
             "## The embedded target and its drafters (greedy, against the target alone in the same dtype)", "",
             "| dtype | drafter | γ | equal | partings (prompt@token: gap) | promise | tokens/s | target alone | "
             "speedup (median; range) | α̂ | accepted length | c |", "|" + " --- |" * 12]
    for r in result["embedded"]:
        parts = ", ".join(f"{p['prompt']}@{p['token']}: {num(p['gap'], 2) or 'outside top-k'}"
                          for p in r["partings"]) or "none"
        lines.append(f"| {r['dtype']} | {r['drafter']} | {r['gamma']} | {r['equal']}/{r['prompts']} | {parts} | "
                     f"{'kept' if r['promise_kept'] else '**BROKEN**'} | {r['tokens_per_s']:.1f} | "
                     f"{r['baseline_tokens_per_s']:.1f} | "
                     f"{ratio_range(spread(r['ratios']))} | {num(r['alpha'], 3)} | {r['accepted_length']:.2f} | "
                     f"{num(r['c'], 3)} |")
    cost = pair["verify_cost"]
    lines += ["", f"## A {pair['shapes']} pair from configs, random weights ({pair['dtype']})", "",
              f"Target {pair['target']}. One pass over m new tokens on a {128}-token cache, relative to one token:", "",
              "| m | " + " | ".join(str(s) for s in cost["sizes"]) + " |", "|" + " --- |" * (len(cost["sizes"]) + 1),
              "| cost | " + " | ".join(f"{r:.2f}×" for r in pair["relative"]) + " |", "",
              "Predicted speedup (a prediction from the measured costs; random weights have no real α):", "",
              "| draft | c | " + " | ".join(f"α {a}" for a in ALPHAS) + " |", "|" + " --- |" * (len(ALPHAS) + 2)]
    for name, d in pair["drafts"].items():
        lines.append(f"| {d['model']} ({name}) | {d['c']:.3f} | "
                     + " | ".join(f"{p['speedup']:.2f}× (γ {p['gamma']})" for p in d["predicted"]) + " |")
    lines += ["", f"Measured on the pair (peak memory {pair['memory_source']}):", "",
              "| method | draft | tokens/s | equal to the target alone | peak MiB |", "|" + " --- |" * 5]
    lines += [f"| {r['method']} | {r['draft']} | {r['tokens_per_s']:.2f} | {'yes' if r['equal'] else '**no**'} | "
              f"{r['peak_mb']:.0f} |" for r in pair["runs"]]
    lines.append("")
    for r in pair["runs"]:
        if "vs_hf" in r:
            v, against = Spread(**r["vs_hf"]), f"with {r['draft']}" if r["draft"] else "target alone"
            lines.append(f"- {against}: the engine at **{v.median:.2f}×** transformers' "
                         f"{'assisted generation' if r['draft'] else '`generate`'} (median of {len(r['rounds'])} "
                         f"alternating rounds; {v.low:.2f}–{v.high:.2f}×)")
    return "\n".join(lines) + "\n"


def _mean(values: list) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None
