"""The linked trace view as a spec: the brush filters and re-aggregates the lower pictures, a click
picks an iteration, kinds differ by more than hue, and its rows agree with the trace's summary."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest
from synthetic import synthetic_trace
from test_charts import make_trace
from vega_spec import units

from specviz import charts, load_trace
from specviz.charts.linked import BRUSH, PICK, draft_rows, iteration_rows, token_rows
from specviz.charts.style import TOKEN_MARKS, VERDICT_MARKS


@pytest.fixture(scope="module")
def long_trace():
    return synthetic_trace(512)


def test_linked_view_brush_filters_and_pick_selects(long_trace):
    spec = charts.linked_view(long_trace).to_dict()
    selections = {p["name"]: p for unit in units(spec) for p in unit.get("params", [])}
    selections |= {p["name"]: p for p in spec.get("params", []) if "select" in p}
    assert selections[BRUSH]["select"] == {"type": "interval", "encodings": ["x"]}
    assert selections[PICK]["select"] == {"type": "point", "fields": ["iteration"], "on": "click"}
    brushed = [unit for unit in units(spec) if {"filter": {"param": BRUSH}} in unit.get("transform", [])]
    aggregated = [unit for unit in brushed if any("aggregate" in step for step in unit["transform"])]
    assert len(brushed) == len(aggregated) == 4  # per-position bars and α̂, histogram bars and mean


def test_linked_view_draws_kinds_by_more_than_hue(long_trace):
    spec = charts.linked_view(long_trace).to_dict()
    fills = {tuple(unit["encoding"]["fill"]["scale"]["range"]) for unit in units(spec) if "fill" in unit["encoding"]}
    assert fills == {tuple(m.fill for m in TOKEN_MARKS.values()), tuple(m.fill for m in VERDICT_MARKS.values())}

    def grey(colour: str) -> float:
        r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
        return 0.299 * r + 0.587 * g + 0.114 * b

    for marks in (TOKEN_MARKS, VERDICT_MARKS):
        for a, b in itertools.combinations(marks.values(), 2):
            assert abs(grey(a.fill) - grey(b.fill)) >= 0.12 or a.dash != b.dash, (a, b)
    roomy = charts.linked_view(synthetic_trace(40)).to_dict()
    glyphs = [unit for unit in units(roomy) if unit["mark"]["type"] == "text" and unit["encoding"]["text"]["field"] ==
              "glyph"]
    assert len(glyphs) == 2 and not [u for u in units(spec) if u["mark"]["type"] == "text" and "glyph" in str(u)]


def test_linked_rows_agree_with_the_summary(long_trace):
    for trace in (make_trace(), long_trace):
        summary = trace.summary()
        drafts = draft_rows(trace)
        rates = drafts[drafts["tested"]].groupby("position")["kept"].mean()
        expected = pd.Series(summary.position_acceptance, index=range(1, trace.settings.gamma + 1)).dropna()
        assert rates.to_dict() == pytest.approx(expected.to_dict())
        assert drafts[drafts["tested"]]["kept"].mean() == pytest.approx(summary.alpha)
        assert iteration_rows(trace)["emitted"].mean() == pytest.approx(summary.accepted_length)
        segments = token_rows(trace).groupby("iteration")["y1"].max()
        assert segments.to_dict() == {it.index: len(it.emitted_ids) for it in trace.iterations}


def test_linked_view_rebuilds_from_a_saved_trace(tmp_path, long_trace):
    for trace in (make_trace(), long_trace):
        trace.save(tmp_path / "trace.json")
        assert charts.linked_view(load_trace(tmp_path / "trace.json")).to_dict() == charts.linked_view(trace).to_dict()
