"""Command line: `python -m specviz generate "prompt" ...` and friends.

Each subcommand lives in `COMMANDS` as (name, help, add_arguments, run).
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from dataclasses import fields, replace
from pathlib import Path

from specviz.arguments import at_least_one, output_file
from specviz.bench.command import add_bench_arguments, run_bench
from specviz.bench.gpu_check import add_gpu_check_arguments, run_gpu_check
from specviz.bench.half_precision import add_half_precision_arguments, run_half_precision
from specviz.bench.remote import add_remote_bench_arguments, run_remote_bench
from specviz.corpus.command import add_corpus_arguments, run_corpus
from specviz.errors import SpecvizError
from specviz.settings import MAX_GAMMA, VERIFY_RULES, DecodeSettings
from specviz.training.acceptance_command import add_acceptance_arguments, run_acceptance
from specviz.training.command import add_train_arguments, run_train
from specviz.training.count_command import add_count_arguments, run_count
from specviz.training.drafter_report import add_drafter_report_arguments, run_drafter_report

STYLE = {  # ANSI styles; without colour the markers below still tell the kinds apart
    "accepted": ("\033[32m", "", ""), "rejected": ("\033[2;9;31m", "~", "~"),
    "correction": ("\033[1;4;31m", "[", "]"), "bonus": ("\033[1;34m", "{", "}"), "target": ("", "<", ">"),
}
LEGEND = {"accepted": "accepted draft", "rejected": "rejected draft (not in output)",
          "correction": "correction after a rejection", "bonus": "bonus token", "target": "target step"}
MODEL_FREE_KINDS = ("ngram", "none")  # drafter kinds that take no --drafter-model
# The options a study command sets itself, and why: refused when given, and left out of its --help.
SET_BY = {"sweep": ("sweep runs chains at each of --gammas", ("gamma", "branches", "nodes", "auto_size")),
          "grid": ("grid runs the target's greedy output, then Spec-Verification over --betas × --taus on chains of "
                   "--gamma", ("verify", "beta", "tau", "branches", "nodes", "auto_size", "adaptive")),
          "drafters": ("drafters runs each of --kinds with its own weights, as chains of --gamma",
                       ("drafter", "drafter_model", "branches", "nodes", "auto_size", "adaptive"))}
# DecodeSettings' fields as the command line names them (its own messages name the fields).
FLAGS = {f.name: "--" + f.name.replace("_", "-") for f in fields(DecodeSettings)} | {
    "record_top_k": "--top-k-record", "target_timeout_s": "--target-timeout"}   # the two named otherwise


def add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", help="the user message (wrapped in the chat template when the model has one)")
    add_model_arguments(parser)
    add_decode_arguments(parser)
    parser.add_argument("--trace", metavar="PATH", type=output_file, help="save the trace as JSON here")
    parser.add_argument("--compare-baseline", action="store_true",
                        help="also run the target alone and report the speedup")
    parser.add_argument("--study", metavar="PATH", type=output_file,
                        help="save the comparison with the target alone as a study here (implies --compare-baseline)")
    add_threads_argument(parser)
    add_print_arguments(parser)


def add_threads_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=at_least_one, default=None,
                        help="torch CPU threads (default: torch's own choice; the app's decoder uses every core "
                             "but one)")


def add_sweep_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", help="the user message (wrapped in the chat template when the model has one)")
    parser.add_argument("--gammas", type=int, nargs="+", default=[1, 2, 4, 8], help="the γ values (default 1 2 4 8)")
    add_repeats_argument(parser, "each γ")
    parser.add_argument("--again", default=None, metavar="STUDY",
                        help="a sweep saved before on the same settings: say which of this sweep's points fall "
                             "within the error bars drawn there")
    add_study_arguments(parser, "sweep")


def add_repeats_argument(parser: argparse.ArgumentParser, runs: str) -> None:
    parser.add_argument("--repeats", type=at_least_one, default=3,
                        help=f"time every run this often, interleaved with the others (the target alone, {runs}, "
                             "the target alone, …); speedups are the rounds' medians with their min–max (default 3)")


def add_grid_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", help="the user message (wrapped in the chat template when the model has one)")
    parser.add_argument("--betas", type=int, nargs="+", default=[1, 3, 5], help="the β values (default 1 3 5)")
    parser.add_argument("--taus", type=float, nargs="+", default=[1.0, 3.0, 5.0],
                        help="the τ values (default 1 3 5)")
    add_repeats_argument(parser, "each (β, τ)")
    add_study_arguments(parser, "grid")


def add_drafters_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.drafters import STANDALONE_KINDS

    parser.add_argument("prompt", help="the user message (wrapped in the chat template when the model has one)")
    parser.add_argument("--kinds", nargs="+", default=list(STANDALONE_KINDS), choices=STANDALONE_KINDS,
                        help=f"the drafters to compare (default: {' '.join(STANDALONE_KINDS)})")
    add_repeats_argument(parser, "each drafter")
    add_study_arguments(parser, "drafters")


def add_study_arguments(parser: argparse.ArgumentParser, command: str) -> None:
    """The options every study command takes, less those it sets itself (`SET_BY`: refused, so left out of --help)."""
    parser.add_argument("--out", metavar="PATH", required=True, type=output_file, help="save the study (JSON) here")
    add_model_arguments(parser)
    add_decode_arguments(parser)
    add_threads_argument(parser)
    set_here = [action for action in parser._actions if action.dest in SET_BY[command][1]]
    for action in set_here:
        action.help = argparse.SUPPRESS
    parser.set_defaults(set_here={action.dest: action.default for action in set_here})


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.drafters import DRAFTER_KINDS

    parser.add_argument("--target", default=None,
                        help="target model: hub id or local directory (default: the embedded SmolLM2-135M-Instruct)")
    parser.add_argument("--drafter", default=None, choices=DRAFTER_KINDS,
                        help="drafter kind (default: model when --drafter-model is given; else lookup+eagle, prompt "
                             "lookup's copy and the trained EAGLE head's guesses in one token tree, with the embedded "
                             "target when the head's weights are installed; else ngram); unigram / bigram: count "
                             "tables of the target's own answers, the cheapest drafters there are; retrieval: "
                             "continuations found in the corpus of the target's own answers (REST)")
    parser.add_argument("--drafter-model", default=None,
                        help="draft LM for --drafter model: hub id or directory; given without --drafter it means "
                             "--drafter model, and a file given so is an error (name its kind with --drafter); for "
                             "eagle / tiny / medusa / specdrafter / lookup+eagle: a weights file; for unigram / "
                             f"bigram: a table file (count-drafter writes them); for retrieval: a corpus folder; "
                             f"{' and '.join(MODEL_FREE_KINDS)} "
                             "take none (an error)")
    parser.add_argument("--device", default=None, help="cuda, cuda:1, cpu ... (default: cuda when available)")
    parser.add_argument("--dtype", default=None, choices=["float32", "float16", "bfloat16"],
                        help="model dtype (default: bf16/fp16 on CUDA, fp32 on the CPU)")
    parser.add_argument("--trust-remote-code", action="store_true", help="allow model code from the hub")


def add_decode_arguments(parser: argparse.ArgumentParser) -> None:
    d = DecodeSettings()
    parser.add_argument("--gamma", type=int, default=None,
                        help="tokens drafted per iteration, 1-64: a token tree's depth (default: the fastest chain "
                             "predicted for the pair on this machine and thread count once their tree sizing is "
                             f"cached, e.g. by a run with --auto-size; {d.gamma} before that)")
    parser.add_argument("--branches", type=int, default=d.branches,
                        help=f"token tree: children per expanded node, the drafter's top-k (default {d.branches}: "
                             "a chain)")
    parser.add_argument("--nodes", type=int, default=d.nodes,
                        help="token tree: the budget N of drafted nodes per iteration (default 0: no budget)")
    parser.add_argument("--auto-size", action="store_true",
                        help="replace --gamma, --branches and --nodes by the tree size predicted fastest on this "
                             "machine (the target's verify-cost curve and the drafter's acceptance, measured once "
                             "and cached)")
    parser.add_argument("--adaptive", action="store_true",
                        help="choose before every iteration the draft with the most expected tokens per second, "
                             "no draft at all included, from acceptance learnt as the run goes (the pair's sizing "
                             "is the prior and gives the costs, measured once and cached); --gamma, --branches and "
                             "--nodes are then the largest it may draft (with --auto-size: the sizer's range); in "
                             "sweep: one adaptive run of chains up to the largest γ, beside the fixed ones")
    parser.add_argument("--learn-costs", action="store_true",
                        help="with --adaptive: price the drafts by the target's passes timed in this process and "
                             "the run's own drafting time, not by the costs measured once (the shapes then follow "
                             "the machine's speed, so a seed no longer fixes a sampled run's text)")
    parser.add_argument("--verify", default=d.verify, choices=VERIFY_RULES,
                        help="sampling: lossless rejection sampling; greedy: argmax match; spec: SpecDec beta/tau "
                             f"(default {d.verify})")
    parser.add_argument("--temperature", type=float, default=d.temperature, help="0 means greedy (default 1.0)")
    parser.add_argument("--top-k", type=int, default=d.top_k, help="keep the k most likely tokens, 0 = off")
    parser.add_argument("--top-p", type=float, default=d.top_p, help="nucleus mass in (0, 1] (default 1.0)")
    parser.add_argument("--beta", type=int, default=d.beta,
                        help=f"Spec-Verification: draft must be in the top-beta (default {d.beta})")
    parser.add_argument("--tau", type=float, default=d.tau,
                        help=f"Spec-Verification: max log-prob gap to the top-1 (default {d.tau:g})")
    parser.add_argument("--seed", type=int, default=d.seed,
                        help=f"seed of the run's random generator (default {d.seed})")
    parser.add_argument("--max-new-tokens", type=int, default=d.max_new_tokens,
                        help=f"tokens to generate at most (default {d.max_new_tokens})")
    parser.add_argument("--top-k-record", type=int, default=d.record_top_k, dest="record_top_k",
                        help="top tokens of p, q and the residual kept in the trace (default 10)")
    parser.add_argument("--draft-confidence", type=float, default=d.draft_confidence,
                        help="stop drafting before a position whose most likely draft token has probability "
                             "below this, so gamma is a maximum (0 = off, the default)")
    parser.add_argument("--first-target", action="store_true",
                        help="let the target produce the first token before drafting starts (always so for a "
                             "drafter that reads the target's features: its prefill is that step)")
    parser.add_argument("--target-latency-ms", type=float, default=0.0,
                        help="simulated network latency added to every target call (Petals setting); with "
                             "--target-url, added to every request")
    parser.add_argument("--target-url", default="",
                        help="verify on a target served by vLLM, SGLang or llama-cpp-python at this URL "
                             "(http://host:port); --target then names the local model whose tokenizer (and, for "
                             "trained drafters, embeddings) the drafter shares")
    parser.add_argument("--target-model", default="", help="the served model's name (default: the one it serves)")
    parser.add_argument("--target-logprobs", type=int, default=d.target_logprobs,
                        help="lossless sampling against --target-url: log-probabilities asked per position "
                             f"(default {d.target_logprobs}, and the run is marked approximate; 0: the whole "
                             "distribution, exact, e.g. vLLM started with --max-logprobs -1)")
    parser.add_argument("--target-timeout", type=float, default=d.target_timeout_s,
                        help=f"seconds to wait for the remote target's answer (default {d.target_timeout_s:g})")
    parser.add_argument("--no-chat", action="store_true", help="feed the prompt as raw text, no chat template")


def settings_from_args(args: argparse.Namespace) -> DecodeSettings:
    """The run's settings; with no --gamma, DecodeSettings' own until `run_generate` knows the pair. A
    setting refused is named by its flag."""
    gamma = DecodeSettings.gamma if args.gamma is None else args.gamma
    try:
        return _settings(args, gamma)
    except SpecvizError as error:
        message = str(error)
        for field, flag in sorted(FLAGS.items(), key=lambda item: -len(item[0])):
            message = re.sub(rf"(?<![\w-]){field}\b", flag, message)
        raise SpecvizError(message) from None


def _settings(args: argparse.Namespace, gamma: int) -> DecodeSettings:
    return DecodeSettings(
        gamma=gamma, verify=args.verify, temperature=args.temperature, top_k=args.top_k,
        top_p=args.top_p, beta=args.beta, tau=args.tau, seed=args.seed,
        max_new_tokens=args.max_new_tokens, record_top_k=args.record_top_k,
        first_target=args.first_target, target_latency_ms=args.target_latency_ms,
        draft_confidence=args.draft_confidence, branches=args.branches, nodes=args.nodes,
        auto_size=args.auto_size, adaptive=args.adaptive, learn_costs=args.learn_costs, target_url=args.target_url,
        target_model=args.target_model,
        target_logprobs=args.target_logprobs, target_timeout_s=args.target_timeout)


def load_pair(args: argparse.Namespace):
    """The target and the drafter the arguments name, torch's thread count set first."""
    from specviz.drafters import build_drafter
    from specviz.models import load_model

    kind = drafter_kind(args)
    set_threads(args)
    target = load_model(args.target, device=args.device, dtype=args.dtype,
                        trust_remote_code=args.trust_remote_code)
    return target, build_drafter(kind, target, args.drafter_model, args.trust_remote_code)


def load_models(args: argparse.Namespace):
    """The target, the drafter and the run's settings the arguments name, prepared for the run
    (`sizing.prepare`: an auto size resolved); with no --gamma, γ is the chain measured fastest for this
    pair on this machine, if any."""
    from specviz.sizing import prepare, warnings
    from specviz.tree_size import measured_gamma

    settings = settings_from_args(args)   # refused before any model loads
    target, drafter = load_pair(args)
    if args.gamma is None:
        settings = replace(settings, gamma=measured_gamma(target, drafter) or settings.gamma)
    prepared = prepare(target, drafter, settings)
    for warning in warnings(prepared.sizing) if prepared.sizing is not None else []:
        print(f"warning: {warning}", file=sys.stderr)
    return target, drafter, prepared


def drafter_kind(args: argparse.Namespace) -> str:
    """The drafter kind the arguments name: --drafter's; a --drafter-model alone names a draft LM
    ("model"); neither, the target's default. Refused in one line: a model for a kind that takes none,
    and a file without --drafter (a weights or table file: whose it is, is not evident)."""
    from specviz.drafters import DRAFTER_KINDS, default_drafter

    model = args.drafter_model
    if args.drafter in MODEL_FREE_KINDS and model:
        raise SpecvizError(f"--drafter {args.drafter} takes no --drafter-model (got {model}): drop one of them")
    if args.drafter or not model:
        return args.drafter or default_drafter(args.target)
    if Path(model).expanduser().is_file() or model.endswith(".safetensors"):
        takes_files = [k for k in DRAFTER_KINDS if k not in ("model", *MODEL_FREE_KINDS)]
        raise SpecvizError(f"--drafter-model {model} is a file, not a draft LM (a hub id or directory): name the "
                           f"drafter it is for with --drafter ({', '.join(takes_files)})")
    return "model"


def set_threads(args: argparse.Namespace) -> None:
    import torch

    if args.threads is not None:
        if args.threads < 1:
            raise SpecvizError(f"--threads must be >= 1, got {args.threads}")
        torch.set_num_threads(args.threads)


def add_sizing_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    add_threads_argument(parser)
    parser.add_argument("--again", action="store_true",
                        help="drop the pair's cached measurements and take them again; run it on an otherwise idle "
                             "machine, with the --threads the runs will use")


def run_sizing(args: argparse.Namespace) -> None:
    from specviz.sizing import describe, forget, size_for

    target, drafter = load_pair(args)
    if drafter is None:
        raise SpecvizError("the target alone drafts nothing to size: name a drafter with --drafter")
    if args.again:
        for path in forget(target, drafter):
            print(f"dropped {path}")
    print(describe(size_for(target, drafter)))


def run_generate(args: argparse.Namespace) -> None:
    from specviz.decoder import generate
    from specviz.study import comparison

    target, drafter, prepared = load_models(args)
    settings, sizing = prepared.settings, prepared.sizing
    compare = args.compare_baseline or args.study
    if compare:  # warm up so neither timed run pays the first-call costs
        generate(target, drafter, args.prompt, replace(settings, max_new_tokens=4), chat=not args.no_chat,
                 sizing=sizing)
    trace = generate(target, drafter, args.prompt, settings, chat=not args.no_chat, sizing=sizing)
    print_trace(trace, args)
    if compare:
        study = comparison(generate(target, None, args.prompt, settings, chat=not args.no_chat), trace)
        print(f"baseline: {study.baseline.summary().tokens_per_s:.1f} tokens/s; speedup {study.speedup(trace):.2f}x")
        if args.study:
            study.save(args.study)
            print(f"study saved to {args.study}")
    if args.trace:
        trace.save(args.trace)
        print(f"trace saved to {args.trace}")


def run_sweep(args: argparse.Namespace) -> None:
    from specviz.study import load_study, repeats, same_setup
    from specviz.sweep import gamma_sweep

    refuse_ignored(args, "sweep")
    if any(not 1 <= g <= MAX_GAMMA for g in args.gammas):
        raise SpecvizError(f"--gammas must all be between 1 and {MAX_GAMMA}, got {args.gammas}")
    before = load_study(args.again) if args.again else None
    if before is not None and before.kind != "gamma sweep":
        raise SpecvizError(f"--again {args.again} holds a {before.kind} study, not a γ sweep")
    study = run_study(args, gamma_sweep, sorted(set(args.gammas)), adaptive=args.adaptive, repeats=args.repeats)
    if before is not None and not same_setup(before, study):
        raise SpecvizError(f"--again {args.again} measured another setup (its prompt, models, settings, device or "
                           "threads differ from this sweep's), so its error bars say nothing about these points; "
                           f"this sweep is saved to {args.out}")
    if before is not None:
        print_repeats(repeats(before, study), args.again)


def run_grid(args: argparse.Namespace) -> None:
    from specviz.sweep import beta_tau_grid

    refuse_ignored(args, "grid")
    if any(b < 1 for b in args.betas) or any(t < 0 for t in args.taus):
        raise SpecvizError(f"--betas must be >= 1 and --taus >= 0, got {args.betas} and {args.taus}")
    run_study(args, beta_tau_grid, sorted(set(args.betas)), sorted(set(args.taus)), repeats=args.repeats)


def run_drafters(args: argparse.Namespace) -> None:
    from specviz.sweep import drafter_comparison

    refuse_ignored(args, "drafters")
    run_study(args, drafter_comparison, list(dict.fromkeys(args.kinds)), repeats=args.repeats)


def refuse_ignored(args: argparse.Namespace, command: str) -> None:
    """A study command sets some options itself (`SET_BY`): one given is refused, before any model loads or is
    sized."""
    why, names = SET_BY[command]
    given = [FLAGS.get(name, "--" + name.replace("_", "-")) for name in names
             if getattr(args, name) != args.set_here[name]]
    if given:
        raise SpecvizError(f"{why}: drop {', '.join(given)}")


def run_study(args: argparse.Namespace, sweep, *values, **options):
    """Run a study's runs one by one, saying each as it ends, then save it and print its table."""
    from specviz.decoder import generate

    target, drafter, prepared = load_models(args)
    settings = prepared.settings
    generate(target, drafter, args.prompt, replace(settings, max_new_tokens=4), chat=not args.no_chat,
             sizing=prepared.sizing)  # warm-up
    study = None
    for study in sweep(target, drafter, args.prompt, settings, *values, chat=not args.no_chat, **options):
        ran = study.rows()[-1]
        print(f"ran {ran.name}: {ran.tokens} tokens, {ran.tokens_per_s:.1f} tokens/s", file=sys.stderr)
    study.save(args.out)
    print_study(study)
    print(f"study saved to {args.out}")
    return study


def add_examples_arguments(parser: argparse.ArgumentParser) -> None:
    from specviz.examples import FOLDER, PACK

    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"the examples to run: {', '.join(e.name for e in PACK)} (default: all of them)")
    parser.add_argument("--out", default=str(FOLDER), help=f"folder for the files (default {FOLDER})")
    add_threads_argument(parser)


def run_examples(args: argparse.Namespace) -> None:
    from specviz.examples import build

    set_threads(args)
    build(Path(args.out), args.names)


def print_study(study) -> None:
    """One line per run: what varied, tokens/s, speedup, α̂, tokens per iteration, match with the baseline."""
    drafters = ", ".join(dict.fromkeys(v.trace.drafter for v in study.variants)) or "none"
    print(f"{study.kind}: {study.baseline.target} <- {drafters}")
    from specviz.charts.study import spread_note, text_agreement

    for row, run in zip(study.rows(), study.traces()):
        speedup = f"{row.speedup:.2f}x" if row.speedup is not None else "1.00x (baseline)"
        if row.speedup_low is not None:
            speedup += f" ({row.speedup_low:.2f}-{row.speedup_high:.2f})"
        alpha = f"{row.alpha:.2f}" if row.alpha is not None else "n/a"
        match, bleu = text_agreement(row, run)
        print(f"  {row.name:<24} {row.tokens_per_s:6.1f} tokens/s  speedup {speedup:<17} alpha {alpha:<5} "
              f"{row.accepted_length:.2f} tokens/iteration" + (f"  match {match:.0%}  BLEU {bleu:.2f}"
                                                                if match is not None else ""))
    print(spread_note(study)[1])


def print_repeats(found: list, path: str) -> None:
    """Each run measured again against the bar drawn for it in the study at `path`."""
    from specviz.study import repeats_note

    if not found:
        print(f"{path} has no run timed in rounds that this sweep ran again")
        return
    for r in found:
        print(f"  {r.name:<24} now {r.speedup:.2f}x, drawn before as {r.low:.2f}-{r.high:.2f}x: "
              f"{'inside' if r.inside else 'OUTSIDE'}")
    print(f"The bars drawn before: {path}. {repeats_note(found)}")


def print_trace(trace, args: argparse.Namespace) -> None:
    """The text with token kinds told apart, a legend and the run's headline numbers."""
    from specviz.trace import approximate_note, text_segments

    color = not args.no_color and sys.stdout.isatty()
    pieces = text_segments(trace, include_rejected=args.show_rejected)
    print("".join(_styled(text, kind, color) for text, kind in pieces))
    print()
    kinds = sorted({kind for _, kind in pieces}, key=list(STYLE).index)
    print("legend: " + "  ".join(_styled(LEGEND[k], k, color) for k in kinds))
    s = trace.summary()
    alpha = f"{s.alpha:.3f}" if s.alpha is not None else "n/a"
    print(f"{s.tokens} tokens in {s.iterations} iterations, {s.wall_time:.2f} s, {s.tokens_per_s:.1f} tokens/s; "
          f"alpha {alpha}, accepted length {s.accepted_length:.2f} tokens/iteration")
    if trace.threads:
        print(f"measured on {trace.device} ({trace.dtype}) with {trace.threads} torch thread(s)")
    if (note := approximate_note(trace)) is not None:
        print(f"approximate: {note}")
    if trace.stopped_by:
        print(f"stopped early by {trace.stopped_by}; the text and the numbers cover what was decided before")


def add_show_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", help="a trace or a study saved by generate, sweep, grid or the app")
    add_print_arguments(parser)


def add_print_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--show-rejected", action="store_true", help="print rejected drafts (struck through)")
    parser.add_argument("--no-color", action="store_true",
                        help="mark token kinds with brackets instead of colour: ~rejected~ [correction] {bonus} "
                             "<target step>, accepted drafts bare")


def run_show(args: argparse.Namespace) -> None:
    from specviz.study import Study, load_record

    trace = load_record(args.trace)
    if isinstance(trace, Study):
        print_study(trace)
        return
    print(f"target {trace.target}, drafter {trace.drafter}, gamma {trace.settings.gamma}, "
          f"rule {trace.settings.rule}")
    print_trace(trace, args)


def _styled(text: str, kind: str, color: bool) -> str:
    ansi, left, right = STYLE[kind]
    if color:
        return f"{ansi}{text}\033[0m" if ansi else text
    return f"{left}{text}{right}"


COMMANDS = [
    ("generate", "generate text with speculative decoding and print what happened",
     add_generate_arguments, run_generate),
    ("show", "print a saved trace (the text with token kinds and the run's numbers) or a study's table",
     add_show_arguments, run_show),
    ("sweep", "run the target alone, then one run per gamma, and save the study", add_sweep_arguments, run_sweep),
    ("grid", "run the target's greedy output, then Spec-Verification over beta x tau, and save the study",
     add_grid_arguments, run_grid),
    ("drafters", "run the target alone, then every drafter at one gamma, and save the study",
     add_drafters_arguments, run_drafters),
    ("sizing", "show the measurements adaptive and auto-sized runs price drafts with (the target's verify-cost "
               "curve, the drafter's step and acceptance; measured once per machine and cached), or take them again",
     add_sizing_arguments, run_sizing),
    ("examples", "run the class pack's examples on the embedded model and save them (assets/examples/)",
     add_examples_arguments, run_examples),
    ("train-drafter", "train a drafter for the target: an EAGLE-style head, a tiny LM, blockwise heads or a "
                      "Spec-Drafter",
     add_train_arguments, run_train),
    ("corpus", "grow the distillation corpus with the target's answers to new prompts of every kind, write the "
               "held-out prompts, or show what the corpus holds",
     add_corpus_arguments, run_corpus),
    ("count-drafter", "count the target's own answers into a unigram or bigram drafter's table",
     add_count_arguments, run_count),
    ("acceptance", "measure each drafter's acceptance (overall and by draft position) on a prompt set",
     add_acceptance_arguments, run_acceptance),
    ("drafter-report", "measure EAGLE heads side by side on the corpus's held-out prompts, kind by kind: "
                       "acceptance by draft position, accepted length of a chain and a tree, draft-vocabulary coverage",
     add_drafter_report_arguments, run_drafter_report),
    ("bench", "time speculative decoding against the baseline and transformers' generate",
     add_bench_arguments, run_bench),
    ("bench-remote", "time a target served by a real engine: the target alone driven from here, each drafter of "
                     "its own, the server's own generation, at added latencies",
     add_remote_bench_arguments, run_remote_bench),
    ("half-precision", "bf16 against fp32 on this CPU: the target alone's speed in each, every drafter's speedup in "
                       "each, and where bf16 greedy speculative output parts from the target alone's (near ties)",
     add_half_precision_arguments, run_half_precision),
    ("gpu-check", "check the decoder on this device: the embedded target's greedy equality in fp32 and half "
                  "precision, tokens/s by γ, and a hosted-size pair built from configs against assisted generation",
     add_gpu_check_arguments, run_gpu_check),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m specviz",
                                     description="A speculative decoder that records everything it decides.")
    commands = parser.add_subparsers(dest="command", required=True)
    for name, help_text, add_arguments, run in COMMANDS:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        add_arguments(sub)
        sub.set_defaults(run=run)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM (`kill`, `timeout`, a host stopping a job) turned into the clean stop Ctrl-C gets."""


def _terminate(signum, frame) -> None:
    raise Terminated


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # SIGINT too: a shell starts a background job with it ignored, and `kill -INT` would then do nothing
    on_term = signal.signal(signal.SIGTERM, _terminate)
    on_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        args.run(args)
    except SpecvizError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:   # Ctrl-C, SIGINT or SIGTERM: what a command finished is kept, and it said where
        print("stopped", file=sys.stderr)
        return 128 + (signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT)
    finally:
        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_int)
    return 0
