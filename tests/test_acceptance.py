"""Held-out acceptance (`training.evaluate`), as the drafter cards and `python -m specviz acceptance` save
it: the rate at each draft position and how many iterations reached the position."""

from __future__ import annotations

import json

import pytest

from specviz.drafters import DraftModelDrafter
from specviz.models import load_model
from specviz.training.command import heldout_acceptance


@pytest.fixture(scope="module")
def draft_lm(tiny_llama_dirs) -> DraftModelDrafter:
    return DraftModelDrafter(load_model(str(tiny_llama_dirs[1])))


def test_each_row_keeps_how_many_iterations_reached_each_draft_position(small, draft_lm):
    rows = json.loads(json.dumps(heldout_acceptance(small, draft_lm, prompts=3, tokens=24)))  # as the card saves
    assert [row["temperature"] for row in rows] == [0.0, 1.0]
    for row in rows:
        reached, rates = row["reached_by_position"], row["by_position"]
        accepted = [round(rate * n) if n else 0 for rate, n in zip(rates, reached)]
        assert len(reached) == row["gamma"] == 4 and reached[0] > 0
        assert [rate is None for rate in rates] == [n == 0 for n in reached]
        assert all(n >= later for n, later in zip(accepted, reached[1:]))   # only a kept draft leads on
        assert sum(accepted) / sum(reached) == pytest.approx(row["alpha"])   # the counts pool back to α̂
