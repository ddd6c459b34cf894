"""The verification rules as pure functions over hand-made p and q."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from specviz import verification


def test_lossless_accepts_when_u_below_ratio_and_resamples_from_residual():
    p = torch.tensor([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    q = torch.tensor([[0.5, 0.25, 0.25]])
    draft = torch.tensor([0])  # ratio p/q = 0.2
    recovered, accepted = [0, 0, 0], 0
    gen = torch.Generator().manual_seed(0)
    for _ in range(2000):
        v = verification.lossless(p, q, draft, gen)
        if v.accepted == 0:
            recovered[v.recovered] += 1
            assert v.residuals[0].tolist() == pytest.approx([0.0, 0.35, 0.05])   # max(0, p − q)
            assert v.u[0] > 0.2
        else:
            accepted += 1
            assert v.bonus is not None and v.recovered is None
    assert accepted / 2000 == pytest.approx(0.2, abs=0.03)
    assert recovered[0] == 0   # the residual normalised: [0, 7/8, 1/8]
    assert chisquare(recovered[1:], [sum(recovered) * 7 / 8, sum(recovered) / 8]).pvalue > 1e-3


def test_lossless_counts_only_up_to_first_rejection():
    p = torch.tensor([[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    q = torch.tensor([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0]])
    v = verification.lossless(p, q, torch.tensor([1, 1, 1]), torch.Generator().manual_seed(0))
    assert v.passed.tolist() == [True, False, True]
    assert v.accepted == 1 and v.recovered == 0 and v.bonus is None



@pytest.mark.parametrize("draws, parents, draft, sampled, recovered", [
    ([0.0], [-1], [0], [True], {1, 2}),                     # a chain: p(0) = 0, drawn from q
    ([0.9, 0.0], [-1, -1], [1, 0], [False, True], {2}),     # the second sibling, tested against p' = [0, 0, 1]
])
def test_a_draw_of_u_zero_never_keeps_a_token_the_target_cannot_emit(monkeypatch, draws, parents, draft, sampled,
                                                                     recovered):
    """torch.rand draws u from [0, 1), so u = 0 happens (once in 2^24 draws): the test is u < p/q, where u ≤ p/q
    would keep a token of p = 0, outside the target's top-k or top-p, or a sibling's removed from p'."""
    rand, given = torch.rand, [torch.tensor(draws)]
    monkeypatch.setattr(torch, "rand", lambda *size, **kw: given.pop() if given else rand(*size, **kw))  # u first
    p = torch.tensor([[0.0, 0.5, 0.5]] + [[1 / 3] * 3] * len(draft))
    q = torch.tensor([[0.9, 0.05, 0.05]] * len(draft))
    v = verification.lossless(p, q, torch.tensor(draft), torch.Generator().manual_seed(0), parents, sampled)
    assert v.accepted == 0 and v.recovered in recovered

@pytest.mark.parametrize("first_drawn, draft, left", [
    (True, [2, 0], [1.0, 0.0, 0.0, 0.0]),     # norm(max(0, p − q)) after the drawn 2: all on 0
    (False, [0, 2], [0.0, 0.25, 0.75, 0.0]),  # p without the picked 0, renormalised
])
def test_a_picked_sibling_after_a_rejection_is_tested_against_what_the_rejection_left(monkeypatch, first_drawn,
                                                                                     draft, left):
    """The second child of the root is picked (q one-hot on it): once the first is rejected it is kept with
    chance p′(x), p′ what the rejection left; with p itself it would be kept here with chance 0.3, not 0.75 or 1."""
    rand, given = torch.rand, [torch.tensor([0.99, 0.7])]
    monkeypatch.setattr(torch, "rand", lambda *size, **kw: given.pop() if given else rand(*size, **kw))
    p = torch.tensor([[0.6, 0.1, 0.3, 0.0]] + [[0.25] * 4] * 2)
    q = torch.tensor([[0.1, 0.1, 0.7, 0.1] if first_drawn else [0.5, 0.1, 0.3, 0.1]] * 2)
    v = verification.lossless(p, q, torch.tensor(draft), torch.Generator().manual_seed(0), [-1, -1],
                              [first_drawn, False])
    assert v.tested == [0, 1] and v.p_left == {1: pytest.approx(left[draft[1]])}
    assert v.path == [1] and v.bonus is not None   # u = 0.7 < p′(x): kept, where p(x) = 0.3 would reject it


def test_residual_mass_is_one_minus_beta():
    p, q = torch.softmax(torch.randn(50), 0), torch.softmax(torch.randn(50), 0)
    assert float(verification.residual(p, q).sum()) == pytest.approx(1 - float(torch.minimum(p, q).sum()), abs=1e-6)


def test_kept_chances_are_how_often_lossless_keeps_a_first_child_as_it_was_drafted():
    """Drawn from q: kept with chance Σ min(p, q); picked (q's top, or a copy whose q is one-hot): with chance
    p(token). The frequency over many draws of x ~ q and u agrees with both."""
    p = torch.tensor([[0.1, 0.6, 0.3], [0.2, 0.2, 0.6]])
    q = torch.tensor([[0.25, 0.5, 0.25], [0.0, 0.0, 1.0]])
    top = q[0].argmax()[None]
    drawn, picked = (float(verification.kept_chances(p, q[:1], top, sampled=[s])[0]) for s in (True, False))
    assert drawn == pytest.approx(0.1 + 0.5 + 0.25) and picked == pytest.approx(0.6)
    gen = torch.Generator().manual_seed(0)
    for sampled, expected in ((True, drawn), (False, picked)):
        kept = 0
        for _ in range(3000):
            x = torch.multinomial(q[0], 1, generator=gen) if sampled else top
            kept += verification.lossless(p, q[:1], x, gen, sampled=[sampled]).accepted
        assert kept / 3000 == pytest.approx(expected, abs=0.03)
    chances = verification.kept_chances(p, q, torch.tensor([2, 0]), parents=[-1, 0], sampled=[True, False])
    assert chances.tolist() == pytest.approx([0.85, 0.2])   # node 1 is scored against node 0's row


def test_greedy_accepts_matching_prefix_then_emits_target_argmax():
    p = torch.eye(4)[[2, 3, 1, 0]]  # argmaxes 2, 3, 1, 0
    v = verification.greedy(p, torch.tensor([2, 3, 0]))
    assert (v.accepted, v.recovered, v.bonus) == (2, 1, None)
    v = verification.greedy(p, torch.tensor([2, 3, 1]))
    assert (v.accepted, v.recovered, v.bonus) == (3, None, 0)


def test_spec_verification_with_beta_one_is_greedy():
    gen = torch.Generator().manual_seed(0)
    for _ in range(200):
        logits = torch.randn(5, 8, generator=gen)
        draft = torch.randint(0, 8, (4,), generator=gen)
        draft[:2] = logits[:2].argmax(-1)  # make long accepted prefixes common
        g = verification.greedy(torch.softmax(logits, -1), draft)
        s = verification.spec_verification(logits, draft, beta=1, tau=100.0)
        assert (g.accepted, g.recovered, g.bonus) == (s.accepted, s.recovered, s.bonus)


def test_spec_verification_ties_break_like_argmax():
    logits = torch.tensor([[1.0, 3.0, 3.0], [0.0, 0.0, 0.0]])
    assert verification.spec_verification(logits, torch.tensor([2]), beta=1, tau=1.0).accepted == 0
    assert verification.spec_verification(logits, torch.tensor([1]), beta=1, tau=1.0).accepted == 1


def test_larger_beta_or_tau_never_accepts_fewer():
    gen = torch.Generator().manual_seed(1)
    for _ in range(200):
        logits = torch.randn(6, 10, generator=gen) * 2
        draft = torch.topk(logits[:5], 3, dim=-1).indices[torch.arange(5), torch.randint(0, 3, (5,), generator=gen)]
        counts = [[verification.spec_verification(logits, draft, beta, tau).accepted
                   for tau in (0.0, 0.5, 1.0, 3.0, 50.0)] for beta in (1, 2, 3, 5, 10)]
        for row in counts:
            assert row == sorted(row)
        for column in zip(*counts):
            assert list(column) == sorted(column)


def test_spec_verification_implements_eq_8_and_9():
    logp = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05], [0.25, 0.25, 0.25, 0.25]]))
    # token 2 is rank 3 with gap log(0.5/0.15) = 1.20
    assert verification.spec_verification(logp, torch.tensor([2]), beta=3, tau=1.3).accepted == 1
    assert verification.spec_verification(logp, torch.tensor([2]), beta=2, tau=1.3).accepted == 0
    assert verification.spec_verification(logp, torch.tensor([2]), beta=3, tau=1.1).accepted == 0
