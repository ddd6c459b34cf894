"""Sweeps: the baseline run once, then one speculative run per setting, as a Study that grows run by run.

A γ sweep puts beside Leviathan et al.'s curves (section 3) what they need from each run: α̂, c,
tokens per iteration (eq. 1) and the walltime speedup over the target alone (theorem 3.8). A β × τ
grid is SpecDec's Table 4 (Xia et al.): Spec-Verification runs against the target's greedy output.
A drafter comparison runs every drafter at one γ, so their acceptance per draft position, α̂ and c
sit side by side (SpecDec's Principle I, the drafter's capability: drafts whose guesses cannot see each
other lose accuracy with the distance drafted).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

from specviz.decoder import checked_prompt, generate
from specviz.drafters import Drafter, build_drafter
from specviz.errors import SpecvizError
from specviz.limits import Limits, host_limits
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings
from specviz.sizing import Prepared, prepare
from specviz.study import Study


def run_study(target: LoadedModel, drafter: Drafter, prompt: str, kind: str, baseline: DecodeSettings,
              settings: DecodeSettings, variations: list[dict], chat: bool = True,
              repeats: int = 1) -> Iterator[Study]:
    """Run the target alone with `baseline`, then the drafter with `settings` changed by each
    variation (each prepared for its run, `sizing.prepare`: an auto size resolved, an adaptive run's
    sizing measured once); with `repeats` > 1, time every run again, interleaved round by round
    (baseline, each variation, baseline, …), so slow spells of the machine fall on all of them. Yield the
    study after each run, so a caller can show progress and keep what ran."""
    checked_prompt(target, prompt, settings, chat)   # refused before the runs' sizing, not after it
    runs = [(varied, drafter, prepare(target, drafter, replace(settings, **varied))) for varied in variations]
    yield from timed_study(target, prompt, kind, baseline, runs, chat, repeats)


def timed_study(target: LoadedModel, prompt: str, kind: str, baseline: DecodeSettings,
                runs: list[tuple[dict, Drafter, Prepared]], chat: bool = True, repeats: int = 1) -> Iterator[Study]:
    """The study of `runs` (what varied, the drafter and the prepared settings of each) against the target
    alone with `baseline`: each run once, then `repeats` - 1 more rounds of all of them, interleaved; cut
    short by the host's study time limit (`capped`)."""
    if repeats < 1:
        raise SpecvizError(f"repeats must be >= 1, got {repeats}")
    yield from capped(all_runs(target, prompt, kind, baseline, runs, chat, repeats), repeats * (1 + len(runs)),
                      host_limits())


def capped(studies: Iterator[Study], total: int, limits: Limits) -> Iterator[Study]:
    """The `total` studies `studies` yields, one per finished run, until the study has run for `limits`'
    study seconds: the last one yielded then says so (`Study.stopped_by`) and no further run starts (the
    generator runs its next run only when asked). The baseline and the first variant always run, so a stopped
    study still compares something."""
    started = time.monotonic()
    for done, study in enumerate(studies, start=1):
        why = limits.study_over(time.monotonic() - started) if 2 <= done < total else None
        yield replace(study, stopped_by=why) if why else study
        if why:
            return


def all_runs(target: LoadedModel, prompt: str, kind: str, baseline: DecodeSettings,
             runs: list[tuple[dict, Drafter, Prepared]], chat: bool, repeats: int) -> Iterator[Study]:
    """`timed_study`'s runs, the study so far after each."""
    study = Study(kind, generate(target, None, prompt, baseline, chat=chat))
    study = study.timed(-1, study.baseline.wall_time)
    yield study
    for varied, drafter, prepared in runs:
        trace = generate(target, drafter, prompt, prepared.settings, chat=chat, sizing=prepared.sizing)
        study = study.with_variant(varied, trace, [trace.wall_time])
        yield study
    for run, seconds in timed_rounds(target, prompt, baseline, [(d, p) for _, d, p in runs], repeats - 1, chat):
        study = study.timed(run, seconds)
        yield study


def timed_rounds(target: LoadedModel, prompt: str, baseline: DecodeSettings, runs: list[tuple[Drafter, Prepared]],
                 rounds: int, chat: bool = True) -> Iterator[tuple[int, float]]:
    """`rounds` more rounds of a study's runs, interleaved: the target alone, then each run (its drafter and
    prepared settings); yields (run, wall seconds) as each ends, run -1 being the baseline (`Study.timed`
    takes them)."""
    for _ in range(rounds):
        yield -1, generate(target, None, prompt, baseline, chat=chat).wall_time
        for i, (drafter, prepared) in enumerate(runs):
            yield i, generate(target, drafter, prompt, prepared.settings, chat=chat, sizing=prepared.sizing).wall_time


def comparison_rounds(target: LoadedModel, drafter: Drafter, prompt: str, settings: DecodeSettings, rounds: int,
                      chat: bool = True) -> Iterator[tuple[int, float]]:
    """The decoder process's work function for a comparison's (the race's) later rounds: the target alone and
    the speculative run with the same settings, interleaved (`timed_rounds`); no round starts past the host's
    study time limit, so the rounds hold the decoder no longer than a study may, and each is whole (a pair)."""
    limits, started = host_limits(), time.monotonic()
    for timed in timed_rounds(target, prompt, settings, [(drafter, prepare(target, drafter, settings))], rounds, chat):
        yield timed
        if timed[0] == 0 and limits.study_over(time.monotonic() - started):
            return


def gamma_sweep(target: LoadedModel, drafter: Drafter, prompt: str, settings: DecodeSettings,
                gammas: list[int], chat: bool = True, adaptive: bool = False, repeats: int = 1) -> Iterator[Study]:
    """The target alone, then one run per γ (chains: a tree's width is fixed by γ's meaning here); with
    `adaptive`, last an adaptive run of chains up to the largest γ, beside the fixed ones; every run timed
    `repeats` times, interleaved (`run_study`)."""
    chains = replace(settings, branches=1, nodes=0, auto_size=False, adaptive=False)
    variations: list[dict] = [{"gamma": int(g)} for g in gammas]
    if adaptive:
        variations.append({"gamma": int(max(gammas)), "adaptive": True})
    return run_study(target, drafter, prompt, "gamma sweep", chains, chains, variations, chat, repeats)


def drafter_comparison(target: LoadedModel, drafter: Drafter | None, prompt: str, settings: DecodeSettings,
                       kinds: list[str], chat: bool = True, repeats: int = 1) -> Iterator[Study]:
    """The target alone, then one chain per drafter kind, each built for `target` with its default
    weights (`drafter`, the caller's own, is not used: the kinds name them); every run timed `repeats`
    times, interleaved (`timed_study`)."""
    chains = replace(settings, branches=1, nodes=0, auto_size=False, adaptive=False)
    runs = [({"drafter": kind}, build_drafter(kind, target), Prepared(chains)) for kind in kinds]
    yield from timed_study(target, prompt, "drafters", chains, runs, chat, repeats)


def beta_tau_grid(target: LoadedModel, drafter: Drafter, prompt: str, settings: DecodeSettings,
                  betas: list[int], taus: list[float], chat: bool = True, repeats: int = 1) -> Iterator[Study]:
    """The target's greedy output (the reference), then Spec-Verification at every (β, τ) on chains of
    `settings.gamma` drafts, as SpecDec's Table 4 (no auto-sized tree, no adaptive length); every run timed
    `repeats` times, interleaved (`run_study`)."""
    return run_study(target, drafter, prompt, "grid", replace(settings, verify="greedy"),
                     replace(settings, verify="spec", branches=1, nodes=0, auto_size=False, adaptive=False),
                     [{"beta": int(b), "tau": float(t)} for b in betas for t in taus], chat, repeats)


def benchmark_points(report: object) -> list[dict]:
    """Speedup points {gamma, speedup, label} of the engine's recorded runs in a `python -m specviz
    bench` report (format "specviz-bench"): the median over all prompts, one label per drafter."""
    if not isinstance(report, dict) or report.get("format") != "specviz-bench":
        raise SpecvizError('not a benchmark report (expected "format": "specviz-bench", written by '
                           "python -m specviz bench)")
    try:
        return [{"gamma": int(row["gamma"]), "speedup": float(row["speedup"]["median"]),
                 "label": f"benchmark: {row['drafter']}" + (f" stop<{row['confidence']:g}"
                                                               if row.get("confidence") else "")}
                for row in report["rows"] if row["category"] == "all" and row["family"] == "engine"
                and row["record"] and row["gamma"] is not None and row["speedup"] is not None]
    except (KeyError, TypeError, ValueError) as error:
        raise SpecvizError(f"a malformed benchmark report: {error}") from error
