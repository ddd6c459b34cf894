"""Token trees in the engine: the tree mask, the KV cache after a tree pass, the rules on trees."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from synthetic import FixedTree
from test_lossless import chi_square_p_value

from specviz import generate, load_model, tree, verification
from specviz.errors import SpecvizError
from specviz.kv_cache import CachedLM
from specviz.settings import DecodeSettings
from specviz.trace import load_trace
from specviz.tree import parse_shape
from specviz.warpers import Warper

# A tree of 6 nodes over the root r:   r ─ 0 ─ 2 ─ 5
#                                       │    └ 3
#                                       └ 1 ─ 4
PARENTS = [-1, -1, 0, 0, 1, 2]


def path_to(parents: list[int], node: int) -> list[int]:
    """The nodes from the root's child down to `node`."""
    nodes = []
    while node >= 0:
        nodes.append(node)
        node = parents[node]
    return nodes[::-1]


def test_tree_helpers():
    assert tree.depths(PARENTS) == [1, 1, 2, 2, 2, 3]
    assert tree.children(PARENTS) == {-1: [0, 1], 0: [2, 3], 1: [4], 2: [5]}
    assert path_to(PARENTS, 5) == [0, 2, 5]
    assert tree.is_chain(tree.chain(4)) and not tree.is_chain(PARENTS)
    mask = tree.attention_mask(PARENTS, past=3, new=7, dtype=torch.float32, device=torch.device("cpu"))[0, 0] == 0
    assert mask.shape == (7, 10)
    assert mask[0].tolist() == [True] * 4 + [False] * 6           # a committed token fed before the tree
    node5 = mask[1 + 5].tolist()                                    # sees the prefix, 0, 2 and itself
    assert node5 == [True] * 4 + [True, False, True, False, False, True]


@pytest.mark.parametrize("leaf", [5, 4, 0, 3])   # deep off the leading chain, the root's second child, on it, a leaf
def test_cache_after_a_tree_pass_is_the_cache_of_the_accepted_path(tiny_llama_dirs, leaf):
    """Feeding a tree in one pass, then going on along one branch, leaves exactly the keys and
    values (and logits) of feeding that branch directly."""
    target = load_model(str(tiny_llama_dirs[0]))
    prompt = [5, 9, 14, 3, 7]
    nodes = [11, 12, 13, 4, 6, 15]
    via_tree, direct = CachedLM(target), CachedLM(target)
    via_tree.start(prompt), direct.start(prompt)
    tree_logits = via_tree.logits(prompt + nodes, last=len(nodes) + 1, parents=PARENTS)
    for node in range(len(nodes)):   # each node's logits are those of its own path fed alone
        branch = [nodes[i] for i in path_to(PARENTS, node)]
        alone = CachedLM(target)
        alone.start(prompt)
        assert torch.allclose(tree_logits[node + 1], alone.logits(prompt + branch)[0], atol=1e-4)
    accepted = prompt + [nodes[i] for i in path_to(PARENTS, leaf)] + [8]   # the path to `leaf`, then a bonus token
    after_tree = via_tree.logits(accepted)
    after_direct = direct.logits(accepted)
    assert torch.allclose(after_tree, after_direct, atol=1e-4)
    assert via_tree.fed == direct.fed == accepted
    for a, b in zip(via_tree.cache.layers, direct.cache.layers, strict=True):
        assert a.keys.shape == b.keys.shape
        assert torch.allclose(a.keys, b.keys, atol=1e-4) and torch.allclose(a.values, b.values, atol=1e-4)


def test_a_chain_goes_through_the_tree_path_unchanged(tiny_llama_dirs):
    target = load_model(str(tiny_llama_dirs[0]))
    a, b = CachedLM(target), CachedLM(target)
    a.start([1, 2, 3]), b.start([1, 2, 3])
    assert torch.equal(a.logits([1, 2, 3, 4, 5], last=3, parents=tree.chain(2)), b.logits([1, 2, 3, 4, 5], last=3))


def test_greedy_follows_the_argmax_child():
    # p rows: root, then after each node. argmax after root = 7 (node 1), after node 1 = 3
    p = torch.full((7, 10), 0.01)
    for row, top in enumerate([7, 0, 3, 0, 0, 0, 0]):
        p[row, top] = 1.0
    draft = torch.tensor([6, 7, 1, 2, 8, 4])
    v = verification.greedy(p, draft, PARENTS)
    assert (v.path, v.recovered, v.bonus) == ([1], 3, None)
    draft[4] = 3                                                    # node 4 matches, and is a leaf
    v = verification.greedy(p, draft, PARENTS)
    assert (v.path, v.recovered, v.bonus) == ([1, 4], None, 0)
    spec = verification.spec_verification(p.log(), draft, beta=1, tau=100.0, parents=PARENTS)
    assert (spec.path, spec.bonus) == ([1, 4], 0)


def test_spec_takes_the_child_the_target_ranks_best():
    logits = torch.zeros(3, 5)
    logits[0] = torch.tensor([4.0, 3.0, 2.0, 0.0, 0.0])
    v = verification.spec_verification(logits, torch.tensor([1, 0]), beta=3, tau=5.0, parents=[-1, -1])
    assert v.path == [1]   # both pass eq. 8-9; token 0 ranks first


# ---- losslessness on a tree with two children per node, by the chi-square test ----

V = 6


def _dists(warp: str):
    """p and q at the root and after each first token, warped alike (Warper: top-k 3 or top-p 0.8)."""
    g = torch.Generator().manual_seed(1)
    warper = Warper(DecodeSettings(top_k=3 if warp == "top-k" else 0, top_p=0.8 if warp == "top-p" else 1.0))
    p_root, q_root = (warper.probs(torch.randn(V, generator=g) * 1.5) for _ in range(2))
    p_next, q_next = (warper.probs(torch.randn(V, V, generator=g) * 1.5) for _ in range(2))   # (· | first token)
    return p_root, q_root, p_next, q_next


def _two_tokens(children: str, warp: str, rule, trials: int, seed: int = 0) -> torch.Tensor:
    """Counts of the first two emitted tokens over many tree steps, each step drafting two
    children of the root and two children of each: sampled i.i.d. from q, or q's top-2 (picked)."""
    p_root, q_root, p_next, q_next = _dists(warp)
    g = torch.Generator().manual_seed(seed)
    counts = torch.zeros(V, V)
    for _ in range(trials):
        def kids(q):
            return torch.multinomial(q, 2, replacement=True, generator=g) if children == "sampled" \
                else torch.topk(q, 2).indices
        first = kids(q_root)
        second = torch.cat([kids(q_next[int(x)]) for x in first])
        draft = torch.cat([first, second])
        parents = [-1, -1, 0, 0, 1, 1]
        q = torch.stack([q_root, q_root] + [q_next[int(first[0])]] * 2 + [q_next[int(first[1])]] * 2)
        p = torch.stack([p_root] + [p_next[int(x)] for x in draft])
        sampled = [children == "sampled"] * 6
        v = rule(p, q, draft, g, parents, sampled)
        out = [int(draft[i]) for i in v.path] + [v.recovered if v.recovered is not None else v.bonus]
        if len(out) == 1:   # the second token is then drawn from the target itself
            out.append(int(torch.multinomial(p_next[out[0]], 1, generator=g)))
        counts[out[0], out[1]] += 1
    return counts


def _p_value(counts: torch.Tensor, warp: str) -> float:
    """The counts of (first, second) token against the warped target's own p(first) p(second | first)."""
    p_root, _, p_next, _ = _dists(warp)
    exact = {(a, b): float(p_root[a] * p_next[a, b]) for a in range(V) for b in range(V)}
    return chi_square_p_value(exact, Counter({(a, b): int(counts[a, b]) for a in range(V) for b in range(V)}))


@pytest.mark.parametrize("warp", ["plain", "top-k", "top-p"])
@pytest.mark.parametrize("children", ["sampled", "picked"])
def test_tree_rule_is_lossless(children, warp):
    assert _p_value(_two_tokens(children, warp, verification.lossless, 5000), warp) > 1e-3


@pytest.mark.parametrize("children", ["sampled", "picked"])
def test_a_rule_that_keeps_p_after_a_rejected_sibling_is_caught(children, monkeypatch):
    """Trying the next sibling against the original p, not norm(max(0, p − q)), is biased."""
    monkeypatch.setattr(verification, "residual", lambda p, q: p.clone())
    assert _p_value(_two_tokens(children, "plain", verification.lossless, 5000), "plain") < 1e-6


P_ROOT, Q_ROOT = torch.tensor([0.6, 0.1, 0.3, 0.0]), torch.tensor([0.45, 0.05, 0.4, 0.1])


def _first_tokens(first: str, trials: int, seed: int = 0) -> Counter:
    """The token emitted at the root over many steps of two children: the first drawn from q or picked (q's
    top), the second picked, q's likeliest other token. Where p and q disagree this much, a picked second
    child tried against p, not against what the first's rejection left, moves the counts far off p."""
    g = torch.Generator().manual_seed(seed)
    counts = Counter()
    for _ in range(trials):
        x1 = int(torch.multinomial(Q_ROOT, 1, generator=g)) if first == "drawn" else int(Q_ROOT.argmax())
        x2 = int(Q_ROOT.masked_fill(torch.arange(4) == x1, -1.0).argmax())
        p = torch.stack([P_ROOT, torch.full((4,), 0.25), torch.full((4,), 0.25)])
        v = verification.lossless(p, torch.stack([Q_ROOT, Q_ROOT]), torch.tensor([x1, x2]), g, [-1, -1],
                                  [first == "drawn", False])
        counts[(x1, x2)[v.path[0]] if v.path else v.recovered] += 1
    return counts


@pytest.mark.parametrize("first", ["drawn", "picked"])
def test_a_picked_sibling_after_a_rejected_one_keeps_the_root_lossless(first, monkeypatch):
    exact = dict(enumerate(P_ROOT.tolist()))
    assert chi_square_p_value(exact, _first_tokens(first, 3000)) > 1e-3
    monkeypatch.setattr(verification, "residual", lambda p, q: p.clone())   # the sibling tried against p itself
    assert chi_square_p_value(exact, _first_tokens(first, 3000)) < 1e-6


@pytest.mark.parametrize("rule", [{"temperature": 0.0}, {"temperature": 1.0}, {"verify": "spec", "beta": 2}])
def test_a_tree_run_records_every_node_and_round_trips(tiny_llama_dirs, tmp_path, rule):
    target = load_model(str(tiny_llama_dirs[0]))
    target.eos_ids = frozenset()
    settings = DecodeSettings(gamma=3, max_new_tokens=24, **rule)
    trace = generate(target, FixedTree(16, [3, 4, 5, 6, 7, 8], PARENTS, [False] * 6), "w1 w2 w3", settings)
    if settings.rule == "greedy":
        assert trace.generated_ids == generate(target, None, "w1 w2 w3", settings).generated_ids
    for it in trace.iterations:
        if not it.drafted:   # the budget's last place: the target's step alone
            assert it is trace.iterations[-1] and len(it.emitted_ids) == 1
            continue
        assert it.parents == PARENTS and [d.position for d in it.drafts] == tree.depths(PARENTS)
        verdicts = [d.verdict for d in it.drafts]
        assert verdicts.count("accepted") == it.accepted
        kept = [i for i, v in enumerate(verdicts) if v == "accepted"]
        assert kept == path_to(PARENTS, kept[-1]) if kept else True   # the accepted nodes form one path
        assert [it.drafts[i].token_id for i in kept] == it.emitted_ids[: it.accepted]
        if settings.rule == "sampling" and it.final.kind == "correction":
            assert all(d.residual_top is not None for d in it.drafts if d.verdict == "rejected")
    if settings.rule == "sampling":   # the residuals above were looked at
        assert any(it.final.kind == "correction" for it in trace.iterations)
    trace.save(tmp_path / "t.json")
    again = load_trace(tmp_path / "t.json")
    assert again.to_dict() == trace.to_dict()


def test_a_shape_is_read_as_depth_topk_nodes_or_refused():
    assert parse_shape("4x1x0") == (4, 1, 0) and parse_shape(" 5x3x16 ") == (5, 3, 16)
    for bad in ("4x2", "0x1x0", "4x0x8", "4x2x-1", "ax2x8", "4x2x8x1", ""):
        with pytest.raises(SpecvizError, match=r"is not DEPTHxTOPKxNODES \(e\.g\. 4x2x8\)"):
            parse_shape(bad)
