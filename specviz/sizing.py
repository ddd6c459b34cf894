"""Sizing a run before it starts: the one place where `auto` sizes are measured and resolved.

`tree_size` holds the arithmetic (expected tokens from the acceptance table, time from the
verify-cost curve); measuring the acceptance needs decodes of its own, so it lives here, above
the decoder, which never sizes anything. Every caller that may hold `auto_size` settings (the CLI,
the app's decoder process, the examples, the bench) passes them through `prepare` and hands the
decoder the resolved settings; the decoder runs whatever size it is given.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from specviz import tree_size, verify_cost
from specviz.contention import Contention, warning
from specviz.decoder import generate
from specviz.drafters.base import Drafter
from specviz.errors import SpecvizError
from specviz.limits import NO_LIMITS
from specviz.models import LoadedModel
from specviz.settings import DecodeSettings
from specviz.trace import Trace
from specviz.tree_size import Acceptance, Sizing

CALIBRATION = ("Explain why the sky is blue in two sentences.",
               "Write a short Python function that reverses a list.",
               "Give three tips for a good night's sleep.",
               "Correct the spelling in this sentence: Teh quick brwon fox jumpd over teh lazy dog.")


def acceptance_path(target: LoadedModel, drafter: Drafter) -> Path:
    """Where the drafter's acceptance beside this target (`calibrate`) is kept."""
    return verify_cost.cache_path(target, tree_size.acceptance_key(drafter.name, drafter.weights))


TREE = (3, 2, 4)   # depth, top-k and nodes of the trees a tree's drafter step is timed on: top-2, as most of the
                   # adaptive policy's trees on training-corpus prompts are


CALIBRATION_TOKENS = 48   # each calibration prompt's greedy answer (a tree's: half)


def calibrate(target: LoadedModel, drafter: Drafter) -> Acceptance:
    """The drafter's acceptance by depth and rank, from greedy chains of the deepest searched depth on
    four short prompts of its own (chat, code, a copy-edit), and, where a drafter model runs, its step in a tree
    (`TREE`, half as many tokens), and a parallel drafter's block; cached beside the verify-cost curve."""
    path = acceptance_path(target, drafter)
    if path.is_file():
        return Acceptance(**json.loads(path.read_text()))
    settings = DecodeSettings(gamma=max(tree_size.DEPTHS), temperature=0.0, max_new_tokens=CALIBRATION_TOKENS)
    generate(target, drafter, CALIBRATION[0], replace(settings, max_new_tokens=4), limits=NO_LIMITS)   # discarded:
    busy = Contention()   # the first calls' one-off costs (kernels, caches) are no part of a drafter step
    traces = [generate(target, drafter, prompt, settings, limits=NO_LIMITS) for prompt in CALIBRATION]
    acc, tree_step = tree_size.acceptance(traces), None
    if acc.draft_step:   # a drafter model: a tree's frontier goes through it in one batch, a dearer call
        gamma, branches, nodes = TREE
        tree = replace(settings, gamma=gamma, branches=branches, nodes=nodes, max_new_tokens=CALIBRATION_TOKENS // 2)
        tree_step = tree_size.drafter_step([generate(target, drafter, prompt, tree, limits=NO_LIMITS)
                                            for prompt in CALIBRATION])
    acc = replace(acc, others=busy.others(), situations=copy_acceptance(drafter, traces), tree_step=tree_step,
                  block=drafter.block)
    verify_cost.keep(path, acc)
    return acc


def copy_acceptance(drafter: Drafter, traces: list[Trace]) -> dict[str, list[list[float]]]:
    """Each chain situation's acceptance by depth (rank 0 only: a copy is one continuation), from every
    position of the calibration's greedy answers, not only where an iteration started: what the copy
    (`Drafter.copy`) drafts there against the target's next tokens, which the answer is. Started at the
    drafter's one table, the policy priced a copy after a 3-token match at 2.3 tokens an iteration where it
    got 4.3 (training-corpus prompts, greedy, 48 tokens): a run meets two to five copies, too few to learn
    from, so it drafted them short or not at all. The calibration's four short answers meet a match of 4 to 7
    tokens once to four times each, so one copy's luck would decide its table: the first depth's rates are
    made non-decreasing along `chain_situations`' order (weighted by tries, pooling adjacent violators), since a
    longer match's copy is kept at least as often (`ngram`'s docstring: 51% after 2 tokens, 94% after 8), and
    each deeper row is shrunk toward the one above (`tree_size.shrunk`)."""
    if not drafter.chain_situations:
        return {}
    ranks = max(tree_size.BRANCHES)
    hits, tries = copy_counts(drafter, [(trace.prompt_ids, trace.generated_ids) for trace in traces])
    seen = [s for s in drafter.chain_situations if tries[s][0]]
    first = verify_cost.monotone([hits[s][0] / tries[s][0] for s in seen], [tries[s][0] for s in seen])
    return {s: tree_size.shrunk([[h] + [0] * (ranks - 1) for h in hits[s]], tries[s], [held] + [0.0] * (ranks - 1))
            for s, held in zip(seen, first)}


def copy_counts(drafter: Drafter, answers: list[tuple[list[int], list[int]]]) -> tuple[dict[str, list[int]],
                                                                                      dict[str, list[int]]]:
    """Hits and tries of the drafter's copy at each depth, per chain situation, at every position of each
    (prompt ids, answer ids): a depth is tried where the depths before it were right, and hit where its token
    is the answer's."""
    depths = max(tree_size.DEPTHS)
    hits = {s: [0] * depths for s in drafter.chain_situations}
    tries = {s: [0] * depths for s in drafter.chain_situations}
    for prompt, answer in answers:
        drafter.begin(prompt)
        for i in range(1, len(answer)):
            situation = drafter.situation(answer[:i])
            if situation not in hits:
                continue
            for d, token in enumerate(drafter.copy(answer[:i], min(depths, len(answer) - i))):
                tries[situation][d] += 1
                if token != answer[i + d]:
                    break
                hits[situation][d] += 1
    return hits, tries


def size_for(target: LoadedModel, drafter: Drafter) -> Sizing:
    """Measure (once: `measuring`) and choose the tree size for this target, drafter and machine. A curve kept by
    an earlier process is checked against a one-token pass timed now (`verify_cost.stale`, once per process)."""
    for _ in measuring(target, drafter):
        pass
    sizing = tree_size.choose(calibrate(target, drafter), verify_cost.cached(target))
    return replace(sizing, now=verify_cost.one_token_now(target))


def forget(target: LoadedModel, drafter: Drafter) -> list[Path]:
    """Drop the pair's cached measurements (the target's verify-cost curve and the drafter's acceptance), so
    the next `size_for` measures them again; the paths dropped. Each is measured once and kept, so one taken
    while other work ran (a second decoder, a training run) would price every later run's drafts wrongly: a
    drafter step measured at 3.8 ms on a busy machine took 2.0 ms on an idle one."""
    paths = [verify_cost.cache_path(target, verify_cost.KEY), acceptance_path(target, drafter)]
    dropped = [path for path in paths if path.is_file()]
    for path in dropped:
        path.unlink()
    return dropped


def describe(sizing: Sizing) -> str:
    """The pair's measurements and the size chosen from them, as text: the verify-cost curve at both contexts,
    the drafter's step and the iteration's fixed work, the acceptance by depth and rank."""
    cost, acc, chosen = sizing.cost, sizing.acceptance, sizing.chosen
    lines = [f"verify cost, ms per pass over m new tokens ({cost.model}, {cost.device}, {cost.dtype}, "
             f"{cost.threads} thread(s)):", f"  {'m':>18}: " + " ".join(f"{m:>6}" for m in cost.sizes)]
    for curve in (cost, cost.longer):
        if curve is not None:
            label = f"over {curve.context} cached"
            lines.append(f"  {label:>18}: " + " ".join(f"{t * 1000:6.1f}" for t in curve.seconds))
    tree = "" if acc.tree_step is None else f" ({acc.tree_step * 1000:.2f} ms in a tree)"
    block = f", one step for a block of up to {acc.block} positions" if acc.block else ""
    lines += [f"drafter step {acc.draft_step * 1000:.2f} ms{tree}{block}, an iteration's fixed work "
              f"{acc.overhead * 1000:.2f} ms",
              "acceptance by depth (rows) and rank (columns), with the nodes behind each row:"]
    lines += [f"  {d + 1}: " + " ".join(f"{p:.2f}" for p in row) + f"   ({n})"
              for d, (row, n) in enumerate(zip(acc.rank, acc.samples))]
    for situation, rows in sorted(acc.situations.items()):
        lines.append(f"the copy alone, {situation}, by depth: " + " ".join(f"{row[0]:.2f}" for row in rows))
    shape = f"chain of {chosen.gamma}" if chosen.branches == 1 else \
        f"tree depth {chosen.gamma}, top-{chosen.branches}, {chosen.nodes} nodes"
    lines.append(f"fastest size: {shape}, E = {chosen.expected_tokens:.2f} tokens per iteration, "
                 f"{chosen.tokens_per_s:.1f} tokens/s predicted")
    for what, others in (("the verify-cost curve", cost.others), ("the drafter", acc.others)):
        if others is not None:
            lines.append(f"other processes kept {others:.2f} cores busy while {what} was measured")
    return "\n".join(lines + [f"warning: {w}" for w in warnings(sizing)])


def warnings(sizing: Sizing) -> list[str]:
    """What to distrust in the pair's measurements: each one timed while other processes kept the machine busy,
    and a kept curve that a pass timed now disagrees with."""
    found = [warning("the target's verify-cost curve", sizing.cost.others),
             warning("the drafter's step", sizing.acceptance.others),
             verify_cost.stale(sizing.cost, sizing.now)]
    return [w for w in found if w is not None]


def measuring(target: LoadedModel, drafter: Drafter) -> Iterator[str]:
    """A pair's first sizing, step by step: each step is said before it is measured (a minute or two on a CPU,
    once), so a page can show what it waits for; nothing is said where both are kept. `size_for` then reads
    them back. A target whose cache cannot verify the token trees a sizing times is refused first."""
    if target.is_encoder_decoder:
        raise SpecvizError(f"{target.name} is an encoder-decoder model: the auto size and the adaptive length "
                           "measure token trees, which need a decoder-only target; turn both off and draft a chain")
    if verify_cost.stored(verify_cost.Setup.of(target)) is None:
        yield (f"Timing the target's passes over 1 to {max(verify_cost.SIZES)} new tokens (once for this model, "
               "device, dtype and thread count)…")
        verify_cost.cached(target)
    if not acceptance_path(target, drafter).is_file():
        yield (f"Drafting greedy answers to {len(CALIBRATION)} short prompts for the drafter's acceptance by depth "
               "and rank (once for this pair)…")
        calibrate(target, drafter)


@dataclass(frozen=True)
class Prepared:
    """What a run is started with: `Run(target, drafter, prompt, p.settings, sizing=p.sizing)`."""

    settings: DecodeSettings
    sizing: Sizing | None = None   # measured for the pair when the settings need it; None otherwise


def sizes(drafter: Drafter | None, settings: DecodeSettings) -> bool:
    """Whether `prepare` sizes the pair for these settings (measured once, then read back)."""
    return drafter is not None and (settings.auto_size or settings.adaptive)


def prepare(target: LoadedModel, drafter: Drafter | None, settings: DecodeSettings) -> Prepared:
    """The settings resolved for a run, and the pair's sizing where they need it (`size_for`). With
    `auto_size` and a drafter: the size predicted fastest in place of γ, top-k and budget (`auto_size`
    stays set, so the trace says where they came from); adaptive as well: the sizer's whole range, for
    the policy to choose from. `adaptive` alone keeps the settings' limits and hands over the sizing, the
    policy's prior and costs. Anything else as it is."""
    if not sizes(drafter, settings):
        return Prepared(settings)
    sizing = size_for(target, drafter)
    if settings.auto_size and settings.adaptive:
        return Prepared(replace(settings, gamma=max(tree_size.DEPTHS), branches=max(tree_size.BRANCHES),
                                nodes=max(tree_size.BUDGETS)), sizing)
    return Prepared(tree_size.resolve(settings, sizing) if settings.auto_size else settings, sizing)
