"""A study: one comparison kept as an object, so every figure of it can be rebuilt from a file.

A study is a baseline trace and variant traces on the same prompt, each variant with the settings
that varied (γ, rule, β, τ, drafter, tree size…). The speedup is defined once, here: a variant's
tokens/s over the baseline's, the measured counterpart of Leviathan et al.'s expected walltime
improvement (Theorem 3.8). Kinds:
  "comparison"   one speculative run against the target alone (Generate, `generate --compare-baseline`)
  "gamma sweep"  one run per γ against the target alone (Leviathan et al., section 3 and figure 3)
  "grid"         Spec-Verification runs over β × τ against the target's greedy output (Xia et al., Table 4)
  "drafters"     one run per drafter at the same γ against the target alone (SpecDec's Principle I, capability)

Repeats: a study may time its runs more than once, interleaved (baseline, each variant, baseline, each
variant, …), so drift on the machine falls on all of them alike. The traces are the first round's; every
round's wall time is kept (`baseline_seconds`, `Variant.seconds`). A speedup is then the median of the
rounds' paired ratios (each variant's tokens/s over the baseline's of the same round), with their min and
max as its spread.

Schema (version 2): format "specviz-study", version, kind, baseline (a trace's JSON), baseline_seconds
[seconds per round], variants [{varied: {setting: value}, trace: a trace's JSON, seconds: [per round]}],
and stopped_by (why the study ended before all its runs, e.g. the host's study time limit; absent when
it did not). A version 1 file (no seconds) loads as one round. Read with the same size cap as a trace.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field, replace
from math import comb
from pathlib import Path

from specviz.bleu import bleu
from specviz.errors import SpecvizError
from specviz.files import write_whole
from specviz.settings import DecodeSettings
from specviz.trace import Trace, read_json, trace_from_dict

FORMAT = "specviz-study"
VERSION = 2
KINDS = ("comparison", "gamma sweep", "grid", "drafters")


SYMBOLS = {"gamma": "γ", "beta": "β", "tau": "τ"}   # settings named as the papers write them


def run_name(varied: dict[str, int | float | str]) -> str:
    """What a run varied, as a reader writes it: "γ = 4", "adaptive, γ ≤ 8" (an adaptive run's γ is its
    longest draft), "β = 2, τ = 1" (a number as short as it reads), or the drafter's own name."""
    if varied.get("adaptive"):
        rest = {k: v for k, v in varied.items() if k not in ("adaptive", "gamma")}
        return ", ".join(["adaptive" + (f", γ ≤ {varied['gamma']}" if "gamma" in varied else ""),
                          *([run_name(rest)] if rest else [])])
    return ", ".join(str(v) if k == "drafter" else f"{SYMBOLS.get(k, k)} = {v:g}" if isinstance(v, float) else
                     f"{SYMBOLS.get(k, k)} = {v}" for k, v in varied.items()) or "speculative"


@dataclass
class Variant:
    varied: dict[str, int | float | str]   # settings that differ from the baseline's run, e.g. {"gamma": 4}
    trace: Trace
    seconds: list[float] = field(default_factory=list)   # wall time of each round ([]: the trace's alone)


@dataclass
class Row:
    """One run's headline numbers, derived from its trace (the baseline's row has varied {})."""
    name: str                  # "baseline", or what varied (`run_name`): "γ = 4", "β = 2, τ = 1"
    varied: dict[str, int | float | str]
    tokens: int
    wall_time: float
    tokens_per_s: float
    accepted_length: float     # tokens per iteration
    alpha: float | None
    c: float | None
    speedup: float | None      # tokens/s over the baseline's (the rounds' median); None for the baseline itself
    match_rate: float          # share of positions where the output equals the baseline's
    device: str
    threads: int
    speedup_low: float | None = None    # the rounds' lowest and highest paired speedup (None: one round)
    speedup_high: float | None = None
    rounds: int = 1
    bleu: float | None = None  # BLEU-4 of the output against the baseline's (`specviz.bleu`)


def rates(trace: Trace, seconds: list[float]) -> list[float]:
    """Tokens/s of each round of a run (its trace's own when it kept no rounds; 0 over no time)."""
    tokens = len(trace.generated_ids)
    return [tokens / s if s else 0.0 for s in seconds or [trace.wall_time]]


@dataclass
class Study:
    kind: str
    baseline: Trace
    variants: list[Variant] = field(default_factory=list)
    baseline_seconds: list[float] = field(default_factory=list)   # wall time of each round ([]: the trace's)
    stopped_by: str | None = None   # why the study ended before all its runs (a host's limit); None: it did not

    def paired(self, trace: Trace) -> list[float]:
        """Each round's speedup of the run whose trace is `trace`: its tokens/s over the baseline's of the
        same round (Leviathan et al.'s walltime improvement, measured); one value without rounds."""
        seconds = next((v.seconds for v in self.variants if v.trace is trace), [])
        base = rates(self.baseline, self.baseline_seconds)
        mine = rates(trace, seconds)
        if len(base) != len(mine):   # rounds not kept alike: medians against medians
            base, mine = [statistics.median(base)], [statistics.median(mine)]
        return [m / b for m, b in zip(mine, base) if b]

    def speedup(self, trace: Trace) -> float | None:
        """Measured walltime speedup of `trace` over the baseline: the median of its rounds' paired speedups."""
        ratios = self.paired(trace)
        return statistics.median(ratios) if ratios else None

    def traces(self) -> list[Trace]:
        """The baseline's trace, then each variant's, in the order of `rows`."""
        return [self.baseline, *(v.trace for v in self.variants)]

    def rows(self) -> list[Row]:
        """The baseline's row, then one per variant, in the order they ran."""
        return [self._row("baseline", {}, self.baseline, None)] + [
            self._row(run_name(v.varied), v.varied,
                      v.trace, self.speedup(v.trace)) for v in self.variants]

    def measured_alpha_c(self) -> tuple[float | None, float]:
        """α̂ averaged over the variants, and their median c (0 for drafters with no forward pass); an adaptive
        run is left out: the analytic curves are of fixed drafts, and its α̂ mixes every length it chose."""
        rows = [r for r in self.rows()[1:] if not r.varied.get("adaptive")]
        alphas = [r.alpha for r in rows if r.alpha is not None]
        cs = [r.c for r in rows if r.c is not None]
        return (statistics.fmean(alphas) if alphas else None), (statistics.median(cs) if cs else 0.0)

    def fastest(self) -> Trace:
        """The variant's trace with the highest measured speedup (the first where none was measured)."""
        return max(self.variants, key=lambda v: self.speedup(v.trace) or 0.0).trace

    def with_variant(self, varied: dict, trace: Trace, seconds: list[float] | None = None) -> Study:
        return replace(self, variants=[*self.variants, Variant(dict(varied), trace, list(seconds or []))],
                       baseline_seconds=list(self.baseline_seconds))

    def timed(self, run: int, seconds: float) -> Study:
        """The study with one more round's wall time for the baseline (`run` -1) or the variant `run`."""
        if run < 0:
            return replace(self, variants=list(self.variants), baseline_seconds=[*self.baseline_seconds, seconds])
        variants = list(self.variants)
        variants[run] = Variant(variants[run].varied, variants[run].trace, [*variants[run].seconds, seconds])
        return replace(self, variants=variants, baseline_seconds=list(self.baseline_seconds))

    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "kind": self.kind, "baseline": self.baseline.to_dict(),
                "baseline_seconds": self.baseline_seconds,
                "variants": [{"varied": v.varied, "trace": v.trace.to_dict(), "seconds": v.seconds}
                             for v in self.variants],
                **({"stopped_by": self.stopped_by} if self.stopped_by else {})}

    def save(self, path: str | Path) -> None:
        write_whole(Path(path), lambda temporary: temporary.write_text(json.dumps(self.to_dict())))

    def _row(self, name: str, varied: dict, trace: Trace, speedup: float | None) -> Row:
        s = trace.summary()
        ratios = self.paired(trace) if speedup is not None else []
        spread = (min(ratios), max(ratios)) if len(ratios) > 1 else (None, None)
        rounds = len(ratios) if speedup is not None else len(self.baseline_seconds)
        return Row(name, dict(varied), s.tokens, s.wall_time, s.tokens_per_s, s.accepted_length, s.alpha, s.c, speedup,
                   token_match_rate(trace.generated_ids, self.baseline.generated_ids), trace.device, trace.threads,
                   *spread, rounds=max(rounds, 1), bleu=bleu(trace.generated_ids, self.baseline.generated_ids))


@dataclass
class Repeat:
    """One run of a study measured again: its new median speedup against the bar drawn for it before, and
    the rounds behind each."""

    name: str
    speedup: float
    low: float
    high: float
    rounds_before: int
    rounds_now: int

    @property
    def inside(self) -> bool:
        return self.low <= self.speedup <= self.high

    @property
    def chance(self) -> tuple[float, float]:
        return inside_chance(self.rounds_before, self.rounds_now)


def comparison(base: Trace, speculative: Trace, timed: bool = False) -> Study:
    """The target alone against one speculative run on the same settings and prompt; `timed`: each run's wall
    time is its first round, and `Study.timed` adds the later ones."""
    return Study("comparison", base, [Variant({}, speculative, [speculative.wall_time] if timed else [])],
                 [base.wall_time] if timed else [])


def repeats(before: Study, again: Study) -> list[Repeat]:
    """The runs `again` shares with `before` (by what varied) and timed in rounds both times: each one's
    median speedup now against its min–max bar then. The bars are worth drawing when the points land in
    them; a point outside says the machine changed more between the two than within one."""
    bars = {r.name: r for r in before.rows()[1:] if r.speedup_low is not None}
    return [Repeat(r.name, r.speedup, bars[r.name].speedup_low, bars[r.name].speedup_high, bars[r.name].rounds,
                   r.rounds) for r in again.rows()[1:] if r.name in bars and r.speedup is not None]


def same_setup(before: Study, again: Study) -> bool:
    """Whether `again` measured what `before` did: the same kind of study, prompt, target, drafters, settings,
    device, precision and threads. What the runs vary may differ (`repeats` compares the runs both have), and so
    may the baseline's value of it (a sweep's baseline carries the sidebar's γ, which none of its runs uses)."""
    varied = {key for study in (before, again) for v in study.variants for key in v.varied}
    unvaried = {key: getattr(DecodeSettings, key) for key in varied if key in DecodeSettings.__dataclass_fields__}

    def setup(study: Study) -> tuple:
        b = study.baseline
        return (study.kind, b.prompt, b.target, replace(b.settings, **unvaried), b.device, b.dtype, b.threads,
                sorted({v.trace.drafter for v in study.variants}))
    return setup(before) == setup(again)


def inside_chance(before: int, now: int) -> tuple[float, float]:
    """The probability that the median of `now` rounds falls within the min–max of `before` rounds when all
    of them are alike (independent draws of one continuous distribution: nothing changed between the two).
    Then each way of giving `before` of the `before + now` ranks to the earlier rounds is equally likely, and
    the probability is a count of those ways. For an odd `now` the median is its middle round, outside
    exactly when the first `low + 1` ranks are all the rerun's (its rounds up to the middle one) or the last
    `now - low` are: one number, whatever the distribution (3 and 3 rounds: 0.60; 7 and 7: 0.93). For an even
    one the median is the mean of the middle two, which the ranks alone do not place: inside at least when
    both middle rounds are, at most unless both fall on one side; the two bounds are returned, equal for an
    odd `now`."""
    total, low, high = before + now, (now - 1) // 2, now // 2
    ways = comb(total, before)
    below, above = comb(total - low - 1, before), comb(total - now + high, before)   # either middle one outside
    both_below, both_above = comb(total - high - 1, before), comb(total - now + low, before)
    return 1 - (below + above - (high > low)) / ways, 1 - (both_below + both_above) / ways


def repeats_note(found: list[Repeat]) -> str:
    """How many points landed in their bars, against how many chance puts there when nothing changed
    (`inside_chance`): min–max bars over a few rounds cover a rerun's median less often than they look as if
    they would. The points share each round's baseline, so they land in or out together more than independent
    points would: a count is read against its expectation, with no tail probability."""
    def span(low: float, high: float, digits: int) -> str:
        one, other = f"{low:.{digits}f}", f"{high:.{digits}f}"
        return one if one == other else f"{one} to {other}"

    rounds = sorted({(r.rounds_before, r.rounds_now) for r in found})
    timed = "; ".join(f"{span(*inside_chance(b, n), 2)} for {b} rounds before and {n} now" for b, n in rounds)
    expected = span(sum(r.chance[0] for r in found), sum(r.chance[1] for r in found), 1)
    even = any(n % 2 == 0 for _, n in rounds)
    return (f"{sum(r.inside for r in found)} of {len(found)} points fall within the bars drawn before. By chance "
            f"alone a rerun's median lands inside an earlier min–max bar with probability {timed}, even when nothing "
            f"changed between the two, so {expected} of {len(found)} are expected"
            + (" (the median of an even number of rounds is the mean of the middle two, which the rounds' order "
               "alone does not place)." if even else "."))


def token_match_rate(output: list[int], reference: list[int]) -> float:
    """Positions holding the same token, over the longer of the two outputs (SpecDec's agreement with
    the target's greedy output, token by token instead of BLEU)."""
    longest = max(len(output), len(reference))
    return sum(a == b for a, b in zip(output, reference)) / longest if longest else 1.0


def study_from_dict(data: object) -> Study:
    """Rebuild a Study from its JSON form; anything else raises SpecvizError."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SpecvizError(f'not a specviz study (missing "format": "{FORMAT}")')
    if data.get("version") not in range(1, VERSION + 1):
        raise SpecvizError(f"unsupported specviz study version {data.get('version')!r} (expected 1 to {VERSION})")
    if data.get("kind") not in KINDS:
        raise SpecvizError(f"unknown study kind {data.get('kind')!r}; expected one of {', '.join(KINDS)}")
    variants = data.get("variants")
    if not isinstance(variants, list):
        raise SpecvizError("not a valid specviz study: variants must be a list")
    if data["kind"] == "comparison" and len(variants) != 1:   # the race: the target alone against one run
        raise SpecvizError(f"not a valid specviz study: a comparison holds one run beside the baseline, this one "
                           f"{len(variants)}")
    baseline = trace_from_dict(data.get("baseline"))
    stopped_by = data.get("stopped_by")
    if stopped_by is not None and not isinstance(stopped_by, str):
        raise SpecvizError("not a valid specviz study: stopped_by must be text")
    study = Study(data["kind"], baseline, baseline_seconds=_seconds(data.get("baseline_seconds", []), "baseline"),
                  stopped_by=stopped_by)
    for i, variant in enumerate(variants):
        varied = variant.get("varied") if isinstance(variant, dict) else None
        if not isinstance(varied, dict) or not all(
                isinstance(k, str) and isinstance(v, int | float | str) for k, v in varied.items()):
            raise SpecvizError(f"not a valid specviz study: variant {i} needs a 'varied' mapping of settings")
        trace = trace_from_dict(variant.get("trace"))
        if trace.prompt != baseline.prompt:
            raise SpecvizError(f"not a valid specviz study: variant {i} ran on another prompt than the baseline")
        study = study.with_variant(varied, trace, _seconds(variant.get("seconds", []), f"variant {i}"))
    return study


def _seconds(value: object, what: str) -> list[float]:
    if not isinstance(value, list) or not all(isinstance(s, int | float) and s >= 0 for s in value):
        raise SpecvizError(f"not a valid specviz study: the {what}'s seconds must be a list of numbers >= 0")
    return [float(s) for s in value]


def load_study(path: str | Path) -> Study:
    return study_from_dict(read_json(Path(path), "specviz study"))


def record_from_dict(data: object) -> Trace | Study:
    """A trace or a study, told apart by their "format" field."""
    if isinstance(data, dict) and data.get("format") == FORMAT:
        return study_from_dict(data)
    if isinstance(data, dict) and data.get("format") == "specviz-trace":
        return trace_from_dict(data)
    raise SpecvizError('neither a specviz trace nor a study (no "format": "specviz-trace" or "specviz-study")')


def load_record(path: str | Path) -> Trace | Study:
    return record_from_dict(read_json(Path(path), "specviz trace or study"))
