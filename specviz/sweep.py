"""A live γ sweep: the target alone once, then one speculative run per γ, yielded as it finishes.

Each point carries what the analytic curves need (Leviathan et al., section 3): the measured
acceptance rate α̂, the cost coefficient c, tokens per iteration (to compare with eq. 1) and the
measured walltime speedup over the target alone (to compare with theorem 3.8).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from specviz.decoder import generate
from specviz.drafters.base import Drafter
from specviz.errors import SpecvizError
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings
from specviz.trace import Trace


@dataclass
class SweepPoint:
    gamma: int                 # 0 = the target alone (the baseline)
    tokens: int
    wall_time: float
    tokens_per_s: float
    accepted_length: float     # tokens per iteration
    alpha: float | None
    c: float | None
    speedup: float | None      # tokens/s over the baseline's; None for the baseline itself
    device: str = "cpu"        # where it ran, with how many torch CPU threads
    threads: int = 0


def point(gamma: int, trace: Trace, baseline_tokens_per_s: float | None) -> SweepPoint:
    s = trace.summary()
    speedup = s.tokens_per_s / baseline_tokens_per_s if baseline_tokens_per_s else None
    return SweepPoint(gamma, s.tokens, s.wall_time, s.tokens_per_s, s.accepted_length, s.alpha, s.c, speedup,
                      trace.device, trace.threads)


def sweep_gamma(target: LoadedModel, drafter: Drafter, prompt: str, settings: DecodeSettings,
                gammas: Iterable[int]) -> Iterator[SweepPoint]:
    """Yield the baseline point (γ = 0), then one point per γ, each as soon as its run ends."""
    base = point(0, generate(target, None, prompt, settings), None)
    yield base
    for gamma in gammas:
        yield point(gamma, generate(target, drafter, prompt, replace(settings, gamma=gamma)), base.tokens_per_s)


def measured_alpha_c(points: list[SweepPoint]) -> tuple[float | None, float]:
    """α̂ averaged over the speculative runs, and the median c (0 for a drafter with no forward pass)."""
    alphas = [p.alpha for p in points if p.gamma and p.alpha is not None]
    cs = [p.c for p in points if p.gamma and p.c is not None]
    return (statistics.fmean(alphas) if alphas else None), (statistics.median(cs) if cs else 0.0)


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
