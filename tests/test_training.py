"""Drafter training on a tiny target built from a config: data, loss, loop, resume, weights."""

from __future__ import annotations

import importlib
import math
from dataclasses import replace

import pytest
import torch
from scipy.stats import chisquare

from specviz import DecodeSettings, generate
from specviz.drafters import load_trained
from specviz.drafters.eagle import EagleHead
from specviz.drafters.layers import spread
from specviz.drafters.tiny import TinyLM
from specviz.drafters.weights import save_weights
from specviz.errors import SpecvizError
from specviz.models import layer_states
from specviz.training import data
from specviz.training.batches import draft_vocabulary, index_map
from specviz.training.config import TrainConfig, run_key
from specviz.training.data import answer_batch, answer_in_batches, cached_samples
from specviz.training.loss import Targets, distill
from specviz.training.train import batch_indices, build_model, model_config, train

PROMPTS = ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9 w10", "w11", "w3 w3 w12", "w2 w9 w4 w4", "w5 w6 w7", "w10 w1"]


@pytest.fixture(scope="module")
def samples(small):
    batches = answer_in_batches(small, PROMPTS, max_new_tokens=10, top_k=4, batch_size=3)
    answers = {prompt: sample for chunk, samples in batches for prompt, sample in zip(chunk, samples)}
    return [answers[p] for p in PROMPTS]


def test_batched_answers_match_one_prompt_at_a_time(small):
    prompts = [small.encode_prompt(p) for p in PROMPTS[:3]]
    together = answer_batch(small, prompts, max_new_tokens=10, top_k=4)
    for prompt, sample in zip(prompts, together):
        alone = answer_batch(small, [prompt], max_new_tokens=10, top_k=4)[0]
        assert sample.tokens.tolist() == alone.tokens.tolist()
        assert torch.allclose(sample.features.float(), alone.features.float(), atol=1e-2)
        ids = torch.tensor([prompt])
        expected = small.model.generate(ids, do_sample=False, max_new_tokens=10)[0, len(prompt):]
        assert sample.tokens[len(prompt):].tolist() == expected.tolist()[: sample.n_answer]
        assert sample.features.shape[0] == len(sample.tokens) - 1
        assert sample.top_ids.shape == (sample.n_answer, 4)
        assert sample.top_ids[:, 0].tolist() == sample.tokens[len(prompt):].tolist()


def test_cached_answers_grow_with_the_prompt_set(small, samples, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    answered = []

    def counting(target, prompts, *args):
        answered.extend(prompts)
        return answer_batch(target, prompts, *args)

    monkeypatch.setattr(data, "answer_batch", counting)
    for n in (4, 6, 6):
        monkeypatch.setattr(data, "load_prompts", lambda split, n=n: PROMPTS[:n])
        got = cached_samples(small, "train", "test", max_new_tokens=10, top_k=4, batch_size=3)
        assert [s.tokens.tolist() for s in got.samples] == [s.tokens.tolist() for s in samples[:n]]
        assert got.seconds is not None and got.seconds > 0
    assert len(answered) == 6  # the second call answered only the two new prompts, the third none


def test_sampled_answers_follow_the_target_distribution(small):
    """A sampled answer's first token is drawn from the target's p at T = 1 (chi-square over
    many copies of one prompt in one batch), and the same generator seed gives the same answers."""
    prompt = small.encode_prompt(PROMPTS[0])
    with torch.no_grad():
        p = torch.softmax(small.model(torch.tensor([prompt])).logits[0, -1].double(), dim=-1)
    n = 2000
    first = answer_batch(small, [prompt] * n, max_new_tokens=1, top_k=4, generator=torch.Generator().manual_seed(3))
    observed = torch.bincount(torch.tensor([int(s.tokens[-1]) for s in first]), minlength=len(p)).double()
    seen = p > 1e-3 / n
    assert observed[~seen].sum() == 0
    assert chisquare(observed[seen], p[seen] / p[seen].sum() * n).pvalue > 1e-3
    runs = [answer_batch(small, [prompt] * 8, 10, 4, torch.Generator().manual_seed(3)) for _ in range(2)]
    assert [s.tokens.tolist() for s in runs[0]] == [s.tokens.tolist() for s in runs[1]]


def test_sampled_answers_are_cached_apart_from_greedy_ones(small, samples, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    monkeypatch.setattr(data, "load_prompts", lambda split: PROMPTS)
    greedy = cached_samples(small, "train", "test", max_new_tokens=10, top_k=4, batch_size=3)
    sampled = cached_samples(small, "train", "test", max_new_tokens=10, top_k=4, batch_size=3, seed=1)
    assert [s.tokens.tolist() for s in greedy.samples] == [s.tokens.tolist() for s in samples]
    assert [s.tokens.tolist() for s in sampled.samples] != [s.tokens.tolist() for s in samples]
    monkeypatch.setattr(data, "answer_batch", None)  # from here on everything must come from the cache
    again = cached_samples(small, "train", "test", max_new_tokens=10, top_k=4, batch_size=3, seed=1)
    assert [s.tokens.tolist() for s in again.samples] == [s.tokens.tolist() for s in sampled.samples]
    assert len(list(tmp_path.glob("training/answers-test-10-4-sampled1/*.pt"))) == 3


def test_distill_loss_vanishes_when_q_is_p():
    logp = torch.log_softmax(torch.randn(5, 7), dim=-1)
    top = logp.topk(7, dim=-1)
    targets = Targets(top.indices, top.values, top.indices[:, 0])
    loss, parts = distill(logp, targets, ce_weight=0.0)
    assert abs(loss.item()) < 1e-5 and abs(parts["beta"] - 1.0) < 1e-5 and parts["top1"] == 1.0


def test_distill_loss_is_kl_plus_weighted_ce_and_beta_is_the_overlap():
    """p = [0.5, 0.5, 0], q = [0.25, 0.25, 0.5], the target's next token 1: KL(p‖q) = log 2, CE = log 4,
    β = Σ min(p, q) = 0.5, and q's top token (2) is not p's."""
    logq = torch.tensor([[0.25, 0.25, 0.5]]).log()
    targets = Targets(torch.tensor([[0, 1]]), torch.tensor([[0.5, 0.5]]).log(), torch.tensor([1]))
    loss, parts = distill(logq, targets, ce_weight=0.5)
    assert loss.item() == pytest.approx(math.log(2) + 0.5 * math.log(4))
    assert parts["kl"] == pytest.approx(math.log(2)) and parts["ce"] == pytest.approx(math.log(4))
    assert parts["beta"] == pytest.approx(0.5) and parts["top1"] == 0.0


def test_draft_vocabulary_spreads_to_a_full_distribution(samples):
    vocab = draft_vocabulary(samples, 6, 16)
    assert len(vocab) == 6 and vocab.tolist() == sorted(vocab.tolist())
    index = index_map(vocab, 16)
    assert (index[vocab] == torch.arange(6)).all() and (index >= 0).sum() == 6
    q = torch.softmax(spread(torch.randn(6), vocab, 16), dim=-1)
    assert abs(q.sum().item() - 1) < 1e-6 and (q[index < 0] == 0).all()


def test_batches_hold_sequences_of_like_length_and_cover_each_epoch():
    lengths = tuple(int(x) for x in torch.randint(20, 2000, (1000,), generator=torch.Generator().manual_seed(0)))
    steps = [batch_indices(lengths, 8, step, seed=3) for step in range(250)]   # two epochs of 125 batches
    assert steps == [batch_indices(lengths, 8, step, seed=3) for step in range(250)]   # resuming is exact
    for epoch in (steps[:125], steps[125:]):
        assert sorted(i for batch in epoch for i in batch) == list(range(1000))
    assert steps[:125] != steps[125:]
    padded = sum(8 * max(lengths[i] for i in b) for b in steps) / sum(lengths[i] for b in steps for i in b)
    shuffled = [list(range(i, i + 8)) for i in range(0, 1000, 8)]   # lengths are i.i.d.: a random cut
    padded_randomly = sum(8 * max(lengths[i] for i in b) for b in shuffled) / sum(lengths)
    assert padded < 1.1 < 1.5 < padded_randomly


@pytest.mark.parametrize("kind, bf16", [("eagle", False), ("tiny", False), ("eagle", True), ("medusa", True),
                                        ("specdrafter", True)])
def test_a_few_steps_lower_the_loss_and_resume(small, samples, kind, bf16, tmp_path):
    cfg = TrainConfig(kind=kind, steps=30, batch_size=4, lr=3e-3, warmup=2, eval_every=10, draft_vocab=0, bf16=bf16)
    checkpoint = tmp_path / "checkpoint.pt"
    model = train(cfg, small, samples, samples, checkpoint, progress=False)
    first, last = cfg.curve[0], cfg.curve[-1]
    key = "val_kl" if kind == "tiny" else "val_kl1"   # EAGLE: unrolled step 1; parallel: position 1
    assert last[key] < first[key]
    resumed = replace(cfg, steps=40, curve=[])
    train(resumed, small, samples, samples, checkpoint, progress=False)
    assert resumed.resumed_from == 30 and [c["step"] for c in resumed.curve] == [10, 20, 30, 40]
    path = tmp_path / f"{kind}.safetensors"
    save_weights(path, model.state_dict(), kind, model_config(cfg, model), small)
    drafter = load_trained(kind, small, path)
    assert drafter.name.endswith(f"({kind})")


@pytest.mark.parametrize("kind", ["eagle", "specdrafter"])   # feature noise; random cuts
def test_an_interrupted_run_resumes_to_the_weights_of_one_never_stopped(small, samples, tmp_path, monkeypatch,
                                                                         kind):
    """Stopped after its step-10 checkpoint and resumed with --resume, a run ends with the same weights, bit for
    bit, as the same run left alone: weights, optimizer state, batch order and random draws all carry over."""
    training = importlib.import_module("specviz.training.train")

    def config() -> TrainConfig:
        return TrainConfig(kind=kind, steps=20, batch_size=4, lr=3e-3, warmup=2, eval_every=10, draft_vocab=0)

    whole = train(config(), small, samples, samples, progress=False)
    checkpoint, take = tmp_path / "checkpoint.pt", training.batch_indices

    def stops_at_step_10(lengths, size, step, seed):
        if step == 10:
            raise KeyboardInterrupt
        return take(lengths, size, step, seed)

    monkeypatch.setattr(training, "batch_indices", stops_at_step_10)
    with pytest.raises(KeyboardInterrupt):
        train(config(), small, samples, samples, checkpoint, progress=False)
    monkeypatch.setattr(training, "batch_indices", take)
    resumed = config()
    again = train(resumed, small, samples, samples, checkpoint, progress=False)
    assert resumed.resumed_from == 10
    mine = again.state_dict()
    assert all(torch.equal(value, mine[name]) for name, value in whole.state_dict().items())


def test_a_resumed_run_keeps_its_draft_vocabulary(small, samples, tmp_path):
    """Resuming after the data grew must not re-pick the draft vocabulary under trained LM-head rows."""
    checkpoint = tmp_path / "checkpoint.pt"
    first = train(TrainConfig(steps=4, batch_size=4, eval_every=2, draft_vocab=6), small, samples[:2], samples,
                  checkpoint, progress=False)
    grown = samples[2:]
    assert draft_vocabulary(grown, 6, small.vocab_size).tolist() != first.vocab.tolist()
    resumed = train(TrainConfig(steps=6, batch_size=4, eval_every=2, draft_vocab=6), small, grown, samples,
                    checkpoint, progress=False)
    assert resumed.vocab.tolist() == first.vocab.tolist()
    assert torch.equal(resumed.shared[-1].weight, first.shared[-1].weight)


@pytest.mark.parametrize("depth", [1, 2])
def test_eagle_head_steps_match_one_pass(small, depth):
    """Feeding positions one by one through the head's KV caches (one per decoder layer) equals one causal
    pass."""
    head = EagleHead.from_target(small, torch.arange(small.vocab_size), std=0.3, layers=depth).eval()
    features, tokens = torch.randn(1, 6, head.config.hidden_size), torch.randint(0, 16, (1, 6))
    with torch.no_grad():
        whole, _ = head(features, tokens, torch.arange(6))
        part, cache = head(features[:, :4], tokens[:, :4], torch.arange(4))
        steps = [part]
        for t in (4, 5):
            out, cache = head(features[:, t:t + 1], tokens[:, t:t + 1], torch.tensor([t]), cache)
            steps.append(out)
    assert torch.allclose(torch.cat(steps, dim=1), whole, atol=1e-5)


def test_a_deeper_eagle_head_grows_from_a_saved_one_and_drafts_as_the_target_decodes(small, samples, tmp_path):
    """--head-layers 2 from a one-layer head: the saved layer, fuse and norm carry over, the new layer starts
    small (so the first drafts are almost the saved head's), it trains, saves, reloads with two layers and drafts
    in the decoder, whose greedy output stays the target's. A run may not drop a saved head's layers."""
    vocab = torch.arange(small.vocab_size)
    one = EagleHead.from_target(small, vocab, std=0.3)
    path = tmp_path / "one.safetensors"
    save_weights(path, one.state_dict(), "eagle", model_config(TrainConfig(), one), small)
    grown = build_model(TrainConfig(init=str(path), head_layers=2), small, vocab).eval()
    assert len(grown.deeper) == 1
    assert all(torch.equal(grown.state_dict()[k], v.half().float()) for k, v in one.state_dict().items())
    features, tokens = torch.randn(1, 5, one.config.hidden_size), torch.randint(0, 16, (1, 5))
    with torch.no_grad():
        before, after = one.eval()(features, tokens, torch.arange(5))[0], grown(features, tokens, torch.arange(5))[0]
    assert not torch.equal(before, after) and torch.allclose(before, after, atol=0.1)

    cfg = TrainConfig(steps=2, batch_size=4, eval_every=2, init=str(path), head_layers=2)
    model = train(cfg, small, samples[:2], samples, None, progress=False)
    deeper = tmp_path / "two.safetensors"
    save_weights(deeper, model.state_dict(), "eagle", model_config(cfg, model), small)
    drafter = load_trained("eagle", small, deeper)
    assert len(drafter.head.deeper) == 1
    settings = DecodeSettings(temperature=0.0, gamma=3, max_new_tokens=12)
    alone = generate(small, None, "w1 w2 w3", settings, chat=False)
    drafted = generate(small, drafter, "w1 w2 w3", replace(settings, branches=2, nodes=5), chat=False)
    assert drafted.generated_ids == alone.generated_ids and sum(it.drafted for it in drafted.iterations) > 0
    with pytest.raises(SpecvizError, match="runs 2 decoder layers: a run may keep or add layers"):
        build_model(TrainConfig(init=str(deeper)), small, vocab)


def test_spec_drafter_can_start_from_a_tiny_lm(small, tmp_path):
    vocab = torch.arange(small.vocab_size)
    tiny = TinyLM.from_target(small, vocab, init_layers=(1, 0))
    path = tmp_path / "tiny.safetensors"
    save_weights(path, tiny.state_dict(), "tiny", model_config(TrainConfig(kind="tiny"), tiny), small)
    lm = build_model(TrainConfig(kind="specdrafter", init=str(path)), small, vocab)
    for mine, theirs in zip(lm.blocks.parameters(), tiny.blocks.parameters()):
        assert torch.allclose(mine, theirs.half().float())
    one_layer = TinyLM.from_target(small, vocab, init_layers=(0,))
    save_weights(path, one_layer.state_dict(), "tiny", model_config(TrainConfig(kind="tiny"), one_layer), small)
    with pytest.raises(SpecvizError, match="1 layers"):
        build_model(TrainConfig(kind="specdrafter", init=str(path)), small, vocab)


def test_an_eagle_head_can_go_on_training_from_a_saved_one(small, samples, tmp_path):
    """A warm start keeps the saved head's weights and draft vocabulary; a larger --draft-vocab widens that
    vocabulary with the data's most used tokens, and a smaller one never narrows it."""
    cfg = TrainConfig(steps=2, batch_size=4, eval_every=2, draft_vocab=6)
    first = train(cfg, small, samples[:2], samples, None, progress=False)
    path = tmp_path / "eagle.safetensors"
    save_weights(path, first.state_dict(), "eagle", model_config(cfg, first), small)
    warm = build_model(TrainConfig(init=str(path)), small, torch.arange(small.vocab_size))
    assert all(torch.equal(a, b.half().float()) for a, b in zip(warm.parameters(), first.parameters()))
    kept = train(TrainConfig(steps=2, batch_size=4, eval_every=2, draft_vocab=4, init=str(path)), small,
                 samples[2:], samples, None, progress=False)
    assert kept.vocab.tolist() == first.vocab.tolist()
    wide = train(TrainConfig(steps=2, batch_size=4, eval_every=2, draft_vocab=9, init=str(path)), small,
                 samples[2:], samples, None, progress=False)
    data = draft_vocabulary(samples[2:], 9, small.vocab_size)
    assert set(wide.vocab.tolist()) == set(first.vocab.tolist()) | set(data.tolist()) and len(wide.vocab) >= 9
    assert wide.vocab.tolist() == sorted(wide.vocab.tolist())
    assert torch.equal(wide.shared[-1].weight, small.model.get_output_embeddings().weight[wide.vocab])
    with pytest.raises(SpecvizError, match=r"reads feature layers \(-1,\), this run \(0, 1\)"):
        build_model(TrainConfig(init=str(path), feature_layers="0,1"), small, first.vocab)


def test_a_head_of_the_final_state_grows_into_a_fused_head_that_starts_as_it(small, samples, tmp_path):
    """EAGLE-3's fused features from a trained first-EAGLE head: the fuse starts as the identity on the final
    state, so the grown head predicts what the saved one did; training then reads the other layers."""
    cfg = TrainConfig(steps=2, batch_size=4, eval_every=2, draft_vocab=6)
    first = train(cfg, small, samples[:2], samples, None, progress=False)
    path = tmp_path / "eagle.safetensors"
    save_weights(path, first.state_dict(), "eagle", model_config(cfg, first), small)
    saved = build_model(TrainConfig(init=str(path)), small, first.vocab)
    grown = build_model(TrainConfig(init=str(path), feature_layers="0,1,-1"), small, first.vocab)
    assert grown.residual == (True, True, False)
    tokens = torch.tensor([[3, 4, 5, 6, 7, 8]])
    states = small.model(tokens, output_hidden_states=True).hidden_states
    fused = layer_states(states, (0, 1, -1))[:, :-1]
    with torch.no_grad():
        before, _ = saved(saved.feature(states[-1][:, :-1]), tokens[:, 1:], torch.arange(5))
        after, _ = grown(grown.feature(fused), tokens[:, 1:], torch.arange(5))
    torch.testing.assert_close(grown.logits(after), saved.logits(before))
    with torch.no_grad():
        three = [replace(s, features=torch.cat([h[0, :-1] for h in small.model(
            s.tokens[None].long(), output_hidden_states=True).hidden_states], dim=-1).half()) for s in samples]
    trained = train(TrainConfig(steps=3, batch_size=4, eval_every=3, lr=1e-2, warmup=1, init=str(path),
                                feature_layers="0,1,-1", ttt=True, unroll=2, reg_weight=0.0), small,
                    three, three[:2], None, progress=False)
    assert trained.fuse.weight[:, :64].abs().sum() > 0   # the residual-stream layers now count
    with pytest.raises(SpecvizError, match="a fused run can start only from a head of the final state"):
        build_model(TrainConfig(init=str(path), feature_layers="0,1"), small, first.vocab)


def test_each_configuration_resumes_its_own_checkpoint():
    base = TrainConfig(kind="eagle", feature_layers="4,15,27", ttt=True)
    assert run_key(base) == run_key(TrainConfig(kind="eagle", feature_layers="4,15,27", ttt=True, steps=9000))
    assert run_key(base) != run_key(TrainConfig(kind="eagle", feature_layers="4,15,27", ttt=True, init="a"))
    assert run_key(base) != run_key(TrainConfig(kind="eagle"))
