"""The policy A/B's clock-free yardstick: a run priced by the pair's cost model, in target-alone steps."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest
from test_adaptive import flat, pair_sizing
from test_tree_size import cost

from specviz import adaptive, tree_size
from specviz.settings import DecodeSettings
from specviz.sizing import Prepared
from specviz.trace import Choice, Iteration, Trace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from constant_ab import by_category, one_cost_model, priced_speedup, variant  # noqa: E402


def iteration(index: int, emitted: int, choice: Choice | None, drafted: int = 0, calls: int = 0) -> Iteration:
    return Iteration(index, drafted, 0, list(range(emitted)), draft_calls=calls, choice=choice)


def test_a_run_is_priced_as_it_drafted_over_the_target_alones_step():
    """After the prefill: an undrafted step (1 step), the head's one-token chain (overhead 1 ms + a drafter step
    of 2 ms + a 2-token pass of 21 ms, over 1 ms + 20 ms alone) and a copy of 3 (no drafter call, a 4-token
    pass of 22 ms): 7 tokens in (21 + 24 + 23) / 21 steps. A chain of 3 that a confidence stop ended before its
    first token costs its one drafter call and a one-token pass; a top-2 tree's calls cost a tree's step."""
    sizing = tree_size.choose(flat(0.5), cost([1, 1.05, 1.1, 1.2, 1.5, 2.0, 3.0]))
    prefill = iteration(0, 1, None)
    trace = Trace("p", [0] * 10, "t", "d", DecodeSettings(), iterations=[
        prefill,
        iteration(1, 1, Choice(0, 1, 0, 1.0, 1.0, 0.5, situation="no match")),
        iteration(2, 2, Choice(1, 1, 1, 1.5, 1.2, 0.5, situation="no match"), drafted=1, calls=1),
        iteration(3, 4, Choice(3, 1, 3, 3.0, 2.5, 0.9, situation="match 3"), drafted=3)], generated_ids=list(range(8)))
    assert priced_speedup(trace, sizing) == pytest.approx(7 * 21 / 68)
    stopped = Trace("p", [0] * 10, "t", "d", DecodeSettings(), iterations=[
        prefill, iteration(1, 1, Choice(3, 1, 3, 2.0, 1.3, 0.5, situation="no match"), calls=1)],
        generated_ids=list(range(2)))
    assert priced_speedup(stopped, sizing) == pytest.approx(21 / 23)
    tree = Trace("p", [0] * 10, "t", "d", DecodeSettings(), iterations=[
        prefill, iteration(1, 3, Choice(2, 2, 4, 2.5, 1.4, 0.5), drafted=4, calls=2)], generated_ids=list(range(4)))
    sizing.acceptance.tree_step = 0.004
    assert priced_speedup(tree, sizing) == pytest.approx(3 * 21 / (1 + 2 * 4 + 1000 * sizing.cost.at(5)))
    fixed = Trace("p", [0] * 10, "t", "d", DecodeSettings(gamma=2, branches=2, nodes=4), iterations=[
        prefill, iteration(1, 3, None, drafted=4, calls=2)], generated_ids=list(range(4)))
    assert priced_speedup(fixed, sizing) == priced_speedup(tree, sizing)   # a fixed tree: its settings' top-k


def test_an_arm_sets_a_module_constant_a_field_or_the_drafter():
    assert variant("specviz.adaptive.MARGIN=0.05") == (adaptive, "MARGIN", 0.05)
    assert variant("settings.branches=1") == ("settings", "branches", 1)
    assert variant("acceptance.tree_step=0.0034") == ("acceptance", "tree_step", 0.0034)
    assert variant("drafter=ngram") == ("drafter", "", "ngram")


def test_the_kinds_table_bolds_the_best_other_arm_and_divides_the_default_by_it(capsys):
    rows = [{"category": "chat", "priced as is": 1.0, "priced a": 2.0, "priced b": 0.5},
            {"category": "chat", "priced as is": 4.0, "priced a": 2.0, "priced b": 8.0},
            {"category": "code", "priced as is": 1.5, "priced a": 1.0, "priced b": 1.2}]
    by_category(rows, "priced as is", ["priced a", "priced b"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[:2] == ["| kind | as is | a | b | as is / best other |", "|---|---|---|---|---|"]
    assert lines[2] == "| chat (2) | 2.000 | **2.000** | 2.000 | 1.000 |"   # geometric means; a tie goes to the first
    assert lines[3] == "| code (1) | 1.500 | 1.000 | **1.200** | 1.250 |"
    assert lines[4].startswith("| all (3) | ")


def test_arms_of_the_default_drafter_share_its_measured_costs_and_keep_their_tables():
    """A second calibration of the same drafter timed its step anew; an arm of another drafter keeps its own."""
    mine = replace(flat(0.6, draft_step=0.004), tree_step=0.006, overhead=0.0014, others=0.01)
    retimed = replace(flat(0.5, draft_step=0.005), tree_step=0.007, overhead=0.0018, others=0.02)
    prepared = {name: Prepared(DecodeSettings(), pair_sizing(acc))
                for name, acc in (("as is", mine), ("tables", retimed), ("drafter=ngram", retimed))}
    shared = one_cost_model(prepared, ["as is", "tables"])
    tables, other = shared["tables"].sizing.acceptance, shared["drafter=ngram"].sizing.acceptance
    assert (tables.draft_step, tables.tree_step, tables.overhead, tables.others) == (0.004, 0.006, 0.0014, 0.01)
    assert tables.rank == retimed.rank and other == retimed and shared["as is"] == prepared["as is"]
