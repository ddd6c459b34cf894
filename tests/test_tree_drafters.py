"""Token trees from every drafter: greedy output stays the target's, drafts really branch, the node
budget holds, and top-k 1 is exactly the chain the drafters proposed before trees existed."""

from __future__ import annotations

import random

import pytest
import torch

from specviz import DecodeSettings, generate, load_model
from specviz.drafters import DraftModelDrafter, NgramDrafter, build_drafter, layers
from specviz.drafters.base import Draft
from specviz.drafters.mixed import merge
from specviz.drafters.ngram import matches
from specviz.errors import SpecvizError
from specviz.kv_cache import CachedLM
from specviz.models import layer_states
from specviz.tree import children, depths, is_chain
from specviz.warpers import Warper

PROMPTS = ["Write a Python function that checks if a number is even.",
           "Rewrite exactly: the cat sat on the mat. The cat sat on the mat."]
NEW_TOKENS = 16
KINDS = ["eagle", "tiny", "medusa", "specdrafter", "ngram", "unigram", "bigram", "model", "lookup+eagle"]


@pytest.fixture(scope="module")
def drafters(embedded, layer_drafter_dir):
    torch.set_num_threads(1)
    return {kind: build_drafter(kind, embedded, str(layer_drafter_dir) if kind == "model" else None)
            for kind in KINDS}


@pytest.fixture(scope="module")
def references(embedded):
    out = {}
    for prompt in PROMPTS:
        ids = torch.tensor([embedded.encode_prompt(prompt)])
        with torch.no_grad():
            out[prompt] = embedded.model.generate(ids, do_sample=False, max_new_tokens=NEW_TOKENS)[0, ids.shape[1]:]
    return {prompt: ids.tolist() for prompt, ids in out.items()}


def recorded(drafter, monkeypatch) -> list[Draft]:
    """Every draft the drafter proposes from now on."""
    drafts, propose = [], drafter.propose

    def keep(*args, **kwargs):
        drafts.append(propose(*args, **kwargs))
        return drafts[-1]

    monkeypatch.setattr(drafter, "propose", keep)
    return drafts


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("branches", [1, 3])
def test_tree_drafts_reproduce_target_greedy(embedded, drafters, references, monkeypatch, kind, branches):
    """A tree holds its node budget, and a chain of γ (no budget given) is γ nodes with every drafter: the
    mixed drafter's copy takes the chain's places and the head fills what the copy leaves."""
    drafts = recorded(drafters[kind], monkeypatch)
    nodes = 10 if branches > 1 else 0
    for prompt in PROMPTS:
        settings = DecodeSettings(gamma=4, temperature=0, max_new_tokens=NEW_TOKENS, branches=branches, nodes=nodes)
        assert generate(embedded, drafters[kind], prompt, settings).generated_ids == references[prompt]
    assert all(len(d.tokens) <= (nodes or 4) for d in drafts)
    branching = any(len(kids) >= 2 for d in drafts for kids in children(d.parents).values())
    if branches == 1 and kind != "lookup+eagle":   # a mixed chain's copy shorter than γ: the head's guess beside it
        assert all(is_chain(d.parents) for d in drafts)
    elif branches > 1 and kind != "ngram":   # prompt lookup branches only where a suffix recurs (below)
        assert branching


# Drafts of the chain drafters before token trees (sampling at temperature 1, seed 3, γ 4; recorded with the
# decoder of 24e1284^ and the shipped weights): top-k 1 must draw the very same tokens from the very same q.
# The EAGLE head's row was recorded again for each head shipped since (fb84cdd, a26bc38, dc2046d, and the head of
# 2026-11-28), which that decoder cannot load, with the decoder that had matched the row on the head before it:
# for it the row pins top-k 1.
# Since a feature drafter's prefill became its first iteration (the target's token first), the row is the run
# that decoder made with `first_target` (the same 16 tokens, the same drafts). Since a draw inverts the cumulative
# distribution with one uniform (`warpers.sample`) in place of torch.multinomial, which reads the generator
# differently, the rows were recorded again by the decoder that, with torch.multinomial put back, drew the old ones.
# The drafters draft in float32 here on every CPU: where the CPU has bf16 instructions they would draft in
# bfloat16 (`layers.draft_dtype`), from a q that differs in its low bits, and the draws would differ; a row for
# that dtype could be recorded only on such a CPU, so each head would need two machines to ship.
CHAINS = {
    "eagle": ([49, 2159, 39166, 2644, 2643, 335, 260, 1171],
              [[2644, 9014, 284, 9014], [2644, 2658, 332, 1677], [28, 284, 1037, 12900]]),
    "tiny": ([61, 1126, 494, 494, 280, 494, 288, 294],
             [[33, 30, 14338, 16211], [1287, 344, 494, 33], [13701, 28, 253, 2644]]),
}


@pytest.mark.parametrize("kind", ["eagle", "tiny"])
def test_top_k_one_is_the_chain_drafted_before_trees(embedded, monkeypatch, kind):
    monkeypatch.setattr(layers, "native_bf16", lambda: False)
    assert layers.draft_dtype(embedded) == torch.float32
    torch.set_num_threads(1)   # as the module's drafters
    drafter = build_drafter(kind, embedded)
    drafts = recorded(drafter, monkeypatch)
    settings = DecodeSettings(gamma=4, temperature=1.0, max_new_tokens=16, seed=3, branches=1)
    trace = generate(embedded, drafter, PROMPTS[1], settings)
    generated, chains = CHAINS[kind]
    assert trace.generated_ids[:8] == generated
    assert [d.tokens.tolist() for d in drafts[:3]] == chains
    assert all(is_chain(d.parents) and all(d.sampled) for d in drafts)


def test_eagle_tree_is_eagle2_dynamic_tree(embedded, drafters):
    """Top-3 children (picked, so `sampled` False) under the 3 most probable nodes of each depth;
    each q is the drafter's real distribution after the node's parent."""
    drafter, ids = drafters["eagle"], embedded.encode_prompt(PROMPTS[0])
    drafter.begin(ids)
    with torch.no_grad():
        states = embedded.model(torch.tensor([ids]), output_hidden_states=True).hidden_states
    drafter.observe(layer_states(states, drafter.feature_layers)[0, :-1])
    draft = drafter.propose([], 3, Warper(DecodeSettings(temperature=0)), torch.Generator(), branches=3)
    tree = children(draft.parents)
    assert len(tree[-1]) == 3 and len(draft.tokens) == 3 + 9 + 9 and draft.calls == 3
    assert not any(draft.sampled)
    for kids in tree.values():
        q = draft.q[kids[0]]
        assert all(torch.equal(draft.q[k], q) for k in kids)
        assert [int(draft.tokens[k]) for k in kids] == q.topk(3).indices.tolist()
    value: list[float] = []   # Σ log q along each node's path
    for node, parent in enumerate(draft.parents):
        value.append(float(draft.q[node][draft.tokens[node]].log()) + (value[parent] if parent >= 0 else 0.0))
    depth = depths(draft.parents)
    for d in (1, 2):
        level = [n for n in range(len(depth)) if depth[n] == d]
        expanded = {draft.parents[n] for n in range(len(depth)) if depth[n] == d + 1}
        assert expanded == set(sorted(level, key=lambda n: -value[n])[:3])


def test_prompt_lookup_branches_on_every_distinct_continuation(embedded):
    drafter = NgramDrafter(embedded.vocab_size, embedded.device)
    drafter.begin([5, 1, 2, 5, 1, 3, 5, 1, 2, 4, 5, 1])
    warper, generator = Warper(DecodeSettings()), torch.Generator()
    draft = drafter.propose([], 3, warper, generator, branches=3)
    # after "5 1" came "2 5 1", "3 5 1" and "2 4 5": three branches, the two starting with 2 merged
    assert draft.tokens.tolist() == [2, 5, 1, 3, 5, 1, 4, 5] and draft.parents == [-1, 0, 1, -1, 3, 4, 0, 6]
    assert torch.equal(draft.q.argmax(-1), draft.tokens) and torch.equal(draft.q.sum(-1), torch.ones(8))
    chain = drafter.propose([], 3, warper, generator, branches=1)
    assert chain.tokens.tolist() == [2, 5, 1] and is_chain(chain.parents) and drafter.copy([], 3) == [2, 5, 1]
    assert len(drafter.propose([], 3, warper, generator, branches=3, nodes=4).tokens) == 4


def test_prompt_lookup_tells_how_long_a_match_it_found(embedded):
    """Its situation is the longest suffix found earlier; it follows the text as it grows, and the
    proposal that follows copies after that match."""
    drafter = NgramDrafter(embedded.vocab_size, embedded.device)
    drafter.begin([5, 1, 2, 6, 7, 8])
    warper, generator = Warper(DecodeSettings()), torch.Generator()
    assert drafter.situation([]) == "no match"
    assert drafter.situation([9, 5]) == "match 1"
    assert drafter.situation([9, 5, 1]) == "match 2"
    assert drafter.situation([9, 5, 1, 2]) == "match 3"
    assert drafter.propose([9, 5, 1, 2], 2, warper, generator).tokens.tolist() == [6, 7]
    assert drafter.propose([9, 5, 1, 2, 6], 2, warper, generator).tokens.tolist() == [7, 8]
    assert drafter.copy([9, 5, 1, 2], 2) == [6, 7] and drafter.copy([9], 2) == []


def test_prompt_lookup_copies_after_the_longest_match_not_the_first_short_one(embedded):
    """A 3-token suffix seen early and seen again inside a 5-token match: the copy follows the 5-token one,
    and the situation says 5 (a longer match's copy is kept more often)."""
    longest, three = (NgramDrafter(embedded.vocab_size, embedded.device, max_ngram=n) for n in (None, 3))
    for drafter in (longest, three):
        drafter.begin([1, 2, 3, 40, 41, 8, 9, 1, 2, 3, 50, 51])
    assert longest.situation([7, 8, 9, 1, 2, 3]) == "match 5" and "match 5" in longest.chain_situations
    assert longest.copy([7, 8, 9, 1, 2, 3], 2) == [50, 51]
    assert three.situation([7, 8, 9, 1, 2, 3]) == "match 3" and three.copy([7, 8, 9, 1, 2, 3], 2) == [40, 41]


def test_the_match_search_finds_what_a_scan_of_every_suffix_finds():
    """`matches` against its definition, scanned the slow way: the longest suffix of max_ngram .. 1 tokens
    that occurs earlier, and every earlier start of it, leftmost first."""
    def scanned(seq, max_ngram):
        for n in range(min(max_ngram, len(seq) - 1), 0, -1):
            starts = [s for s in range(len(seq) - n) if seq[s:s + n] == seq[-n:]]
            if starts:
                return n, starts
        return 0, []

    rng = random.Random(0)
    for _ in range(3000):
        seq = [rng.randint(0, rng.randint(1, 4)) for _ in range(rng.randint(0, 30))]
        max_ngram = rng.randint(1, 10)
        assert matches(seq, max_ngram) == scanned(seq, max_ngram), (seq, max_ngram)


def test_a_chain_of_the_mixed_drafter_copies_only_after_a_match_of_two_tokens_or_more(drafters, monkeypatch):
    """After a one-token match a chain is the head's (a one-token match's copy was the target's token far
    less often than the head's first guess), while a tree keeps the copy as a branch after the head's. After a
    longer match the copy leads the chain too, and within a budget beyond the copy the head's draft is
    merged in beside it."""
    mixed = drafters["lookup+eagle"]
    mixed.lookup.begin([5, 1, 2, 6, 7, 8])
    guess = Draft(torch.tensor([3, 4]), torch.nn.functional.one_hot(torch.tensor([3, 4]), mixed.vocab).float(),
                  parents=[-1, 0], sampled=[False, False])   # picked, as a greedy tree's nodes are
    monkeypatch.setattr(mixed.head, "propose", lambda *args, **kwargs: guess)
    warper, generator = Warper(DecodeSettings()), torch.Generator()
    assert mixed.situation([9, 5]) == "match 1" and "match 1" not in mixed.chain_situations
    assert mixed.propose([9, 5], 2, warper, generator) is guess
    short = mixed.propose([9, 5], 2, warper, generator, branches=2)
    assert short.tokens.tolist() == [3, 4, 1, 2] and short.parents == [-1, 0, -1, 2] and not any(short.sampled)
    assert mixed.situation([9, 5, 1]) == "match 2"
    assert mixed.propose([9, 5, 1], 2, warper, generator).tokens.tolist() == [2, 6]   # a chain of γ: γ nodes
    copied = mixed.propose([9, 5, 1], 2, warper, generator, nodes=4)
    assert copied.tokens.tolist() == [2, 6, 3, 4] and copied.parents == [-1, 0, -1, 2]


def test_merged_sources_never_repeat_a_token_under_one_parent():
    def draft(tokens, parents):
        q = torch.nn.functional.one_hot(torch.tensor(tokens), 10).float()
        return Draft(torch.tensor(tokens), q, parents=parents)

    copy, guess = draft([1, 2, 3], [-1, 0, 1]), draft([1, 4, 2, 7, 5], [-1, -1, 0, 2, 1])
    for head_first in (False, True):
        merged = merge(copy, guess, head_first)
        for kids in children(merged.parents).values():
            tokens = [int(merged.tokens[k]) for k in kids]
            assert len(tokens) == len(set(tokens))
    merged = merge(copy, guess, head_first=False)
    assert merged.tokens.tolist() == [1, 2, 3, 4, 7, 5] and merged.parents == [-1, 0, 1, -1, 1, 3]
    assert not any(merged.sampled)


def test_sampling_the_heads_drawn_tree_leads_and_the_copy_joins_it():
    """A drawn node keeps its place and its q whatever the copy holds; the copy's nodes join the head's where
    they agree (under the drawn node too: its subtree may depend on its token), else follow as picked ones."""
    vocab = 10
    guess = Draft(torch.tensor([4, 1, 2]), torch.softmax(torch.randn(3, vocab), dim=-1), parents=[-1, -1, 1],
                  sampled=[True, False, True])
    copy = Draft(torch.tensor([1, 2, 3]), torch.nn.functional.one_hot(torch.tensor([1, 2, 3]), vocab).float())
    merged = merge(copy, guess, head_first=True)
    assert merged.tokens.tolist() == [4, 1, 2, 3] and merged.parents == [-1, -1, 1, 2]
    assert merged.sampled == [True, False, True, False]
    assert torch.equal(merged.q[:3], guess.q) and torch.equal(merged.q[3], copy.q[2])


def test_seq2seq_draft_model_drafts_chains_only(tiny_t5_dirs):
    target, drafter = (load_model(str(d)) for d in tiny_t5_dirs)
    settings = DecodeSettings(gamma=3, temperature=0, max_new_tokens=4, branches=3)
    with pytest.raises(SpecvizError, match="chains only"):
        generate(target, DraftModelDrafter(drafter), "w1 w2 w3", settings)


def test_a_tree_grown_one_depth_per_call_matches_one_pass(tiny_llama_dirs):
    """CachedLM fed a tree depth by depth (the draft LM's frontier) gives each node the logits of
    feeding the whole tree at once; the same nodes after another prefix are not taken for the tree grown."""
    loaded = load_model(str(tiny_llama_dirs[0]))
    prefix, tokens, parents = [3, 4, 5], [6, 7, 8, 9, 10, 11], [-1, -1, 0, 0, 1, 2]
    lm = CachedLM(loaded)
    lm.start(prefix)
    lm.logits(prefix)
    grown = torch.cat([lm.logits(prefix + tokens[:2], last=2, parents=parents[:2]),
                       lm.logits(prefix + tokens[:5], last=3, parents=parents[:5]),
                       lm.logits(prefix + tokens, last=1, parents=parents)])
    fresh = CachedLM(loaded)
    fresh.start(prefix)
    one_pass = fresh.logits(prefix + tokens, last=6, parents=parents)
    assert torch.allclose(grown, one_pass, atol=1e-5)
    lm.logits(prefix + tokens[:2], last=2, parents=parents[:2])
    other = [3, 4, 12]   # as long, not the same: the tree on it is fed afresh, not grown on the cached one
    fresh.start(other)
    assert torch.allclose(lm.logits(other + tokens[:5], last=3, parents=parents[:5]),
                          fresh.logits(other + tokens[:5], last=3, parents=parents[:5]), atol=1e-5)


@pytest.mark.parametrize("branches", [1, 3], ids=["chains", "trees"])
def test_an_adaptive_draft_of_the_mixed_drafter_stays_within_the_nodes_it_was_timed_for(
        embedded, drafters, references, embedded_sizing, monkeypatch, branches):
    """A chain of γ is γ nodes: the copied continuation takes the chain's places and the head fills what
    it leaves. (The head's chain beside a copy made the target verify up to 2γ + 1 tokens, priced as
    γ + 1.) After a match of two or more tokens only chains are drafted, even where trees may be."""
    drafter = drafters["lookup+eagle"]
    drafts, prompt = recorded(drafter, monkeypatch), PROMPTS[1]
    settings = DecodeSettings(gamma=4, branches=branches, nodes=10, temperature=0, max_new_tokens=NEW_TOKENS,
                              adaptive=True)
    trace = generate(embedded, drafter, prompt, settings, sizing=embedded_sizing)
    assert trace.generated_ids == references[prompt]
    chosen = [it.choice for it in trace.iterations if it.drafted]
    assert len(drafts) == len(chosen) and all(len(d.tokens) <= c.nodes for d, c in zip(drafts, chosen))
    copying = [c for c in chosen if c.situation in drafter.chain_situations]
    assert copying and all(c.branches == 1 and c.nodes == c.gamma for c in copying)
