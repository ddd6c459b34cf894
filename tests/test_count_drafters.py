"""Unigram and bigram drafters: count tables with add-k smoothing (Leviathan et al.'s cheapest M_q)."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import test_lossless
import torch
from test_greedy import target_greedy
from test_lossless import SETTINGS, chi_square_p_value, exact_two_tokens, sampled_two_tokens

from specviz import DecodeSettings, generate
from specviz.drafters import COUNT_KINDS, build_drafter, drafter_name
from specviz.drafters.counts import ORDERS, CountDrafter, CountTable, default_table, save_counts
from specviz.drafters.weights import fingerprint
from specviz.errors import SpecvizError
from specviz.warpers import Warper

PROMPTS = ["Write a Python function that checks if a number is even.", "Give me three tips for better sleep."]
NEW_TOKENS = 16
# token sequences over the tiny models' 16-token vocabulary, counted from index 1 on: 6 ("w3", the
# lossless prompt's last token) is often a context, 3 never is (its rows back off to the unigram)
SEQUENCES = [([4, 5, 6, 7, 6, 7, 6, 9, 10], 1), ([5, 6, 7, 8, 6, 7, 11, 3], 1), ([6, 12, 13, 6, 7, 4], 1)]

pair = test_lossless.pair   # the lossless tests' fixtures: the tiny target (and its drafter LM), and with no EOS
target_without_eos = test_lossless.target_without_eos


def table(kind: str, vocab: int = 16) -> CountTable:
    return CountTable.count(SEQUENCES, vocab, ORDERS[kind])


@pytest.fixture(scope="module")
def references(embedded):
    torch.set_num_threads(1)  # one-token steps: a second thread only adds synchronisation
    return {prompt: target_greedy(embedded, prompt, NEW_TOKENS) for prompt in PROMPTS}


@pytest.mark.parametrize("kind", COUNT_KINDS)
def test_greedy_output_is_target_greedy(embedded, references, kind):
    """Chains here; token trees in test_tree_drafters."""
    drafter = build_drafter(kind, embedded)
    assert drafter.name == drafter_name(kind)
    for prompt in PROMPTS:
        settings = DecodeSettings(gamma=4, temperature=0, max_new_tokens=NEW_TOKENS)
        trace = generate(embedded, drafter, prompt, settings)
        assert trace.generated_ids == references[prompt]
        assert all(it.draft_calls == 0 for it in trace.iterations)   # table lookups: c ≈ 0, no c to report
        assert trace.summary().c is None


@pytest.mark.parametrize("kind", COUNT_KINDS)
@pytest.mark.parametrize("settings", SETTINGS[:2], ids=["plain", "top-k"])
def test_speculative_sampling_with_count_q_is_lossless(target_without_eos, kind, settings):
    target, _ = target_without_eos
    drafter = CountDrafter(table(kind), target.device, smoothing=0.3)   # mass on every token: both verdicts occur
    exact, verdicts = exact_two_tokens(target, settings), Counter()
    assert chi_square_p_value(exact, sampled_two_tokens(target, drafter, settings, verdicts=verdicts)) > 1e-3
    assert verdicts["kept"] > 0 and verdicts["rejected"] > 0


def test_add_k_smoothing_gives_every_token_mass():
    k, vocab = 0.01, 16
    bigram = CountDrafter(table("bigram"), torch.device("cpu"), smoothing=k)
    unigram = CountDrafter(table("unigram"), torch.device("cpu"), smoothing=k)
    q = bigram.log_q(list(range(vocab))).exp()
    assert (q > 0).all() and torch.allclose(q.sum(-1), torch.ones(vocab))
    # 6 is followed by 7 five times of seven: q(7 | 6) = (5 + k) / (7 + kV); 3 was never a context
    assert q[6, 7] == pytest.approx((5 + k) / (7 + k * vocab))
    assert q[6, 4] == pytest.approx(k / (7 + k * vocab))
    assert torch.equal(q[3], unigram.log_q([0])[0].exp()) and torch.equal(q[3], q[0])
    # 6 is 6 of the 20 counted tokens
    assert unigram.log_q([5])[0, 6].exp() == pytest.approx((6 + k) / (20 + k * vocab))
    warped = Warper(DecodeSettings(temperature=1.0)).probs(bigram.log_q([6, 3]))
    assert (warped > 0).all() and torch.allclose(warped, q[[6, 3]])
    with pytest.raises(ValueError, match="k > 0"):
        CountDrafter(table("bigram"), torch.device("cpu"), smoothing=0)


@pytest.mark.parametrize("kind", COUNT_KINDS)
def test_tables_round_trip(pair, kind, tmp_path):
    target, _ = pair
    path = tmp_path / f"{kind}.safetensors"
    save_counts(path, table(kind), 0.05, target)
    loaded = build_drafter(kind, target, str(path))
    built = CountDrafter(table(kind), target.device, smoothing=0.05)
    contexts = list(range(target.vocab_size))
    assert torch.equal(loaded.log_q(contexts), built.log_q(contexts))
    assert loaded.name == drafter_name(kind, str(path)) == f"{kind} ({kind})"


def test_tables_for_another_target_or_kind_are_refused(pair, tmp_path):
    target, _ = pair
    for kind in COUNT_KINDS:   # the shipped tables belong to the embedded target
        with pytest.raises(SpecvizError, match="fingerprints differ"):
            build_drafter(kind, target)
    path = tmp_path / "unigram.safetensors"
    save_counts(path, table("unigram"), 0.05, target)
    with pytest.raises(SpecvizError, match="not 'bigram'"):
        build_drafter("bigram", target, str(path))
    with pytest.raises(SpecvizError, match="not found"):
        build_drafter("bigram", target, str(tmp_path / "missing.safetensors"))


@pytest.mark.parametrize("kind", COUNT_KINDS)
def test_shipped_tables_and_cards(embedded, kind):
    path = default_table(kind)
    card = json.loads(path.with_suffix(".json").read_text())
    assert path.stat().st_size == card["bytes"] <= 4_000_000
    assert card["kind"] == kind and card["weights"] == path.name
    assert card["target_fingerprint"] == fingerprint(embedded)
    assert card["table"]["answer_tokens"] > 100_000
    assert build_drafter(kind, embedded).log_q([0]).shape == (1, embedded.vocab_size)
