"""Sizing the tree: the verify-cost curve, acceptance by depth and rank, the expected tokens."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from specviz import load_model, theory, tree_size, verify_cost
from specviz.device import pick_device, pick_dtype
from specviz.drafters import default_drafter, drafter_name
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


def cost(relative: list[float]) -> VerifyCost:
    return VerifyCost("m", "cpu", "float32", 1, list(verify_cost.SIZES), [0.02 * r for r in relative])


def write_sizing(setup: Setup, drafter: str, acc: Acceptance, c: VerifyCost) -> None:
    """A cached sizing, as `size_for` leaves it, for the target of `setup` and the drafter named `drafter`."""
    for what, record in (("verify-cost", c), (f"acceptance-{drafter}", acc)):
        path = setup.path(what)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(record)))


def embedded_setup(threads: int) -> Setup:
    device = pick_device()
    return Setup(EMBEDDED_NAME, str(device), str(pick_dtype(device)), threads)


def test_the_default_gamma_is_the_fastest_cached_chain(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    setup, drafter = embedded_setup(3), drafter_name(default_drafter())
    assert tree_size.best_chain(setup, drafter) is None and tree_size.default_gamma(3) is None  # nothing measured
    acc, c = flat([0.8, 0.1, 0.05, 0.0]), cost(CPU_CURVE)
    write_sizing(setup, drafter, acc, c)
    best = tree_size.best_chain(setup, drafter)
    assert best == max((tree_size.predict(acc, c, g, 1, g) for g in tree_size.DEPTHS), key=lambda s: s.tokens_per_s)
    assert best.branches == 1 and tree_size.default_gamma(3) == best.gamma == 5
    assert tree_size.default_gamma(2) is None   # another thread count is another machine


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


def test_acceptance_counts_the_rank_of_the_targets_token_among_the_drafters(monkeypatch):
    def node(depth, verdict, target, guesses):
        return DraftStep(position=depth, token_id=guesses[0], token="", q=0.5, p=0.5, ratio=1.0, u=None,
                         verdict=verdict, rule="greedy", beta=0.5, p_top=TopK([target], [""], [0.9]),
                         q_top=TopK(guesses, [""] * len(guesses), [0.5] * len(guesses)))

    its = [Iteration(0, 3, 1, [1, 2], drafts=[node(1, "accepted", 1, [1, 5]), node(2, "rejected", 6, [7, 6]),
                                               node(3, "unverified", 0, [0])], draft_time=0.03, draft_calls=3),
           Iteration(1, 1, 0, [9], drafts=[node(1, "rejected", 9, [3, 4])], draft_time=0.01, draft_calls=1)]
    trace = Trace("", [], "t", "d", DecodeSettings(), iterations=its)
    assert tree_size.acceptance([trace], depths=3, ranks=2).rank == [[0.5, 0.0]] * 3  # too few samples deeper
    monkeypatch.setattr(tree_size, "MIN_SAMPLES", 1)
    acc = tree_size.acceptance([trace], depths=3, ranks=2)
    assert acc.rank[0] == [0.5, 0.0] and acc.rank[1] == [0.0, 1.0] and acc.rank[2] == acc.rank[1]
    assert acc.samples == [2, 1, 0] and acc.draft_step == pytest.approx(0.01)


def test_the_cost_curve_is_measured_once_and_cached(tiny_llama_dirs, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    target = load_model(str(tiny_llama_dirs[0]))
    first = verify_cost.cached(target)
    assert first.sizes == list(verify_cost.SIZES) and all(s > 0 for s in first.seconds)
    assert first.relative[0] == 1.0
    assert verify_cost.cached(target) == first          # read back, not measured again
    assert len(list((tmp_path / "sizing").glob("*.json"))) == 1


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
    assert chosen.tokens_per_s == max(s.tokens_per_s for s in run.sizing.candidates)
    assert run.trace.settings.auto_size and run.trace.settings.gamma == chosen.gamma
    list(run)
    assert len(list((tmp_path / "sizing").glob("*.json"))) == 2   # the cost curve and the acceptance


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
