"""`python -m specviz gpu-check` on this CPU, on the tiny pair: the report it would write on a GPU,
with the promises it checks (fp32 greedy equality, half-precision partings only at near-ties, every
greedy method on the pair writing the target alone's tokens) holding here."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from specviz.bench import gpu_check
from specviz.bench.gpu_check import EqualityRow, build_pair_model, predictions
from specviz.cli import main
from specviz.device import steady_attention
from specviz.divergence import NEAR_TIE
from specviz.verify_cost import SIZES, VerifyCost


def test_the_check_reports_both_parts_and_its_promises_hold(tmp_path, one_prompt, kept_threads, capsys):
    assert main(["gpu-check", "--pair", "tiny", "--drafters", "tiny", "--gammas", "1,3", "--max-new-tokens", "8",
                 "--repeats", "2", "--prompts", str(one_prompt), "--pair-tokens", "6", "--pair-repeats", "2",
                 "--threads", "1", "--out", str(tmp_path / "g.json"), "--markdown", str(tmp_path / "g.md")]) == 0
    result = json.loads((tmp_path / "g.json").read_text())
    rows = result["embedded"]
    assert {(r["dtype"], r["gamma"]) for r in rows} == {(d, g) for d in ("float32", "bfloat16") for g in (1, 3)}
    assert all(r["equal"] == 1 and not r["partings"] for r in rows if r["dtype"] == "float32")
    assert all(r["promise_kept"] and r["alpha"] is not None and r["c"] > 0 for r in rows)
    # each row's speedup: the median of its rounds' ratios, each against the target alone timed just before it
    assert all(len(r["ratios"]) == 2 and r["speedup"] == pytest.approx(sum(r["ratios"]) / 2) for r in rows)
    pair = result["pair"]
    assert pair["verify_cost"]["sizes"] == list(SIZES) and pair["relative"][0] == 1.0
    assert set(pair["drafts"]) == {"draft-a", "draft-b"} and all(d["c"] > 0 for d in pair["drafts"].values())
    methods = [r["method"] for r in pair["runs"]]
    assert methods.count("engine model γ=4 rec off") == 2 and methods.count("hf model γ=4") == 2
    assert all(r["equal"] and r["peak_mb"] > 0 and len(r["rounds"]) == 2 for r in pair["runs"])
    ratios = [r["vs_hf"] for r in pair["runs"] if "vs_hf" in r]   # one per draft and one for the target alone
    assert len(ratios) == 3 and all(0 < v["low"] <= v["median"] <= v["high"] for v in ratios)
    progress = capsys.readouterr().err   # a row and a round at a time, as they finish
    assert "[float32 tiny γ=1]" in progress and "[bfloat16 tiny γ=3]" in progress
    assert "(medians of 2 rounds)" in progress
    assert "[pair draft-a, round 2/2]" in progress and "[pair target alone, round 1/2]" in progress
    text = (tmp_path / "g.md").read_text()
    assert result["server_starts_cuda"] is False   # on a GPU too: the sidebar asks a child process
    assert "the app's server, drawing its sidebar, starts CUDA in its own process: no" in text
    assert "speedup (median; range)" in text
    assert "a prediction" in text and "transformers' assisted generation" in text and result["machine"]["torch"] in text


def test_half_precision_promise_allows_partings_only_at_near_ties():
    row = EqualityRow("bfloat16", "tiny", 4, 8, 1, 2, [{"prompt": "a", "token": 3, "gap": NEAR_TIE / 2}])
    assert row.promise_kept
    row.partings.append({"prompt": "b", "token": 1, "gap": NEAR_TIE * 2})
    assert not row.promise_kept
    assert not EqualityRow("float32", "tiny", 4, 8, 1, 2, [{"prompt": "a", "token": 3, "gap": 0.0}]).promise_kept


def test_predictions_use_the_measured_verify_cost():
    flat = VerifyCost("t", "cpu", "float32", 1, [1, 2, 4, 8, 16, 32, 64], [1.0] * 7)
    steep = VerifyCost("t", "cpu", "float32", 1, [1, 2, 4, 8, 16, 32, 64], [1.0, 1.2, 1.5, 2, 3, 5, 9])
    for alpha_flat, alpha_steep in zip(predictions(flat, 0.05), predictions(steep, 0.05)):
        assert alpha_flat["speedup"] > alpha_steep["speedup"] and alpha_flat["gamma"] >= alpha_steep["gamma"]
    assert predictions(flat, 0.0)[-1]["speedup"] == pytest.approx((1 - 0.9 ** 17) / 0.1)   # free drafts: γ 16


def test_the_pair_is_built_from_the_embedded_config_with_the_asked_shape():
    model = build_pair_model((64, 128, 2, 2, 1), torch.device("cpu"), torch.float32, seed=0)
    config = model.model.config
    assert (config.hidden_size, config.num_hidden_layers, config.num_key_value_heads) == (64, 2, 1)
    assert model.vocab_size == 49152 and model.name == "random 3M" and not model.eos_ids


@pytest.mark.parametrize(("flag", "value"), [("--gammas", "0"), ("--gammas", "1,x"), ("--gammas", "")])
def test_bad_numbers_are_one_line(flag, value, capsys):
    assert main(["gpu-check", flag, value]) != 0
    assert f"{flag} takes" in capsys.readouterr().err


def test_attention_on_cuda_runs_without_cudnn_and_the_cpu_keeps_torchs_choice():
    """cuDNN's attention builds a plan per new query and key length, which a decode meets at every step."""
    before = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        steady_attention(torch.device("cpu"))
        assert torch.backends.cuda.cudnn_sdp_enabled()
        steady_attention(torch.device("cuda"))
        assert not torch.backends.cuda.cudnn_sdp_enabled()
    finally:
        torch.backends.cuda.enable_cudnn_sdp(before)


def test_a_failed_server_probe_is_reported_unknown_not_lost(monkeypatch):
    """The probe runs after the whole check's measurements: a probe that fails leaves None (the report says
    "unknown"), never an exception that would throw the measurements away."""
    monkeypatch.setattr(sys, "executable", "/bin/false")
    assert gpu_check.server_starts_cuda() is None
    assert gpu_check.STARTS_CUDA[None].startswith("unknown")
