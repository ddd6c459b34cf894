"""Size the token tree for the hardware: the depth, top-k and node budget that maximise tokens/s.

Acceptance (greedy): P[d][r] is the probability that, at depth d of a draft whose path so far was
accepted, the target's next token is the drafter's rank-r guess; it is measured on the drafter's
own chain runs (each tested node's q_top against the target's argmax). A node reached by ranks
r₁..r_d is on the accepted path with probability Π P[i][rᵢ], so a tree of N nodes yields in
expectation E = 1 + Σ over its nodes of that product (the 1 is the correction or bonus token),
and since a child's product never exceeds its parent's, the best N-node tree holds the N largest
products (Sequoia, Chen et al. 2024, builds its trees on the same positional acceptance).
Cost: the iteration's fixed work (sampling and verification, a model-free drafter's lookup), one drafter step per
depth (a tree drafter runs each depth's frontier in one batch, a step timed on its own, `Acceptance.tree_step`:
on one thread lookup+eagle's calls took 3.45 ms in chains and 5.02 ms in top-2 trees, `python -m specviz sizing
--threads 1`, so priced as a chain's, a tree's drafting looked a third cheaper than it was), or one step for the
whole draft where one drafter pass drafts every depth (a parallel drafter's block, `Acceptance.block`, which also
bounds the depths searched), and one target pass over N + 1 tokens from the verify-cost curve: E / seconds is the
expected tokens per second, the measured counterpart of Leviathan et al.'s (1 − α^(γ+1)) / ((1 − α)(γc + 1))
(theorem 3.8).
`choose` returns the size `preferred` picks among depths ≤ 8, top-k ≤ 4 and budgets ≤ 64: the fastest chain,
or the fastest tree where it is predicted faster still, each of the two the one with the most tokens per
iteration among those within `TIE` of the fastest of its kind; the fastest chain (`best_chain`, read from
the cache, never measured there) is the default γ.

Two things once made the choice a single node that measured slower (`auto=1x1x1` in the 2026-11-23
bench). A depth reached by few calibration nodes used to repeat the row above it: prompt lookup on
the calibration prompts accepted 0.19 at depth 1 (53 nodes) but 4 of 10 at depth 2 and 4 of 4 at
depth 3 (a copy, once right, stays right), and the borrowed 0.19 made every deeper node look
worthless. Now each deeper row is the measured one shrunk toward the row above by `PRIOR_NODES`
pseudo-nodes, so thin evidence moves it part of the way. And the candidates' predictions sit within
a few percent of each other (lookup+eagle: one node 1% ahead of two), closer than the prediction's
own error (tens of nodes per depth, median pass times), so the first-listed smallest draft won by
a hair; among such near ties the size with more tokens per iteration wins, since every iteration
pays costs the model leaves out (the Python loop, the cache's crop, the drafter's setup).

That tie-break is kept within each kind and never across the two: between a chain and a tree, the tree
nearly always has more tokens per iteration, so it won every near tie. In the adaptive policy, which searches
with `preferred` before each iteration, a tree within 2% of the fastest chain winning ran 2.4% ± 0.8% slower
on a 2-core AVX2 CPU (greedy, 18 training-corpus prompts, `benchmarks/chain-ties.md`), while asking a tree
to lead by 5-20% measured no faster; and there the trees' realised tokens per iteration fell short of what
the chains would have realised in the same states. The static sizer, with the same costs, chose a top-3 tree
of depth 2 and 5 nodes by 0.7% over a 2-token chain; the chain ran 5.8% ± 1.9% faster in one bench run (13
categories, greedy; 8.2% ± 4.3% at T = 0.7, `benchmarks/chain-ties.md`).
On a 2-core Xeon with AMX the adaptive policy's near ties went the other way (`specviz.adaptive`'s docstring says
by how much), so `search` takes the lead a tree needs (`adaptive.TREE_LEAD`), and `choose` keeps a lead of 0: the
static sizer was not measured again.

This module is the arithmetic only and never runs the decoder: `specviz.sizing` measures (it runs
calibration decodes) and resolves a run's sizes before the run starts.
"""

from __future__ import annotations

import heapq
import json
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from specviz import theory
from specviz.device import pick_device, pick_dtype
from specviz.models import EMBEDDED_NAME
from specviz.settings import DecodeSettings
from specviz.trace import Trace
from specviz.verify_cost import Setup, VerifyCost, stored

if TYPE_CHECKING:
    from specviz.drafters.base import Drafter
    from specviz.models import LoadedModel

DEPTHS = range(1, 9)
BRANCHES = range(1, 5)
BUDGETS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64)
PRIOR_NODES = 20   # pseudo-nodes of the row above behind each deeper depth's row
TIE = 0.02         # predicted rates this close to the fastest are a tie, broken by tokens per iteration


def acceptance_key(drafter: str, weights: str = "") -> str:
    """What the acceptance of the drafter named `drafter`, loaded from the weights of digest `weights`
    (`Drafter.weights`), is kept as (`Setup.path`), beside the cost curve (v10: after a one-token match the
    mixed drafter's greedy tree puts the head's guesses first; v9: prompt lookup's matches up to 8
    tokens, the chain situations' first rows made non-decreasing in their order; v8: a parallel drafter's block,
    `Acceptance.block`; v7: a tree's drafter step timed on
    its own, `Acceptance.tree_step`; v6: the tiny LM and the
    Spec-Drafter draft in bfloat16 too, `layers.draft_dtype`, so their steps cost less; v5: each chain
    situation's copy measured on its own, `Acceptance.situations`; v4: the EAGLE head drafts in bfloat16 on a
    CPU that computes it in hardware, so its step costs less; v3: a chain of prompt lookup + EAGLE copies only
    after a match of two tokens or more; v2: rows shrunk toward the row above, and the per-iteration overhead)."""
    return f"acceptance-v10-{drafter}" + (f"-{weights}" if weights else "")


@dataclass
class Acceptance:
    rank: list[list[float]]   # [depth - 1][r]: P(the target's token is the drafter's rank-r guess)
    draft_step: float         # seconds of one drafter step
    samples: list[int]        # tested nodes behind each depth's row
    overhead: float = 0.0     # seconds of an iteration's fixed work: sampling, verifying, a model-free draft
    others: float | None = None   # cores other processes kept busy while it was timed (`contention`)
    situations: dict[str, list[list[float]]] = field(default_factory=dict)   # a chain situation's own `rank`
    tree_step: float | None = None   # seconds of one drafter step of a tree (its frontier batched); None: a chain's
    block: int = 0   # positions one drafter step drafts, every depth at once (`Drafter.block`); 0: one depth a step


@dataclass
class TreeSize:
    gamma: int
    branches: int
    nodes: int
    expected_tokens: float    # E: tokens per iteration
    tokens_per_s: float       # predicted


def acceptance(traces: list[Trace], depths: int = max(DEPTHS), ranks: int = max(BRANCHES)) -> Acceptance:
    """P[d][r] from every tested node of the traces (q_top and p_top recorded). The first depth's row
    is its own; each deeper row is (hits + PRIOR_NODES · row above) / (tested + PRIOR_NODES), the
    measured row shrunk toward the one above by how little was measured. The drafter step is `drafter_step`'s
    (a chain's: the traces are chains, `sizing.calibrate`); the overhead is the sampling time
    and the drafting time of iterations without a drafter call, per iteration."""
    counts = [[0] * ranks for _ in range(depths)]
    samples = [0] * depths
    fixed = 0.0
    iterations = 0
    for trace in traces:
        for it in trace.iterations:
            iterations += 1
            fixed += it.sample_time + (0.0 if it.draft_calls else it.draft_time)
            for node in it.drafts:
                if node.verdict == "unverified" or node.q_top is None or node.p_top is None \
                        or node.position > depths:
                    continue
                d, target = node.position - 1, node.p_top.ids[0]
                samples[d] += 1
                if target in node.q_top.ids[:ranks]:
                    counts[d][node.q_top.ids.index(target)] += 1
    return Acceptance(shrunk(counts, samples), drafter_step(traces), samples, fixed / iterations if iterations else 0.0)


def drafter_step(traces: list[Trace]) -> float:
    """Seconds of one drafter step: the drafting time of the iterations that ran the drafter over their drafter
    calls (0.0 where none did: a model-free drafter)."""
    its = [it for trace in traces for it in trace.iterations if it.draft_calls]
    calls = sum(it.draft_calls for it in its)
    return sum(it.draft_time for it in its) / calls if calls else 0.0


def shrunk(counts: list[list[int]], samples: list[int], first: list[float] | None = None) -> list[list[float]]:
    """Rows of hits over tries by depth: the first depth's its own (or `first`, where it was estimated with
    more than these counts), each deeper one (hits + PRIOR_NODES · row above) / (tries + PRIOR_NODES)."""
    rows = [first or [c / samples[0] if samples[0] else 0.0 for c in counts[0]]]
    for d in range(1, len(counts)):
        rows.append([(c + PRIOR_NODES * above) / (samples[d] + PRIOR_NODES) for c, above in zip(counts[d], rows[-1])])
    return rows


def expected_by_budget(acc: Acceptance, gamma: int, branches: int, most: int) -> list[float]:
    """E for the best tree of at most n nodes, depth ≤ gamma, ≤ branches children per node, for n = 0..most:
    the running sum of the largest path products, taken greedily from a heap."""
    totals, heap = [1.0], [(-acc.rank[0][r], 1, r) for r in range(branches)]
    heapq.heapify(heap)
    while heap and len(totals) <= most:
        value, depth, _ = heapq.heappop(heap)
        totals.append(totals[-1] - value)
        if depth < gamma:
            for r in range(branches):
                heapq.heappush(heap, (value * acc.rank[depth][r], depth + 1, r))
    return totals + [totals[-1]] * (most + 1 - len(totals))


def expected_tokens(acc: Acceptance, gamma: int, branches: int, nodes: int) -> float:
    """E for the best tree of at most `nodes` nodes, depth ≤ gamma, ≤ branches children per node."""
    return expected_by_budget(acc, gamma, branches, nodes)[nodes]


def timed(acc: Acceptance, verify: float, gamma: int, branches: int, nodes: int, e: float) -> TreeSize:
    """The size with E tokens per iteration and its predicted rate: E over the iteration's seconds, `verify`
    those of the target's pass over the nodes and the bonus position; a drafter step per depth, or one for the
    whole draft where the drafter drafts its block in one pass (`theory.drafter_steps`: none for no draft)."""
    seconds = acc.overhead + theory.drafter_steps(gamma, acc.block) * drafter_seconds(acc, branches) + verify
    return TreeSize(gamma, branches, nodes, e, e / seconds)


def drafter_seconds(acc: Acceptance, branches: int) -> float:
    """Seconds of one drafter step in a chain (`branches` 1) or in a tree, where one was timed (`tree_step`)."""
    return acc.tree_step if branches > 1 and acc.tree_step is not None else acc.draft_step


def predict(acc: Acceptance, cost: VerifyCost, gamma: int, branches: int, nodes: int) -> TreeSize:
    nodes = gamma if branches == 1 else nodes
    return timed(acc, cost.at(nodes + 1), gamma, branches, nodes, expected_tokens(acc, gamma, branches, nodes))


def candidates(acc: Acceptance, cost: VerifyCost, depth: int = max(DEPTHS), branches: int = max(BRANCHES),
               nodes: int = max(BUDGETS)) -> list[TreeSize]:
    """Every size searched, up to the given depth, top-k and budget: chains of each depth, and trees of each
    depth, top-k and budget (`trees`)."""
    depths = reach(acc, depth)
    return chain_sizes(acc, cost, depths) + trees(acc, cost, depths, branches, nodes)


def reach(acc: Acceptance, depth: int = max(DEPTHS)) -> list[int]:
    """The depths searched, up to `depth`: a parallel drafter's no deeper than its block, which is all it drafts."""
    return [g for g in DEPTHS if g <= depth and (not acc.block or g <= acc.block)]


def chain_sizes(acc: Acceptance, cost: VerifyCost, depths: list[int]) -> list[TreeSize]:
    """The chain of each depth (a chain of γ is γ nodes)."""
    return [predict(acc, cost, g, 1, g) for g in depths]


def trees(acc: Acceptance, cost: VerifyCost, depths: list[int], branches: int, nodes: int,
          floor: float = 0.0) -> list[TreeSize]:
    """The trees of each depth, top-k ≤ `branches` and budget ≤ `nodes`, each budget's pass priced once (the
    adaptive policy searches before most iterations). With `floor`, the depths from the first one where no tree
    can reach `floor` tokens/s are left out: the deepest, widest tree of each budget has the most E any tree of
    that budget has, and priced at a depth it bounds every tree of that depth; a deeper tree pays more drafter
    steps for no more than that bound."""
    budgets = [n for n in BUDGETS if n <= nodes]
    verify = {n: cost.at(n + 1) for n in budgets}
    widths = [k for k in BRANCHES if 1 < k <= branches]
    bound = expected_by_budget(acc, max(depths), max(widths), nodes) if floor and widths and depths else []
    sizes = []
    for g in depths:
        # priced as a tree (top-2 or wider: a tree's drafter step) of depth g holding the bound's E
        if bound and all(timed(acc, verify[n], g, 2, n, bound[n]).tokens_per_s < floor for n in budgets if n > g):
            break
        for k in widths:
            es = expected_by_budget(acc, g, k, nodes)
            sizes += [timed(acc, verify[n], g, k, n, es[n]) for n in budgets if g < n]
    return sizes


def search(acc: Acceptance, cost: VerifyCost, depth: int, branches: int, nodes: int,
           chains: Acceptance | None = None, lead: float = 0.0) -> TreeSize:
    """`preferred(candidates(...), lead)`, the trees that cannot matter left unpriced. A tree is picked only where
    it is predicted `lead` faster than the picked chain (−`TIE` ≤ `lead`), and among the trees only those within
    `TIE` of the fastest count, so a tree below the chain's rate less `TIE` changes nothing. Pricing every tree
    took 1.7-2.1 ms a search on one CPU thread (the adaptive policy searches before most iterations, about 2% of
    one), the chains alone 0.14 ms."""
    depths = reach(acc, depth)
    chain = fastest(chain_sizes(chains or acc, cost, depths))
    return preferred([chain, *trees(acc, cost, depths, branches, nodes, chain.tokens_per_s * (1 - TIE))], lead)


@dataclass
class Sizing:
    chosen: TreeSize
    candidates: list[TreeSize]
    cost: VerifyCost
    acceptance: Acceptance
    now: float | None = None   # a one-token pass timed as a kept curve was read (`verify_cost.stale`); None: unchecked


def fastest(sizes: list[TreeSize]) -> TreeSize:
    """The size predicted fastest; among those within TIE of it, the one with the most tokens per iteration."""
    top = max(size.tokens_per_s for size in sizes)
    return max((size for size in sizes if size.tokens_per_s >= top * (1 - TIE)), key=lambda size: size.expected_tokens)


def preferred(sizes: list[TreeSize], lead: float = 0.0) -> TreeSize:
    """The fastest chain, or the fastest tree where it is predicted faster still (by `lead`; a negative lead lets
    a tree within it of the chain win): `fastest`'s near ties are broken among the chains and among the trees, and
    across the two by `lead` (see the module's docstring)."""
    chain = fastest([size for size in sizes if size.branches == 1])
    trees = [size for size in sizes if size.branches > 1]
    tree = fastest(trees) if trees else None
    return tree if tree is not None and tree.tokens_per_s > chain.tokens_per_s * (1 + lead) else chain


def choose(acc: Acceptance, cost: VerifyCost) -> Sizing:
    """Every candidate predicted from the measurements, and the one `preferred` picks."""
    sizes = candidates(acc, cost)
    return Sizing(preferred(sizes), sizes, cost, acc)


def best_chain(setup: Setup, drafter: str, weights: str = "") -> TreeSize | None:
    """The chain (branches 1) predicted fastest for the target of `setup` and the drafter named `drafter`
    (weights of digest `weights`), from their cached sizing; None while it has not been measured
    (`sizing.size_for` measures, this only reads)."""
    cost, path = stored(setup), setup.path(acceptance_key(drafter, weights))
    if cost is None or not path.is_file():
        return None
    acc = Acceptance(**json.loads(path.read_text()))
    return fastest(chain_sizes(acc, cost, reach(acc)))


def measured_gamma(target: LoadedModel, drafter: Drafter | None) -> int | None:
    """The best chain's depth for the loaded pair in this process, from its cached sizing; None before that."""
    chain = best_chain(Setup.of(target), drafter.name, drafter.weights) if drafter is not None else None
    return chain.gamma if chain else None


def default_gamma(threads: int) -> int | None:
    """The best chain's depth for the embedded target and its default drafter as a process with `threads`
    torch threads runs them on this machine (the app's decoder process); None before their sizing is cached."""
    from specviz.drafters import default_drafter, drafter_name, weights_digest

    device, kind = pick_device(), default_drafter()
    chain = best_chain(Setup(EMBEDDED_NAME, str(device), str(pick_dtype(device)), threads),
                       drafter_name(kind), weights_digest(kind))
    return chain.gamma if chain else None


def resolve(settings: DecodeSettings, sizing: Sizing) -> DecodeSettings:
    """The settings with the chosen depth, top-k and budget in place of `auto`."""
    c = sizing.chosen
    return replace(settings, gamma=c.gamma, branches=c.branches, nodes=c.nodes)
