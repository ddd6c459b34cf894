"""The per-kind verdict table of a bench run: the default against the fastest fixed row of the same kind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from category_noise import pooled, table  # noqa: E402


def spread(median: float) -> dict:
    return {"median": median, "low": median - 0.1, "high": median + 0.1}


def row(method: str, category: str, speedup: float, after: float, record: bool = False) -> dict:
    return {"method": f"engine lookup+eagle {method} rec {'on' if record else 'off'}", "category": category,
            "record": record, "speedup": spread(speedup), "after_first": spread(after)}


def test_the_default_is_set_against_the_fastest_fixed_row_and_a_miss_of_more_than_3_percent_is_bold(tmp_path):
    rows = [row("γ=2", "math", 1.50, 1.70), row("tree 3x2x6", "math", 1.60, 1.65),
            row("γ=2", "math", 9.00, 9.00, record=True),          # recording on: not a competitor
            row("adaptive chains ≤8", "math", 9.00, 9.00),         # adaptive: not a fixed shape
            row("adaptive trees ≤8", "math", 1.56, 1.62),
            row("γ=2", "chat", 1.20, 1.30), row("adaptive trees ≤8", "chat", 1.30, 1.40),
            row("γ=2", "all", 1.40, 1.50)]                      # the whole run: not a kind
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"rows": rows}))
    lines = table(str(path)).splitlines()
    assert lines[2] == ("| chat | 1.30× (1.20–1.40) | 1.20× chain γ=2 (1.10–1.30) | 1.083 "
                        "| 1.40× (1.30–1.50) | 1.30× chain γ=2 (1.20–1.40) | 1.077 |")
    assert lines[3] == ("| math | 1.56× (1.46–1.66) | 1.60× tree 3x2x6 (1.50–1.70) | 0.975 "
                        "| 1.62× (1.52–1.72) | 1.70× chain γ=2 (1.60–1.80) | **0.953** |")
    assert len(lines) == 4


def run(method: str, seconds: float, tokens: int, iterations: int | None, draft: float | None,
        verify: float | None) -> dict:
    return {"method": method, "seconds": seconds, "tokens": tokens, "iterations": iterations,
            "draft_seconds": draft, "verify_seconds": verify}


def test_a_row_pooled_over_its_runs_is_total_time_over_total_tokens_and_recording_rows_are_left_out(tmp_path):
    """transformers' rows count no iterations: their time per token only."""
    runs = [run("engine baseline", 4.0, 48, 48, 0.0, 3.952), run("engine baseline", 2.0, 48, 48, 0.0, 1.952),
            run("engine γ=2 rec off", 1.0, 48, 20, 0.2, 0.7), run("engine γ=2 rec off", 3.0, 48, 20, 0.4, 2.5),
            run("engine γ=2 rec on", 9.0, 48, 20, 0.2, 0.7), run("transformers γ=2", 2.4, 48, None, None, None)]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"runs": runs}))
    assert pooled(str(path)).splitlines() == [
        "  engine baseline: 62.5 ms a token, 1.0 ms an iteration outside the draft and the verify pass",
        "  engine γ=2 rec off: 41.7 ms a token, 5.0 ms an iteration outside the draft and the verify pass",
        "  transformers γ=2: 50.0 ms a token"]
