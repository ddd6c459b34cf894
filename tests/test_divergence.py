"""Lossless up to floating point: greedy speculative output equals the target alone's in fp32, and in
bf16 parts from it only at a near tie; a verifier that is really wrong is caught by the same check."""

from __future__ import annotations

import pytest
import torch

from specviz import DecodeSettings, generate, verification
from specviz.divergence import Divergence, distribution_at, first_divergence
from specviz.drafters import DraftModelDrafter
from specviz.models import load_model

PROMPTS = ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9 w10", "w11", "w3 w3 w12", "w2 w9 w4 w4", "w5 w6 w7", "w10 w1"]


def divergences(tiny_llama_dirs, dtype: str) -> list[Divergence | None]:
    target = load_model(str(tiny_llama_dirs[0]), dtype=dtype)
    drafter = DraftModelDrafter(load_model(str(tiny_llama_dirs[1]), dtype=dtype))
    target.eos_ids = frozenset()
    out = []
    for prompt in PROMPTS:
        for gamma, branches, nodes in [(4, 1, 0), (3, 2, 6)]:
            settings = DecodeSettings(temperature=0, gamma=gamma, branches=branches, nodes=nodes, max_new_tokens=48)
            alone = generate(target, None, prompt, settings)
            out.append(first_divergence(generate(target, drafter, prompt, settings), alone))
    return out


def test_fp32_greedy_speculative_output_never_parts(tiny_llama_dirs):
    assert divergences(tiny_llama_dirs, "float32") == [None] * 2 * len(PROMPTS)


def test_bf16_output_parts_only_at_near_ties(tiny_llama_dirs):
    assert all(d is None or d.near_tie() for d in divergences(tiny_llama_dirs, "bfloat16"))


def test_a_verifier_that_accepts_every_draft_is_caught(tiny_llama_dirs, monkeypatch):
    def accept_all(p, draft, parents=None):
        passed = torch.ones(len(draft), dtype=torch.bool)
        parents = list(range(-1, len(draft) - 1)) if parents is None else parents
        return verification._walk(passed, parents, p.argmax(dim=-1).tolist())

    monkeypatch.setattr(verification, "greedy", accept_all)
    found = [d for d in divergences(tiny_llama_dirs, "bfloat16") if d is not None]
    assert found and not all(d.near_tie() for d in found)


def test_the_recorded_distribution_at_each_position_is_the_one_its_token_came_from(small):
    drafter = DraftModelDrafter(small)   # the target as its own drafter: every draft accepted
    trace = generate(small, drafter, "w1 w2", DecodeSettings(temperature=0, gamma=3, max_new_tokens=9))
    alone = generate(small, None, "w1 w2", DecodeSettings(temperature=0, max_new_tokens=9))
    assert trace.generated_ids == alone.generated_ids and any(it.accepted for it in trace.iterations)
    for at, token in enumerate(trace.generated_ids):
        ours, theirs = distribution_at(trace, at), distribution_at(alone, at)
        assert ours.ids[0] == theirs.ids[0] == token   # greedy: the argmax of the p behind it
        assert ours.probs[0] == pytest.approx(theirs.probs[0], abs=1e-4)
    assert distribution_at(trace, len(trace.generated_ids)) is None
