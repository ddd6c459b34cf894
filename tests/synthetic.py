"""Traces made by hand (a long chain accepted with probability α, the target alone, a token tree), seeded,
no model needed; and a drafter that proposes a fixed tree."""

from __future__ import annotations

import random
from dataclasses import replace

import torch

from specviz import DecodeSettings, Trace
from specviz.drafters.base import Draft, Drafter
from specviz.trace import Choice, DraftStep, FinalToken, Iteration, TopK


def synthetic_trace(tokens: int = 512, gamma: int = 4, alpha: float = 0.55, seed: int = 0) -> Trace:
    """Iterations until `tokens` are emitted; the words repeat. Every draft has ratio p/q = α, and the
    lossless rule decides it: u ~ U[0, 1) per position, accepted iff u < min(1, p/q), up to the first
    rejection; so the acceptance rate follows α."""
    rng = random.Random(seed)
    q = 0.5
    ratio = _float32(alpha)
    iterations, generated = [], []
    while len(generated) < tokens:
        u = [_uniform(rng) for _ in range(gamma)]
        accepted = next((i for i in range(gamma) if u[i] >= ratio), gamma)
        drafts = []
        for i in range(gamma):
            verdict = "accepted" if i < accepted else "rejected" if i == accepted else "unverified"
            token_id = 100 + (len(generated) + i) % 50
            drafts.append(DraftStep(i + 1, token_id, f" w{token_id}", q, ratio * q, ratio, u[i], verdict, "sampling",
                                    beta=ratio))   # β = Σ min(p, q) = α where every draft's ratio is α
        kind = "bonus" if accepted == gamma else "correction"
        final = FinalToken(kind, 7, " w7", "p" if kind == "bonus" else "residual")
        emitted = [d.token_id for d in drafts[:accepted]] + [final.token_id]
        iterations.append(Iteration(len(iterations), gamma, accepted, emitted, drafts, final, draft_time=0.02,
                                    verify_time=0.06 + 0.01 * rng.random(), sample_time=0.005, draft_calls=gamma))
        generated += emitted
    return Trace("A long answer.", [1, 2, 3], "target", "drafter", DecodeSettings(gamma=gamma, max_new_tokens=tokens),
                 iterations=iterations, generated_ids=generated, text="", wall_time=sum(
                     it.draft_time + it.verify_time + it.sample_time for it in iterations))


def _uniform(rng: random.Random) -> float:
    """u as `torch.rand` draws it in float32: a multiple of 2⁻²⁴ in [0, 1)."""
    return rng.getrandbits(24) / 2**24


def _float32(x: float) -> float:
    """`x` rounded to float32, as the engine records p, q and u: then u < p/q and the verifier's
    u·q < p (in float32) agree exactly."""
    return float(torch.tensor(x, dtype=torch.float32))


def synthetic_baseline(ids: list[int], step: float = 0.05) -> Trace:
    """The target alone writing `ids`, one token per iteration, each taking `step` seconds."""
    iterations = [Iteration(i, 0, 0, [token], final=FinalToken("target", token, f" w{token}", "p"), verify_time=step,
                            elapsed=step * (i + 1)) for i, token in enumerate(ids)]
    return Trace("A long answer.", [1, 2, 3], "target", "none (baseline)", DecodeSettings(max_new_tokens=len(ids)),
                 iterations=iterations, generated_ids=list(ids), text="", wall_time=step * len(ids))


WORDS = ["The", " the", " a", " one", " my", " his", " big", " small", " red", " blue", " cat", " dog", " sat", " on"]


def _top(*pairs: tuple[str, float]) -> TopK:
    return TopK([WORDS.index(w) for w, _ in pairs], [w for w, _ in pairs], [p for _, p in pairs])


def _node(parent: int, word: str, q: float, p: float, u: float, verdict: str, p_top: TopK,
          residual: TopK | None = None, mass: float | None = None, depth: int = 1,
          tested_p: float | None = None) -> DraftStep:
    """A node; `tested_p` is p′(x) for a sibling tried after a rejected one (its ratio is p′/q)."""
    ratio = (p if tested_p is None else tested_p) / q
    return DraftStep(depth, WORDS.index(word), word, q, p, ratio, u, verdict, "sampling", 0.5, p_top=p_top,
                     residual_top=residual, residual_mass=mass, parent=parent)


def synthetic_tree_trace() -> Trace:
    """Two iterations after the prompt "The", under the lossless rule.

    Iteration 0, a tree: ' the' is rejected at depth 1, ' a' is kept from what is left, ' one' is never
    reached; under ' a', ' big' and ' small' are rejected in turn and the correction ' red' is drawn from
    the last residual; the children of rejected nodes are never reached.
    Iteration 1, a chain: ' cat' and ' sat' are kept, then the bonus ' on'.
    """
    p_root = _top((" a", 0.45), (" my", 0.2), (" his", 0.2), (" the", 0.1), (" one", 0.05))
    after_the = _top((" my", 0.364), (" his", 0.364), (" a", 0.272))
    p_a = _top((" red", 0.4), (" big", 0.3), (" small", 0.2), (" blue", 0.1))
    after_big = _top((" red", 0.8), (" blue", 0.2), (" small", 0.0))
    after_small = _top((" red", 0.8), (" blue", 0.2))
    tree = [
        _node(-1, " the", 0.5, 0.1, 0.63, "rejected", p_root, after_the, 0.55),
        _node(-1, " a", 0.3, 0.45, 0.4, "accepted", p_root, tested_p=0.272),
        _node(-1, " one", 0.2, 0.05, 0.9, "unverified", p_root),
        _node(0, " cat", 0.7, 0.3, 0.2, "unverified", p_root, depth=2),
        _node(1, " big", 0.6, 0.3, 0.9, "rejected", p_a, after_big, 0.5, depth=2),
        _node(1, " small", 0.4, 0.2, 0.2, "rejected", p_a, after_small, 1.0, depth=2, tested_p=0.0),
        _node(4, " dog", 0.5, 0.1, 0.5, "unverified", p_a, depth=3),
    ]
    red = FinalToken("correction", WORDS.index(" red"), " red", "residual", after_small)
    chain = [_node(-1, " cat", 0.6, 0.7, 0.3, "accepted", _top((" cat", 0.7), (" dog", 0.3))),
             _node(0, " sat", 0.5, 0.5, 0.1, "accepted", _top((" sat", 0.5), (" on", 0.5)), depth=2)]
    on = FinalToken("bonus", WORDS.index(" on"), " on", "p", _top((" on", 0.9), (" sat", 0.1)))
    iterations = [Iteration(0, len(tree), 1, [WORDS.index(" a"), red.token_id], tree, red, 0.03, 0.07, 0.01, 3),
                  Iteration(1, len(chain), 2, [WORDS.index(" cat"), WORDS.index(" sat"), on.token_id], chain, on,
                            0.02, 0.06, 0.01, 2)]
    generated = [i for it in iterations for i in it.emitted_ids]
    return Trace("The", [0], "target", "drafter", DecodeSettings(gamma=3, max_new_tokens=5, branches=3),
                 iterations=iterations, generated_ids=generated, text="".join(WORDS[i] for i in generated),
                 wall_time=0.2)


class FixedTree(Drafter):
    """Drafts the same token tree every iteration, each node from a uniform q over the vocabulary."""

    name = "fixed tree"

    def __init__(self, vocab: int, tokens: list[int], parents: list[int], sampled: list[bool]) -> None:
        self.vocab, self.tokens, self.parents, self.sampled = vocab, tokens, parents, sampled

    def begin(self, prompt_ids: list[int]) -> None:
        pass

    def propose(self, generated, gamma, warper, generator, confidence=0.0, **shape) -> Draft:
        q = torch.full((len(self.tokens), self.vocab), 1.0 / self.vocab)
        return Draft(torch.tensor(self.tokens), q, parents=self.parents, sampled=self.sampled)


def synthetic_adaptive_trace(tokens: int = 64) -> Trace:
    """`synthetic_trace` as an adaptive run recorded it: every iteration with the choice made before it (depth 4,
    the estimate falling), the fourth a one-node probe; the drafter tells a long match from none after the
    third."""
    trace = synthetic_trace(tokens)
    for it in trace.iterations:
        it.choice = Choice(gamma=it.drafted, branches=1, nodes=it.drafted, expected_tokens=2.0 - 0.05 * it.index,
                           gain=1.3 - 0.02 * it.index, alpha=0.6 - 0.02 * it.index, probe=it.index == 3,
                           situation="" if it.index < 3 else ("match 3" if it.index % 2 else "no match"))
    trace.settings = replace(trace.settings, adaptive=True)
    return trace
