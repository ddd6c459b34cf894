"""From run records to the results: per method and prompt category, medians over repeats with
their spread, paired ratios (speedup, recording overhead, engine vs transformers), the targets,
and the same numbers as JSON and as a Markdown table.

Ratios are paired: each repeat compares two methods on the same prompts, measured minutes apart
in the same process, and the median is taken over repeats. Runs whose greedy output differs
from the baseline's are failures: they are listed and left out of every number.

Speculation speeds up the tokens that follow the prompt's prefill, not the prefill itself, so the
end-to-end speedup is bounded by Amdahl's law: with a share f of the baseline's time spent before its
first token, no drafter gets past 1/f. `after_first` is the speedup of what follows each run's
first iteration (its tokens over its time), `first_share` the baseline's f.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from specviz.bench.measure import BASELINE, RunRecord
from specviz.bench.methods import MethodSpec

FORMAT = "specviz-bench"
VERSION = 1
ALL = "all"
OVERHEAD_GOAL = 0.05
HF_GOAL = 1.0
APP_GOAL = 0.10   # the app's code path within 10% of the library's: tokens/s, verify and draft per iteration
COPY_SPEEDUP_GOAL = 1.5
Timing = Literal["wall", "cpu", "after_first"]   # which seconds a rate divides by (`_rate`)


@dataclass
class Spread:
    median: float
    low: float     # smallest over repeats
    high: float    # largest over repeats


@dataclass
class Row:
    method: str
    family: str
    drafter: str
    gamma: int | None
    record: bool | None
    category: str
    runs: int
    tokens_per_s: Spread | None
    speedup: Spread | None            # tokens/s over the engine baseline's on the same prompts
    alpha: float | None               # α̂: accepted / evaluated draft positions (engine only)
    accepted_length: float | None     # tokens per iteration (engine only)
    c: float | None                   # median measured drafter step / verify pass (engine only)
    overhead: Spread | None           # recording on vs off: time on / time off - 1
    vs_hf: Spread | None              # engine tokens/s over transformers' on the same drafter
    hf_method: str | None
    cpu_speedup: Spread | None        # the same three ratios from process CPU time instead of wall clock
    cpu_overhead: Spread | None
    cpu_vs_hf: Spread | None
    memory_mb: float | None
    failures: int
    engine_method: str | None = None  # app rows: the library's run of the same drafter and γ
    vs_engine: Spread | None = None   # app tokens/s over the library's
    verify_vs_engine: Spread | None = None   # app verify time per iteration over the library's
    draft_vs_engine: Spread | None = None    # the same for draft time
    confidence: float = 0.0           # the draft's confidence stop (0: off)
    after_first: Spread | None = None  # speedup after each run's first iteration (engine and app)
    first_share: float | None = None   # median share of a run's time before its first tokens (prefill included)


@dataclass
class Target:
    name: str
    value: float | None        # from wall-clock time: what the goal is judged on
    cpu_value: float | None    # the same from CPU time
    goal: str
    met: bool | None


@dataclass
class BenchResult:
    machine: dict
    settings: dict
    command: str
    date: str
    methods: list[MethodSpec]
    rows: list[Row]
    targets: list[Target]
    runs: list[RunRecord]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, **asdict(self)}

    def save(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(self.to_dict(), indent=1, ensure_ascii=False) + "\n")


def summarize(specs: list[MethodSpec], runs: list[RunRecord]) -> tuple[list[Row], list[Target]]:
    categories = sorted({r.category for r in runs})
    rows = [_row(spec, specs, runs, group) for group in [ALL, *categories] for spec in specs]
    return rows, _targets(rows)


def _row(spec: MethodSpec, specs: list[MethodSpec], runs: list[RunRecord], group: str) -> Row:
    mine = [r for r in runs if r.method == spec.name and group in (ALL, r.category)]
    good = [r for r in mine if r.matches is not False]
    evaluated = sum(r.evaluated or 0 for r in good)
    iterations = sum(r.iterations or 0 for r in good)
    cs = [r.c for r in good if r.c is not None]
    twin = _twin(spec, specs)
    hf = _hf_counterpart(spec, specs)
    engine = _engine_counterpart(spec, specs)
    return Row(
        spec.name, spec.family, spec.drafter, spec.gamma, spec.record, group, len(good),
        tokens_per_s=spread([rate for rs in _by_repeat(good).values() if (rate := _rate(rs)) is not None]),
        speedup=_paired(runs, spec.name, BASELINE, group) if spec.name != BASELINE else None,
        alpha=sum(r.accepted or 0 for r in good) / evaluated if evaluated else None,
        accepted_length=sum(r.tokens for r in good) / iterations if iterations else None,
        c=statistics.median(cs) if cs else None,
        overhead=_overhead(runs, spec.name, twin.name, group) if twin else None,
        vs_hf=_paired(runs, spec.name, hf.name, group) if hf else None,
        hf_method=hf.name if hf else None,
        cpu_speedup=_paired(runs, spec.name, BASELINE, group, "cpu") if spec.name != BASELINE else None,
        cpu_overhead=_overhead(runs, spec.name, twin.name, group, "cpu") if twin else None,
        cpu_vs_hf=_paired(runs, spec.name, hf.name, group, "cpu") if hf else None,
        memory_mb=max((r.memory_mb for r in good), default=None),
        failures=len(mine) - len(good),
        engine_method=engine.name if engine else None,
        vs_engine=_paired(runs, spec.name, engine.name, group) if engine else None,
        verify_vs_engine=_per_iteration(runs, spec.name, engine.name, group, "verify_seconds") if engine else None,
        draft_vs_engine=_per_iteration(runs, spec.name, engine.name, group, "draft_seconds") if engine else None,
        confidence=spec.confidence,
        after_first=_paired(runs, spec.name, BASELINE, group, "after_first") if spec.name != BASELINE else None,
        first_share=_first_share(good))


def _twin(spec: MethodSpec, specs: list[MethodSpec]) -> MethodSpec | None:
    """The same engine drafter and γ with recording off, for a recording-on method."""
    if spec.family != "engine" or spec.record is not True or spec.drafter == "none":
        return None
    return next((s for s in specs if s.family == "engine" and s.drafter == spec.drafter
                 and s.gamma == spec.gamma and s.confidence == spec.confidence and s.tree == spec.tree
                 and s.record is False), None)


def _hf_counterpart(spec: MethodSpec, specs: list[MethodSpec]) -> MethodSpec | None:
    """transformers' method for the same drafter and γ (its plain generate for the baseline)."""
    if spec.family != "engine" or spec.confidence or spec.tree:
        return None
    return next((s for s in specs if s.family == "hf" and s.drafter == spec.drafter and s.gamma == spec.gamma), None)


def _engine_counterpart(spec: MethodSpec, specs: list[MethodSpec]) -> MethodSpec | None:
    """The library's run (recording on) of an app row's drafter and γ."""
    if spec.family != "app":
        return None
    return next((s for s in specs if s.family == "engine" and s.drafter == spec.drafter and s.gamma == spec.gamma
                 and s.confidence == spec.confidence and not s.tree and s.record), None)


def _by_repeat(runs: list[RunRecord]) -> dict[int, list[RunRecord]]:
    out: dict[int, list[RunRecord]] = {}
    for r in runs:
        out.setdefault(r.repeat, []).append(r)
    return out


def _rate(runs: list[RunRecord], timing: Timing = "wall") -> float | None:
    """Tokens per second of wall-clock time, of CPU time, or of the wall-clock time after each run's first
    iteration ("after_first"); None (unknown) where no time was measured."""
    if timing == "after_first":
        if any(r.first_seconds is None for r in runs):
            return None
        seconds = sum(r.seconds - r.first_seconds for r in runs)
        return sum(r.tokens - r.first_tokens for r in runs) / seconds if seconds > 0 else None
    seconds = sum(r.cpu_seconds if timing == "cpu" else r.seconds for r in runs)
    return sum(r.tokens for r in runs) / seconds if seconds > 0 else None


def _first_share(runs: list[RunRecord]) -> float | None:
    """Median over repeats of the share of the runs' time before their first tokens."""
    shares = [sum(r.first_seconds for r in rs) / sum(r.seconds for r in rs) for rs in _by_repeat(runs).values()
              if all(r.first_seconds is not None for r in rs) and sum(r.seconds for r in rs) > 0]
    return statistics.median(shares) if shares else None


def _ratios(pairs: list[tuple[list[RunRecord], list[RunRecord]]], timing: Timing) -> list[tuple[float, float]]:
    """The (rate of a, rate of b) of each pair of run lists where both rates are known."""
    rates = [(_rate(x, timing), _rate(y, timing)) for x, y in pairs]
    return [(a, b) for a, b in rates if a is not None and b is not None]


def _pairs(runs: list[RunRecord], a: str, b: str, group: str) -> list[tuple[list[RunRecord], list[RunRecord]]]:
    """Per repeat, the runs of a and of b on the prompts where both passed the equality check."""
    def good(name: str) -> dict[tuple[int, str], RunRecord]:
        return {(r.repeat, r.prompt): r for r in runs
                if r.method == name and group in (ALL, r.category) and r.matches is not False}
    left, right = good(a), good(b)
    shared = sorted(left.keys() & right.keys())
    repeats = sorted({k[0] for k in shared})
    return [([left[k] for k in shared if k[0] == rep], [right[k] for k in shared if k[0] == rep]) for rep in repeats]


def _paired(runs: list[RunRecord], a: str, b: str, group: str, timing: Timing = "wall") -> Spread | None:
    """Median over repeats of tokens/s of a over tokens/s of b."""
    return spread([x / y for x, y in _ratios(_pairs(runs, a, b, group), timing)])


def _per_iteration(runs: list[RunRecord], a: str, b: str, group: str, phase: str) -> Spread | None:
    """Median over repeats of a's mean `phase` time per iteration over b's."""
    def mean(rs: list[RunRecord]) -> float:
        return sum(getattr(r, phase) or 0.0 for r in rs) / max(1, sum(r.iterations or 0 for r in rs))
    ratios = [mean(x) / mean(y) for x, y in _pairs(runs, a, b, group) if mean(y) > 0]
    return spread(ratios)


def _overhead(runs: list[RunRecord], on: str, off: str, group: str, timing: Timing = "wall") -> Spread | None:
    """Median over repeats of (time with recording) / (time without) - 1, tokens being equal."""
    return spread([y / x - 1 for x, y in _ratios(_pairs(runs, on, off, group), timing)])


def spread(values: list[float]) -> Spread | None:
    """Median, smallest and largest of repeated measurements (None where there are none)."""
    return Spread(statistics.median(values), min(values), max(values)) if values else None


def _targets(rows: list[Row]) -> list[Target]:
    targets = []
    for row in rows:
        if row.category == ALL and row.overhead is not None:
            value = row.overhead.median
            targets.append(Target(f"recording overhead, {row.method} (all prompts)", value,
                                  _median(row.cpu_overhead), f"≤ {OVERHEAD_GOAL:.0%}", value <= OVERHEAD_GOAL))
        if row.category == ALL and row.vs_hf is not None and row.drafter != "none" and row.record:
            value = row.vs_hf.median
            targets.append(Target(f"{row.method} vs {row.hf_method} (all prompts)", value,
                                  _median(row.cpu_vs_hf), f"≥ {HF_GOAL:.1f}", value >= HF_GOAL))
        if row.category == ALL and row.vs_engine is not None:
            for what, spread, low_is_good in (("tokens/s", row.vs_engine, False),
                                               ("verify time per iteration", row.verify_vs_engine, True),
                                               ("draft time per iteration", row.draft_vs_engine, True)):
                if spread is None:
                    continue
                met = spread.median <= 1 + APP_GOAL if low_is_good else spread.median >= 1 - APP_GOAL
                goal = f"≤ {1 + APP_GOAL:.2f}" if low_is_good else f"≥ {1 - APP_GOAL:.2f}"
                targets.append(Target(f"{row.method} vs {row.engine_method}, {what} (all prompts)", spread.median,
                                      None, goal, met))
        if row.category == "copy" and row.drafter == "ngram" and row.record and row.speedup is not None:
            value = row.speedup.median
            targets.append(Target(f"{row.method} speedup on copy-heavy prompts", value,
                                  _median(row.cpu_speedup), f"≥ {COPY_SPEEDUP_GOAL}", value >= COPY_SPEEDUP_GOAL))
    return targets


def _median(spread: Spread | None) -> float | None:
    return spread.median if spread else None
