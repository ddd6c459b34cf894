"""What a head learns from, recomputed from the corpus's token ids by the target at training time.

The corpus keeps prompts and answers as ids only (`specviz.corpus`). For a training step the target
reads each record of the batch in one pass and hands back, at each position, its states at the
head's feature layers and its top-k next-token log-probs where they predict answer tokens: a
`Sample` as the cached data gave. Records go one at a time, not padded side by side: on the CPU a
pass over a few hundred positions already fills the matrix units, and a padded batch's masked
attention measured 6.5× slower for the same eight records. The LM head runs on answer positions
only (the prompt's next-token distributions are never trained on). Nothing is kept on disk.

Long records are cut to their last `window` positions after the pass: the features there were
computed over the whole record, only the head's own attention sees the shorter context.
"""

from __future__ import annotations

import numpy as np
import torch

from specviz.corpus.store import Record
from specviz.models import LoadedModel, layer_states
from specviz.training.data import Sample


@torch.no_grad()
def prefill(target: LoadedModel, records: list[Record], layers: tuple[int, ...], top_k: int = 20,
            window: int = 1024, bf16: bool = False) -> list[Sample]:
    """Samples of `records` with the target's states at `layers` (side by side) as features."""
    device, model = target.device, target.model
    samples = []
    for r in records:
        n = len(r.tokens)
        ids = torch.from_numpy(r.tokens.astype(np.int64))[None].to(device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            out = model.get_decoder()(input_ids=ids, output_hidden_states=True)
            logits = model.get_output_embeddings()(out.last_hidden_state[0, r.n_prompt - 1: n - 1])
        states = layer_states(out.hidden_states, layers)[0]
        start = max(0, min(n - window, r.n_prompt - 1))   # keep every answer position, then what fits
        top = torch.log_softmax(logits.float(), dim=-1).topk(top_k, dim=-1)
        samples.append(Sample(tokens=torch.from_numpy(r.tokens[start:].astype(np.int32)), n_prompt=r.n_prompt - start,
                              features=states[start: n - 1].to(torch.float16).cpu(),
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

    def lengths(self) -> list[int]:
        """Each record's positions the head trains over (after the `window` cut)."""
        return [min(len(r.tokens), max(self.window, r.n_answer + 1)) for r in self.records]

    def take(self, indices: list[int]) -> list[Sample]:
        return prefill(self.target, [self.records[i] for i in indices], self.layers, self.top_k, self.window,
                       self.bf16)
