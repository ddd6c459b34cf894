"""Speculative sampling reproduces the target's distribution (Leviathan et al., theorem 3.5).

The first two generated tokens of many seeded runs are compared with their exact distribution
under the target alone, p(x1) p(x2 | x1), computed by enumerating the 16-token vocabulary. A
verifier that skips the residual (resampling from p after a rejection) must fail the same test.
Each run asks for γ + 1 tokens, so that its first iteration drafts the whole chain (the engine
drafts at most budget − 1: the bonus takes the last place).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy.stats import chisquare

from specviz import DecodeSettings, generate, load_model, verification
from specviz.drafters import DraftModelDrafter, NgramDrafter, base, draft_model
from specviz.drafters.base import Draft
from specviz.tree import chain
from specviz.warpers import Warper

PROMPT = "w1 w2 w3"
COPY_PROMPT = "w1 w2 w3 w1 w2 w3 w1"  # prompt lookup proposes "w2 w3"
RUNS = 800  # the two broken rules below still score p < 1e-9 at 800 runs


@pytest.fixture(scope="module")
def pair(tiny_llama_dirs):
    torch.set_num_threads(1)  # tiny matrices: threads only add synchronisation
    target_dir, drafter_dir = tiny_llama_dirs
    return load_model(str(target_dir)), load_model(str(drafter_dir))


def exact_two_tokens(target, settings: DecodeSettings, prompt: str = PROMPT) -> dict[tuple[int, int], float]:
    """p(x1) p(x2 | x1) for every pair, from the target's own warped distributions."""
    warper = Warper(settings)
    prompt = target.encode_prompt(prompt)
    with torch.no_grad():
        first = warper.probs(target.model(torch.tensor([prompt])).logits[0, -1])
        grid = torch.tensor([prompt + [x] for x in range(len(first))])
        second = warper.probs(target.model(grid).logits[:, -1])
    joint = first[:, None] * second
    return {(a, b): float(joint[a, b]) for a in range(joint.shape[0]) for b in range(joint.shape[1])}


def sampled_two_tokens(target, drafter, settings: DecodeSettings, prompt: str = PROMPT,
                       verdicts: Counter | None = None) -> Counter:
    """Counts of the first two tokens over `RUNS` seeds; `verdicts` (when given) adds up the drafts the runs
    kept and the iterations that rejected one, so a test can show both branches of the rule were taken."""
    counts: Counter = Counter()
    for seed in range(RUNS):
        s = DecodeSettings(**{**settings.to_dict(), "seed": seed})
        trace = generate(target, drafter, prompt, s)
        counts[tuple(trace.generated_ids[:2])] += 1
        for it in trace.iterations if verdicts is not None else ():
            verdicts["kept"] += it.accepted
            verdicts["rejected"] += it.final is not None and it.final.kind == "correction"   # a tree's too
    return counts


def chi_square_p_value(exact: dict, counts: Counter) -> float:
    """Goodness of fit; cells expected to hold fewer than 5 samples are pooled into one.

    A sample in a cell the target can never produce (top-k / top-p cut it) fails outright.
    """
    impossible = sum(n for cell, n in counts.items() if exact.get(cell, 0.0) == 0.0)
    if impossible:
        return 0.0
    expected = np.array([exact[cell] * sum(counts.values()) for cell in exact if exact[cell] > 0])
    observed = np.array([counts.get(cell, 0) for cell in exact if exact[cell] > 0])
    small = expected < 5
    if small.any():
        expected = np.append(expected[~small], expected[small].sum())
        observed = np.append(observed[~small], observed[small].sum())
    return chisquare(observed, expected * observed.sum() / expected.sum()).pvalue


SETTINGS = [
    DecodeSettings(gamma=2, temperature=1.0, max_new_tokens=3, record=False),
    DecodeSettings(gamma=3, temperature=0.8, top_k=5, max_new_tokens=4, record=False),
    DecodeSettings(gamma=2, temperature=1.3, top_p=0.8, max_new_tokens=3, record=False),
]


@pytest.fixture(scope="module")
def target_without_eos(pair):
    target, drafter = pair
    target.eos_ids = frozenset()  # γ + 1 tokens always, so every run fills one cell
    return target, drafter


@pytest.mark.parametrize("settings", [*SETTINGS, DecodeSettings(gamma=1, temperature=1.0, max_new_tokens=2,
                                                                  record=False)],
                         ids=["plain", "top-k", "top-p", "bonus second"])   # γ = 1: token 2 is the bonus or a draw
def test_speculative_sampling_matches_target_distribution(target_without_eos, settings):
    target, drafter = target_without_eos
    exact = exact_two_tokens(target, settings)
    assert chi_square_p_value(exact, sampled_two_tokens(target, DraftModelDrafter(drafter), settings)) > 1e-3


def test_one_hot_q_of_prompt_lookup_is_lossless(target_without_eos):
    """q is one-hot: accept x̃ with probability p(x̃), else resample from p with x̃ removed."""
    target, _ = target_without_eos
    settings = SETTINGS[0]
    drafter = NgramDrafter(target.vocab_size, target.device)
    exact, verdicts = exact_two_tokens(target, settings, COPY_PROMPT), Counter()
    assert chi_square_p_value(exact, sampled_two_tokens(target, drafter, settings, COPY_PROMPT, verdicts)) > 1e-3
    assert verdicts["kept"] > 0 and verdicts["rejected"] > 0   # it drafted, and both branches of the rule ran


def test_verifier_without_residual_is_caught(target_without_eos, monkeypatch):
    """Resampling from p instead of norm(max(0, p - q)) over-weights tokens q already covers."""

    lossless = verification.lossless

    def no_residual(p, q, draft, generator, *tree):
        verdict = lossless(p, q, draft, generator, *tree)
        if verdict.recovered is not None:
            verdict.recovered = int(torch.multinomial(p[verdict.accepted], 1, generator=generator))
        return verdict

    monkeypatch.setattr(verification, "lossless", no_residual)
    target, drafter = target_without_eos
    settings = SETTINGS[0]
    exact = exact_two_tokens(target, settings)
    assert chi_square_p_value(exact, sampled_two_tokens(target, DraftModelDrafter(drafter), settings)) < 1e-6


def confident(threshold: float) -> DecodeSettings:
    return DecodeSettings(gamma=3, temperature=1.0, max_new_tokens=4, record=False, draft_confidence=threshold)


def test_confidence_stop_is_lossless(target_without_eos):
    """The stop reads max q before drawing, so every kept draft is a draw from its q. At 0.25 the
    tiny drafter stops in about a quarter of the iterations and drafts in the rest."""
    target, drafter = target_without_eos
    settings = confident(0.25)
    its = [it for seed in range(50) for it in generate(
        target, DraftModelDrafter(drafter), PROMPT, DecodeSettings(**{**settings.to_dict(), "seed": seed})).iterations]
    assert any(it.unsure for it in its) and any(it.drafted and not it.unsure for it in its)
    exact = exact_two_tokens(target, settings)
    assert chi_square_p_value(exact, sampled_two_tokens(target, DraftModelDrafter(drafter), settings)) > 1e-3


def test_a_stop_on_the_drawn_tokens_own_q_is_caught(target_without_eos, monkeypatch):
    """Dropping x̃ because q(x̃) is small keeps only confident draws: they no longer follow the q
    of the ratio p/q, and the output drifts from p."""

    def biased(logits, step, gamma, warper, generator, confidence, branches, nodes):
        tokens, qs = [], []
        for i in range(gamma):
            q = warper.probs(logits)
            token = warper.pick(q, generator)
            if q[token] < confidence:
                break
            tokens.append(token)
            qs.append(q)
            if i + 1 < gamma:
                logits = step(token[None], chain(i + 1))[0]
        if not tokens:
            return Draft(torch.empty(0, dtype=torch.long), torch.empty(0, logits.shape[-1]))
        return Draft(torch.stack(tokens), torch.stack(qs))

    monkeypatch.setattr(draft_model, "draft_loop", biased)
    target, drafter = target_without_eos
    settings = confident(0.15)
    exact = exact_two_tokens(target, settings)
    assert chi_square_p_value(exact, sampled_two_tokens(target, DraftModelDrafter(drafter), settings)) < 1e-6


TREE = DecodeSettings(gamma=2, temperature=1.0, max_new_tokens=3, record=False, branches=2, nodes=3)


def test_a_tree_whose_first_children_are_drawn_is_lossless(target_without_eos):
    """Sampling, each expanded node's first child is drawn from q and its sibling picked (q's likeliest other
    token). Six nodes are grown for a budget of three: the drawn ones and their ancestors are kept first."""
    target, drafter = target_without_eos
    its = [generate(target, DraftModelDrafter(drafter), PROMPT, replace(TREE, seed=seed, record=True)).iterations[0]
           for seed in range(20)]
    assert all(it.drafted == 3 and it.drafts[0].sampled and not it.drafts[1].sampled for it in its)
    exact = exact_two_tokens(target, TREE)
    assert chi_square_p_value(exact, sampled_two_tokens(target, DraftModelDrafter(drafter), TREE)) > 1e-3


def first_children(warper: Warper, draws: int) -> tuple[torch.Tensor, Counter]:
    """q at the root, and the root's first child over many trees of depth 2, top-2, grown to six nodes and
    cut to a budget of three: (token, drawn or picked) counts."""
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(8, generator=g) * 1.5
    counts: Counter = Counter()
    for _ in range(draws):
        draft = base.draft_loop(logits, lambda tokens, _: logits.expand(len(tokens), -1), 2, warper, g,
                                branches=2, nodes=3)
        counts[int(draft.tokens[0]), draft.sampled[0]] += 1
    return warper.probs(logits), counts


@pytest.mark.parametrize("pruning", ["forced", "by value"])
def test_a_drawn_first_child_is_kept_whatever_its_token(monkeypatch, pruning):
    """The root's first child is drawn in every tree, and its tokens follow q. EAGLE-2's pruning alone (the
    N nodes of highest Σ log q) keeps a draw only when its own token is likely: the draws that reach the
    test no longer follow the q of the ratio p/q."""
    if pruning == "by value":
        best = base.best
        monkeypatch.setattr(base, "best", lambda value, parents, nodes, forced: best(value, parents, nodes))
    q, counts = first_children(Warper(DecodeSettings(temperature=1.0)), 2000)
    drawn = np.array([counts[x, True] for x in range(len(q))])
    fit = chisquare(drawn, q.numpy() * drawn.sum()).pvalue   # the draws kept, against q
    if pruning == "forced":
        assert drawn.sum() == 2000 and fit > 1e-3
    else:
        assert drawn.sum() < 2000 and fit < 1e-6
