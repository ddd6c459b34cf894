"""Training batches cut from cached target answers, one layout per drafter kind.

EAGLE (Li et al. 2024): head position t reads (f_t, x_{t+1}), predicts f_{t+1} and through the
LM head x_{t+2}, whose target distribution is the target's at position t+1. Tiny LM: position t
reads x_t and predicts x_{t+1}, the target's distribution at position t. Both are right-padded;
causal attention alone keeps the padding out of every counted position.

Blockwise heads: head i reads f_t and predicts x_{t+1+i}, the target's distribution at position
t+i; every feature from the one before the answer on is a row. Spec-Drafter: several cuts L of
each answer, each followed by the k masks, mask j predicting x_{L+j}; all sequences and their masks
are packed into one row under an explicit attention mask (each mask group sees its own sequence's
first L tokens and its own masks).

Losses count only the positions that predict answer tokens. `slot` says which drafted position
(head, mask) each counted row belongs to, for the per-position numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from specviz.training.data import Sample
from specviz.training.loss import Targets


@dataclass
class Batch:
    targets: Targets
    counted: torch.Tensor         # bool: outputs in the loss, in row-major order the rows of `targets`
    tokens: torch.Tensor | None = None     # [B, T] input tokens (EAGLE: x_{t+1}; tiny: x_t); [n] packed
    positions: torch.Tensor | None = None  # [T]
    features: torch.Tensor | None = None   # [B, T, d] EAGLE input features f_t; [N, d] the heads'
    next_features: torch.Tensor | None = None  # [B, T, d] EAGLE regression targets f_{t+1}
    queries: torch.Tensor | None = None    # [m] Spec-Drafter: the mask of each query after the tokens
    mask: torch.Tensor | None = None       # [n + m, n + m] Spec-Drafter attention mask (True: may attend)
    slot: torch.Tensor | None = None       # [rows] drafted position (0-based) of each row of `targets`


def draft_vocabulary(samples: list[Sample], size: int, vocab_size: int) -> torch.Tensor:
    """The `size` token ids the target uses most in `samples` (its answers and top-5 candidates),
    topped up with the lowest ids (BPE merges, the most frequent pieces first); sorted."""
    counts = torch.zeros(vocab_size)
    for s in samples:
        counts.index_add_(0, s.tokens.long(), torch.ones(len(s.tokens)))
        counts.index_add_(0, s.top_ids[:, :5].flatten().long(), torch.full((s.top_ids[:, :5].numel(),), 0.5))
    return most_used(counts, size)


def corpus_vocabulary(answers: list[np.ndarray], size: int, vocab_size: int) -> torch.Tensor:
    """The `size` token ids the target wrote most often in the corpus's answers (topped up as above)."""
    counts = np.bincount(np.concatenate(answers).astype(np.int64), minlength=vocab_size) if answers else 0
    return most_used(torch.as_tensor(counts, dtype=torch.float32) + torch.zeros(vocab_size), size)


def most_used(counts: torch.Tensor, size: int) -> torch.Tensor:
    """The `size` ids with the largest counts [V], sorted; ties (and unseen tokens) go to the lowest
    ids, BPE's most frequent merges. The whole vocabulary when `size` is 0 or not smaller."""
    if size <= 0 or size >= len(counts):
        return torch.arange(len(counts))
    return (counts + torch.linspace(1e-3, 0, len(counts))).topk(size).indices.sort().values


def index_map(vocab: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """[vocab_size] position of each token id in the draft vocabulary, -1 outside it."""
    index = torch.full((vocab_size,), -1, dtype=torch.long)
    index[vocab] = torch.arange(len(vocab))
    return index


def make_batch(samples: list[Sample], kind: str, index: torch.Tensor, device: torch.device, block: int = 4,
               cuts: int = 16, seed: int = 0) -> Batch:
    """A batch of `samples` for a drafter of `kind`: "eagle" / "tiny" (padded sequences), "medusa"
    (`block` heads) or "specdrafter" (`cuts` random cuts per answer, drawn with `seed`, `block` masks)."""
    if kind == "medusa":
        return heads_batch(samples, index, device, block)
    if kind == "specdrafter":
        return mask_batch(samples, index, device, block, cuts, seed)
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
    batch = Batch(_targets(samples, rows, index, device), counted.to(device), tokens.to(device),
                  torch.arange(width, device=device))
    if features is not None:
        batch.features, batch.next_features = features.to(device), next_features.to(device)
    return batch


def _targets(samples: list[Sample], rows: list[torch.Tensor | slice], index: torch.Tensor,
             device: torch.device) -> Targets:
    """The target's top-k and next token at answer rows `rows[b]` of each sample b."""
    top_ids = torch.cat([s.top_ids[r].long() for s, r in zip(samples, rows)])
    top_logp = torch.cat([s.top_logp[r].float() for s, r in zip(samples, rows)])
    next_ids = torch.cat([s.tokens[s.n_prompt:][r].long() for s, r in zip(samples, rows)])
    return Targets(index[top_ids].to(device), top_logp.to(device), index[next_ids].to(device))


def heads_batch(samples: list[Sample], index: torch.Tensor, device: torch.device, heads: int) -> Batch:
    """Features f_t [N, d] for t from the second-to-last prompt position on, and for head i (1-based)
    the answer row t + 1 + i - n_prompt of x_{t+1+i}, counted where the answer has one."""
    offsets = torch.arange(1, heads + 1)
    features, counted, rows = [], [], []
    for s in samples:
        t = torch.arange(max(0, s.n_prompt - 2), len(s.tokens) - 2)
        row = t[:, None] + 1 + offsets[None] - s.n_prompt   # [n, heads]
        inside = row < s.n_answer
        features.append(s.features[t].float())
        counted.append(inside)
        rows.append(row[inside])
    counted = torch.cat(counted)
    return Batch(_targets(samples, rows, index, device), counted.to(device), features=torch.cat(features).to(device),
                 slot=counted.nonzero()[:, 1].to(device))


def mask_batch(samples: list[Sample], index: torch.Tensor, device: torch.device, masks: int, cuts: int,
               seed: int) -> Batch:
    """Every sample's tokens up to its last cut, then for each cut L its `masks` queries at positions
    L..L+masks-1, mask j counted where the answer has x_{L+j}; packed into one row."""
    generator = torch.Generator().manual_seed(seed)
    contexts, positions, groups, rows, counted = [], [], [], [], []
    for s in samples:
        chosen = torch.randperm(s.n_answer, generator=generator)[:cuts].sort().values + s.n_prompt   # cuts L
        contexts.append(s.tokens[: int(chosen[-1])].long())
        positions.append(torch.arange(int(chosen[-1])))
        groups.append(chosen)
        row = chosen[:, None] + torch.arange(masks)[None] - s.n_prompt   # mask j of cut L: answer row L + j
        rows.append(row[row < s.n_answer])
        counted.append((row < s.n_answer).flatten())
    n = sum(len(c) for c in contexts)
    m = sum(len(g) for g in groups) * masks
    mask = torch.zeros(n + m, n + m, dtype=torch.bool)
    start, query = 0, n
    for context, chosen in zip(contexts, groups):
        width = len(context)
        mask[start:start + width, start:start + width] = torch.ones(width, width, dtype=torch.bool).tril()
        for cut in chosen.tolist():
            mask[query:query + masks, start:start + cut] = True
            mask[query:query + masks, query:query + masks] = True
            positions.append(torch.arange(cut, cut + masks))
            query += masks
        start += width
    counted = torch.cat(counted)
    slot = torch.arange(masks).repeat(m // masks)[counted]
    return Batch(_targets(samples, rows, index, device), counted.to(device), torch.cat(contexts).to(device),
                 torch.cat(positions).to(device), queries=torch.arange(masks).repeat(m // masks).to(device),
                 mask=mask.to(device), slot=slot.to(device))
