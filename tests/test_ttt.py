"""Training-time test computes, at every position at once, what drafting computes one chain at a time."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from specviz import DecodeSettings, generate
from specviz.corpus.answer import Ask, answer
from specviz.corpus.store import Record
from specviz.drafters import load_trained
from specviz.drafters.eagle import EagleHead
from specviz.drafters.weights import save_weights
from specviz.models import layer_states
from specviz.training.config import TrainConfig
from specviz.training.prefill import PrefilledRecords
from specviz.training.train import model_config, train
from specviz.training.ttt import ttt_mask, unrolled


def test_the_mask_sees_the_context_then_the_chain():
    mask = ttt_mask(3, 5, torch.device("cpu")).int()
    # position 4 at step 3: chain rooted at 2, so true keys 0..2, step 2's key at 3, its own key at 4
    assert mask[4].tolist() == [1, 1, 1, 0, 0] + [0, 0, 0, 1, 0] + [0, 0, 0, 0, 1]
    assert mask[0].tolist() == [0] * 5 + [0] * 5 + [1, 0, 0, 0, 0]
    assert ttt_mask(1, 3, torch.device("cpu")).int().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]


@pytest.mark.parametrize("layers, depth", [((-1,), 1), ((0, 1, 2), 1), ((0, 1, 2), 2)])
def test_unrolled_steps_equal_drafting_chains(small, layers, depth):
    """Step j at position s equals a draft chain rooted at r = s − j + 1: the head over the true features
    up to r, then j − 1 steps each fed the previous prediction and the next true token; with one decoder
    layer or two."""
    torch.manual_seed(0)
    head = EagleHead.from_target(small, torch.arange(small.vocab_size), std=0.3, feature_layers=layers,
                                 layers=depth).eval()
    length, steps = 9, 4
    tokens = torch.randint(3, small.vocab_size, (1, length + 1))
    with torch.no_grad():
        states = small.model(tokens, output_hidden_states=True).hidden_states
        states = layer_states(states, layers)[:, :length]
        outputs = unrolled(head, states, tokens[:, 1:], torch.arange(length), steps)
        for step in range(1, steps + 1):
            for s in range(step - 1, length):
                root = s - step + 1
                out, cache = head(head.feature(states[:, : root + 1]), tokens[:, 1: root + 2], torch.arange(root + 1))
                feature = out[:, -1:]
                for node in range(root + 1, s + 1):
                    feature, cache = head(feature, tokens[:, node + 1: node + 2], torch.tensor([node]), cache)
                torch.testing.assert_close(outputs[step - 1][:, s], feature[:, -1], atol=1e-5, rtol=1e-5)


def test_a_fused_head_learns_from_corpus_records_and_drafts_as_the_target_decodes(small, tmp_path):
    """EAGLE-3's recipe end to end on the tiny target: records answered by the target, prefilled per
    step, three fused layers, three unrolled steps; the saved head reloads and drafts in the decoder,
    whose greedy output stays the target's."""
    prompts = [[3 + (i * 5 + j) % 13 for j in range(3 + i % 4)] for i in range(12)]
    answers = answer(small, [Ask(p) for p in prompts], max_new_tokens=12)
    records = [Record(np.array(p + a, dtype=np.uint16), len(p), "chat", "test", 0.0, -1, str(i))
               for i, (p, a) in enumerate(zip(prompts, answers))]
    cfg = TrainConfig(kind="eagle", steps=40, batch_size=4, lr=3e-3, warmup=2, eval_every=20, draft_vocab=0,
                      feature_layers="0,1,2", ttt=True, unroll=3, reg_weight=0.0, corpus=True)
    data = PrefilledRecords(small, records, cfg.layers, top_k=4, window=12)
    model = train(cfg, small, data, data.take([0, 1, 2, 3]), tmp_path / "checkpoint.pt", progress=False,
                  vocab=torch.arange(small.vocab_size))
    first, last = cfg.curve[0], cfg.curve[-1]
    assert {"val_kl1", "val_kl2", "val_kl3"} <= set(last) and last["val_kl3"] < first["val_kl3"]
    path = tmp_path / "eagle3.safetensors"
    save_weights(path, model.state_dict(), "eagle", model_config(cfg, model), small)
    drafter = load_trained("eagle", small, path)
    assert drafter.feature_layers == (0, 1, 2)
    settings = DecodeSettings(temperature=0.0, gamma=3, max_new_tokens=16)
    alone = generate(small, None, "w1 w2 w3", settings, chat=False)
    drafted = generate(small, drafter, "w1 w2 w3", settings, chat=False)
    assert drafted.generated_ids == alone.generated_ids and sum(it.drafted for it in drafted.iterations) > 0
