"""The shipped trained drafters (EAGLE-style head, distilled tiny LM, blockwise heads, Spec-Drafter) on the
embedded target."""

from __future__ import annotations

import json
from collections import Counter

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file
from scipy.stats import chisquare
from torch import nn

from specviz import DecodeSettings, generate, load_model, verification
from specviz.decoder import Run
from specviz.drafters import (
    FEATURE_KINDS,
    STANDALONE_KINDS,
    TRAINED,
    build_drafter,
    drafter_name,
    weights_digest,
    weights_file,
)
from specviz.drafters.eagle import DEFAULT_WEIGHTS as EAGLE_WEIGHTS
from specviz.drafters.layers import Block, BlockConfig, RotaryTable, apply_rotary, draft_dtype, rotary
from specviz.errors import SpecvizError
from specviz.models import layer_states
from specviz.packed_linear import PackedLinear
from specviz.warpers import Warper

PROMPTS = ["Write a Python function that checks if a number is even.", "Give me three tips for better sleep."]
NEW_TOKENS = 24
KINDS = list(TRAINED)


@pytest.fixture(scope="module")
def drafters(embedded):
    torch.set_num_threads(1)  # one-token steps: a second thread only adds synchronisation
    return {kind: build_drafter(kind, embedded) for kind in KINDS}


def first_draft(embedded, drafter, prompt: str, settings: DecodeSettings, gamma: int):
    """A first draft by hand, right after the prompt: begin, hand over the features of every prompt
    position but the last when the drafter reads them, propose."""
    ids = embedded.encode_prompt(prompt)
    drafter.begin(ids)
    if hasattr(drafter, "observe"):
        with torch.no_grad():
            out = embedded.model(torch.tensor([ids]), output_hidden_states=True)
        drafter.observe(layer_states(out.hidden_states, drafter.feature_layers)[0, :-1])
    return ids, drafter.propose([], gamma, Warper(settings), torch.Generator().manual_seed(0))


def target_greedy(loaded, prompt: str, new_tokens: int) -> list[int]:
    ids = torch.tensor([loaded.encode_prompt(prompt)])
    with torch.no_grad():
        out = loaded.model.generate(ids, do_sample=False, max_new_tokens=new_tokens)
    return out[0, ids.shape[1]:].tolist()


@pytest.fixture(scope="module")
def references(embedded):
    return {prompt: target_greedy(embedded, prompt, NEW_TOKENS) for prompt in PROMPTS}


@pytest.mark.parametrize("kind", KINDS)
def test_shipped_weights_and_card(kind):
    path = weights_file(kind)
    assert path.stat().st_size <= 20_000_000
    card = json.loads(path.with_suffix(".json").read_text())
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata()["target_fingerprint"] == card["target_fingerprint"]
        assert all(f.get_tensor(k).dtype in (torch.float16, torch.int64) for k in f.keys())
    assert {r["temperature"] for r in card["heldout_acceptance"]} == {0.0, 1.0}
    assert card["command"].startswith("python -m specviz train-drafter")


@pytest.mark.parametrize("kind", KINDS)
def test_proposals_are_distributions_over_the_full_vocabulary(embedded, drafters, kind):
    _, draft = first_draft(embedded, drafters[kind], PROMPTS[1], DecodeSettings(temperature=1.0), 4)
    assert draft.tokens.shape == (4,) and draft.q.shape == (4, embedded.vocab_size)
    assert draft.q.dtype == torch.float32
    assert torch.allclose(draft.q.sum(-1), torch.ones(4), atol=1e-4)
    assert (draft.q[torch.arange(4), draft.tokens] > 0).all()
    with safe_open(str(weights_file(kind)), framework="pt") as f:
        vocab = f.get_tensor("vocab")   # the draft vocabulary: the only tokens it can draft
    outside = torch.ones(embedded.vocab_size, dtype=torch.bool)
    outside[vocab] = False
    assert outside.any() and (draft.q[:, outside] == 0).all()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("gamma, confidence", [(1, 0.0), (4, 0.0), (8, 0.6)])
def test_trained_drafters_reproduce_target_greedy(embedded, drafters, references, kind, gamma, confidence):
    accepted, unsure = 0, []
    for prompt in PROMPTS:
        settings = DecodeSettings(gamma=gamma, temperature=0, max_new_tokens=NEW_TOKENS, first_target=gamma == 1,
                                  draft_confidence=confidence)
        trace = generate(embedded, drafters[kind], prompt, settings)
        assert trace.generated_ids == references[prompt]
        accepted += sum(it.accepted for it in trace.iterations)
        unsure += [it for it in trace.iterations if it.unsure]
        if drafters[kind].block:   # a whole block per drafter call, never more than the k heads / masks
            assert all(it.draft_calls <= 1 and it.drafted <= 4 for it in trace.iterations)
    assert accepted > 0
    if confidence:  # the stop happened, and only where the drafter had drafted fewer than γ
        assert unsure and all(it.drafted < gamma for it in unsure)


@pytest.mark.parametrize("kind", FEATURE_KINDS)
def test_a_feature_drafter_starts_with_the_targets_token_from_the_prefill(embedded, references, kind):
    """The prompt's prefill is the first iteration's pass: it emits the target's first token and hands over
    every prompt position's feature, so the run makes no target call beyond one per iteration."""
    settings = DecodeSettings(gamma=4, temperature=0, max_new_tokens=NEW_TOKENS)
    run = Run(embedded, build_drafter(kind, embedded), PROMPTS[0], settings)
    iterations = list(run)
    assert iterations[0].drafted == 0 and iterations[0].emitted_ids == references[PROMPTS[0]][:1]
    assert run.lm.calls == len(iterations) and any(it.drafted for it in iterations[1:])
    assert run.trace.generated_ids == references[PROMPTS[0]]


@pytest.mark.parametrize("kind", ["eagle", "medusa"])
def test_a_feature_drafter_called_by_hand_says_where_its_features_come_from(embedded, kind):
    drafter = build_drafter(kind, embedded)
    drafter.begin(embedded.encode_prompt(PROMPTS[0]))
    with pytest.raises(SpecvizError, match=r"target's features and ha(s|ve) none: run (it|them) through the decoder"):
        drafter.propose([], 2, Warper(DecodeSettings()), torch.Generator())


@pytest.mark.parametrize("kind", KINDS)
def test_lossless_rule_with_trained_q_reproduces_p(embedded, drafters, kind):
    """With the drafter's real q (zero outside its vocabulary), accepted-or-resampled tokens follow p."""
    settings = DecodeSettings(temperature=1.0)
    ids, draft = first_draft(embedded, drafters[kind], PROMPTS[0], settings, 1)
    q, gen = draft.q, torch.Generator().manual_seed(1)
    with torch.no_grad():
        p = Warper(settings).probs(embedded.model(torch.tensor([ids])).logits[0, -1:])
    counts, p_and_bonus = Counter(), torch.cat([p, p])  # the bonus row is never counted here
    for _ in range(3000):
        draft = torch.multinomial(q[0], 1, generator=gen)
        verdict = verification.lossless(p_and_bonus, q, draft, gen)
        counts[int(draft) if verdict.accepted else verdict.recovered] += 1
    top = p[0].topk(8).indices.tolist()
    observed = [counts[t] for t in top] + [3000 - sum(counts[t] for t in top)]
    expected = [float(p[0, t]) * 3000 for t in top]
    expected.append(3000 - sum(expected))
    assert chisquare(observed, expected).pvalue > 1e-3


@pytest.mark.parametrize("kind", ["eagle", "tiny", "specdrafter"])
@pytest.mark.parametrize("native", [False, True])
def test_a_trained_drafter_drafts_in_bfloat16_where_the_cpu_computes_it(embedded, references, monkeypatch, native,
                                                                         kind):
    """bfloat16 packs every linear of the drafter, float32 only its LM head rows; the output stays the target's."""
    monkeypatch.setattr("specviz.drafters.layers.native_bf16", lambda: native)
    if native and not torch.ops.mkldnn._is_mkldnn_bf16_supported():
        pytest.skip("oneDNN has no bfloat16 path on this CPU (it needs AVX-512 or AMX) or in this torch build")
    drafter = build_drafter(kind, embedded)
    model = drafter.head if kind == "eagle" else drafter.lm
    dtype = next(model.parameters()).dtype
    assert dtype == draft_dtype(embedded) == (torch.bfloat16 if native else torch.float32)
    linears = [m for m in model.modules() if isinstance(m, nn.Linear | PackedLinear)]
    assert all(isinstance(m, PackedLinear) for m in linears) == native
    rows = model.shared[-1]
    assert isinstance(rows, PackedLinear) and rows.weight.dtype == dtype
    settings = DecodeSettings(gamma=4, temperature=0, max_new_tokens=NEW_TOKENS)
    trace = generate(embedded, drafter, PROMPTS[0], settings)
    assert trace.generated_ids == references[PROMPTS[0]]
    assert sum(it.accepted for it in trace.iterations) > 0


def test_names_are_known_before_loading(embedded):
    """The name and the weights' digest key a drafter's cached tree sizing, which the app reads before
    any model loads."""
    for kind in STANDALONE_KINDS:
        drafter = build_drafter(kind, embedded)
        assert (drafter_name(kind), weights_digest(kind)) == (drafter.name, drafter.weights)
        assert bool(drafter.weights) == (kind != "ngram")


def test_weights_for_another_target_are_refused(tiny_llama_dirs):
    small = load_model(str(tiny_llama_dirs[0]))
    for kind in KINDS:
        with pytest.raises(SpecvizError, match="trained for target"):
            build_drafter(kind, small)


def test_tampered_or_wrong_kind_files_are_refused(embedded, tmp_path):
    with safe_open(str(EAGLE_WEIGHTS), framework="pt") as f:
        tensors = {k: f.get_tensor(k) for k in f.keys()}
        meta = f.metadata()
    forged = tmp_path / "forged.safetensors"
    save_file(tensors, str(forged), metadata={**meta, "target_fingerprint": "0" * 16})
    with pytest.raises(SpecvizError, match="fingerprints differ"):
        build_drafter("eagle", embedded, str(forged))
    with pytest.raises(SpecvizError, match="not 'tiny'"):
        build_drafter("tiny", embedded, str(EAGLE_WEIGHTS))
    with pytest.raises(SpecvizError, match="not found"):
        build_drafter("eagle", embedded, str(tmp_path / "missing.safetensors"))


def test_rotary_table_and_cached_block_match_the_plain_formulas():
    """Rotary rows looked up in the cached table (grown for a far position) equal RoFormer's
    x·cos + rotate_half(x)·sin, and a block fed 4 + 1 + 2 positions through its cache gives what
    one forward over all 7 gives, with gradients reaching every parameter."""
    torch.manual_seed(0)
    table = RotaryTable(16, 10000.0)
    for positions in (torch.arange(5), torch.tensor([3000]), torch.arange(10)):
        cos, sin = rotary(positions, 16, 10000.0)
        x = torch.randn(2, 3, len(positions), 16)
        expected = x * cos + torch.cat([-x[..., 8:], x[..., :8]], dim=-1) * sin
        assert torch.allclose(apply_rotary(x, *table(positions, x.dtype, int(positions.max()) + 1)), expected,
                              atol=1e-5)
    # the caller's bound, not the positions' values, sizes the table: nothing is read back from the device (a meta
    # tensor has no values to read)
    on_meta = RotaryTable(16, 10000.0)
    cos, _ = on_meta(torch.arange(3, device="meta"), torch.float32, 5000)
    assert cos.shape == (3, 16) and on_meta.cos.shape[0] == 10000
    block = Block(BlockConfig(64, 4, 2, 16, 128, 1e-5, 10000.0))
    x = torch.randn(2, 7, 64)
    full, _ = block(x, torch.arange(7))
    full.square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in block.parameters())
    with torch.no_grad():
        parts, cache = [], None
        for start, end in ((0, 4), (4, 5), (5, 7)):
            y, cache = block(x[:, start:end], torch.arange(start, end), cache)
            parts.append(y)
    assert torch.allclose(torch.cat(parts, dim=1), full, atol=1e-5)


def test_acceptance_command_prints_and_saves_each_drafters_numbers(embedded, tmp_path, capsys):
    from specviz.cli import main

    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"id": "a", "category": "chat", "text": PROMPTS[0]}]}))
    out = tmp_path / "acceptance.json"
    assert main(["acceptance", "--kinds", "eagle", "medusa", "--temperatures", "0", "--max-new-tokens", "12",
                 "--prompts", str(prompts), "--threads", "1", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [(r["kind"], r["temperature"], r["category"]) for r in rows] == [("eagle", 0.0, "all"),
                                                                            ("medusa", 0.0, "all")]
    assert all(len(r["by_position"]) == 4 and 0 <= r["alpha"] <= 1 and r["tokens"] == 12 for r in rows)
    table = capsys.readouterr().out
    assert "| eagle | 0 | all (1) |" in table and "| medusa | 0 | all (1) |" in table


def test_acceptance_command_pools_all_prompts_then_each_category(embedded, tmp_path):
    """Each prompt runs once: the pooled row's counts are the categories' summed."""
    from specviz.cli import main

    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps({"prompts": [{"id": i, "category": c, "text": t} for i, c, t in [
        ("a", "chat", PROMPTS[0]), ("b", "code", PROMPTS[1]), ("c", "chat", PROMPTS[1]), ("d", "copy", PROMPTS[0])]]}))
    out = tmp_path / "not yet made" / "acceptance.json"
    assert main(["acceptance", "--kinds", "eagle", "--temperatures", "0", "--max-new-tokens", "8", "--prompts",
                 str(prompts), "--categories", "chat,code", "--per-category", "1", "--threads", "1",
                 "--out", str(out)]) == 0
    rows = {r["category"]: r for r in json.loads(out.read_text())["rows"]}
    assert list(rows) == ["all", "chat", "code"] and [r["prompts"] for r in rows.values()] == [2, 1, 1]
    assert rows["all"]["tokens"] == rows["chat"]["tokens"] + rows["code"]["tokens"] == 16
    assert rows["all"]["reached_by_position"] == [a + b for a, b in zip(rows["chat"]["reached_by_position"],
                                                                        rows["code"]["reached_by_position"])]
