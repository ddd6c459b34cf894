"""The EAGLE head starts over at most its window (`eagle.WINDOW` committed positions): over a longer prompt
it drafts what it drafts when given only the window's positions."""

from __future__ import annotations

import pytest
import torch

from specviz import DecodeSettings
from specviz.drafters import eagle
from specviz.drafters.eagle import EagleDrafter, EagleHead
from specviz.warpers import Warper


def features(target, ids: list[int]) -> torch.Tensor:
    """The target's final states [len(ids), d] over the whole sequence: what the decoder hands over."""
    with torch.no_grad():
        return target.model(torch.tensor([ids]), output_hidden_states=True).hidden_states[-1][0]


@pytest.mark.parametrize("branches", [1, 2], ids=["chain", "tree"])
def test_a_prompt_longer_than_the_window_drafts_as_its_last_window(small, monkeypatch, branches):
    torch.manual_seed(0)
    head = EagleHead.from_target(small, torch.arange(small.vocab_size), std=0.3)
    window = 6
    monkeypatch.setattr(eagle, "WINDOW", window)
    prompt = torch.randint(3, small.vocab_size, (20,)).tolist()
    committed = torch.randint(3, small.vocab_size, (3,)).tolist()   # what two iterations committed
    states = features(small, prompt + committed)
    warper, generator = Warper(DecodeSettings(temperature=0.0)), torch.Generator()
    long, short = EagleDrafter(head, small.vocab_size), EagleDrafter(head, small.vocab_size)
    cut = len(prompt) - window - 1          # the window's prompt: its last window + 1 tokens
    for drafter, begin in ((long, 0), (short, cut)):
        drafter.begin(prompt[begin:])
        drafter.observe(states[begin: len(prompt) - 1])
    seen = len(prompt) - 1
    for generated in ([], committed[:1], committed):
        done = len(prompt) - 1 + len(generated)   # an iteration committed these: the decoder hands them over
        for drafter in (long, short):
            drafter.observe(states[seen:done])
        seen = done
        pair = [d.propose(generated, 3, warper, generator, branches=branches, nodes=5) for d in (long, short)]
        assert pair[0].tokens.tolist() == pair[1].tokens.tolist() and pair[0].parents == pair[1].parents
        torch.testing.assert_close(pair[0].q, pair[1].q, atol=1e-5, rtol=1e-4)
    assert long.start == len(prompt) - 1 - window and short.start == 0
