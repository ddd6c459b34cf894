"""A long trace made by hand: each draft accepted with probability α, seeded, no model needed."""

from __future__ import annotations

import random

from specviz import DecodeSettings, Trace
from specviz.trace import DraftStep, FinalToken, Iteration


def synthetic_trace(tokens: int = 512, gamma: int = 4, alpha: float = 0.55, seed: int = 0) -> Trace:
    """Iterations until `tokens` are emitted; the words repeat, the verdicts follow α."""
    rng = random.Random(seed)
    iterations, generated = [], []
    while len(generated) < tokens:
        accepted = next((i for i in range(gamma) if rng.random() >= alpha), gamma)
        drafts = []
        for i in range(gamma):
            verdict = "accepted" if i < accepted else "rejected" if i == accepted else "unverified"
            token_id = 100 + (len(generated) + i) % 50
            drafts.append(DraftStep(i + 1, token_id, f" w{token_id}", 0.5, 0.4, 0.8, rng.random(), verdict,
                                    "sampling", 0.6))
        kind = "bonus" if accepted == gamma else "correction"
        final = FinalToken(kind, 7, " w7", "p" if kind == "bonus" else "residual")
        emitted = [d.token_id for d in drafts[:accepted]] + [final.token_id]
        iterations.append(Iteration(len(iterations), gamma, accepted, emitted, drafts, final, draft_time=0.02,
                                    verify_time=0.06 + 0.01 * rng.random(), sample_time=0.005, draft_calls=gamma))
        generated += emitted
    return Trace("A long answer.", [1, 2, 3], "target", "drafter", DecodeSettings(gamma=gamma, max_new_tokens=tokens),
                 iterations=iterations, generated_ids=generated, text="", wall_time=sum(
                     it.draft_time + it.verify_time + it.sample_time for it in iterations))
