"""The policy A/B's clock-free yardstick: a run priced by the pair's cost model, in target-alone steps."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_adaptive import flat
from test_tree_size import cost

from specviz import tree_size
from specviz.settings import DecodeSettings
from specviz.trace import Choice, Iteration, Trace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from constant_ab import priced_speedup  # noqa: E402


def iteration(index: int, emitted: int, choice: Choice | None) -> Iteration:
    return Iteration(index, 0, 0, list(range(emitted)), choice=choice)


def test_a_run_is_priced_shape_by_shape_over_the_target_alones_step():
    """After the prefill: an undrafted step (1 step), the head's one-token chain (overhead 1 ms + a drafter step
    of 2 ms + a 2-token pass of 21 ms, over 1 ms + 20 ms alone) and a copy of 3 in a copying situation (no
    drafter step, a 4-token pass of 22 ms): 7 tokens in (21 + 24 + 23) / 21 steps."""
    sizing = tree_size.choose(flat(0.5), cost([1, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0]))
    trace = Trace("p", [0] * 10, "t", "d", DecodeSettings(), iterations=[
        iteration(0, 1, None),
        iteration(1, 1, Choice(0, 1, 0, 1.0, 1.0, 0.5, situation="no match")),
        iteration(2, 2, Choice(1, 1, 1, 1.5, 1.2, 0.5, situation="no match")),
        iteration(3, 4, Choice(3, 1, 3, 3.0, 2.5, 0.9, situation="match 3"))], generated_ids=list(range(8)))
    assert priced_speedup(trace, sizing, frozenset({"match 3"})) == pytest.approx(7 * 21 / 68)
    assert priced_speedup(trace, sizing, frozenset()) == pytest.approx(7 * 21 / 74)   # the copy pays 3 steps
