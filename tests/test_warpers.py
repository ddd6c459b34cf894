"""Warping and drawing a token: `Warper.probs` against transformers' warpers; `warpers.sample` inverts the
cumulative distribution with one uniform per row."""

from __future__ import annotations

import torch
from scipy.stats import chisquare

from specviz.settings import DecodeSettings
from specviz.warpers import Warper, sample


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


def test_warped_probabilities_match_transformers_warpers():
    """Temperature, then top-k, then top-p, as transformers' own logits warpers compute them (an independent
    reference: the lossless tests build their exact distributions with this same Warper)."""
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    logits = torch.randn(64, 50, generator=torch.Generator().manual_seed(0)) * 3
    for temperature, top_k, top_p in ((1.0, 0, 1.0), (0.7, 5, 1.0), (1.3, 0, 0.9), (0.8, 10, 0.6)):
        reference = TemperatureLogitsWarper(temperature)(None, logits)
        if top_k:
            reference = TopKLogitsWarper(top_k)(None, reference)
        if top_p < 1:
            reference = TopPLogitsWarper(top_p)(None, reference)
        ours = Warper(DecodeSettings(temperature=temperature, top_k=top_k, top_p=top_p)).probs(logits)
        torch.testing.assert_close(ours, torch.softmax(reference, -1), atol=1e-6, rtol=1e-5)


def test_top_k_keeps_ties_and_top_p_stops_once_the_mass_is_reached():
    ties = Warper(DecodeSettings(temperature=1.0, top_k=2)).probs(torch.tensor([2.0, 1.0, 1.0, 0.0]))
    assert (ties > 0).tolist() == [True, True, True, False]
    nucleus = Warper(DecodeSettings(temperature=1.0, top_p=0.75)).probs(torch.tensor([0.5, 0.25, 0.125, 0.125]).log())
    torch.testing.assert_close(nucleus, torch.tensor([2 / 3, 1 / 3, 0.0, 0.0]))
