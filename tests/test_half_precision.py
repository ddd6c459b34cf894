"""`python -m specviz half-precision` on the embedded target, one prompt and a few tokens: both dtypes, every row's
speedup, fp32 never parting, and bf16 partings (if any here) at near ties with both computations' top 2."""

from __future__ import annotations

import json

import pytest

from specviz.bench.half_precision import parse_shapes
from specviz.cli import main


def test_the_report_compares_both_dtypes_and_lists_partings(tmp_path, one_prompt, kept_threads):
    assert main(["half-precision", "--drafters", "ngram,eagle", "--shapes", "3x1x0,2x2x4", "--max-new-tokens", "8",
                 "--repeats", "2", "--prompts", str(one_prompt), "--out", str(tmp_path / "h.json"),
                 "--markdown", str(tmp_path / "h.md")]) == 0
    result = json.loads((tmp_path / "h.json").read_text())
    assert {(r["dtype"], r["drafter"], r["shape"]) for r in result["rows"]} == \
        {(d, k, s) for d in ("float32", "bfloat16") for k in ("ngram", "eagle") for s in ("γ=3", "2x2x4")}
    assert result["runs"] == {"float32": 4, "bfloat16": 4}
    # each row's speedup: the median of its two rounds' ratios, each against the target alone timed just before it
    assert all(len(r["ratios"]) == 2 and r["speedup"] == pytest.approx(sum(r["ratios"]) / 2) for r in result["rows"])
    assert result["divergences"]["float32"] == []
    assert all(d["gap"] is not None and d["gap"] < result["half_margin"] and d["alone"] and d["ours"]
               for d in result["divergences"]["bfloat16"])
    alone = result["target_alone_tokens_per_s"]
    assert result["bf16_over_fp32"] == alone["bfloat16"]["median"] / alone["float32"]["median"]
    assert all(a["low"] <= a["median"] <= a["high"] for a in alone.values())
    text = (tmp_path / "h.md").read_text()
    assert "bf16 runs" in text and "float32: 0 of 4 runs part (the control: exact equality)" in text


def test_bad_shapes_are_one_line(capsys):
    assert parse_shapes("4x1x0, 3x2x6") == [(4, 1, 0), (3, 2, 6)]
    assert main(["half-precision", "--shapes", "4x2"]) == 2
    assert capsys.readouterr().err.strip() == \
        "error: --shapes: '4x2' is not a list of DEPTHxTOPKxNODES (e.g. 4x1x0,4x2x8)"
