"""Adaptive speculation: before each iteration, the draft shape with the most expected tokens per second.

A fixed γ loses time wherever the drafter does not suit the text: every drafted token that is
verified and thrown away costs a drafter step and a wider target pass. The policy here picks, before
each iteration, among drafting nothing (one plain target step), a chain of γ tokens and a token tree
(depth, top-k, budget N), the shape whose expected tokens per second is highest:

    E = 1 + Σ over the tree's nodes of Π P̂[i][rᵢ]          (tokens per iteration; a chain of acceptance
                                                              α gives Leviathan et al.'s eq. 1,
                                                              (1 − α^(γ+1)) / (1 − α))
    T = overhead + depth · drafter step + verify(N + 1, L)   (seconds per iteration over L cached tokens; a
                                                              tree's drafter step is its own, `tree_step`;
                                                              a parallel drafter's block is one step)

E / T over the target alone's 1 / (overhead + verify(1)) is the measured-cost form of Leviathan
et al.'s expected walltime improvement (1 − α^(γ+1)) / ((1 − α)(γc + 1)) (theorem 3.8). The
arithmetic of E and T is `tree_size`'s; the costs (verify-cost curve, drafter step, overhead) are the
pair's sizing, measured before the run (`specviz.sizing.prepare`); P̂ is estimated here. The verify
cost is read at the run's context (`VerifyCost.at_context`), re-read every `CONTEXT_STEP` tokens: over
2 048 cached tokens a target pass costs 1.7× what it costs over 128, and a 16-token pass 1.6× a
one-token one (1.46× over 128).

Acceptance estimates: P̂[d][r] is the chance that, at depth d of a path accepted so far, the target's
token is the drafter's rank-r child, hits over tries. Each cell starts at the sizing's calibrated
table (the prior, worth `PRIOR_NODES` tries) and learns from every finished iteration: each child a
verification reached counts a try for its depth and rank, and a hit when it is the one accepted.
A sampled run's rank-0 cells learn, in place of the 0/1 verdict, the chance the verdict was drawn with
(`verification.kept_chances`): the same mean without the coin flip, so at T = 0.7 a few unlucky draws
no longer read as a drafter that cannot guess the text. Sampling, a chain's first child and a tree's are
both drawn from q (`drafters.base.draft_loop`), kept with Σ min(p, q), so one table prices both shapes; a
copy's is picked, kept with p(token), and the copy leads only the chains of its own situations. Old
evidence, the prior's included, fades by `MEMORY` per new try (a moving average, as
SGLang's adaptive draft steps use), so the estimates follow the text as it changes from prose to a
copied passage and back, and a prior the text contradicts is forgotten.

A drafter may know something of its chances before it drafts (`Drafter.situation`): prompt lookup finds
a 3-token match or only a 1-token one, and copies far more of the first; the mixed tree's chain copies
only after a match of 2 or 3 tokens and is the head's otherwise. The policy keeps one table per
situation, so a long match is drafted deep while a short one's copy stays short. A situation where the
drafter copies (`Drafter.chain_situations`) starts at the copy's own acceptance, which the sizing
measures at every position of its calibration answers (`sizing.copy_acceptance`, which says why); the
others at the drafter's table. In those situations only chains are searched: the copy is the one
continuation worth verifying, and each of the head's alternatives beside it widens the target pass.
Searched as trees, those situations kept the alternatives their estimates, started at the one calibrated
table, still credited (held-out prompts, greedy, the target alone's speed as 1: multi-turn 1.9× as trees
there, 2.3× with chains; translation 2.4× and 3.0×; rewriting 1.6× either way). The policy's chain there
has a budget of γ nodes, which a copy of γ tokens fills alone, running no drafter model, so it is priced
with no drafter steps (a copy that runs out before γ is topped up by the head, whose steps this leaves
unpriced): charged γ head steps, copy iterations were predicted at 61-68 ms where they measured 43-47 ms
(the speed moved less than the run-to-run spread, `benchmarks/copy-pricing.md`).

The draft searched is `tree_size.preferred`'s: a tree where it is predicted within `TREE_LEAD` of the fastest
chain or faster. On a 2-core AVX2 CPU (head in float32) a tree that won such a near tie ran 2.4% ± 0.8% slower,
and the tree had to be predicted faster; on a 2-core Xeon with AMX (head in bfloat16) the chains chosen on a
high estimate wrote 0.75-0.85 of the tokens predicted (`benchmarks/predicted-tokens.md`), and the near tie going
to the tree priced 1.3% faster on two training-split prompt sets and ran 4.0% ± 2.0% faster where it changed the
drafts (`benchmarks/chain-ties.md`). `TREE_LEAD` = 0 restores the earlier rule.

A draft must be predicted at least `MARGIN` faster than the target alone. The time model counts the
drafter's steps and the verify pass, not the EAGLE head's catch-up over the positions it did not draft
or the iteration's own bookkeeping: on random letters the EAGLE head's chains, predicted to break even
at α̂ ≈ 0.07, drafted 31 times in 62 iterations and ran 0.96× the target alone, the drafting alone
costing 6% of the run.

A policy that stops drafting learns nothing more, so after `FIRST_PROBE_GAP` undrafted iterations
it drafts one node (a probe); each probe that fails doubles the gap, up to `MAX_PROBE_GAP`, and an
accepted one resets it. On text no drafter can guess the probes cost a few percent of one
iteration each, spread ever thinner.

With `learn_costs` the policy prices by what this process timed (`specviz.learnt_costs`): the kept
verify-cost curve scaled by two factors fitted to the target's passes (its one-token pass and what a wider
pass adds), and the drafter's step by the run's own drafting time over its priced steps. Every search is
priced again once a factor has moved by `REPRICE`.

Losslessness: a shape is chosen from the iterations already finished (the state learns only after
an iteration's verdict is final, and the chances it learns are read from that iteration's p), never
from the current target pass, and every shape's verification reproduces the target's distribution,
so the output stays distributed exactly as the target's. Without `learn_costs` the policy reads no clock
during the run: given the seed, an adaptive run is reproducible. With it, the shapes follow the machine's
speed, so a sampled run's text (not its distribution) may differ between two runs of one seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from specviz import tree_size
from specviz.learnt_costs import PassLog, PassPrice, StepPrice, priced
from specviz.trace import Choice
from specviz.tree import children
from specviz.tree_size import Acceptance, TreeSize
from specviz.verify_cost import VerifyCost

PRIOR_NODES = 4.0      # the calibrated table counts as this many tries of each cell
MEMORY = 0.9           # each new try of a cell keeps this share of its earlier evidence
FIRST_PROBE_GAP = 4    # undrafted iterations before the first one-node probe
MAX_PROBE_GAP = 64
MARGIN = 0.03          # a draft must be predicted this much faster than the target alone
CONTEXT_STEP = 128     # the verify cost is re-read at the context rounded down to a multiple of this
TREE_LEAD = -tree_size.TIE   # a tree within this of the fastest chain's predicted rate is drafted
REPRICE = 0.02         # learnt costs: a factor moved this much since the searches were priced prices them again


@dataclass(frozen=True)
class Space:
    """The shapes the policy may choose: depth ≤ `depth`, top-k ≤ `branches` (1: chains only), nodes ≤ `nodes`;
    chains only in the situations `chains`."""

    depth: int
    branches: int
    nodes: int
    chains: tuple[str, ...] = ()


@dataclass
class Evidence:
    """Hits and tries of each (depth, rank) cell, faded by `MEMORY`."""

    hits: list[list[float]]
    tries: list[list[float]]


@dataclass
class State:
    """What the policy knows before an iteration: the prior, the costs and the evidence of the iterations
    finished so far (`seen` of them), one table per situation the drafter tells apart."""

    prior: Acceptance
    cost: VerifyCost
    space: Space
    tables: dict[str, Evidence] = field(default_factory=dict)
    best: dict[tuple[str, int], TreeSize | None] = field(default_factory=dict)   # (situation, depth): fastest draft
    seen: int = 0
    idle: int = 0                       # iterations since the last draft
    context: int = 0                    # the context (rounded, `CONTEXT_STEP`) the searches in `best` priced
    probe_gap: int = FIRST_PROBE_GAP
    passes: PassPrice | None = None     # learnt costs: the target's timed passes read into the pass's factors
    steps: StepPrice = field(default_factory=StepPrice)   # the run's drafting time over its priced steps
    factors: tuple[float, float, float] = (1.0, 1.0, 1.0)   # (pass a, pass b, drafter step) the searches priced
    priced: VerifyCost = field(init=False)   # `cost` at `context`, times the factors, read again when either moves

    def __post_init__(self):
        self.priced = self.cost.at_context(self.context)


def start(prior: Acceptance, cost: VerifyCost, space: Space, log: PassLog | None = None) -> State:
    """The state before the first iteration: no evidence yet, each situation's table to start at the prior;
    with the target's `log`, costs learnt from it and from the run's drafting (`learnt_costs`)."""
    return State(prior, cost, space, passes=PassPrice(cost, log) if log is not None else None)


def evidence(state: State, situation: str = "") -> Evidence:
    """The situation's table; a situation met for the first time starts at its calibrated table (the copy's
    own in a chain situation, else the drafter's) as `PRIOR_NODES` tries of each cell."""
    if situation not in state.tables:
        rank = state.prior.situations.get(situation, state.prior.rank)
        state.tables[situation] = Evidence([[PRIOR_NODES * p for p in row] for row in rank],
                                           [[PRIOR_NODES] * len(row) for row in rank])
    return state.tables[situation]


def estimates(state: State, situation: str = "") -> Acceptance:
    """P̂[d][r] = hits / tries (the prior's among them, faded), with the prior's costs (learnt: scaled)."""
    table = evidence(state, situation)
    rank = [[h / t for h, t in zip(hit, tried)] for hit, tried in zip(table.hits, table.tries)]
    prior, step = state.prior, state.factors[2]   # the drafter step's learnt factor (1 unless learnt)
    return replace(prior, rank=rank, draft_step=prior.draft_step * step,
                   tree_step=prior.tree_step and prior.tree_step * step)


def reprice(state: State) -> None:
    """Learnt costs: read the passes timed since the last choice; once a factor has moved by `REPRICE` since the
    searches were priced, price the curve at the run's context by the new factors and drop the searches."""
    state.passes.learn()
    factors = (*state.passes.factors, state.steps.factor(state.prior.draft_step))
    if any(abs(new - old) > REPRICE * max(new, old) for new, old in zip(factors, state.factors)):
        state.factors, state.best = factors, {}
        price(state)


def price(state: State) -> None:
    """The verify-cost curve the searches read: the kept one at the run's context, times the learnt factors."""
    state.priced = priced(state.cost.at_context(state.context), *state.factors[:2])


def observe_drafting(state: State, choice: Choice, seconds: float, calls: int) -> None:
    """Learnt costs: an iteration's drafting time, against its `calls` drafter steps priced at the sizing's step."""
    if calls:
        state.steps.learn(seconds, calls * tree_size.drafter_seconds(state.prior, choice.branches))


def choose(state: State, budget: int, situation: str = "", context: int = 0) -> Choice:
    """The shape for an iteration with `budget` tokens left, in the drafter's `situation`, over `context`
    committed tokens: the fastest draft (`tree_size.preferred`) when it beats the target alone by `MARGIN`,
    else no draft, or a one-node probe once the policy has waited long enough."""
    rounded = context // CONTEXT_STEP * CONTEXT_STEP
    if rounded != state.context:   # the passes cost more now: every search is priced again
        state.context, state.best = rounded, {}
        price(state)
    if state.passes is not None:
        reprice(state)
    cost = state.priced
    acc = estimates(state, situation)
    alone = tree_size.predict(acc, cost, 0, 1, 0)
    alpha = acc.rank[0][0]
    depth = min(state.space.depth, budget - 1)   # the bonus takes the last place (see `Run._step`)
    space = state.space
    branches, copy = space.branches, None
    if situation in space.chains:   # the copy: one continuation, and no drafter step to pay
        branches, copy = 1, replace(acc, draft_step=0.0)
    if (situation, depth) not in state.best:   # searched again only once the situation's table has moved
        state.best[situation, depth] = tree_size.search(acc, cost, depth, branches, space.nodes, copy, TREE_LEAD) \
            if depth > 0 else None
    best = state.best[situation, depth]
    learnt = state.factors if state.passes is not None else ()
    if best is not None and best.tokens_per_s > alone.tokens_per_s * (1 + MARGIN):
        return Choice(best.gamma, best.branches, best.nodes, best.expected_tokens,
                      best.tokens_per_s / alone.tokens_per_s, alpha, situation=situation, costs=learnt)
    if depth > 0 and state.idle >= state.probe_gap:
        probe = tree_size.predict(copy or acc, cost, 1, 1, 1)
        return Choice(1, 1, 1, probe.expected_tokens, probe.tokens_per_s / alone.tokens_per_s, alpha, probe=True,
                      situation=situation, costs=learnt)
    return Choice(0, 1, 0, 1.0, 1.0, alpha, situation=situation, costs=learnt)


def observe(state: State, choice: Choice, parents: list[int], path: list[int], kept: list[float] | None = None) -> None:
    """Learn from a finished iteration: the shape it drafted (`parents`, node order = each node's rank
    among its siblings) and the path its verification accepted, into the table of the situation it was
    chosen in. `kept` (sampled runs): each node's chance of being kept as its parent's first child, as it was
    drafted (`verification.kept_chances`), which rank 0's cells learn in place of the 0/1 verdict."""
    state.seen += 1
    if not parents:
        state.idle += choice.gamma == 0
        return
    tree, table = children(parents), evidence(state, choice.situation)
    state.best = {key: size for key, size in state.best.items() if key[0] != choice.situation}
    for depth, node in enumerate([-1, *path], start=1):
        kids = tree.get(node, [])
        if not kids or depth > len(table.tries):
            break
        for rank, kid in enumerate(kids[: len(table.tries[depth - 1])]):
            tried, hit = table.tries[depth - 1], table.hits[depth - 1]
            tried[rank] = MEMORY * tried[rank] + 1.0
            accepted = float(depth <= len(path) and path[depth - 1] == kid)
            hit[rank] = MEMORY * hit[rank] + (kept[kid] if kept is not None and rank == 0 else accepted)
    if choice.probe:
        state.probe_gap = FIRST_PROBE_GAP if path else min(2 * state.probe_gap, MAX_PROBE_GAP)
    state.idle = 0
