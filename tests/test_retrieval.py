"""The retrieval drafter (REST): continuations of the context's longest suffix found in a datastore."""

from __future__ import annotations

import numpy as np
import pytest
import test_lossless
import torch
from test_greedy import target_greedy
from test_lossless import SETTINGS, chi_square_p_value, exact_two_tokens, sampled_two_tokens

from specviz import DecodeSettings, generate, load_model
from specviz.corpus.store import CORPUS_DIR, Record, save_shard
from specviz.drafters import build_drafter, drafter_name, weights_digest
from specviz.drafters.retrieval import Datastore, RetrievalDrafter, corpus_datastore
from specviz.errors import SpecvizError
from specviz.warpers import Warper

PROMPTS = ["Give me three tips for better sleep.", "Write a Python function that checks if a number is even."]
NEW_TOKENS = 24

pair = test_lossless.pair
target_without_eos = test_lossless.target_without_eos


def store(*sequences: list[int], max_ngram: int = 3) -> Datastore:
    return Datastore.build([np.array(s, dtype=np.uint16) for s in sequences], max_ngram)


def test_the_longest_suffix_found_gives_the_continuations():
    data = store([1, 2, 3, 4], [9, 2, 3, 5], [7, 3, 6])
    n, starts = data.find([8, 2, 3])
    assert n == 2 and sorted(data.tokens[starts].tolist()) == [4, 5]   # "2 3" twice; "8 2 3" nowhere
    n, starts = data.find([9, 2, 3])
    assert n == 3 and data.tokens[starts].tolist() == [5]
    assert data.find([11, 12])[0] == 0
    assert data.find([8, 3], min_ngram=2)[0] == 0                      # "3" alone is too short


def test_the_tree_grows_best_first_and_stops_at_an_answers_end():
    data = store([1, 2, 3], [1, 2, 3], [1, 2, 4, 5], [1, 6])
    _, starts = data.find([1])
    assert data.tree(starts, gamma=4, branches=1, nodes=0) == ([2, 3], [-1, 0])   # the answer ends after 3
    tokens, parents = data.tree(starts, gamma=3, branches=2, nodes=4)
    assert (tokens, parents) == ([2, 3, 6, 4], [-1, 0, -1, 0])    # 2 (3 times), 3 (twice), then 6 and 4 (once each)


@pytest.mark.parametrize("branches", [1, 2])
def test_greedy_output_is_target_greedy(embedded, branches):
    torch.set_num_threads(1)
    drafter = build_drafter("retrieval", embedded)
    assert (drafter.name, drafter.weights) == (drafter_name("retrieval"), weights_digest("retrieval"))
    for prompt in PROMPTS:
        settings = DecodeSettings(gamma=4, branches=branches, nodes=6 if branches > 1 else 0, temperature=0,
                                  max_new_tokens=NEW_TOKENS)
        trace = generate(embedded, drafter, prompt, settings)
        assert trace.generated_ids == target_greedy(embedded, prompt, NEW_TOKENS)
        assert sum(it.accepted for it in trace.iterations) > 0          # the target's own phrasing is found
        assert all(it.draft_calls == 0 for it in trace.iterations)      # no model runs


def test_a_draft_of_retrieved_tokens_is_lossless(target_without_eos):
    """q is one-hot, as prompt lookup's: accept x̃ with probability p(x̃), else resample from p without it."""
    target, _ = target_without_eos
    settings = SETTINGS[0]
    prompt = target.encode_prompt(test_lossless.PROMPT)
    data = store(prompt[-2:] + [5, 6, 7], prompt[-1:] + [8, 5], [9, 9], max_ngram=4)
    drafter = RetrievalDrafter(data, target.vocab_size, target.device)
    drafter.begin(prompt)
    assert drafter.propose([], 2, Warper(settings), torch.Generator()).tokens.tolist() == [5, 6]
    exact = exact_two_tokens(target, settings)
    assert chi_square_p_value(exact, sampled_two_tokens(target, drafter, settings)) > 1e-3


def test_another_targets_corpus_is_refused(tmp_path, tiny_llama_dirs):
    save_shard(tmp_path / "shards" / "a.npz", [Record(np.array([1, 2, 3, 4], np.uint16), 2, "chat", "t", 0.0, -1, "d")],
               {"target": "SmolLM2-135M-Instruct"})
    small = load_model(str(tiny_llama_dirs[0]))
    with pytest.raises(SpecvizError, match="holds answers of 'SmolLM2-135M-Instruct'"):
        build_drafter("retrieval", small, str(tmp_path))
    with pytest.raises(SpecvizError, match="needs a corpus"):
        corpus_datastore(tmp_path / "empty")
    assert len(corpus_datastore(CORPUS_DIR).order) > 1_000_000
