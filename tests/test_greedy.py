"""Greedy speculative decoding is target-only greedy decoding, token for token (Petals)."""

from __future__ import annotations

import pytest
import torch

from specviz import DecodeSettings, Trace, generate, load_model
from specviz.drafters import DraftModelDrafter, NgramDrafter

PROMPTS = [
    "Rewrite this sentence exactly, then once more: The committee approved the budget for the new library.",
    "Write a Python function that returns the factorial of n.",
    "What is the capital of France? Answer in one sentence.",
]
NEW_TOKENS = 24


def target_greedy(loaded, prompt: str, new_tokens: int) -> list[int]:
    ids = torch.tensor([loaded.encode_prompt(prompt)], device=loaded.device)
    with torch.no_grad():
        out = loaded.model.generate(ids, do_sample=False, max_new_tokens=new_tokens)
    if loaded.is_encoder_decoder:
        return out[0, 1:].tolist()  # drop the decoder start token
    return out[0, ids.shape[1]:].tolist()


@pytest.fixture(scope="module")
def references(embedded):
    return {prompt: target_greedy(embedded, prompt, NEW_TOKENS) for prompt in PROMPTS}


@pytest.mark.parametrize("gamma", [1, 5])
@pytest.mark.parametrize("verify", ["greedy", "sampling"])  # sampling at temperature 0 is greedy
def test_ngram_drafter_reproduces_target_greedy(embedded, references, gamma, verify):
    drafter = NgramDrafter(embedded.vocab_size, embedded.device)
    verdicts = []
    for prompt in PROMPTS:
        settings = DecodeSettings(gamma=gamma, verify=verify, temperature=0, max_new_tokens=NEW_TOKENS)
        trace = generate(embedded, drafter, prompt, settings)
        assert trace.generated_ids == references[prompt]
        verdicts += [d.verdict for it in trace.iterations for d in it.drafts]
    assert {"accepted", "rejected"} <= set(verdicts)   # drafts were made, and the rule decided both ways


def test_draft_lm_reproduces_target_greedy(embedded, references, layer_drafter_dir):
    """A truncated copy of the target is rejected almost always; the target drafting for itself, never."""
    settings = DecodeSettings(gamma=3, verify="greedy", max_new_tokens=NEW_TOKENS)

    def verdicts(drafter, prompt: str) -> tuple[set[str], Trace]:
        trace = generate(embedded, DraftModelDrafter(drafter), prompt, settings)
        assert trace.generated_ids == references[prompt] and trace.summary().c > 0
        return {d.verdict for it in trace.iterations for d in it.drafts}, trace

    truncated = load_model(str(layer_drafter_dir))
    assert all("rejected" in verdicts(truncated, prompt)[0] for prompt in PROMPTS[1:])
    itself, trace = verdicts(embedded, PROMPTS[0])
    assert "accepted" in itself and "rejected" not in itself
    assert all(it.final.kind == "bonus" for it in trace.iterations[:-1])


def test_baseline_reproduces_target_greedy(embedded, references):
    settings = DecodeSettings(verify="greedy", max_new_tokens=NEW_TOKENS)
    trace = generate(embedded, None, PROMPTS[0], settings)
    assert trace.generated_ids == references[PROMPTS[0]]
    assert all(len(it.emitted_ids) == 1 and it.final.kind == "target" for it in trace.iterations)


@pytest.mark.parametrize("first_target", [False, True])
@pytest.mark.parametrize("gamma", [1, 4])
def test_encoder_decoder_pair_reproduces_target_greedy(tiny_t5_dirs, gamma, first_target):
    target_dir, drafter_dir = tiny_t5_dirs
    target, drafter = load_model(str(target_dir)), load_model(str(drafter_dir))
    for prompt in ["w1 w2 w3", "w4 w4 w5 w6 w7", "w12 w0"]:
        settings = DecodeSettings(gamma=gamma, verify="greedy", max_new_tokens=12, first_target=first_target)
        trace = generate(target, DraftModelDrafter(drafter), prompt, settings)
        assert trace.generated_ids == target_greedy(target, prompt, 12)
        if first_target:
            assert trace.iterations[0].drafted == 0


def test_encoder_runs_once_per_model_per_prompt(tiny_t5_dirs, monkeypatch):
    target_dir, drafter_dir = tiny_t5_dirs
    target, drafter = load_model(str(target_dir)), load_model(str(drafter_dir))
    target.eos_ids = frozenset()   # no early end: every iteration after the first would encode again
    calls = []
    for loaded in (target, drafter):
        encoder = loaded.model.get_encoder()
        monkeypatch.setattr(encoder, "forward", _counting(encoder.forward, calls, loaded.name))
    trace = generate(target, DraftModelDrafter(drafter), "w1 w2 w3", DecodeSettings(gamma=3, max_new_tokens=10))
    assert len(trace.iterations) > 1
    assert sorted(calls) == sorted([target.name, drafter.name])


def _counting(forward, calls, name):
    def wrapped(*args, **kwargs):
        calls.append(name)
        return forward(*args, **kwargs)
    return wrapped


def test_eos_inside_a_draft_ends_generation(tiny_llama_dirs):
    """Nothing is emitted after EOS, even when the draft ran past it: an accepted EOS with drafts after it
    ends the run there."""
    target_dir, drafter_dir = tiny_llama_dirs
    target, drafter = load_model(str(target_dir)), load_model(str(drafter_dir))
    eos = next(iter(target.eos_ids))
    past_eos = 0
    for seed in range(40):
        settings = DecodeSettings(gamma=4, temperature=1.5, max_new_tokens=30, seed=seed)
        trace = generate(target, DraftModelDrafter(drafter), "w1 w2", settings)
        assert eos not in trace.generated_ids[:-1]
        for it in trace.iterations:
            drafted = [d.token_id for d in it.drafts]
            if eos in drafted[:-1] and drafted.index(eos) < it.accepted:
                past_eos += 1
                assert it is trace.iterations[-1] and it.emitted_ids[-1] == eos
    assert past_eos   # the case this test is for did come up


@pytest.mark.parametrize("max_new_tokens", [1, 7])
def test_max_new_tokens_is_exact(embedded, max_new_tokens):
    prompt = "Count from one to fifty in words, separated by commas."
    settings = DecodeSettings(gamma=4, verify="greedy", max_new_tokens=max_new_tokens)
    trace = generate(embedded, NgramDrafter(embedded.vocab_size, embedded.device), prompt, settings)
    assert len(trace.generated_ids) == max_new_tokens
    assert trace.generated_ids == target_greedy(embedded, prompt, max_new_tokens)
