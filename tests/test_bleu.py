"""BLEU on token ids: 1 for the same sequence, 0 with nothing in common, graded where a divergence shifts the rest."""

import math

import pytest

from specviz.bleu import bleu
from specviz.study import token_match_rate


def test_the_same_output_scores_one_and_a_disjoint_one_zero():
    assert bleu([1, 2, 3, 4, 5], [1, 2, 3, 4, 5]) == 1.0
    assert bleu([6, 7, 8], [1, 2, 3]) == 0.0
    assert bleu([], []) == 1.0 and bleu([], [1]) == 0.0 and bleu([1], []) == 0.0


def test_a_shift_after_one_token_keeps_the_wording_a_position_match_loses():
    reference = list(range(1, 21))
    shifted = [99, *reference[:-1]]   # one token inserted: every later position moves by one
    assert token_match_rate(shifted, reference) == 0.0
    assert bleu(shifted, reference) > 0.75


def test_the_score_is_papinenis_formula_with_smoothed_higher_orders():
    output, reference = [1, 2, 3, 9], [1, 2, 3, 4, 5]
    p1, p2, p3, p4 = 3 / 4, (2 + 1) / (3 + 1), (1 + 1) / (2 + 1), (0 + 1) / (1 + 1)
    expected = math.exp(1 - 5 / 4) * math.exp(sum(math.log(p) for p in (p1, p2, p3, p4)) / 4)
    assert bleu(output, reference) == pytest.approx(expected)
    assert bleu([1, 1, 1, 1], [1, 2, 3, 4]) < bleu([1, 2, 1, 1], [1, 2, 3, 4])   # a repeated token counts once
