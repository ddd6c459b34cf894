"""What a head learns from, recomputed from the corpus's token ids by one batched target pass.

The corpus keeps prompts and answers as ids only (`specviz.corpus`). For a training step the target
reads a batch of records once, right-padded (causal attention keeps the padding out of every real
position), and hands back at each position its states at the head's feature layers and its top-k
next-token log-probs where they predict answer tokens: a `Sample` as the cached data gave. One
prefill costs about as much as the head's step that uses it, and keeps nothing on disk.

Long records are cut to their last `window` positions after the pass: the features there were
computed over the whole record, only the head's own attention sees the shorter context.
"""

from __future__ import annotations

import numpy as np
import torch

from specviz.corpus.store import Record
from specviz.models import LoadedModel
from specviz.training.data import Sample


@torch.no_grad()
def prefill(target: LoadedModel, records: list[Record], layers: tuple[int, ...], top_k: int = 20,
            window: int = 1024, bf16: bool = False) -> list[Sample]:
    """Samples of `records` with the target's states at `layers` (side by side) as features."""
    device = target.device
    width = max(len(r.tokens) for r in records)
    ids = torch.zeros(len(records), width, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, r in enumerate(records):
        ids[b, : len(r.tokens)] = torch.from_numpy(r.tokens.astype(np.int64))
        mask[b, : len(r.tokens)] = 1
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
        out = target.model(input_ids=ids.to(device), attention_mask=mask.to(device), output_hidden_states=True)
    states = torch.cat([out.hidden_states[layer] for layer in layers], dim=-1)
    samples = []
    for b, r in enumerate(records):
        n = len(r.tokens)
        start = max(0, min(n - window, r.n_prompt - 1))   # keep every answer position, then what fits
        logp = torch.log_softmax(out.logits[b, r.n_prompt - 1: n - 1].float(), dim=-1)
        top = logp.topk(top_k, dim=-1)
        samples.append(Sample(tokens=torch.from_numpy(r.tokens[start:].astype(np.int32)), n_prompt=r.n_prompt - start,
                              features=states[b, start: n - 1].to(torch.float16).cpu(),
                              top_ids=top.indices.int().cpu(), top_logp=top.values.half().cpu()))
    return samples


class PrefilledRecords:
    """Corpus records that become `Sample`s when a training step takes them (`prefill`)."""

    def __init__(self, target: LoadedModel, records: list[Record], layers: tuple[int, ...], top_k: int = 20,
                 window: int = 1024, bf16: bool = False):
        self.target, self.records, self.layers = target, records, layers
        self.top_k, self.window, self.bf16 = top_k, window, bf16

    def __len__(self) -> int:
        return len(self.records)

    def take(self, indices: list[int]) -> list[Sample]:
        return prefill(self.target, [self.records[i] for i in indices], self.layers, self.top_k, self.window,
                       self.bf16)
