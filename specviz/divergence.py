"""Lossless up to floating point: where greedy speculative output first parts from the target alone's.

In exact arithmetic greedy verification emits the target's own greedy tokens (Leviathan et al.
2023, §2.3 at T → 0). A computer sums in floating point, and a verification pass over k tokens is a
different matrix shape from k one-token steps: the kernels split the sums differently, so the two
computations of the same logit differ in the last bits. In fp32 that never moves an argmax in
practice; in bf16 (8 bits of mantissa) or fp16 it can, wherever the target's two best tokens lie
within rounding of each other, and from there on the outputs are two different texts. So the honest
claim in half precision is: the outputs part only at a near tie.

Both computations are in a recorded greedy trace: greedy runs record p at T = 1, the softmax of the
logits, and log(p₁ / p₂) = ℓ₁ − ℓ₂ gives the logit margin between any two recorded tokens. The
speculative run's p at the parting position comes from its verification pass, the target alone's
from its one-token step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from specviz.trace import TopK, Trace
from specviz.tree import common_prefix

# Logits. bf16 keeps 8 significant bits, so a logit between 16 and 32 is a multiple of 0.125: two
# tokens a step apart can swap, or tie exactly, when a verification pass sums in a different order from
# one-token steps. Measured on the embedded target (benchmarks/half-precision.md) every parting was
# within two steps. A parting where our token trailed by more than four is not rounding.
NEAR_TIE = 0.5


@dataclass
class Top2:
    """The two best tokens of one computation at one position and the logit margin between them."""

    ids: list[int]
    tokens: list[str]
    margin: float                 # ℓ₁ − ℓ₂ = log(p₁ / p₂)


@dataclass
class Divergence:
    """The first position where a speculative output leaves the target alone's (both greedy)."""

    position: int                 # index into the generated tokens
    ours: int                     # the speculative run's token there
    alone: int                    # the target alone's
    ours_top2: Top2 | None        # in the verification pass (None: the trace recorded no distribution)
    alone_top2: Top2 | None       # in the target alone's one-token step
    flip: float | None            # in the target alone's computation, ℓ(its token) − ℓ(our token);
                                  # None when our token is not among its recorded top-k

    def near_tie(self) -> bool:
        """The parting is explained by rounding: our token was within `NEAR_TIE` logits of the best."""
        return self.flip is not None and self.flip < NEAR_TIE


def parting(ours: list, reference: list) -> int | None:
    """The first index where an output leaves a reference (one may stop short), None where they are equal."""
    return None if ours == reference else common_prefix(ours, reference)


def first_divergence(ours: Trace, alone: Trace) -> Divergence | None:
    """Where `ours` (any drafter, greedy) first emits a different token from `alone` (the target
    alone, greedy, recorded); None where one output is a prefix of the other."""
    at = parting(ours.generated_ids, alone.generated_ids)
    if at is None or at >= min(len(ours.generated_ids), len(alone.generated_ids)):
        return None
    ours_top, alone_top = distribution_at(ours, at), distribution_at(alone, at)
    token, reference = ours.generated_ids[at], alone.generated_ids[at]
    flip = None
    if alone_top is not None and token in alone_top.ids:
        flip = math.log(alone_top.probs[alone_top.ids.index(reference)] / alone_top.probs[alone_top.ids.index(token)])
    return Divergence(at, token, reference, top2(ours_top), top2(alone_top), flip)


def distribution_at(trace: Trace, position: int) -> TopK | None:
    """The target's recorded top-k at generated position `position`: the parent's p of the accepted
    draft emitted there, or the p behind the iteration's final token."""
    seen = 0
    for it in trace.iterations:
        if position < seen + len(it.emitted_ids):
            offset = position - seen
            if offset < it.accepted:
                return it.drafts[it.path[offset]].p_top
            return it.final.top if it.final is not None else None
        seen += len(it.emitted_ids)
    return None


def top2(top: TopK | None) -> Top2 | None:
    if top is None or len(top.ids) < 2 or top.probs[1] <= 0:
        return None
    return Top2(top.ids[:2], top.tokens[:2], math.log(top.probs[0] / top.probs[1]))


def describe(d: Divergence, dtype: str) -> str:
    """The parting in words, for a greedy trace computed in `dtype` against its target-alone baseline."""
    where = f"Greedy output parts from the target alone's at generated token {d.position + 1}"
    if d.alone_top2 is None:
        return f"{where}; the trace recorded no distribution there to say why."
    tops = "; ".join(f"{label}: {_top2_text(top)}" for label, top in
                     (("target alone", d.alone_top2), ("verification pass", d.ours_top2)) if top is not None)
    numbers = f" ({tops})"
    if d.flip is None:
        return (f"{where}: our token is not even among the target alone's recorded top tokens there{numbers}. "
                "Rounding cannot do that: a bug in the verifier.")
    if d.near_tie():
        return (f"{where}: the target alone's top token led ours by only {d.flip:.3f} logits{numbers}. A near tie "
                f"that rounding in {dtype} flipped: verification scores k tokens in one pass, whose sums run in a "
                "different order from k one-token steps. Lossless holds up to floating point; after the parting "
                "the two texts continue from different words.")
    return (f"{where}: the target alone's top token led ours by {d.flip:.3f} logits{numbers}, more than rounding "
            f"moves (a near tie is under {NEAR_TIE}). Greedy verification should not do this: a bug in the verifier.")


def _top2_text(top: Top2) -> str:
    return f"{top.tokens[0]!r} ahead of {top.tokens[1]!r} by {top.margin:.3f}"
