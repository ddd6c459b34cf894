"""A record's prefill gives what the target's own forward pass computes: states at the layers, top-k log-probs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from specviz.corpus.store import Record
from specviz.models import layer_states
from specviz.training.prefill import PrefilledRecords, other_stores, prefill, record_key, store_folder


def record(tokens: list[int], n_prompt: int) -> Record:
    return Record(np.array(tokens, dtype=np.uint16), n_prompt, "chat", "test", 0.0, -1, "x")


def test_prefill_matches_each_record_alone(small):
    records = [record([3, 4, 5, 6, 7, 8, 9], 3), record([10, 11, 4, 5], 2), record([5, 6, 7, 8, 9, 10, 11, 12, 3], 6)]
    layers = (1, -1)
    batch = prefill(small, records, layers, top_k=4, window=6)
    for r, sample in zip(records, batch):
        ids = torch.from_numpy(r.tokens.astype(np.int64))[None]
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


def test_a_feature_store_gives_back_what_the_prefill_gave_and_skips_the_target(small, tmp_path, monkeypatch):
    records = [record([3, 4, 5, 6, 7, 8, 9], 3), record([10, 11, 4, 5], 2), record([5, 6, 7, 8, 9, 10, 11, 12], 6)]
    store = store_folder(tmp_path, "mark", (1, -1), 4, 6, False)
    fresh = PrefilledRecords(small, records, (1, -1), top_k=4, window=6).take([2, 0])
    first = PrefilledRecords(small, records, (1, -1), top_k=4, window=6, store=store).take([2, 0])
    assert sorted(p.name for p in store.iterdir()) == sorted(f"{record_key(records[i])}.pt" for i in (0, 2))

    def no_target(*args, **kwargs):   # a stored record must not reach the target again
        assert not args[1], "prefilled a stored record"
        return []
    monkeypatch.setattr("specviz.training.prefill.prefill", no_target)
    again = PrefilledRecords(small, records, (1, -1), top_k=4, window=6, store=store).take([0, 2])
    for a, b, c in zip(fresh, first, again[::-1]):
        assert a.n_prompt == b.n_prompt == c.n_prompt
        for name in ("tokens", "features", "top_ids", "top_logp"):
            assert torch.equal(getattr(a, name), getattr(b, name)) and torch.equal(getattr(a, name), getattr(c, name))


def test_stores_of_other_settings_are_named_with_the_disk_they_hold(tmp_path):
    store = store_folder(tmp_path, "mark", (1, -1), 4, 6, False)
    store.mkdir()
    (store / "a.pt").write_bytes(b"x" * 10)
    assert other_stores(store) == ""
    older = store_folder(tmp_path, "mark", (-1,), 4, 6, False)
    older.mkdir()
    with open(older / "a.pt", "wb") as f:
        f.truncate(300_000_000)   # sparse: its size without the disk
    (tmp_path / "checkpoint-eagle.pt").write_bytes(b"x")
    assert other_stores(store) == (f"feature stores of other settings in {tmp_path}, which this run does not read: "
                                   f"{older.name} (0.3 GB); delete a folder to free its space")


def test_a_store_that_cannot_be_written_warns_and_training_data_still_comes(small, tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    records = [record([3, 4, 5, 6, 7], 2), record([8, 9, 10, 11], 2)]
    prefilled = PrefilledRecords(small, records, (-1,), top_k=4, store=blocked / "store")
    with pytest.warns(UserWarning, match="feature store .* stopped"):
        samples = prefilled.take([0, 1])
    assert [s.tokens.tolist() for s in samples] == [r.tokens.tolist() for r in records]
    assert prefilled.store is None and len(prefilled.take([1])) == 1


def test_store_features_needs_the_corpus(capsys):
    from specviz.cli import main
    assert main(["train-drafter", "--store-features", "--steps", "1"]) == 2
    assert "--store-features keeps the corpus's prefilled features: it needs --corpus" in capsys.readouterr().err


def test_samples_are_every_record_in_order_a_chunk_at_a_time(small):
    records = [record([3, 4, 5, 6, 7], 2), record([10, 11, 4, 5], 2), record([5, 6, 7, 8, 9], 3)]
    whole = PrefilledRecords(small, records, (-1,), top_k=4).samples(chunk=2)
    assert [s.tokens.tolist() for s in whole] == [r.tokens.tolist() for r in records]
    for a, b in zip(whole, PrefilledRecords(small, records, (-1,), top_k=4).take([0, 1, 2])):
        assert torch.equal(a.top_ids, b.top_ids) and a.n_prompt == b.n_prompt
