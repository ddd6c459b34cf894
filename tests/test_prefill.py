"""A record's prefill gives what the target's own forward pass computes: states at the layers, top-k log-probs."""

from __future__ import annotations

import numpy as np
import torch

from specviz.corpus.store import Record
from specviz.models import layer_states
from specviz.training.prefill import prefill


def record(tokens: list[int], n_prompt: int) -> Record:
    return Record(np.array(tokens, dtype=np.uint16), n_prompt, "chat", "test", 0.0, -1, "x")


def test_prefill_matches_each_record_alone(small):
    records = [record([3, 4, 5, 6, 7, 8, 9], 3), record([10, 11, 4, 5], 2), record([5, 6, 7, 8, 9, 10, 11, 12, 3], 6)]
    layers = (1, -1)
    batch = prefill(small, records, layers, top_k=4, window=6)
    for r, sample in zip(records, batch):
        ids = torch.tensor([r.tokens.astype(np.int64)])
        with torch.no_grad():
            out = small.model(ids, output_hidden_states=True)
        states = layer_states(out.hidden_states, layers)[0]
        start = len(r.tokens) - len(sample.tokens)
        assert sample.tokens.tolist() == r.tokens[start:].tolist() and sample.n_answer == r.n_answer
        assert start <= r.n_prompt - 1 and (len(sample.tokens) <= 6 or start == r.n_prompt - 1)
        torch.testing.assert_close(sample.features.float(), states[start:-1], atol=2e-3, rtol=2e-3)
        top = torch.log_softmax(out.logits[0, r.n_prompt - 1:-1], -1).topk(4)
        assert sample.top_ids.tolist() == top.indices.tolist()
        torch.testing.assert_close(sample.top_logp.float(), top.values, atol=2e-3, rtol=2e-3)
