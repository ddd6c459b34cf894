"""Training-time test: the EAGLE head trained on its own predictions, as it drafts (Li et al. 2025, EAGLE-3 §3.2).

While drafting, only the first draft step reads a feature the target computed; step j reads the
feature the head itself predicted at step j − 1. A head trained on true features alone meets its own
(slightly wrong) predictions only at test time, and its acceptance falls with every position.

Unrolled step j at position s stands for the j-th draft step of a chain rooted at r = s − j + 1: it
reads the feature the head predicted at s − 1 in step j − 1 and the true next token x_{s+1}, and
predicts the same target distribution at s + 1 as step 1 does. Its attention must see what the
draft would: the true-feature keys of positions ≤ r (step 1's), then one key from each later step,
the chain's own positions r + 1 … s. Stacking each step's keys after the previous ones, step j's
mask over [step 1 | step 2 | … | step j] is
    step 1: key c visible iff c ≤ s − (j − 1)        (the committed context)
    step i: key c visible iff c = s − (j − i)        (the chain's i-th node, i = 2 … j)
so every step costs one more block of keys, and all positions are trained at once.
"""

from __future__ import annotations

import torch

from specviz.drafters.eagle import EagleHead


def ttt_mask(step: int, length: int, device: torch.device) -> torch.Tensor:
    """Attention mask [T, step·T] (True: may attend) of unrolled step `step` (1-based) over the keys of
    steps 1 … step, T = `length` positions each."""
    s = torch.arange(length, device=device)[:, None]
    c = torch.arange(length, device=device)[None, :]
    blocks = [c <= s - (step - 1)] + [c == s - (step - i) for i in range(2, step + 1)]
    return torch.cat(blocks, dim=1)


def unrolled(head: EagleHead, states: torch.Tensor, tokens: torch.Tensor, positions: torch.Tensor,
             steps: int) -> list[torch.Tensor]:
    """The head's predicted features f̂ [B, T, d] at every unrolled step 1 … `steps`.

    states [B, T, k·d]: the target's states at the head's feature layers at positions t; tokens
    [B, T]: x_{t+1}; positions [T]. Step j's input at s is step j − 1's prediction at s − 1."""
    features = head.feature(states)
    outputs, past = [], None
    for step in range(1, steps + 1):
        if step > 1:
            features = torch.cat([features[:, :1], outputs[-1][:, :-1]], dim=1)
        mask = ttt_mask(step, tokens.shape[1], tokens.device) if step > 1 else None
        predicted, past = head(features, tokens, positions, past, mask)
        outputs.append(predicted)
    return outputs
