"""Sizing the tree: the verify-cost curve, acceptance by depth and rank, the expected tokens."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, replace

import pytest
import torch

from specviz import adaptive, load_model, sizing, theory, tree_size, verify_cost
from specviz.device import pick_device, pick_dtype
from specviz.drafters import (
    DraftModelDrafter,
    NgramDrafter,
    default_drafter,
    drafter_name,
    weights_digest,
    weights_file,
)
from specviz.models import EMBEDDED_NAME
from specviz.settings import DecodeSettings
from specviz.trace import DraftStep, Iteration, TopK, Trace
from specviz.tree_size import Acceptance
from specviz.verify_cost import Setup, VerifyCost

CPU_CURVE = [1, 1.15, 1.37, 1.53, 2.15, 3.2, 5.4]   # this machine's, relative to one token


def flat(alpha: list[float], depths: int = 8) -> Acceptance:
    return Acceptance([alpha] * depths, draft_step=0.002, samples=[100] * depths)


def test_a_chain_expects_the_papers_tokens():
    for a in (0.3, 0.7):
        for gamma in (1, 4, 8):
            expected = tree_size.expected_tokens(flat([a, 0.1, 0.05, 0.0]), gamma, 1, gamma)
            assert expected == pytest.approx(theory.expected_tokens(a, gamma))


def test_the_best_tree_holds_the_largest_path_products():
    acc = flat([0.6, 0.2, 0.1, 0.05])
    assert tree_size.expected_tokens(acc, 1, 2, 2) == pytest.approx(1 + 0.6 + 0.2)
    # depth 2, top-2, 3 nodes: 0.6, then 0.6·0.6 = 0.36 beats 0.2
    assert tree_size.expected_tokens(acc, 2, 2, 3) == pytest.approx(1 + 0.6 + 0.36 + 0.2)
    assert tree_size.expected_tokens(acc, 3, 3, 64) > tree_size.expected_tokens(acc, 3, 1, 3)


V1_SIZES = [1, 2, 4, 8, 16, 32, 64]   # the sizes curves were measured at before `verify_cost.KEY` v2


def cost(relative: list[float]) -> VerifyCost:
    return VerifyCost("m", "cpu", "float32", 1, V1_SIZES, [0.02 * r for r in relative])


def write_sizing(setup: Setup, drafter: str, acc: Acceptance, c: VerifyCost, weights: str = "") -> None:
    """A cached sizing, as `size_for` leaves it, for the target of `setup` and the drafter named `drafter`
    (weights of digest `weights`)."""
    for what, record in ((verify_cost.KEY, c), (tree_size.acceptance_key(drafter, weights), acc)):
        path = setup.path(what)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(record)))


def embedded_setup(threads: int) -> Setup:
    device = pick_device()
    return Setup(EMBEDDED_NAME, str(device), str(pick_dtype(device)), threads)


def test_the_default_gamma_is_the_fastest_cached_chain(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    kind = default_drafter()
    setup, drafter, weights = embedded_setup(3), drafter_name(kind), weights_digest(kind)
    assert tree_size.best_chain(setup, drafter, weights) is None and tree_size.default_gamma(3) is None
    acc, c = flat([0.8, 0.1, 0.05, 0.0]), cost(CPU_CURVE)
    write_sizing(setup, drafter, acc, c, weights)
    best = tree_size.best_chain(setup, drafter, weights)
    assert best == tree_size.fastest([tree_size.predict(acc, c, g, 1, g) for g in tree_size.DEPTHS])
    assert best.branches == 1 and tree_size.default_gamma(3) == best.gamma == 7   # γ 5 leads by 1.4%: a tie
    assert tree_size.default_gamma(2) is None   # another thread count is another machine


def test_a_measurement_is_kept_per_machine(tmp_path, monkeypatch):
    """A cache folder moved to another machine (a host's persistent volume) does not hand it this one's times."""
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    setup = Setup(EMBEDDED_NAME, "cpu", "torch.float32", 1)
    paths = []
    for name in ("AMD EPYC 7B13", "Intel Xeon Platinum 8480+"):
        monkeypatch.setattr(verify_cost, "device_name", lambda device, name=name: name)
        verify_cost.hardware.cache_clear()
        paths.append(setup.path("cost"))
    verify_cost.hardware.cache_clear()
    assert paths[0] != paths[1] and "AMD_EPYC_7B13" in paths[0].name


def test_weights_retrained_under_an_old_file_name_are_sized_anew(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path / "cache"))
    weights = tmp_path / weights_file("eagle").name
    weights.write_bytes(weights_file("eagle").read_bytes())
    setup, drafter, before = embedded_setup(1), drafter_name("eagle", weights), weights_digest("eagle", weights)
    write_sizing(setup, drafter, flat([0.8, 0.1, 0.05, 0.0]), cost(CPU_CURVE), before)
    assert tree_size.best_chain(setup, drafter, before) is not None
    retrained = bytearray(weights.read_bytes())
    retrained[-1] ^= 1
    weights.write_bytes(retrained)
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))   # a later save
    after = weights_digest("eagle", weights)
    assert drafter_name("eagle", weights) == drafter and after != before
    assert tree_size.best_chain(setup, drafter, after) is None


def test_a_flat_cost_curve_picks_a_big_tree_and_a_steep_one_a_small_tree():
    acc = flat([0.55, 0.15, 0.08, 0.04])
    gpu = max(tree_size.candidates(acc, cost([1, 1, 1, 1, 1.02, 1.05, 1.1])), key=lambda s: s.tokens_per_s)
    cpu = max(tree_size.candidates(acc, cost(CPU_CURVE)), key=lambda s: s.tokens_per_s)
    assert gpu.nodes > cpu.nodes and gpu.expected_tokens > cpu.expected_tokens
    assert cpu.nodes <= 16


def test_cost_interpolates_between_measured_sizes():
    c = cost([1, 1.2, 1.4, 1.6, 2.0, 3.0, 5.0])
    assert c.at(1) == pytest.approx(0.02) and c.at(3) == pytest.approx(0.02 * 1.3)
    assert c.at(128) == pytest.approx(0.02 * 10)


def test_the_cost_over_a_longer_context_is_read_on_the_line_through_the_two_measured():
    """Measured over 128 and 1 024 cached tokens: each size's cost moves linearly with the context, on past
    the longer one; shorter contexts keep the first curve."""
    long = VerifyCost("m", "cpu", "float32", 1, V1_SIZES, [0.03, 0.03, 0.04, 0.05, 0.06, 0.08, 0.12], context=1024)
    c = replace(cost([1, 1, 1.5, 2, 2.5, 3, 4]), longer=long)
    assert c.at_context(64) is c and c.at_context(128).seconds == c.seconds
    mid = c.at_context(576)
    assert mid.context == 576 and mid.longer is None
    assert mid.at(1) == pytest.approx(0.025) and mid.at(8) == pytest.approx(0.045)
    assert c.at_context(1920).at(1) == pytest.approx(0.04) and c.at_context(1920).at(64) == pytest.approx(0.16)
    assert VerifyCost(**json.loads(json.dumps(asdict(c)))) == c   # kept as JSON with its longer curve
    assert cost([1] * 7).at_context(4096) == cost([1] * 7)       # a curve measured at one context: no change


def test_a_wider_pass_measured_cheaper_is_pooled_with_its_neighbour():
    """The curve measured on a busy machine (one token 61.6 ms, four 54.8 ms): the closest non-decreasing
    curve, so a 3-token draft no longer looks free, and no sizer drafts on text nobody guesses."""
    measured = [0.0616, 0.0719, 0.0548, 0.0705, 0.0836, 0.1276, 0.2283]
    c = VerifyCost("m", "cpu", "float32", 1, V1_SIZES, measured)
    assert c.seconds == pytest.approx([0.0616, 0.06335, 0.06335, 0.0705, 0.0836, 0.1276, 0.2283])
    assert all(a <= b for a, b in zip(c.seconds, c.seconds[1:])) and c.at(4) > c.at(1)
    assert verify_cost.monotone([3.0, 2.0, 1.0]) == pytest.approx([2.0] * 3)
    assert verify_cost.monotone([1.0, 2.0, 4.0]) == [1.0, 2.0, 4.0]
    hopeless = adaptive.start(flat([0.05] * 8), c, adaptive.Space(depth=8, branches=1, nodes=64))
    assert adaptive.choose(hopeless, 64).gamma == 0   # with the dip, a 3-token chain looked 7% faster


def test_acceptance_counts_the_rank_of_the_targets_token_among_the_drafters(monkeypatch):
    def node(depth, verdict, target, guesses):
        return DraftStep(position=depth, token_id=guesses[0], token="", q=0.5, p=0.5, ratio=1.0, u=None,
                         verdict=verdict, rule="greedy", beta=0.5, p_top=TopK([target], [""], [0.9]),
                         q_top=TopK(guesses, [""] * len(guesses), [0.5] * len(guesses)))

    its = [Iteration(0, 3, 1, [1, 2], drafts=[node(1, "accepted", 1, [1, 5]), node(2, "rejected", 6, [7, 6]),
                                               node(3, "unverified", 0, [0])], draft_time=0.03, draft_calls=3),
           Iteration(1, 1, 0, [9], drafts=[node(1, "rejected", 9, [3, 4])], draft_time=0.01, draft_calls=1)]
    trace = Trace("", [], "t", "d", DecodeSettings(), iterations=its)
    monkeypatch.setattr(tree_size, "PRIOR_NODES", 1)
    acc = tree_size.acceptance([trace], depths=3, ranks=2)
    # depth 2: its one node (the target's token was the rank-1 guess) and one pseudo-node of depth 1's row
    assert acc.rank[0] == [0.5, 0.0] and acc.rank[1] == [0.25, 0.5] and acc.rank[2] == acc.rank[1]
    assert acc.samples == [2, 1, 0] and acc.draft_step == pytest.approx(0.01)


def test_the_cost_curve_is_measured_once_and_cached(tiny_llama_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    target = load_model(str(tiny_llama_dirs[0]))
    first = verify_cost.cached(target)
    assert first.sizes == list(verify_cost.SIZES) and all(s > 0 for s in first.seconds)
    assert first.relative[0] == 1.0
    assert (first.context, first.longer.context) == (verify_cost.CONTEXT, verify_cost.LONG_CONTEXT)
    assert first.longer.sizes == first.sizes and first.longer.longer is None
    assert verify_cost.cached(target) == first          # read back, not measured again
    assert len(list((tmp_path / "sizing").glob("*.json"))) == 1


def test_a_first_sizing_says_each_measurement_before_it_runs_and_a_kept_one_says_nothing(tiny_llama_dirs, tmp_path,
                                                                                           monkeypatch):
    from specviz.decoder_process import Status, sizing_stream

    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    monkeypatch.setattr(verify_cost, "_now", {})
    target, draft = (load_model(str(d)) for d in tiny_llama_dirs)
    drafter = DraftModelDrafter(draft)
    steps = sizing.measuring(target, drafter)
    assert next(steps).startswith("Timing the target's passes") and verify_cost.stored(Setup.of(target)) is None
    assert next(steps).startswith("Drafting greedy answers to 4 short prompts")
    assert verify_cost.stored(Setup.of(target)) is not None and not sizing.acceptance_path(target, drafter).is_file()
    assert list(steps) == [] and sizing.acceptance_path(target, drafter).is_file()
    assert list(sizing.measuring(target, drafter)) == []   # kept: read back at once
    *said, sized = sizing_stream(target, drafter)
    assert said == [Status(None)] and sized.chosen is not None
    assert sized.now is None   # the curve was measured by this process: no pass timed again to check it


def test_a_curve_is_stale_only_beyond_the_share_allowed():
    cost = VerifyCost("m", "cpu", "float32", 1, [1, 2], [0.050, 0.060])
    assert verify_cost.stale(cost, None) is None   # not checked: the curve was measured for this sizing
    assert verify_cost.stale(cost, 0.050 * (1 + 0.9 * verify_cost.STALE)) is None
    assert verify_cost.stale(cost, 0.050 * (1 - 0.9 * verify_cost.STALE)) is None
    text = verify_cost.stale(cost, 0.030)
    assert "at 50.0 ms and one timed now took 30.0 ms" in text and text.endswith("(python -m specviz sizing --again)")


def test_a_kept_curve_that_a_pass_timed_now_disagrees_with_is_flagged(tiny_llama_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    monkeypatch.setattr(verify_cost, "_now", {})
    checks = []
    measure = verify_cost.measure
    monkeypatch.setattr(verify_cost, "measure", lambda target, *a, **k: checks.append(a) or measure(target, *a, **k))
    target, draft = (load_model(str(d)) for d in tiny_llama_dirs)
    drafter = DraftModelDrafter(draft)
    assert sizing.size_for(target, drafter).now is None   # measured here: nothing to check
    path = verify_cost.cache_path(target, verify_cost.KEY)
    curve = json.loads(path.read_text())
    path.write_text(json.dumps(curve | {"seconds": [1000 * t for t in curve["seconds"]]}))   # as if timed on a busy bus
    monkeypatch.setattr(verify_cost, "_now", {})   # read back by a later process, which did not measure it
    slow = sizing.size_for(target, drafter)
    assert slow.now is not None
    flagged = [w for w in sizing.warnings(slow) if w.startswith("the kept verify-cost curve")]
    assert len(flagged) == 1 and flagged[0].endswith("(python -m specviz sizing --again)")
    assert sizing.size_for(target, drafter).now == slow.now   # timed once per process
    assert checks == [(), ((1,),)]   # the curve once, then the one-token check once


def test_auto_size_measures_once_and_runs_the_chosen_size(tiny_llama_dirs, tmp_path, monkeypatch):
    from specviz import Run
    from specviz.drafters import DraftModelDrafter
    from specviz.sizing import prepare
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    target, draft = (load_model(str(d)) for d in tiny_llama_dirs)
    drafter = DraftModelDrafter(draft)
    settings = DecodeSettings(auto_size=True, temperature=0, max_new_tokens=8)
    prepared = prepare(target, drafter, settings)
    run = Run(target, drafter, "w1 w2", prepared.settings, sizing=prepared.sizing)
    chosen = run.sizing.chosen
    assert (run.settings.gamma, run.settings.branches, run.settings.nodes) == (chosen.gamma, chosen.branches,
                                                                                chosen.nodes)
    assert chosen == tree_size.preferred(run.sizing.candidates)
    assert run.trace.settings.auto_size and run.trace.settings.gamma == chosen.gamma
    list(run)
    assert len(list((tmp_path / "sizing").glob("*.json"))) == 2   # the cost curve and the acceptance
    assert run.sizing.acceptance.tree_step > 0 and run.sizing.acceptance.draft_step > 0   # each timed


def test_the_sizing_chart_shows_the_curve_the_candidates_and_the_choice():
    from specviz.charts.sizing import sizing_chart
    acc = flat([0.55, 0.15, 0.08, 0.04])
    c = cost([1, 1.15, 1.37, 1.53, 2.15, 3.2, 5.4])
    sizes = tree_size.candidates(acc, c)
    chosen = max(sizes, key=lambda s: s.tokens_per_s)
    fig = sizing_chart(tree_size.Sizing(chosen, sizes, c, acc))
    names = [t.name for t in fig.data]
    assert names[0] == "one pass / one token" and list(fig.data[0].y) == c.relative
    assert "chain (N = depth)" in names and "top-3 tree" in names
    star = fig.data[-1]
    assert star.name.startswith(f"auto: depth {chosen.gamma}, top-{chosen.branches}, N = {chosen.nodes}")
    assert max(y for t in fig.data[1:-1] for y in t.y) == pytest.approx(star.y[0])


def test_thin_deep_rows_keep_their_evidence():
    """Prompt lookup as the calibration measured it: 10 of 53 nodes accepted at depth 1, 4 of 10 at depth 2,
    4 of 4 at depth 3. The deeper rows move from depth 1's 0.19 toward what they measured."""
    def node(depth, accepted):
        return DraftStep(position=depth, token_id=1, token="", q=1.0, p=0.5, ratio=0.5, u=None,
                         verdict="accepted" if accepted else "rejected", rule="greedy", beta=0.5,
                         p_top=TopK([1 if accepted else 2], [""], [0.9]), q_top=TopK([1], [""], [1.0]))

    nodes = [node(1, i < 10) for i in range(53)] + [node(2, i < 4) for i in range(10)] + [node(3, True)] * 4
    trace = Trace("", [], "t", "d", DecodeSettings(), iterations=[Iteration(0, 67, 0, [], drafts=nodes)])
    rows = [row[0] for row in tree_size.acceptance([trace], depths=4, ranks=1).rank]
    assert rows[0] == pytest.approx(10 / 53)
    assert rows[1] == pytest.approx((4 + 20 * rows[0]) / 30) and rows[0] < rows[1] < 0.4
    assert rows[2] == pytest.approx((4 + 20 * rows[1]) / 24) and rows[1] < rows[2] < 1.0
    assert rows[3] == rows[2]   # nothing measured at depth 4: the row above


LOOKUP_EAGLE = Acceptance([[0.42, 0.09, 0.03, 0.01], [0.51, 0.16, 0.05, 0.05]] + [[0.45, 0.23, 0.14, 0.0]] * 6,
                          draft_step=0.0057, samples=[103, 43, 22, 10, 5, 3, 1, 1], overhead=0.002)
ONE_THREAD = VerifyCost("m", "cpu", "float32", 1, V1_SIZES,   # the 2026-11-23 bench's, one thread
                        [0.0665 * r for r in (1, 1.075, 1.284, 1.505, 1.953, 2.908, 4.675)])


def test_a_near_tie_goes_to_the_size_with_more_tokens_per_iteration():
    """The lookup+eagle numbers that chose one node at one thread: it leads two nodes by about 1%, within
    the prediction's noise; the sizer takes the longer draft and its extra tokens per iteration."""
    c = ONE_THREAD
    one, two = tree_size.predict(LOOKUP_EAGLE, c, 1, 1, 1), tree_size.predict(LOOKUP_EAGLE, c, 2, 1, 2)
    assert two.tokens_per_s < one.tokens_per_s < two.tokens_per_s * (1 + tree_size.TIE)
    chosen = tree_size.choose(LOOKUP_EAGLE, c).chosen
    assert chosen.nodes > 1 and chosen.expected_tokens > one.expected_tokens
    top = max(s.tokens_per_s for s in tree_size.candidates(LOOKUP_EAGLE, c))
    assert chosen.tokens_per_s >= top * (1 - tree_size.TIE)


def test_a_near_tie_between_a_chain_and_a_tree_goes_to_the_chain():
    """Sizes where the fastest tree sits within `TIE` of the fastest chain, with more tokens per iteration: the
    tie-break across every size would take the tree, the sizer takes the chain; a tree clearly ahead wins."""
    steep = cost([1, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0])
    tied, ahead = flat([0.5, 0.04, 0.0, 0.0]), flat([0.5, 0.1, 0.0, 0.0])
    sizes = tree_size.candidates(tied, steep)
    chain = tree_size.fastest([size for size in sizes if size.branches == 1])
    assert tree_size.fastest(sizes).branches > 1
    assert tree_size.choose(tied, steep).chosen == chain
    assert tree_size.choose(ahead, steep).chosen.branches > 1


def test_the_search_picks_what_pricing_every_size_picks():
    """`search` leaves unpriced the trees that cannot beat the chain, and must still pick exactly the size
    `preferred` picks among all candidates: on random tables (ranks out of order, rows that rise with depth),
    curves from a GPU's flat one to this CPU's steep one, drafter steps cheap and dear, every limit."""
    rng = torch.Generator().manual_seed(7)
    flat_gpu = [1, 1, 1, 1, 1.02, 1.05, 1.1]
    for trial in range(300):
        rows = torch.rand(8, 4, generator=rng) * torch.rand(8, 1, generator=rng)
        rows = rows / rows.sum(dim=1, keepdim=True).clamp_min(1.0)
        step = float(torch.rand(1, generator=rng)) * 0.01
        acc = Acceptance(rows.tolist(), draft_step=step, samples=[50] * 8, overhead=0.001,
                         tree_step=step * (1 + float(torch.rand(1, generator=rng))))
        c = cost(flat_gpu if trial % 3 == 0 else CPU_CURVE if trial % 3 == 1 else [1, 1.02, 1.05, 1.1, 1.3, 1.8, 3])
        depth, branches = 1 + trial % 8, 1 + trial // 8 % 4
        nodes = tree_size.BUDGETS[trial // 32 % len(tree_size.BUDGETS)]
        every = tree_size.preferred(tree_size.candidates(acc, c, depth, branches, nodes))
        assert tree_size.search(acc, c, depth, branches, nodes) == every


def test_a_clear_lead_still_goes_to_one_node():
    """A drafter whose second guess is almost never right, with a costly drafter step: one node is clearly
    fastest and stays the choice."""
    acc = Acceptance([[0.3, 0.0, 0.0, 0.0]] + [[0.05, 0.0, 0.0, 0.0]] * 7, draft_step=0.01, samples=[100] * 8)
    chosen = tree_size.choose(acc, ONE_THREAD).chosen
    assert (chosen.gamma, chosen.nodes) == (1, 1)


def test_the_iterations_fixed_work_is_part_of_its_time():
    with_overhead = Acceptance(LOOKUP_EAGLE.rank, LOOKUP_EAGLE.draft_step, LOOKUP_EAGLE.samples, overhead=0.01)
    c = ONE_THREAD
    size = tree_size.predict(with_overhead, c, 2, 1, 2)
    assert size.tokens_per_s == pytest.approx(size.expected_tokens / (0.01 + 2 * 0.0057 + c.at(3)))


def test_a_trees_drafter_steps_are_priced_at_a_trees_step():
    """A tree's frontier goes through the drafter in one batch, a dearer call than a chain's one node: the
    chain's steps are priced at `draft_step`, the tree's at `tree_step`, and at `draft_step` where none was timed."""
    c = ONE_THREAD
    acc = replace(LOOKUP_EAGLE, tree_step=0.008)
    for a, tree_step in ((acc, 0.008), (LOOKUP_EAGLE, LOOKUP_EAGLE.draft_step)):
        chain, tree = tree_size.predict(a, c, 3, 1, 3), tree_size.predict(a, c, 3, 2, 4)
        assert chain.tokens_per_s == pytest.approx(chain.expected_tokens / (0.002 + 3 * 0.0057 + c.at(4)))
        assert tree.tokens_per_s == pytest.approx(tree.expected_tokens / (0.002 + 3 * tree_step + c.at(5)))
    slower = {(s.gamma, s.branches, s.nodes): s.tokens_per_s for s in tree_size.candidates(acc, c)}
    for size in tree_size.candidates(LOOKUP_EAGLE, c):
        key = (size.gamma, size.branches, size.nodes)
        assert (slower[key] < size.tokens_per_s) if size.branches > 1 else slower[key] == size.tokens_per_s


def test_each_copying_situation_is_measured_at_every_position_of_the_answers():
    """The copy after prompt + answer[:i], for every i, against the answer's next tokens; the first depth's
    rates made non-decreasing with the match's length."""
    drafter = NgramDrafter(16, torch.device("cpu"))
    trace = Trace("", [1, 2, 3, 4, 5, 6, 7], "t", "ngram", DecodeSettings(), generated_ids=[9, 2, 3, 4, 5, 6, 8])
    tables = sizing.copy_acceptance(drafter, [trace])
    # after "9 2 3" (a 2-token match) the copy "4 5 6 7" is right three times; after "2 3 4", "2 3 4 5" and
    # "2 3 4 5 6" (3-, 4- and 5-token matches) the copies "5 6 7", "6 7" and "7" get two, one and none right
    assert set(tables) == {"match 2", "match 3", "match 4", "match 5"}
    # first tokens right 1, 1, 1, 0 along the lengths: the 5-token match's miss pools them all at 3 of 4
    assert [tables[s][0][0] for s in ("match 2", "match 3", "match 4", "match 5")] == pytest.approx([0.75] * 4)
    assert tables["match 2"][1][0] == pytest.approx((1 + tree_size.PRIOR_NODES * 0.75) / (1 + tree_size.PRIOR_NODES))
    assert all(row[1:] == [0.0] * 3 for table in tables.values() for row in table)
    assert sizing.copy_acceptance(DraftModelDrafter.__new__(DraftModelDrafter), [trace]) == {}   # copies nothing


def test_a_curve_made_non_decreasing_pools_violators_by_their_weight():
    assert verify_cost.monotone([0.2, 0.9, 0.3], [10, 1, 3]) == pytest.approx([0.2, 0.45, 0.45])
    assert verify_cost.monotone([0.9, 0.3], [1, 1]) == verify_cost.monotone([0.9, 0.3]) == pytest.approx([0.6, 0.6])


def test_an_encoder_decoder_pair_is_told_to_draft_a_chain_before_anything_is_measured(tiny_t5_dirs, monkeypatch):
    from specviz.errors import SpecvizError
    from specviz.sizing import prepare

    def measured(*args, **kwargs):
        raise AssertionError("the pair was measured")

    monkeypatch.setattr(sizing, "calibrate", measured)
    monkeypatch.setattr(verify_cost, "measure", measured)
    target, drafter = (load_model(str(d)) for d in tiny_t5_dirs)
    chain = DecodeSettings(gamma=3, auto_size=False, adaptive=False)
    for settings in (replace(chain, auto_size=True), replace(chain, adaptive=True)):
        with pytest.raises(SpecvizError, match="encoder-decoder model: the auto size and the adaptive length measure "
                                               "token trees, .*; turn both off and draft a chain"):
            prepare(target, DraftModelDrafter(drafter), settings)
    assert prepare(target, DraftModelDrafter(drafter), chain).settings == chain


def test_a_parallel_drafters_block_is_one_step_and_bounds_the_depths():
    """Blockwise heads draft every position of their block in one pass: a draft of any depth costs one drafter
    step, and no depth beyond the block (which it cannot draft) is searched."""
    c, block = ONE_THREAD, replace(LOOKUP_EAGLE, block=4)
    for gamma in (1, 3, 4):
        size = tree_size.predict(block, c, gamma, 1, gamma)
        assert size.tokens_per_s == pytest.approx(size.expected_tokens / (0.002 + 0.0057 + c.at(gamma + 1)))
    assert max(s.gamma for s in tree_size.candidates(block, c)) == 4
    assert max(s.gamma for s in tree_size.candidates(LOOKUP_EAGLE, c)) == max(tree_size.DEPTHS)
    assert tree_size.search(block, c, 8, 4, 64).gamma <= 4
    deep = tree_size.predict(LOOKUP_EAGLE, c, 4, 1, 4)
    assert tree_size.predict(block, c, 4, 1, 4).tokens_per_s > deep.tokens_per_s   # three steps fewer
    assert tree_size.predict(block, c, 0, 1, 0).tokens_per_s == pytest.approx(1 / (0.002 + c.at(1)))   # no draft
