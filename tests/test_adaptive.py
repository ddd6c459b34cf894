"""Adaptive speculation: the policy's choices from constructed acceptance and costs, the losslessness of
runs that adapt (greedy equality, a chi-square at temperature 1), and the order of its reads: a shape is
chosen from finished iterations only."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import replace

import pytest
import torch
from test_lossless import PROMPT, RUNS, chi_square_p_value, exact_two_tokens
from test_tree_size import ONE_THREAD, cost

from specviz import DecodeSettings, Run, adaptive, generate, load_model, sizing, tree_size
from specviz.drafters import DraftModelDrafter, NgramDrafter
from specviz.errors import SpecvizError
from specviz.kv_cache import CachedLM
from specviz.trace import Choice
from specviz.tree_size import Acceptance, Sizing

CHAINS = adaptive.Space(depth=6, branches=1, nodes=64)
TREES = adaptive.Space(depth=4, branches=3, nodes=16)


def flat(alpha: float, ranks: tuple[float, ...] = (0.0, 0.0, 0.0), draft_step: float = 0.002) -> Acceptance:
    return Acceptance([[alpha, *ranks]] * 8, draft_step=draft_step, samples=[100] * 8, overhead=0.001)


def pair_sizing(acc: Acceptance, relative: list[float] | None = None) -> Sizing:
    c = cost(relative or [1, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0])
    return tree_size.choose(acc, c)


def test_no_draft_when_the_drafter_is_almost_never_right():
    state = adaptive.start(flat(0.02), ONE_THREAD, CHAINS)
    assert adaptive.choose(state, budget=64) == Choice(0, 1, 0, 1.0, 1.0, 0.02)


def test_a_long_draft_when_the_drafter_is_almost_always_right():
    chosen = adaptive.choose(adaptive.start(flat(0.98), ONE_THREAD, CHAINS), budget=64)
    assert (chosen.gamma, chosen.branches) == (CHAINS.depth, 1) and chosen.gain > 3
    assert adaptive.choose(adaptive.start(flat(0.98), ONE_THREAD, CHAINS), budget=3).gamma == 2  # the bonus's place


def test_trees_only_where_the_space_allows_them():
    acc = flat(0.5, ranks=(0.3, 0.1, 0.0))
    flat_curve = cost([1, 1, 1, 1, 1.02, 1.05, 1.1])
    assert adaptive.choose(adaptive.start(acc, flat_curve, TREES), 64).branches > 1
    assert adaptive.choose(adaptive.start(acc, flat_curve, CHAINS), 64).branches == 1


def test_only_chains_where_the_drafter_has_one_continuation_far_likelier_than_the_rest():
    acc = flat(0.5, ranks=(0.3, 0.1, 0.0))
    space = adaptive.Space(TREES.depth, TREES.branches, TREES.nodes, chains=("match 3",))
    state = adaptive.start(acc, cost([1, 1, 1, 1, 1.02, 1.05, 1.1]), space)
    copying, guessing = adaptive.choose(state, 64, "match 3"), adaptive.choose(state, 64, "match 1")
    assert (copying.branches, copying.nodes) == (1, copying.gamma) and copying.gamma > 1
    assert guessing.branches > 1
    assert NgramDrafter(16, torch.device("cpu")).chain_situations == tuple(f"match {n}" for n in range(2, 9))


def test_a_copy_chain_pays_no_drafter_steps():
    """With a drafter step as dear as a target pass, the head's guesses of acceptance 0.7 do not pay, while
    the same acceptance backing a copy is drafted deep."""
    acc = flat(0.7, draft_step=ONE_THREAD.at(1))
    space = adaptive.Space(CHAINS.depth, 1, CHAINS.nodes, chains=("match 3",))
    state = adaptive.start(acc, cost([1, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0]), space)
    guessing, copying = adaptive.choose(state, 64, "match 1"), adaptive.choose(state, 64, "match 3")
    assert guessing.gamma == 0
    assert copying.gamma > 2 and copying.gain > 1.5


def test_the_policy_prices_its_drafts_at_the_context_of_the_run():
    """Wide passes flat over a short context, steep over a long one: a deep chain early in the run, a short
    one once the context has grown."""
    steep = cost([1, 1.3, 1.8, 2.6, 4.0, 7.0, 12.0])
    c = replace(cost([1, 1, 1, 1, 1.02, 1.05, 1.1]), longer=replace(steep, context=1024))
    state = adaptive.start(flat(0.7), c, CHAINS)
    early, late = adaptive.choose(state, 64, context=100), adaptive.choose(state, 64, context=1100)
    assert early.gamma >= 4 and 0 < late.gamma < early.gamma - 1
    assert state.context == 1024
    assert adaptive.choose(state, 64, context=100) == early


def test_rejections_stop_the_drafts_and_probes_thin_out():
    """A prior of 0.6 drafts; each rejected first node lowers the estimate until the target steps alone;
    then one-node probes come after 4, 8, 16 undrafted iterations while they fail, and an accepted one
    brings the gap back to 4."""
    state = adaptive.start(flat(0.6), ONE_THREAD, CHAINS)
    chosen, drafted = [], 0
    while len(chosen) < 60:
        choice = adaptive.choose(state, 64)
        chosen.append(choice)
        parents = list(range(-1, choice.gamma - 1))
        adaptive.observe(state, choice, parents, [])
        drafted += choice.gamma > 0 and not choice.probe
    assert chosen[0].gamma > 1 and 1 <= drafted <= 12   # a prior of 0.6 worth 4 tries, every try missed
    probes = [i for i, c in enumerate(chosen) if c.probe]
    last_draft = max(i for i, c in enumerate(chosen[:probes[0]]) if c.gamma > 0)
    gaps = [b - a - 1 for a, b in zip([last_draft, *probes], probes)]
    assert gaps[:3] == [4, 8, 16] and all(c.gamma == 1 for c in chosen if c.probe)
    assert adaptive.estimates(state).rank[0][0] < 0.1
    assert state.seen == 60
    adaptive.observe(state, chosen[probes[-1]], [-1], [0])
    assert state.probe_gap == adaptive.FIRST_PROBE_GAP


def test_a_tree_teaches_every_rank_it_tried():
    """Root children of ranks 0 and 1: rank 1 accepted, then its child of rank 0 rejected."""
    state = adaptive.start(flat(0.5, ranks=(0.5, 0.5, 0.5)), ONE_THREAD, TREES)
    choice = Choice(2, 2, 3, 2.0, 1.0, 0.5)
    adaptive.observe(state, choice, [-1, -1, 1], [1])
    table = adaptive.evidence(state)
    prior, memory = adaptive.PRIOR_NODES, adaptive.MEMORY   # the prior: `prior` tries of each cell, half hits
    tried, missed, hit = memory * prior + 1, memory * prior / 2, memory * prior / 2 + 1
    assert table.tries[0][:3] == pytest.approx([tried, tried, prior]) and table.tries[1][:2] == [tried, prior]
    assert table.hits[0][:2] == pytest.approx([missed, hit]) and table.hits[1][0] == pytest.approx(missed)
    rank = adaptive.estimates(state).rank
    assert rank[0][:3] == pytest.approx([missed / tried, hit / tried, 0.5])
    assert rank[1][0] == pytest.approx(missed / tried)


def test_a_sampled_run_teaches_rank_0_the_chances_it_was_kept_with():
    """The same tree as above, at T > 0: rank 0 of each depth learns its chance of being kept as it was drafted
    (0.4 at the root, 0.9 below the accepted rank-1 child); rank 1 still learns its 0/1 verdict."""
    state = adaptive.start(flat(0.5, ranks=(0.5, 0.5, 0.5)), ONE_THREAD, TREES)
    adaptive.observe(state, Choice(2, 2, 3, 2.0, 1.0, 0.5), [-1, -1, 1], [1], kept=[0.4, 0.0, 0.9])
    prior, memory = adaptive.PRIOR_NODES, adaptive.MEMORY
    table = adaptive.evidence(state)
    assert table.hits[0][:2] == pytest.approx([memory * prior / 2 + 0.4, memory * prior / 2 + 1])
    assert table.hits[1][0] == pytest.approx(memory * prior / 2 + 0.9)
    tried = memory * prior + 1
    assert adaptive.estimates(state).rank[0][:2] == pytest.approx([(memory * prior / 2 + 0.4) / tried,
                                                                   (memory * prior / 2 + 1) / tried])


def test_first_children_kept_often_are_drafted_deeper():
    """At T > 0 a flat target keeps a drawn first token more often than its 0/1 verdicts on a few draws
    say: taught so by the chances, the policy drafts deeper than it did from the same prior."""
    state = adaptive.start(flat(0.3, ranks=(0.3, 0.1, 0.1)), ONE_THREAD, TREES)
    before = adaptive.choose(state, 64)
    for _ in range(30):
        adaptive.observe(state, Choice(2, 2, 3, 2.0, 1.0, 0.5), [-1, -1, 0], [0], kept=[0.9] * 3)
    chosen = adaptive.choose(state, 64)
    assert chosen.gamma > before.gamma
    assert chosen.alpha == pytest.approx(adaptive.estimates(state).rank[0][0])


def test_a_copying_situation_starts_at_the_copys_own_table():
    """The sizing measures the copy alone in each chain situation; the policy starts there, not at the
    drafter's table, so the first copy of a run is drafted as deep as copies go."""
    acc = replace(flat(0.02), situations={"match 3": [[0.95, 0.0, 0.0, 0.0]] * 8})
    space = replace(CHAINS, chains=("match 2", "match 3"))
    state = adaptive.start(acc, ONE_THREAD, space)
    assert adaptive.choose(state, 64, "match 3").gamma == CHAINS.depth
    assert adaptive.choose(state, 64, "match 2").gamma == 0   # not measured: the drafter's table
    assert adaptive.estimates(state, "match 3").rank[0][0] == pytest.approx(0.95)


def test_each_situation_learns_its_own_table():
    """Hits after a long match and misses after a short one: the long match is drafted deep, the short
    one not at all, from one state."""
    state = adaptive.start(flat(0.5), ONE_THREAD, CHAINS)
    for _ in range(20):
        for situation, path in (("match 3", [0, 1, 2]), ("match 1", [])):
            choice = adaptive.choose(state, 64, situation)
            adaptive.observe(state, replace(choice, gamma=3), [-1, 0, 1], path)
    assert set(state.tables) == {"match 3", "match 1"}
    long, short = adaptive.choose(state, 64, "match 3"), adaptive.choose(state, 64, "match 1")
    assert long.gamma > 3 and long.situation == "match 3" and short.gamma == 0
    assert adaptive.estimates(state, "new").rank == flat(0.5).rank   # a situation not met yet: the prior


def test_a_near_tie_between_a_chain_and_a_tree_goes_to_the_tree(monkeypatch):
    """A tree predicted 1% behind the fastest chain, within `TREE_LEAD`, with more tokens per iteration: the tree;
    with `TREE_LEAD` 0 (the tree must be predicted faster) the chain. A tree whose second guesses never hit, further
    behind: the chain; a tree predicted 4% ahead: the tree either way."""
    steep = cost([1, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0])

    def chosen(second: float) -> tuple[int, int]:
        choice = adaptive.choose(adaptive.start(flat(0.5, ranks=(second, 0.0, 0.0)), steep, TREES), 64)
        return choice.gamma, choice.branches

    assert chosen(0.04)[1] == 2 and chosen(0.1)[1] == 2 and chosen(0.0) == (2, 1)
    monkeypatch.setattr(adaptive, "TREE_LEAD", 0.0)
    assert chosen(0.04) == (2, 1) and chosen(0.1)[1] == 2


def test_a_draft_must_be_predicted_clearly_faster_than_the_target_alone():
    """Where a one-token chain is predicted less than MARGIN faster than the target alone, the policy does
    not draft (the time model leaves out work a draft brings along); every draft it does choose clears it."""
    marginal = []
    for alpha in [i / 200 for i in range(1, 120)]:
        state = adaptive.start(flat(alpha), ONE_THREAD, CHAINS)
        acc = adaptive.estimates(state)
        one, alone = tree_size.predict(acc, ONE_THREAD, 1, 1, 1), tree_size.predict(acc, ONE_THREAD, 0, 1, 0)
        gain = one.tokens_per_s / alone.tokens_per_s
        choice = adaptive.choose(state, 64)
        assert choice.gamma == 0 or choice.gain >= 1 + adaptive.MARGIN
        if 1 < gain < 1 + adaptive.MARGIN:
            marginal.append(choice.gamma)
    assert marginal and set(marginal) == {0}


def test_an_idle_policy_searches_the_shapes_once_until_its_estimates_move(monkeypatch):
    """Not drafting teaches nothing, so the search over the shapes (half a millisecond) is not redone each
    iteration; a drafted iteration moves the estimates and the next choice searches again."""
    state = adaptive.start(flat(0.05), ONE_THREAD, TREES)
    searched = []
    search = tree_size.search
    monkeypatch.setattr(tree_size, "search", lambda *args: searched.append(1) or search(*args))
    for _ in range(3):
        choice = adaptive.choose(state, 64)
        adaptive.observe(state, choice, [], [])
    assert choice.gamma == 0 and len(searched) == 1
    state.idle = state.probe_gap
    probe = adaptive.choose(state, 64)
    assert probe.probe and len(searched) == 1
    adaptive.observe(state, probe, [-1], [0])
    adaptive.choose(state, 64)
    assert len(searched) == 2


@pytest.fixture(scope="module")
def models(tiny_llama_dirs):
    torch.set_num_threads(1)
    target = load_model(str(tiny_llama_dirs[0]))
    target.eos_ids = frozenset()   # every run writes its whole budget
    return target, load_model(str(tiny_llama_dirs[0])), load_model(str(tiny_llama_dirs[1]))


def adaptive_settings(**kwargs) -> DecodeSettings:
    return DecodeSettings(adaptive=True, **kwargs)


@pytest.mark.parametrize("branches", [1, 3], ids=["chains", "trees"])
@pytest.mark.parametrize("which", ["itself", "another"])
def test_greedy_adaptive_runs_reproduce_the_target_alone(models, branches, which):
    """The target drafting for itself is always right (long drafts); another tiny LM mostly wrong, with a
    prior that promises 0.9 (drafts, rejections, then the target alone and probes)."""
    target, same, other = models
    drafter = DraftModelDrafter(same if which == "itself" else other)
    settings = adaptive_settings(gamma=5, branches=branches, nodes=12, temperature=0.0, max_new_tokens=40)
    alone = generate(target, None, PROMPT, settings).generated_ids
    run = Run(target, drafter, PROMPT, settings, sizing=pair_sizing(flat(0.9, ranks=(0.3, 0.1, 0.0))))
    trace = run.trace
    list(run)
    assert trace.generated_ids == alone
    choices = [it.choice for it in trace.iterations]
    assert all(c is not None for c in choices)
    assert len({c.gamma for c in choices}) > 1 or which == "itself"
    if which == "itself":
        assert max(c.gamma for c in choices) == 5
    else:
        assert any(c.gamma == 0 for c in choices)
    if branches > 1:
        assert any(c.branches > 1 for c in choices)


def test_a_greedy_run_that_learns_its_costs_reproduces_the_target_alone_and_prices_by_the_clock(models):
    """The sizing here prices a one-token pass at 20 ms; the tiny target's take about a millisecond, so the
    policy, learning from the passes timed (these runs' and the target's earlier ones), scales the curve down."""
    target, _, other = models
    settings = adaptive_settings(gamma=5, branches=3, nodes=12, temperature=0.0, max_new_tokens=30, learn_costs=True)
    alone = generate(target, None, PROMPT, settings).generated_ids
    logged = target.passes.total
    run = Run(target, DraftModelDrafter(other), PROMPT, settings, sizing=pair_sizing(flat(0.6, ranks=(0.3, 0.1, 0.0))))
    list(run)
    assert run.trace.generated_ids == alone
    assert target.passes.total == logged + len(run.trace.iterations) - 1   # every pass after the prompt's
    a, _, _ = run.policy.factors
    assert a < 0.5


def test_a_greedy_adaptive_run_with_prompt_lookup_chooses_by_situation(models):
    """Prompt lookup on a prompt that repeats itself: the shapes are chosen in more than one situation,
    each recorded with its choice, and the output is the target's own."""
    target, _, _ = models
    prompt = "one two three four one two three four one two three four one two"
    settings = adaptive_settings(gamma=5, temperature=0.0, max_new_tokens=40)
    drafter = NgramDrafter(target.vocab_size, target.device)
    trace = generate(target, drafter, prompt, settings, sizing=pair_sizing(flat(0.6)))
    assert trace.generated_ids == generate(target, None, prompt, settings).generated_ids
    assert len({it.choice.situation for it in trace.iterations}) > 1
    assert all(it.choice.situation.startswith(("match", "no match")) for it in trace.iterations)


def test_an_adaptive_run_needs_the_pairs_sizing(models):
    target, same, _ = models
    with pytest.raises(SpecvizError, match="sizing"):
        Run(target, DraftModelDrafter(same), PROMPT, adaptive_settings())
    with pytest.raises(SpecvizError, match="remote"):
        adaptive_settings(target_url="http://127.0.0.1:1")


def test_prepare_measures_the_sizing_for_an_adaptive_run(models, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    target, _, other = models
    drafter = DraftModelDrafter(other)
    plain = sizing.prepare(target, drafter, adaptive_settings(gamma=3))
    assert plain.sizing is not None and plain.settings.gamma == 3
    auto = sizing.prepare(target, drafter, adaptive_settings(auto_size=True))
    assert (auto.settings.gamma, auto.settings.branches, auto.settings.nodes) == (
        max(tree_size.DEPTHS), max(tree_size.BRANCHES), max(tree_size.BUDGETS))
    assert sizing.prepare(target, None, adaptive_settings()).sizing is None


def test_each_shape_is_chosen_from_finished_iterations_only(models, monkeypatch):
    """The order of the policy's reads and the target's passes: before iteration i's target pass the
    policy has learnt exactly i iterations, and it learns iteration i only after that pass."""
    target, _, other = models
    events: list[tuple[str, int]] = []
    choose, observe = adaptive.choose, adaptive.observe

    def choosing(state, *args):
        events.append(("choose", state.seen))
        return choose(state, *args)

    def observing(state, *args):
        events.append(("observe", state.seen))
        observe(state, *args)

    monkeypatch.setattr(adaptive, "choose", choosing)
    monkeypatch.setattr(adaptive, "observe", observing)
    run = Run(target, DraftModelDrafter(other), PROMPT, adaptive_settings(temperature=1.0, max_new_tokens=20),
              sizing=pair_sizing(flat(0.5)))
    logits = run.lm.logits

    def verifying(*args, **kwargs):
        events.append(("verify", len(run.trace.iterations)))
        return logits(*args, **kwargs)

    monkeypatch.setattr(run.lm, "logits", verifying)
    list(run)
    n = len(run.trace.iterations)
    assert events == [event for i in range(n) for event in (("choose", i), ("verify", i), ("observe", i))]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_the_policy_learns_chances_when_sampling_and_verdicts_when_greedy(models, monkeypatch, temperature):
    target, _, other = models
    learnt: list[list[float] | None] = []
    observe = adaptive.observe

    def observing(state, choice, parents, path, kept=None):
        learnt.append(kept if parents else [])
        assert kept is None or (len(kept) == len(parents) and all(0 <= k <= 1 for k in kept))
        observe(state, choice, parents, path, kept)

    monkeypatch.setattr(adaptive, "observe", observing)
    generate(target, DraftModelDrafter(other), PROMPT, adaptive_settings(temperature=temperature, max_new_tokens=12),
             sizing=pair_sizing(flat(0.5)))
    drafted = [kept for kept in learnt if kept != []]
    assert drafted and all((kept is None) == (temperature == 0) for kept in drafted)


@pytest.mark.parametrize(("branches", "learn_costs"), [(1, False), (3, False), (1, True)],
                         ids=["chains", "trees", "chains, costs learnt"])
def test_adaptive_sampling_matches_the_target_distribution(models, monkeypatch, branches, learn_costs):
    """Temperature 1, three tokens per run: the first iteration drafts up to two, and the second's shape
    depends on the first's verdicts (a rejection lowers the estimate below the break-even of a draft).
    The first two tokens over many seeds follow the target's p(x1) p(x2 | x1). Learning its costs, the
    policy also reads the clock of the passes before (this run's first, and every earlier run's): there the
    target's pass takes 5 ms more, as a larger target's would, so that a drafter as large as the tiny target
    still pays."""
    target, _, other = models
    if learn_costs:
        logits = CachedLM.logits

        def slower(*args, **kwargs):
            out = logits(*args, **kwargs)
            time.sleep(0.005)
            return out

        monkeypatch.setattr(CachedLM, "logits", slower)
    settings = adaptive_settings(gamma=2, branches=branches, nodes=4, temperature=1.0, max_new_tokens=3,
                                 record=False, learn_costs=learn_costs)
    shaped = pair_sizing(flat(0.5, ranks=(0.3, 0.1, 0.0)), [1, 1.3, 1.6, 1.9, 2.5, 3.0, 4.0])
    counts: Counter = Counter()
    shapes: Counter = Counter()
    for seed in range(RUNS):
        s = DecodeSettings(**{**settings.to_dict(), "seed": seed})
        run = Run(target, DraftModelDrafter(other), PROMPT, s, sizing=shaped)
        list(run)
        counts[tuple(run.trace.generated_ids[:2])] += 1
        shapes[tuple(it.choice.gamma for it in run.trace.iterations)] += 1
    assert len(shapes) > 1   # the verdicts changed the shapes that followed
    assert chi_square_p_value(exact_two_tokens(target, settings), counts) > 1e-3


def test_the_bench_names_an_adaptive_method_and_runs_it_from_the_sizing(models):
    from specviz.bench.methods import engine_method
    from specviz.bench.prompts import BenchPrompt

    target, _, other = models
    acc = pair_sizing(flat(0.5))
    settings = adaptive_settings(gamma=8, temperature=0.0, max_new_tokens=6, record=False)
    method = engine_method(target, DraftModelDrafter(other), "model", settings, sizing=acc)
    assert method.spec.name == "engine model adaptive chains ≤8 rec off" and method.spec.tree == "adaptive chains"
    assert len(method.run(BenchPrompt("p", "chat", PROMPT)).ids) == 6
    learnt = engine_method(target, DraftModelDrafter(other), "model", replace(settings, branches=3, learn_costs=True),
                           sizing=acc)
    assert learnt.spec.name == "engine model adaptive trees, costs learnt ≤8 rec off"


def test_the_prompts_no_drafter_can_help_with_load_as_a_bench_set():
    from pathlib import Path

    from specviz.bench.prompts import load_prompts

    path = Path(__file__).resolve().parent.parent / "assets" / "bench_prompts_random.json"
    prompts = load_prompts(path)
    assert {p.category for p in prompts} == {"random"} and len(prompts) == 2
