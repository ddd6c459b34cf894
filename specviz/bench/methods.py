"""What the benchmark times: the engine (baseline and speculative, recording on and off), the
app's code path (the same runs in the decoder process the app uses) and transformers' own
`generate` as the outside reference, each behind one `run(prompt)` call.

Every method decodes the same prompt ids with the same max_new_tokens; the engine's baseline
(drafter None) is the reference all greedy outputs must equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from specviz.bench.prompts import BenchPrompt
from specviz.decoder import generate
from specviz.decoder_process import DecoderProcess, ModelSpec, follow_trace, trace_stream
from specviz.device import Clock
from specviz.drafters.base import Drafter
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings
from specviz.trace import Trace
from specviz.tree_size import Sizing


@dataclass(frozen=True)
class MethodSpec:
    name: str              # e.g. "engine ngram γ=4 rec on"
    family: str            # "engine" | "app" | "hf"
    drafter: str           # "none", "ngram", "model", or a trained drafter's kind
    gamma: int | None = None
    record: bool | None = None   # engine only: trace recording on / off
    confidence: float = 0.0      # engine and app: the draft's confidence stop (0: off)
    tree: str = ""               # engine: the token tree's depth x top-k x budget ("" for a chain)


@dataclass
class Outcome:
    ids: list[int]
    seconds: float                   # wall clock
    cpu_seconds: float               # process CPU time
    prompt_tokens: int
    accepted: int | None = None      # engine only: drafts accepted, up to each first rejection
    evaluated: int | None = None     # engine only: draft positions whose test decided something
    iterations: int | None = None
    c: float | None = None           # engine only: measured drafter step / verify pass
    draft_seconds: float | None = None   # engine and app: summed over iterations
    verify_seconds: float | None = None
    first_seconds: float | None = None   # engine and app: from the call to the first iteration's tokens
    first_tokens: int | None = None      # (the prompt's prefill, then one draft and verification)


@dataclass
class Method:
    spec: MethodSpec
    run: Callable[[BenchPrompt, int], Outcome]   # (prompt, seed): a sampled run's seed; greedy ignores it
    models: tuple[LoadedModel, ...] = ()   # whose weights and KV caches this method holds
    prompts: frozenset[str] | None = None  # ids of the prompts it runs on (None: all)


def engine_method(target: LoadedModel, drafter: Drafter | None, kind: str, settings: DecodeSettings,
                  chat: bool = True, models: tuple[LoadedModel, ...] = (), label: str = "",
                  sizing: Sizing | None = None) -> Method:
    """The engine's `generate`, timed from the call to the returned trace (prompt encoding included).
    A tree's name, and a chain's given a node budget (`--trees 2x1x4`: lookup+eagle then drafts the head's
    chain beside its copy), shows its size, after `label` ("auto" when the size was chosen by `tree_size`); an
    adaptive run's says so and how far it may draft (`sizing`: the pair's, which the policy starts from)."""
    clock = Clock(target.device)
    if drafter is None:
        spec = MethodSpec("engine baseline", "engine", "none", record=settings.record)
    else:
        rec = "on" if settings.record else "off"
        sized = settings.branches > 1 or settings.nodes > 0 or bool(label)   # a node budget given is named
        tree = f"{settings.gamma}x{settings.branches}x{settings.nodes}" if sized else ""
        shape = f"tree {label + '=' if label else ''}{tree}" if tree else f"γ={settings.gamma}"
        if settings.adaptive:
            tree = f"adaptive {'trees' if settings.branches > 1 else 'chains'}" + \
                (", costs learnt" if settings.learn_costs else "")
            shape = f"{tree} ≤{settings.gamma}"
        spec = MethodSpec(f"engine {kind} {shape}{_stop(settings)} rec {rec}", "engine", kind,
                          settings.gamma, settings.record, settings.draft_confidence, tree)

    def run(prompt: BenchPrompt, seed: int = 0) -> Outcome:
        start, cpu = clock.now(), time.process_time()
        trace = generate(target, drafter, prompt.text, replace(settings, seed=seed), chat=chat, sizing=sizing)
        return _outcome(trace, clock.now() - start, time.process_time() - cpu)

    return Method(spec, run, (target, *models))


def app_method(process: DecoderProcess, models: ModelSpec, target: LoadedModel, settings: DecodeSettings,
               chat: bool = True) -> Method:
    """The app's code path: the run in the decoder process, its trace rebuilt from the stream as the
    Generate page does, timed from the request to the rebuilt trace. CPU time is the decoder
    process's, measured there around the run. `target` is that process's target, for the memory column."""
    spec = MethodSpec(f"app {models.drafter} γ={settings.gamma}{_stop(settings)}", "app", models.drafter,
                      settings.gamma, True, settings.draft_confidence)
    clock = Clock(target.device)

    def run(prompt: BenchPrompt, seed: int = 0) -> Outcome:
        with process.turns:
            start = clock.now()
            request = process.request(models, trace_stream, prompt.text, replace(settings, seed=seed), chat)
            *_, trace = follow_trace(request)
            seconds = clock.now() - start
        return _outcome(trace, seconds, request.cpu_seconds)

    return Method(spec, run, (target,))


def _stop(settings: DecodeSettings) -> str:
    return f" stop<{settings.draft_confidence:g}" if settings.draft_confidence else ""


def _outcome(trace: Trace, seconds: float, cpu: float) -> Outcome:
    its, summary = trace.iterations, trace.summary()
    after_first = trace.wall_time - its[0].elapsed if its else None   # the run's own clock, device synced
    return Outcome(list(trace.generated_ids), seconds, cpu, len(trace.prompt_ids),
                   accepted=sum(it.accepted for it in its), evaluated=sum(it.evaluated for it in its),
                   iterations=len(its), c=summary.c, draft_seconds=summary.draft_time,
                   verify_seconds=summary.verify_time,
                   first_seconds=seconds - after_first if its else None,
                   first_tokens=len(its[0].emitted_ids) if its else None)


def hf_method(target: LoadedModel, kind: str, settings: DecodeSettings, chat: bool = True,
              assistant: LoadedModel | None = None) -> Method:
    """transformers' `generate`: plain (kind "none"), prompt lookup ("ngram") or assisted ("model").

    The assistant drafts exactly γ tokens per iteration (constant schedule, no confidence
    threshold), as the engine's drafter does; prompt lookup matches up to 3-grams, transformers' own
    default, where the engine's follows the longest match up to `ngram.MAX_NGRAM` tokens.
    """
    clock = Clock(target.device)
    options = _sampling_options(settings)
    if kind == "ngram":
        options.update(prompt_lookup_num_tokens=settings.gamma, max_matching_ngram_size=3)
    elif kind != "none":
        if assistant is None:
            raise ValueError("assisted generation needs an assistant model")
        config = assistant.model.generation_config
        config.num_assistant_tokens = settings.gamma
        config.num_assistant_tokens_schedule = "constant"
        config.assistant_confidence_threshold = 0.0
        options.update(assistant_model=assistant.model)
    name = "hf generate" if kind == "none" else f"hf {kind} γ={settings.gamma}"
    spec = MethodSpec(name, "hf", kind, None if kind == "none" else settings.gamma)

    def run(prompt: BenchPrompt, seed: int = 0) -> Outcome:
        torch.manual_seed(seed)   # generate samples from torch's global generator
        start, cpu = clock.now(), time.process_time()  # from the prompt text, as the engine is timed
        ids = torch.tensor([target.encode_prompt(prompt.text, chat=chat)], device=target.device)
        with torch.no_grad():
            out = target.model.generate(ids, attention_mask=torch.ones_like(ids), **options)
        seconds, cpu = clock.now() - start, time.process_time() - cpu
        return Outcome(out[0, ids.shape[1]:].tolist(), seconds, cpu, ids.shape[1])

    return Method(spec, run, (target,) + ((assistant,) if assistant else ()))


def _sampling_options(settings: DecodeSettings) -> dict:
    options: dict = {"max_new_tokens": settings.max_new_tokens}
    if settings.greedy:
        options.update(do_sample=False)
    else:
        options.update(do_sample=True, temperature=settings.temperature, top_k=settings.top_k, top_p=settings.top_p)
    return options
