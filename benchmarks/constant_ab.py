"""The default (adaptive trees, lookup+eagle) with a constant, a sizing field or a setting changed, against itself.

Timings taken in separate processes on this shared machine drift by more than most policy changes move them,
so each prompt runs the target alone, then the default as it is and once per variant, and again for each
repeat (the arms' order turned by one each repeat); each ratio is over the target alone's median on that
prompt. Prints one JSON line per prompt (speedups and tokens per iteration) and, per arm, the geometric mean,
the worst prompt and how many fell below 0.98×, end to end and after the prompt's prefill (the first
iteration, which every arm runs alike: over a 1 400-token prompt it is 60% of a 48-token run, and its time
alone moved by ±5% from run to run, more than most policy changes move the rest); then, against the default as
it is, the mean per-prompt log-ratio with its standard error; last, a markdown table of each arm's geometric mean
per prompt category, the best other arm's in bold, and the default over it (against fixed shapes: the best fixed
shape of each kind). At T > 0 the
arms sample their own texts once their drafts differ and a prompt's speedup moves by ±20% with the text: over 18
prompts that standard error was 1.4–2.3% (`packed-from-two.md`). Every run writes all `--tokens` tokens
(`default_pair`: no early end). Tune on training-split prompts only (`corpus:N` below), never on a public
benchmark's. Usage, from the repository root:

    PYTHONPATH=. python benchmarks/constant_ab.py PROMPTS TEMPERATURE specviz.adaptive.MARGIN=0.08 \\
        specviz.drafters.eagle.WINDOW=256 [--tokens 48] [--repeats 2] [--priced]

An arm `acceptance.FIELD=value` runs with that field of the pair's measured sizing replaced instead
(`tree_size.Acceptance`: `acceptance.tree_step=0.0034` prices a tree's drafter step as a chain's), and
`settings.FIELD=value` with that field of the run's settings (`settings.branches=1`: adaptive chains). An arm
that sets a module constant runs its own drafter, loaded with the constant in place, so a constant read at
load time counts too. Commas join assignments into one arm: `specviz.adaptive.MARGIN=0.05,settings.branches=1`
runs adaptive chains with another margin. An arm `drafter=KIND` runs another drafter kind, adaptive, with its
own sizing (`drafter=ngram`: prompt lookup alone), and is priced by that sizing. An arm whose module constants
build the default drafter anew (`specviz.drafters.ngram.MAX_NGRAM=3`) is calibrated on its own too, for its
acceptance tables, but drafts and is priced with the default's measured costs (`one_cost_model`): three
calibrations of one pair here timed its drafter step at 3.79, 4.15 and 4.86 ms, and an A/B that gave each arm
its own read +1.9% ± 1.0% where one cost model read +0.2% ± 0.5% (`longest-match.md`).

`--priced` reads no clock: each arm's run after the prefill is priced by the pair's cost model as it drafted
(`priced_speedup`; before 2026-11-29 17:20 UTC the shape each iteration chose was priced, which a draft cut short
by a confidence stop is not), the target alone's step as 1, so a greedy run, whose choices read no clock either,
gives the same number every time (the target alone is not run; one repeat is enough). On this shared machine the
target alone's step over a 1 400-token prompt measured 79, 96 and 104 ms in three runs a minute apart, and one
prompt's identical drafts 0.90×, 1.28× and 1.11× its speed: the clock cannot rank policies one prompt at a time.
The price is the sizing's own model: on 9 long prompts it was 3% above the clock's after-prefill speedup on the
geometric mean, 9% below to 16% above it per prompt (`priced-ab.md`). An arm that changes a cost
(`acceptance.draft_step=...`) is still priced by the measured one, so the price shows what the change does to the
choices, not to the costs. A fixed shape (`settings.adaptive=0,settings.gamma=2,settings.branches=1,
settings.nodes=0`: a chain of 2) is priced by the same model, which is the one the adaptive policy maximises:
against fixed shapes the price shows whether the policy's choices beat them by its own account, not by the
clock's. Timed rows carry every arm's price too.

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

from specviz import tree_size
from specviz.bench.prompts import BenchPrompt, load_prompts
from specviz.corpus.prompts import KINDS, build_prompts
from specviz.decoder import generate
from specviz.drafters import build_drafter
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings
from specviz.sizing import Prepared, prepare
from specviz.trace import Trace
from specviz.tree_size import DEPTHS, Sizing

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


def prompt_set(spec: str, target: LoadedModel, seed: int, per_category: int | None = None,
               min_tokens: int = 0) -> list[BenchPrompt]:
    """`spec`'s prompts: `corpus:N` builds N training-split prompts a kind (`corpus_prompts`, `seed`), anything
    else is a prompt set `bench` reads, `per_category` of each category."""
    if spec.startswith("corpus:"):
        return corpus_prompts(int(spec.split(":")[1]), seed, target, min_tokens)
    return load_prompts(spec, per_category=per_category)


def variant(assignment: str) -> tuple[object, str, float | str]:
    """`package.module.NAME=value` as (module, NAME, value); `acceptance.FIELD=value` and `settings.FIELD=value`
    as ("acceptance" or "settings", FIELD, value); `drafter=KIND` as ("drafter", "", KIND)."""
    target, value = assignment.split("=")
    if target == "drafter":
        return "drafter", "", value
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


COSTS = ("draft_step", "tree_step", "overhead", "others")   # the measured fields of a sizing's `Acceptance`


def one_cost_model(prepared: dict[str, Prepared], same_drafter: list[str]) -> dict[str, Prepared]:
    """Each sizing as measured, except that the arms in `same_drafter` (the default's drafter kind) take the "as is"
    arm's measured costs: their own calibrations may hold other tables, but one machine's drafter step is one
    number, and a second timing of it differs by noise alone."""
    costs = {field: getattr(prepared["as is"].sizing.acceptance, field) for field in COSTS}
    return {name: replace(p, sizing=replace(p.sizing, acceptance=replace(p.sizing.acceptance, **costs)))
            if name in same_drafter and p.sizing is not None else p for name, p in prepared.items()}


def rotated(items: list, turn: int) -> list:
    """`items` started `turn` places in, so that no arm always runs right after the target alone."""
    turn %= len(items)
    return items[turn:] + items[:turn]


def priced_speedup(trace: Trace, sizing: Sizing) -> float:
    """Tokens after the prefill over the run's priced time, in target-alone steps: each iteration priced as it
    drafted, at its context, by the pair's cost model (`tree_size.timed`'s terms: the iteration's fixed work,
    its drafter calls, a tree's at a tree's step, and a target pass over its drafted nodes and the bonus
    position), over a one-token pass at that context. What was drafted, not the shape chosen: a copy runs no
    drafter call, and a draft a confidence stop cut short, or a copy that ran out, is priced as the shorter one."""
    acc = sizing.acceptance
    context, steps = len(trace.prompt_ids) + len(trace.iterations[0].emitted_ids), 0.0
    for it in trace.iterations[1:]:
        branches = it.choice.branches if it.choice is not None else trace.settings.branches   # a fixed shape's
        cost, step = sizing.cost.at_context(context), tree_size.drafter_seconds(acc, branches)
        drafted = acc.overhead + it.draft_calls * step + cost.at(it.drafted + 1)
        steps += drafted / (acc.overhead + cost.at(1))
        context += len(it.emitted_ids)
    return (len(trace.generated_ids) - len(trace.iterations[0].emitted_ids)) / steps


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
    parser.add_argument("--priced", action="store_true", help="price runs by the cost model, read no clock (above)")
    parser.add_argument("--min-prompt-tokens", type=int, default=0, help="corpus:N's prompts at least this long")
    parser.add_argument("--per-category", type=int, help="a prompt set's first N prompts of each category")
    args = parser.parse_args()
    arms = {"as is": [], **{a: [variant(part) for part in a.split(",")] for a in args.assignments}}
    target, drafter = default_pair()
    drafters = {}
    for name, arm in arms.items():
        kind = next((value for where, _, value in arm if where == "drafter"), None)
        with constants(arm) as own:
            drafters[name] = build_drafter(kind or "lookup+eagle", target) if own or kind else drafter
    prompts = prompt_set(args.prompts, target, args.seed, args.per_category, args.min_prompt_tokens)
    if not prompts:
        parser.error(f"no training-split prompt of {args.min_prompt_tokens} tokens or more among the first "
                     f"{LONG_SEARCH} of any kind")
    base = DecodeSettings(temperature=args.temperature, max_new_tokens=args.tokens, record=False)
    adaptive = replace(base, adaptive=True, gamma=max(DEPTHS), auto_size=True)
    prepared = one_cost_model({name: prepare(target, drafters[name], adaptive) for name in arms},
                              [name for name, arm in arms.items() if all(where != "drafter" for where, _, _ in arm)])
    rows = []
    for prompt in prompts:
        seconds, after, prices, per_iteration = (defaultdict(list) for _ in range(4))
        for seed in range(args.repeats):
            if not args.priced:
                trace = generate(target, None, prompt.text, replace(base, seed=seed))
                seconds["alone"].append(trace.wall_time)
                after["alone"].append(after_prefill(trace))
            for name, arm in rotated(list(arms.items()), seed):
                sizing, settings = prepared[name].sizing, replace(prepared[name].settings, seed=seed)
                for where, field, value in arm:
                    if where == "acceptance":
                        sizing = replace(sizing, acceptance=replace(sizing.acceptance, **{field: value}))
                    elif where == "settings":
                        settings = replace(settings, **{field: value})
                with constants(arm):
                    trace = generate(target, drafters[name], prompt.text, settings, sizing=sizing)
                prices[name].append(priced_speedup(trace, prepared[name].sizing))
                seconds[name].append(trace.wall_time)
                after[name].append(after_prefill(trace))
                per_iteration[name].append(len(trace.generated_ids) / len(trace.iterations))
        row = {"id": prompt.id, "category": prompt.category,
               **{f"priced {arm}": round(statistics.median(v), 4) for arm, v in prices.items()}}
        if not args.priced:
            alone, decode = statistics.median(seconds["alone"]), statistics.median(after["alone"])
            row |= {**{arm: round(alone / statistics.median(seconds[arm]), 4) for arm in arms},
                    **{f"after prefill {arm}": round(decode / statistics.median(after[arm]), 4) for arm in arms}}
        row |= {f"tokens/iteration {arm}": round(statistics.mean(per_iteration[arm]), 3) for arm in arms}
        rows.append(row)
        print(json.dumps(row), flush=True)
    prefix = "priced " if args.priced else ""
    for arm in arms:
        ratios = [row[prefix + arm] for row in rows]
        line = (f"{prefix}{arm}: geomean {geomean(ratios):.3f}×, worst {min(ratios):.3f}×, "
                f"{sum(r < 0.98 for r in ratios)} of {len(ratios)} below 0.98×")
        if not args.priced:
            decode = [row[f"after prefill {arm}"] for row in rows]
            price = [row[f"priced {arm}"] for row in rows if f"priced {arm}" in row]
            line += f"; after the prefill: geomean {geomean(decode):.3f}×, worst {min(decode):.3f}×" + \
                (f"; priced: geomean {geomean(price):.3f}×, worst {min(price):.3f}×" if price else "")
        print(line)
        if arm != "as is" and len(rows) > 1:
            logs = [math.log(row[prefix + arm] / row[prefix + "as is"]) for row in rows]
            error = statistics.stdev(logs) / len(logs) ** 0.5
            print(f"  against as is: {100 * statistics.mean(logs):+.2f}% ± {100 * error:.2f}% (per-prompt log-ratio "
                  f"mean ± standard error), faster on {sum(x > 0 for x in logs)} of {len(logs)}")
    by_category(rows, prefix + "as is", [prefix + arm for arm in arms if arm != "as is"])


def by_category(rows: list[dict], default: str, others: list[str]) -> None:
    """A markdown table: each category's geometric mean of `default` and of each of `others` (the best of those in
    bold), and the default over the best of them there: the default against the fixed shapes, say, kind by kind."""
    print("| kind | " + " | ".join(c.removeprefix("priced ") for c in [default, *others])
          + (f" | {default.removeprefix('priced ')} / best other |" if others else " |"))
    print("|---" * (len(others) + 2 + bool(others)) + "|")
    categories = [*dict.fromkeys(row["category"] for row in rows), "all"]
    for category in categories:
        mine = [row for row in rows if category in ("all", row["category"])]
        means = {column: geomean([row[column] for row in mine]) for column in [default, *others]}
        best = max(others, key=means.get) if others else None
        cells = [f"**{means[c]:.3f}**" if c == best else f"{means[c]:.3f}" for c in [default, *others]]
        ratio = [f"{means[default] / means[best]:.3f}"] if best else []
        print(f"| {category} ({len(mine)}) | " + " | ".join(cells + ratio) + " |")


if __name__ == "__main__":
    main()
