"""Padded training batches cut from cached target answers, one layout per drafter kind.

EAGLE (Li et al. 2024): head position t reads (f_t, x_{t+1}), predicts f_{t+1} and through the
LM head x_{t+2}, whose target distribution is the target's at position t+1. Tiny LM: position t
reads x_t and predicts x_{t+1}, the target's distribution at position t. Losses count only the
positions that predict answer tokens; sequences are right-padded, so causal attention alone keeps
the padding out of every counted position.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from specviz.training.data import Sample
from specviz.training.loss import Targets


@dataclass
class Batch:
    tokens: torch.Tensor          # [B, T] input tokens (EAGLE: x_{t+1}; tiny: x_t)
    positions: torch.Tensor       # [T]
    counted: torch.Tensor         # [B, T] bool: positions in the loss, row-major order = rows of `targets`
    targets: Targets
    features: torch.Tensor | None = None   # [B, T, d] EAGLE input features f_t
    next_features: torch.Tensor | None = None  # [B, T, d] EAGLE regression targets f_{t+1}


def draft_vocabulary(samples: list[Sample], size: int, vocab_size: int) -> torch.Tensor:
    """The `size` token ids the target uses most in `samples` (its answers and top-5 candidates),
    topped up with the lowest ids (BPE merges, the most frequent pieces first); sorted."""
    if size <= 0 or size >= vocab_size:
        return torch.arange(vocab_size)
    counts = torch.zeros(vocab_size)
    for s in samples:
        counts.index_add_(0, s.tokens.long(), torch.ones(len(s.tokens)))
        counts.index_add_(0, s.top_ids[:, :5].flatten().long(), torch.full((s.top_ids[:, :5].numel(),), 0.5))
    counts += torch.linspace(1e-3, 0, vocab_size)  # ties (and unseen tokens) go to the lowest ids
    return counts.topk(size).indices.sort().values


def index_map(vocab: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """[vocab_size] position of each token id in the draft vocabulary, -1 outside it."""
    index = torch.full((vocab_size,), -1, dtype=torch.long)
    index[vocab] = torch.arange(len(vocab))
    return index


def make_batch(samples: list[Sample], kind: str, index: torch.Tensor, device: torch.device) -> Batch:
    """A padded batch of `samples` for a drafter of `kind` ("eagle" or "tiny")."""
    shift = 1 if kind == "eagle" else 0  # EAGLE's position t predicts token t+2, tiny's t+1
    lengths = [len(s.tokens) - 1 - shift for s in samples]
    width = max(lengths)
    tokens = torch.zeros(len(samples), width, dtype=torch.long)
    counted = torch.zeros(len(samples), width, dtype=torch.bool)
    features = next_features = None
    if kind == "eagle":
        features = torch.zeros(len(samples), width, samples[0].features.shape[-1])
        next_features = torch.zeros_like(features)
    rows = []
    for b, (s, n) in enumerate(zip(samples, lengths)):
        tokens[b, :n] = s.tokens[shift: shift + n].long()
        first = s.n_prompt - 1 - shift  # the position predicting the first answer token
        skip = max(0, -first)  # EAGLE cannot predict the token right after a one-token prompt
        counted[b, first + skip: n] = True
        rows.append(slice(skip, None))
        if features is not None:
            features[b, :n] = s.features[:n].float()
            next_features[b, :n] = s.features[1: n + 1].float()
    top_ids = torch.cat([s.top_ids[r].long() for s, r in zip(samples, rows)])
    top_logp = torch.cat([s.top_logp[r].float() for s, r in zip(samples, rows)])
    next_ids = torch.cat([s.tokens[s.n_prompt:][r].long() for s, r in zip(samples, rows)])
    targets = Targets(index[top_ids].to(device), top_logp.to(device), index[next_ids].to(device))
    batch = Batch(tokens.to(device), torch.arange(width, device=device), counted.to(device), targets)
    if features is not None:
        batch.features, batch.next_features = features.to(device), next_features.to(device)
    return batch
