"""The parallel drafters' plumbing on a tiny target: training rows aligned with the tokens they
predict, the packed mask-predict pass equal to one cut at a time, cached drafting equal to a fresh
pass, and a block drafted in one call whose tree reuses each position's q."""

from __future__ import annotations

from collections import Counter

import pytest
import test_lossless
import torch
from test_greedy import target_greedy
from test_lossless import SETTINGS, chi_square_p_value, exact_two_tokens, sampled_two_tokens

from specviz import DecodeSettings, generate
from specviz.drafters.base import block_draft
from specviz.drafters.medusa import MedusaDrafter, MedusaHeads
from specviz.drafters.specdrafter import MaskPredictLM, SpecDrafter, block_mask
from specviz.training.batches import index_map, make_batch
from specviz.training.data import answer_in_batches
from specviz.tree import depths
from specviz.warpers import Warper

PROMPTS = ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9 w10"]

pair = test_lossless.pair   # the lossless tests' fixtures: the tiny target (and its drafter LM), and with no EOS
target_without_eos = test_lossless.target_without_eos


def random_drafter(kind: str, target, seed: int = 0):
    """An untrained drafter of `kind` with random weights, so that q is far from p and both verdicts occur."""
    torch.manual_seed(seed)
    vocab = torch.arange(target.vocab_size)
    if kind == "medusa":
        heads = MedusaHeads.from_target(target, vocab, heads=3)
        torch.nn.init.normal_(heads.weight, std=0.3)
        return MedusaDrafter(heads, target.vocab_size)
    lm = MaskPredictLM.from_target(target, vocab, masks=3)
    torch.nn.init.normal_(lm.masks, std=1.0)
    return SpecDrafter(lm, target.vocab_size)


@pytest.fixture(scope="module")
def samples(small):
    return [s for _, batch in answer_in_batches(small, PROMPTS, max_new_tokens=12, top_k=4, batch_size=3)
            for s in batch]


def test_head_rows_target_the_token_i_positions_after_the_targets_own(small, samples):
    index = index_map(torch.arange(small.vocab_size), small.vocab_size)
    batch = make_batch(samples[:1], "medusa", index, torch.device("cpu"), block=3)
    s, first = samples[0], samples[0].n_prompt - 2
    assert torch.equal(batch.features, s.features[first: len(s.tokens) - 2].float())
    expected = [int(s.tokens[first + n + 1 + i]) for n in range(len(batch.features)) for i in range(1, 4)
                if first + n + 1 + i < len(s.tokens)]
    assert batch.targets.next_index.tolist() == expected
    assert batch.slot.tolist() == [i for n in range(len(batch.features)) for i in range(3)
                                   if first + n + 2 + i < len(s.tokens)]


def test_packed_mask_predict_equals_one_cut_at_a_time(small, samples):
    torch.manual_seed(0)
    lm = MaskPredictLM.from_target(small, torch.arange(small.vocab_size), masks=3).eval()
    index = index_map(torch.arange(small.vocab_size), small.vocab_size)
    batch = make_batch(samples, "specdrafter", index, torch.device("cpu"), block=3, cuts=2, seed=5)
    with torch.no_grad():
        packed, _ = lm(batch.tokens, batch.queries, batch.positions, batch.mask)
    n = len(batch.tokens)
    cuts = batch.positions[n:].view(-1, 3)[:, 0].tolist()
    groups = [min(2, s.n_answer) for s in samples]
    owners = [s for s, g in zip(samples, groups) for _ in range(g)]
    assert len(cuts) == len(owners)
    alone = []
    for s, cut in zip(owners, cuts):
        assert s.n_prompt <= cut < len(s.tokens)
        with torch.no_grad():
            logits, _ = lm(s.tokens[:cut].long(), torch.arange(3), torch.arange(cut + 3),
                           block_mask(cut, 0, 3, torch.device("cpu")))
        alone.append(logits)
    assert torch.allclose(packed, torch.cat(alone), atol=1e-4)
    queried = zip([o for o in owners for _ in range(3)], batch.positions[n:].tolist(), batch.counted.tolist())
    expected = [int(s.tokens[p]) for s, p, counted in queried if counted]   # mask j at L + j predicts x_{L+j}
    assert batch.targets.next_index.tolist() == expected


def test_spec_drafter_cache_matches_a_fresh_pass(small):
    torch.manual_seed(0)
    lm = MaskPredictLM.from_target(small, torch.arange(small.vocab_size), masks=4).eval()
    warper = Warper(DecodeSettings(temperature=1.0))
    prompt = small.encode_prompt("w1 w2 w3 w4")
    cached = SpecDrafter(lm, small.vocab_size)
    cached.begin(prompt)
    for generated in ([], [5, 6], [5, 6, 7, 8, 9], [5, 6, 11]):   # grows, then a rejection cuts it back
        draft = cached.propose(generated, 4, warper, torch.Generator().manual_seed(1))
        fresh = SpecDrafter(lm, small.vocab_size)
        fresh.begin(prompt)
        again = fresh.propose(generated, 4, warper, torch.Generator().manual_seed(1))
        assert torch.allclose(draft.q, again.q, atol=1e-5) and torch.equal(draft.tokens, again.tokens)
        assert draft.calls == 1 and len(draft.tokens) == 4


def test_a_block_is_one_call_and_its_tree_reuses_each_positions_q():
    logits = torch.randn(3, 10)
    warper = Warper(DecodeSettings(temperature=1.0))
    chain = block_draft(logits, 8, warper, torch.Generator().manual_seed(0))
    assert chain.calls == 1 and len(chain.tokens) == 3   # γ above k drafts k
    assert torch.allclose(chain.q, torch.softmax(logits, -1))
    tree = block_draft(logits, 3, warper, torch.Generator().manual_seed(0), branches=2, nodes=9)
    assert tree.calls == 1 and len(tree.tokens) == 9
    for depth, q in zip(depths(tree.parents), tree.q):
        assert torch.allclose(q, torch.softmax(logits[depth - 1], -1))
    assert len(block_draft(logits, 0, warper, torch.Generator()).tokens) == 0


@pytest.mark.parametrize("kind", ["medusa", "specdrafter"])
@pytest.mark.parametrize("settings", [SETTINGS[1], DecodeSettings(gamma=2, temperature=1.0, max_new_tokens=3,
                                                                  branches=2, nodes=4, record=False)],
                         ids=["top-k", "tree"])
def test_speculative_sampling_with_a_parallel_q_is_lossless(target_without_eos, kind, settings):
    """Position 2's q never saw the token drafted at position 1: still a proper q, still lossless (3 new tokens,
    so a tree of depth γ = 2 is drafted whole)."""
    target, _ = target_without_eos
    exact, verdicts = exact_two_tokens(target, settings), Counter()
    counts = sampled_two_tokens(target, random_drafter(kind, target), settings, verdicts=verdicts)
    assert chi_square_p_value(exact, counts) > 1e-3 and verdicts["kept"] > 0 and verdicts["rejected"] > 0


@pytest.mark.parametrize("kind", ["medusa", "specdrafter"])
@pytest.mark.parametrize("branches", [1, 2])
def test_greedy_with_a_parallel_drafter_is_target_greedy(pair, kind, branches):
    target, _ = pair
    drafter = random_drafter(kind, target)
    for prompt in PROMPTS:
        settings = DecodeSettings(gamma=3, temperature=0, max_new_tokens=12, branches=branches, nodes=6)
        trace = generate(target, drafter, prompt, settings)
        reference = target_greedy(target, prompt, 12)   # generate stops at EOS, which `target_without_eos` may ignore
        assert trace.generated_ids[: len(reference)] == reference
        assert all(it.draft_calls <= 1 for it in trace.iterations)
        assert trace.block == drafter.block == 3   # the analytic curves price its block as one drafter step


@pytest.mark.parametrize("kind", ["medusa", "specdrafter"])
def test_the_sizing_prices_a_parallel_block_as_one_drafter_step(kind, small, tmp_path, monkeypatch):
    """Calibrated on the tiny target, a parallel drafter's acceptance records its block: every draft it prices
    costs one drafter step whatever its depth, and no depth beyond the block is a candidate."""
    from specviz import sizing, tree_size
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    drafter = random_drafter(kind, small)
    chosen = sizing.size_for(small, drafter)
    acc, cost = chosen.acceptance, chosen.cost
    assert acc.block == drafter.block == 3 and acc.draft_step > 0
    assert max(size.gamma for size in chosen.candidates) == 3
    for gamma in (1, 3):
        size = tree_size.predict(acc, cost, gamma, 1, gamma)
        assert size.tokens_per_s == pytest.approx(size.expected_tokens / (acc.overhead + acc.draft_step
                                                                          + cost.at(gamma + 1)))
