"""Costs learnt from the clock: the verify pass's two factors fitted to timed passes, the drafter step's
factor, and the adaptive policy drafting narrower once wide passes are dearer than the kept curve says."""

from __future__ import annotations

import pytest
from test_adaptive import TREES, flat
from test_tree_size import ONE_THREAD

from specviz import adaptive, learnt_costs
from specviz.errors import SpecvizError
from specviz.learnt_costs import PassLog, PassPrice, StepPrice, priced
from specviz.settings import DecodeSettings
from specviz.trace import Choice

WIDTHS = (1, 2, 3, 5, 8, 12, 17)


def timed(log: PassLog, a: float, b: float, passes: int = 70, context: int = 128, threads: int = 1) -> None:
    """`passes` passes of every width in turn, each as long as a·v(1) + b·(v(n) − v(1)) on the kept curve."""
    curve = ONE_THREAD.at_context(context)
    for i in range(passes):
        n = WIDTHS[i % len(WIDTHS)]
        log.add(n, context, threads, a * curve.at(1) + b * (curve.at(n) - curve.at(1)))


def test_the_fit_finds_both_factors_of_passes_timed_against_the_curve():
    log = PassLog()
    price = PassPrice(ONE_THREAD, log)
    assert price.factors == pytest.approx((1.0, 1.0))   # nothing timed: the kept curve
    timed(log, 1.6, 2.0)
    price.learn()
    a, b = price.factors
    assert a == pytest.approx(1.6, rel=0.03) and b == pytest.approx(2.0, rel=0.03)
    price.learn()
    assert price.factors == (a, b)   # each pass is read once


def test_one_token_passes_alone_scale_the_whole_curve():
    log = PassLog()
    price = PassPrice(ONE_THREAD, log)
    for _ in range(60):
        log.add(1, 128, 1, 1.5 * ONE_THREAD.at(1))
    price.learn()
    a, b = price.factors
    assert a == pytest.approx(1.5, rel=0.02) and b == pytest.approx(a)


def test_old_passes_fade_and_other_thread_counts_are_not_read():
    log = PassLog()
    price = PassPrice(ONE_THREAD, log)
    timed(log, 1.0, 1.0)
    timed(log, 3.0, 3.0, threads=2)
    price.learn()
    assert price.factors == pytest.approx((1.0, 1.0), rel=0.01)
    timed(log, 2.0, 1.0, passes=700)
    price.learn()
    assert price.factors == pytest.approx((2.0, 1.0), rel=0.07)


def test_the_log_keeps_its_latest_passes_and_says_which_are_new():
    log = PassLog()
    for i in range(learnt_costs.LOG + 10):
        log.add(1, i, 1, 0.1)
    assert len(log.passes) == learnt_costs.LOG and log.since(log.total) == []
    assert [p.context for p in log.since(log.total - 3)] == [learnt_costs.LOG + 7, learnt_costs.LOG + 8,
                                                             learnt_costs.LOG + 9]
    assert len(log.since(0)) == learnt_costs.LOG   # what the ring no longer holds is gone


def test_the_priced_curve_scales_the_one_token_pass_and_the_width_apart():
    curve = priced(ONE_THREAD, 2.0, 0.5)
    one = ONE_THREAD.seconds[0]
    assert curve.seconds == pytest.approx([2 * one + 0.5 * (s - one) for s in ONE_THREAD.seconds])


def test_the_drafter_step_factor_starts_at_one_and_follows_the_drafting_time():
    step = StepPrice()
    assert step.factor(0.004) == 1.0
    for _ in range(100):
        step.learn(seconds=3 * 0.012, steps_priced=3 * 0.004)
    assert step.factor(0.004) == pytest.approx(3.0, rel=0.05)   # the prior: 4 steps against about 90


def widest(log: PassLog | None) -> int:
    """The nodes of the draft the policy chooses first, pricing by the passes in `log` (None: the kept curve)."""
    choice = adaptive.choose(adaptive.start(flat(0.7, ranks=(0.2, 0.1, 0.0)), ONE_THREAD, TREES, log), budget=64)
    assert choice.gamma > 0
    return choice.nodes


def test_the_policy_drafts_narrower_when_wide_passes_cost_more_than_the_curve_says():
    kept = widest(None)
    dear = PassLog()
    timed(dear, 1.0, 4.0)
    assert widest(dear) < kept
    alike = PassLog()
    timed(alike, 1.0, 1.0)
    assert widest(alike) == kept


def test_the_drafting_time_moves_the_drafter_steps_price():
    state = adaptive.start(flat(0.7), ONE_THREAD, TREES, PassLog())
    chain = Choice(3, 1, 3, 2.0, 1.2, 0.7)
    for _ in range(50):
        adaptive.observe_drafting(state, chain, seconds=3 * 0.02, calls=3)
    adaptive.choose(state, budget=64)
    assert state.factors[2] == pytest.approx(10.0, rel=0.15)   # 20 ms a step against the prior's 2 ms
    assert adaptive.estimates(state).draft_step == pytest.approx(0.002 * state.factors[2])


def test_learning_costs_needs_an_adaptive_run():
    with pytest.raises(SpecvizError, match="adaptive"):
        DecodeSettings(learn_costs=True)
