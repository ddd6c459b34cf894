"""Drawing a token: `warpers.sample` inverts the cumulative distribution with one uniform per row."""

from __future__ import annotations

import torch
from scipy.stats import chisquare

from specviz.warpers import sample


def test_a_draw_follows_the_distribution_and_never_takes_a_token_of_probability_zero():
    probs = torch.tensor([0.0, 0.5, 0.0, 0.2, 0.3, 0.0])
    g = torch.Generator().manual_seed(0)
    draws = sample(probs.expand(20000, -1), g)
    counts = torch.bincount(draws, minlength=len(probs))
    assert draws.shape == (20000,) and counts[probs == 0].sum() == 0
    assert chisquare(counts[probs > 0].numpy(), (probs[probs > 0] * 20000).numpy()).pvalue > 1e-3


def test_a_uniform_at_the_edges_still_draws_a_possible_token(monkeypatch):
    """u = 0 takes the first token with mass; u rounded up to the row's whole mass takes the last one."""
    probs = torch.tensor([[0.0, 0.7, 0.3, 0.0]])
    for u, expected in ((0.0, 1), (1.0, 2)):
        monkeypatch.setattr(torch, "rand", lambda *shape, u=u, **kwargs: torch.full(*shape, u, dtype=kwargs["dtype"]))
        assert sample(probs, torch.Generator()).tolist() == [expected]
