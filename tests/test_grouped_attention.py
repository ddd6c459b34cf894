"""Grouped-query verification attention computes what transformers' SDPA computes, without the copy."""

from __future__ import annotations

import pytest
import torch
from transformers.integrations import sdpa_attention

from specviz import load_model
from specviz.corpus.answer import Ask, answer
from specviz.grouped_attention import NAME
from specviz.kv_cache import CachedLM

PROMPT = [5, 15, 3, 9, 11, 8, 14, 2, 12, 13, 7, 6]
TREE = [-1, 0, 0, 1, 2, 4]      # a token tree: two branches under the first node
DRAFTS = [12, 9, 10, 4, 15, 6]


@pytest.fixture(scope="module")
def pair(tiny_llama_dirs):
    """The tiny GQA target (4 query heads over 2 key/value heads) as loaded, and with transformers' SDPA."""
    grouped = load_model(str(tiny_llama_dirs[0]))
    plain = load_model(str(tiny_llama_dirs[0]))
    plain.model.set_attn_implementation("sdpa")
    return grouped, plain


def test_a_cpu_model_with_grouped_heads_is_switched_on_loading(pair):
    grouped, plain = pair
    assert grouped.model.config._attn_implementation == NAME
    assert plain.model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("parents", [None, list(range(-1, len(DRAFTS) - 1)), TREE], ids=["prefill", "chain", "tree"])
def test_verification_logits_match_transformers_sdpa(pair, parents, monkeypatch):
    copies = []
    repeat = sdpa_attention.repeat_kv
    monkeypatch.setattr(sdpa_attention, "repeat_kv", lambda x, n: copies.append(n) or repeat(x, n))
    out = []
    for loaded in pair:
        lm = CachedLM(loaded)
        lm.start(PROMPT)
        lm.logits(PROMPT[:-3], last=1)           # a cached context first, as a verification has
        out.append(lm.logits(PROMPT + DRAFTS, last=len(DRAFTS) + 1, parents=parents))
        copies.append("passes done")
    assert torch.allclose(out[0], out[1], atol=1e-5)
    grouped_copies = copies[:copies.index("passes done")]
    plain_copies = copies[len(grouped_copies) + 1:-1]
    assert grouped_copies == [], "the grouped path copied the cached keys and values per query head"
    assert len(plain_copies) == 2 * pair[1].model.config.num_hidden_layers   # keys and values, each layer


def test_padded_batches_answer_as_with_transformers_sdpa(pair):
    """The corpus answers prompts of several lengths in one padded batch: a mask on every step, one new
    token per row after the prefill (a step transformers' own path serves)."""
    asks = [Ask(PROMPT[:n], temperature, seed) for n, temperature, seed in ((5, 0.0, 0), (12, 0.9, 1), (8, 0.7, 2))]
    grouped, plain = (answer(loaded, asks, 10) for loaded in pair)
    assert grouped == plain and all(grouped)
