"""The default (adaptive trees, lookup+eagle) with a constant, a sizing field or a setting changed, against itself.

Timings taken in separate processes on this shared machine drift by more than most policy changes move them,
so each prompt runs the target alone, then the default as it is and once per variant, and again for each
repeat (the arms' order turned by one each repeat); each ratio is over the target alone's median on that
prompt. Prints one JSON line per prompt (speedups and tokens per iteration) and, per arm, the geometric mean,
the worst prompt and how many fell below 0.98×, end to end and after the prompt's prefill (the first
iteration, which every arm runs alike: over a 1 400-token prompt it is 60% of a 48-token run, and its time
alone moved by ±5% from run to run, more than most policy changes move the rest); then, against the default as
it is, the mean per-prompt log-ratio with its standard error. At T > 0 the arms sample their own texts once
their drafts differ and a prompt's speedup moves by ±20% with the text: over 18 prompts that standard error
was 1.4–2.3% (`packed-from-two.md`). Every run writes all `--tokens` tokens (`default_pair`: no early end).
Tune on training-split prompts only (`corpus:N` below), never on a public benchmark's. Usage, from the repository root:

    PYTHONPATH=. python benchmarks/constant_ab.py PROMPTS TEMPERATURE specviz.adaptive.MARGIN=0.08 \\
        specviz.drafters.eagle.WINDOW=256 [--tokens 48] [--repeats 2]

An arm `acceptance.FIELD=value` runs with that field of the pair's measured sizing replaced instead
(`tree_size.Acceptance`: `acceptance.tree_step=0.0034` prices a tree's drafter step as a chain's), and
`settings.FIELD=value` with that field of the run's settings (`settings.branches=1`: adaptive chains). An arm
that sets a module constant runs its own drafter, loaded with the constant in place, so a constant read at
load time counts too. Commas join assignments into one arm: `specviz.adaptive.MARGIN=0.05,settings.branches=1`
runs adaptive chains with another margin.
`PROMPTS` is any prompt set `bench` reads; `corpus:N` builds N training-split prompts of each corpus kind
(`--seed`); with `--min-prompt-tokens M`, the first N of each kind's first 60 that are at least M tokens long
(the long-prompt set of `head-window.md`: `corpus:5 --min-prompt-tokens 500 --seed 5913`).
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import statistics
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from accepted_counts import default_pair

from specviz.bench.prompts import BenchPrompt, load_prompts
from specviz.corpus.prompts import KINDS, build_prompts
from specviz.decoder import generate
from specviz.drafters import build_drafter
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings
from specviz.sizing import prepare
from specviz.tree_size import DEPTHS

LONG_SEARCH = 60   # prompts built per kind to find `--min-prompt-tokens` ones among


def corpus_prompts(per_kind: int, seed: int, target: LoadedModel, min_tokens: int = 0) -> list[BenchPrompt]:
    """`per_kind` training-split prompts of every corpus kind (`build_prompts`), as a bench prompt set; with
    `min_tokens`, the first `per_kind` of each kind's first `LONG_SEARCH` (or `per_kind`, if more) that the
    target reads as that many tokens or more."""
    prompts = []
    for kind in KINDS:
        built = [BenchPrompt(f"{kind}-{i}", kind, [dict(m) for m in p.messages]) for i, p in
                 enumerate(build_prompts(kind, max(per_kind, LONG_SEARCH) if min_tokens else per_kind, "train", seed))]
        prompts += [p for p in built if not min_tokens or len(target.encode_prompt(p.text)) >= min_tokens][:per_kind]
    return prompts


def variant(assignment: str) -> tuple[object, str, float]:
    """`package.module.NAME=value` as (module, NAME, value); `acceptance.FIELD=value` and `settings.FIELD=value`
    as ("acceptance" or "settings", FIELD, value)."""
    target, value = assignment.split("=")
    module, name = target.rsplit(".", 1)
    return module if module in ("acceptance", "settings") else importlib.import_module(module), name, \
        float(value) if "." in value else int(value)


@contextmanager
def constants(arm: list[tuple[object, str, float]]) -> Iterator[bool]:
    """`arm`'s module constants set for the block, restored after it; yields whether it sets any."""
    modules = [(where, name, value) for where, name, value in arm if not isinstance(where, str)]
    saved = [(where, name, getattr(where, name)) for where, name, _ in modules]
    try:
        for where, name, value in modules:
            setattr(where, name, value)
        yield bool(modules)
    finally:
        for where, name, value in saved:
            setattr(where, name, value)


def after_prefill(trace) -> float:
    """Seconds of the run after its first iteration, the prompt's prefill."""
    return trace.wall_time - trace.iterations[0].elapsed


def rotated(items: list, turn: int) -> list:
    """`items` started `turn` places in, so that no arm always runs right after the target alone."""
    turn %= len(items)
    return items[turn:] + items[:turn]


def geomean(ratios: list[float]) -> float:
    return math.exp(statistics.mean(map(math.log, ratios)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prompts", help="a prompt set `bench` reads, or corpus:N (N training-split prompts a kind)")
    parser.add_argument("temperature", type=float)
    parser.add_argument("assignments", nargs="*", help="package.module.NAME=value, one arm each (commas join several)")
    parser.add_argument("--tokens", type=int, default=48, help="new tokens a run (default 48)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each arm a prompt (default 2)")
    parser.add_argument("--seed", type=int, default=5909, help="corpus:N's prompt seed (default 5909)")
    parser.add_argument("--min-prompt-tokens", type=int, default=0, help="corpus:N's prompts at least this long")
    args = parser.parse_args()
    arms = {"as is": [], **{a: [variant(part) for part in a.split(",")] for a in args.assignments}}
    target, drafter = default_pair()
    drafters = {}
    for name, arm in arms.items():
        with constants(arm) as own:
            drafters[name] = build_drafter("lookup+eagle", target) if own else drafter
    prompts = corpus_prompts(int(args.prompts.split(":")[1]), args.seed, target, args.min_prompt_tokens) \
        if args.prompts.startswith("corpus:") else load_prompts(args.prompts)
    if not prompts:
        parser.error(f"no training-split prompt of {args.min_prompt_tokens} tokens or more among the first "
                     f"{LONG_SEARCH} of any kind")
    base = DecodeSettings(temperature=args.temperature, max_new_tokens=args.tokens, record=False)
    prepared = prepare(target, drafter, replace(base, adaptive=True, gamma=max(DEPTHS), auto_size=True))
    rows = []
    for prompt in prompts:
        seconds, after, per_iteration = defaultdict(list), defaultdict(list), defaultdict(list)
        for seed in range(args.repeats):
            trace = generate(target, None, prompt.text, replace(base, seed=seed))
            seconds["alone"].append(trace.wall_time)
            after["alone"].append(after_prefill(trace))
            for name, arm in arms.items():
                sizing, settings = prepared.sizing, replace(prepared.settings, seed=seed)
                for where, field, value in arm:
                    if where == "acceptance":
                        sizing = replace(sizing, acceptance=replace(sizing.acceptance, **{field: value}))
                    elif where == "settings":
                        settings = replace(settings, **{field: value})
                with constants(arm):
                    trace = generate(target, drafters[name], prompt.text, settings, sizing=sizing)
                seconds[name].append(trace.wall_time)
                after[name].append(after_prefill(trace))
                per_iteration[name].append(len(trace.generated_ids) / len(trace.iterations))
        row = {"id": prompt.id,
               **{arm: round(statistics.median(seconds["alone"]) / statistics.median(seconds[arm]), 4) for arm in arms},
               **{f"after prefill {arm}": round(statistics.median(after["alone"]) / statistics.median(after[arm]), 4)
                  for arm in arms},
               **{f"tokens/iteration {arm}": round(statistics.mean(per_iteration[arm]), 3) for arm in arms}}
        rows.append(row)
        print(json.dumps(row), flush=True)
    for arm in arms:
        ratios, decode = [row[arm] for row in rows], [row[f"after prefill {arm}"] for row in rows]
        print(f"{arm}: geomean {geomean(ratios):.3f}×, worst {min(ratios):.3f}×, "
              f"{sum(r < 0.98 for r in ratios)} of {len(ratios)} below 0.98×; after the prefill: geomean "
              f"{geomean(decode):.3f}×, worst {min(decode):.3f}×")
        if arm != "as is" and len(rows) > 1:
            logs = [math.log(row[arm] / row["as is"]) for row in rows]
            error = statistics.stdev(logs) / len(logs) ** 0.5
            print(f"  against as is: {100 * statistics.mean(logs):+.2f}% ± {100 * error:.2f}% (per-prompt log-ratio "
                  f"mean ± standard error), faster on {sum(x > 0 for x in logs)} of {len(logs)}")


if __name__ == "__main__":
    main()
