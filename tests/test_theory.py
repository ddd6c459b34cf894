"""Leviathan et al.'s formulas against values computed by hand."""

from __future__ import annotations

import pytest

from specviz import SpecvizError, theory


def test_expected_tokens():
    assert theory.expected_tokens(0.8, 4) == pytest.approx((1 - 0.8**5) / 0.2)  # 3.3616
    assert theory.expected_tokens(0.8, 4) == pytest.approx(3.3616)
    assert theory.expected_tokens(1.0, 4) == 5.0
    assert theory.expected_tokens(0.0, 7) == 1.0


def test_walltime_improvement():
    assert theory.walltime_improvement(0.8, 4, 0.1) == pytest.approx(3.3616 / 1.4)
    assert theory.walltime_improvement(0.0, 3, 0.5) == pytest.approx(1 / 2.5)
    assert theory.walltime_improvement(1.0, 3, 0.0) == 4.0


def test_optimal_gamma():
    # S(7) = 4.16114 / 1.35 = 3.0823, S(8) = 4.32891 / 1.40 = 3.0921, S(9) = 4.46313 / 1.45 = 3.0780
    assert theory.optimal_gamma(0.8, 0.05) == 8
    assert theory.optimal_gamma(0.0, 0.1) == 1
    assert theory.optimal_gamma(1.0, 0.0, max_gamma=16) == 16


def test_a_parallel_drafter_drafts_its_block_in_one_step():
    """Block B = 4: γ ≤ 4 drafts γ tokens for one drafter step, γ > 4 drafts 4; the optimum is B."""
    assert theory.walltime_improvement(0.8, 4, 0.1, block=4) == pytest.approx(3.3616 / 1.1)
    assert theory.walltime_improvement(0.8, 2, 0.1, block=4) == pytest.approx(2.44 / 1.1)   # 1 + .8 + .64
    assert theory.walltime_improvement(0.8, 9, 0.1, block=4) == theory.walltime_improvement(0.8, 4, 0.1, block=4)
    assert theory.walltime_improvement(0.8, 0, 0.1, block=4) == 1.0   # no draft, no drafter step
    assert theory.optimal_gamma(0.8, 0.05, block=4) == 4 and theory.optimal_gamma(0.3, 0.9, block=2) == 2
    assert theory.optimal_gamma(0.0, 0.1, block=4) == 1   # nothing is ever accepted: ties go to the smaller γ
    assert theory.walltime_improvement(0.8, 3, 0.1, block=0) == theory.walltime_improvement(0.8, 3, 0.1)
    with pytest.raises(SpecvizError, match="block must be >= 0"):
        theory.walltime_improvement(0.8, 3, 0.1, block=-1)


@pytest.mark.parametrize("args, message", [((-0.1, 3), r"alpha must be in \[0, 1\], got -0.1"),
                                           ((1.1, 3), r"alpha must be in \[0, 1\], got 1.1"),
                                           ((0.5, -1), "gamma must be >= 0, got -1")])
def test_bad_arguments(args, message):
    with pytest.raises(SpecvizError, match=message):
        theory.expected_tokens(*args)
