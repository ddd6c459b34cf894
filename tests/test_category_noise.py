"""The per-kind verdict table of a bench run: the default against the fastest fixed row of the same kind."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from category_noise import pooled, table  # noqa: E402


def timed(method: str, kind: str, repeat: int, seconds: float, first: float = 0.0) -> dict:
    """One round of a row on its kind's one prompt: 48 tokens, the first `first` seconds the prefill's one."""
    return {"method": f"engine {method}", "prompt": f"{kind}-0", "category": kind, "repeat": repeat,
            "seconds": seconds, "tokens": 48, "first_seconds": first, "first_tokens": 1}


def test_the_default_is_set_against_the_fastest_fixed_row_over_every_rounds_median_and_a_miss_is_bold(tmp_path):
    """Each round's speedup is over the target alone in that round; two files' rounds join."""
    rows = ["baseline", "lookup+eagle γ=2 rec off", "lookup+eagle tree 3x2x6 rec off",
            "lookup+eagle γ=2 rec on",                  # recording on: not a competitor
            "lookup+eagle adaptive chains ≤8 rec off",  # adaptive: not a fixed shape
            "lookup+eagle adaptive trees ≤8 rec off"]
    math = {0: [4.8, 3.0, 2.8, 0.1, 0.1, 3.0], 1: [9.6, 6.0, 6.4, 0.1, 0.1, 6.2], 2: [4.8, 3.0, 2.9, 0.1, 0.1, 3.2]}
    first = {r: [2.4, 1.8, 1.0, 0.0, 0.0, 1.6] for r in math}   # round 1 the machine at half speed after the prefill
    files = [[timed(m, "math", r, t, f) for r in (0, 1) for m, t, f in zip(rows, math[r], first[r])],
             [timed(m, "math", 0, t, f) for m, t, f in zip(rows, math[2], first[2])]
             + [timed(m, "chat", 0, t) for m, t in zip(rows, [4.8, 4.0, 4.4, 0.1, 0.1, 3.6])]]
    paths = []
    for i, runs in enumerate(files):
        paths.append(str(tmp_path / f"bench{i}.json"))
        Path(paths[-1]).write_text(json.dumps({"runs": runs}))
    lines = table(paths).splitlines()
    assert lines[2] == ("| chat | 1 | 1.33× (1.33–1.33) | 1.20× chain γ=2 (1.20–1.20) | 1.111 "
                        "| 1.33× (1.33–1.33) | 1.20× chain γ=2 (1.20–1.20) | 1.111 |")
    # math, end to end: γ=2 1.60 each round, the tree 1.71, 1.50, 1.66 (median 1.66), the default 1.60, 1.55, 1.50
    # (1.55); after the prefill γ=2 wins: 2.00, 1.71, 2.00 (2.00) against the default's 1.71, 1.57, 1.50 (1.57)
    assert lines[3] == ("| math | 3 | 1.55× (1.50–1.60) | 1.66× tree 3x2x6 (1.50–1.71) | **0.935** "
                        "| 1.57× (1.50–1.71) | 2.00× chain γ=2 (1.71–2.00) | **0.783** |")
    assert len(lines) == 4


def test_the_learnt_costs_row_is_the_default_only_when_asked(tmp_path):
    rows = ["baseline", "lookup+eagle γ=2 rec off", "lookup+eagle adaptive trees, costs learnt ≤8 rec off",
            "lookup+eagle adaptive trees ≤8 rec off"]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"runs": [timed(m, "chat", 0, t) for m, t in zip(rows, [4.8, 4.0, 3.0, 6.0])]}))
    assert table([str(path)]).splitlines()[2].startswith("| chat | 1 | 0.80× (0.80–0.80) |")
    learnt = table([str(path)], "adaptive trees, costs learnt").splitlines()[2]
    assert learnt.startswith("| chat | 1 | 1.60× (1.60–1.60) | 1.20× chain γ=2 (1.20–1.20) | 1.333 |")


def run(method: str, seconds: float, tokens: int, iterations: int | None, draft: float | None,
        verify: float | None, first: float | None = None) -> dict:
    return {"method": method, "seconds": seconds, "tokens": tokens, "iterations": iterations,
            "draft_seconds": draft, "verify_seconds": verify, "first_seconds": first}


def test_a_row_pooled_over_its_runs_is_total_time_over_total_tokens_and_recording_rows_are_left_out(tmp_path):
    """transformers' rows count no iterations: their time per token only. The prefill's iteration leaves the
    verify pass's time an iteration after it."""
    runs = [run("engine baseline", 4.0, 48, 48, 0.0, 3.952, 0.952),
            run("engine baseline", 2.0, 48, 48, 0.0, 1.952, 0.952),
            run("engine γ=2 rec off", 1.0, 48, 21, 0.2, 0.7, 0.2),
            run("engine γ=2 rec off", 3.0, 48, 21, 0.4, 2.5, 0.2),
            run("engine γ=2 rec on", 9.0, 48, 20, 0.2, 0.7, 0.2), run("transformers γ=2", 2.4, 48, None, None, None)]
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({"runs": runs}))
    assert pooled(str(path)).splitlines() == [
        "  engine baseline: 62.5 ms a token, 1.0 ms an iteration outside the draft and the verify pass; after the "
        "prefill, verify 42.6 ms and draft 0.0 ms an iteration",
        "  engine γ=2 rec off: 41.7 ms a token, 4.8 ms an iteration outside the draft and the verify pass; after the "
        "prefill, verify 70.0 ms and draft 15.0 ms an iteration",
        "  transformers γ=2: 50.0 ms a token"]
