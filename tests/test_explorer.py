"""The theory explorer as a spec: α, c and γ bound to sliders, the browser's expressions equal to
specviz.theory on a grid (α = 1 included), the measured trace marked on both views."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace

import pytest
from test_charts import make_trace
from vega_expression import evaluate
from vega_spec import units

from specviz import charts, load_trace, theory
from specviz.charts.explorer import LEFT_FROM, MAX_GAMMA, START, Measured, explorer_json, frame_at, measured_point

ALPHAS = [0.0, 0.01, 0.3, 0.5, 0.8, 0.95, 0.99, 0.999, 1.0]
COSTS = [0.0, 0.05, 0.3, 1.0]
BLOCKS = [0, 1, 4]
THEORY = {"E": lambda a, g, c, b: theory.expected_tokens(a, theory.drafted(g, b)),
          "drafts": lambda a, g, c, b: theory.expected_tokens(a, theory.drafted(g, b)) - 1,
          "S": theory.walltime_improvement}


def calculations(spec: dict) -> dict[str, set[str]]:
    """The expressions the browser computes, by the field they compute."""
    found: dict[str, set[str]] = {}
    for unit in units(spec):
        for step in unit.get("transform", []):
            if "calculate" in step:
                found.setdefault(step["as"], set()).add(step["calculate"])
    return found


@pytest.fixture(scope="module")
def explorer_spec() -> dict:
    return charts.theory_explorer(make_trace())


def test_explorer_params_are_bound_to_sliders(explorer_spec):
    params = {p["name"]: p for p in explorer_spec["params"]}
    assert {name: params[name]["bind"]["input"] for name in params} == {
        "alpha": "range", "c": "range", "gamma": "range", "block": "range", "show_drafts": "checkbox"}
    assert (params["alpha"]["bind"]["min"], params["alpha"]["bind"]["max"]) == (0, 1)
    assert (params["gamma"]["bind"]["min"], params["gamma"]["bind"]["max"]) == (1, MAX_GAMMA)
    assert params["alpha"]["value"] == 0.8 and params["c"]["value"] == 0.05 and params["block"]["value"] == 0


def test_explorer_expressions_agree_with_theory_on_a_grid(explorer_spec):
    """Each formula is rendered twice (curves: α and c are params; plane: α is a field): both
    strings, as the browser gets them, against specviz.theory, α = 1 and a parallel drafter's block included."""
    found = calculations(explorer_spec)
    assert len(found["E"]) == 1 and len(found["drafts"]) == 1 and len(found["S"]) == 2
    checked = 0
    for field, expressions in ((f, found[f]) for f in THEORY):
        for text, a, g, c, b in itertools.product(expressions, ALPHAS, range(1, MAX_GAMMA + 1), COSTS, BLOCKS):
            env = {"alpha": a, "c": c, "block": b, "datum.alpha": a, "datum.gamma": g}
            expected = THEORY[field](a, g, c, b)
            assert evaluate(text, env) == pytest.approx(expected, rel=1e-9, abs=1e-9), (field, a, g, c, b)
            checked += 1
    assert checked == 4 * len(ALPHAS) * MAX_GAMMA * len(COSTS) * len(BLOCKS)


def test_the_browsers_optimal_gamma_is_theorys(explorer_spec):
    """The chart keeps the largest S with ties to the smaller γ; so does `theory.optimal_gamma`."""
    curve_s = next(text for text in calculations(explorer_spec)["S"] if "datum.alpha" not in text)
    for a, c, b in itertools.product(ALPHAS, COSTS, BLOCKS):
        speedups = {g: evaluate(curve_s, {"alpha": a, "c": c, "block": b, "datum.gamma": g})
                    for g in range(1, MAX_GAMMA + 1)}
        best = max(speedups.values())
        assert min(g for g, s in speedups.items() if s == best) == theory.optimal_gamma(a, c, MAX_GAMMA, b)


def test_explorer_marks_a_measured_trace_on_both_views(explorer_spec):
    s = make_trace().summary()
    values = [d for d in explorer_spec["datasets"].values() if d and "own" in d[0]]
    assert values and all(row["alpha"] == pytest.approx(s.alpha) for rows in values for row in rows)
    assert sum(1 for unit in units(explorer_spec) if unit.get("transform", [{}])[0].get("filter") == "datum.own") >= 3
    bare = charts.theory_explorer(None)
    assert not [d for d in bare["datasets"].values() if d and "own" in d[0]]


def test_explorer_rebuilds_from_a_saved_trace(tmp_path):
    trace = make_trace()
    trace.save(tmp_path / "trace.json")
    loaded = load_trace(tmp_path / "trace.json")
    assert charts.theory_explorer(loaded) == charts.theory_explorer(trace)


def test_a_parallel_drafters_trace_starts_the_block_slider_at_its_block():
    """Its dotted curves are priced as one drafter step for up to B tokens, flat past B."""
    trace = replace(make_trace(), block=2)
    spec = charts.theory_explorer(trace)
    assert {p["name"]: p["value"] for p in spec["params"]}["block"] == 2
    s = trace.summary()
    rows = next(d for d in spec["datasets"].values() if d and "own" in d[0])
    assert [row["S"] for row in rows] == [pytest.approx(theory.walltime_improvement(s.alpha, g, s.c, 2))
                                          for g in range(1, MAX_GAMMA + 1)]
    assert rows[1]["S"] == pytest.approx(rows[-1]["S"]) and rows[1]["S"] > rows[0]["S"]


def test_a_drafter_with_no_forward_pass_is_marked_at_c_zero():
    """Prompt lookup's trace has α̂ but no drafter step to time: it is drawn at c = 0, as the γ sweep prices it."""
    trace = make_trace()
    for it in trace.iterations:
        it.draft_calls = 0
    s = trace.summary()
    assert s.c is None and s.alpha is not None
    rows = next(d for d in charts.theory_explorer(trace)["datasets"].values() if d and "own" in d[0])
    assert rows[0]["label"].endswith("c = 0.00")
    title = charts.theory_explorer(trace)["title"]["text"]["expr"]   # the diamonds' numbers, said once
    assert f"◆ this trace: α̂ = {s.alpha:.2f}, c = 0.00" in title
    assert "◆" not in charts.theory_explorer(None)["title"]["text"]["expr"]
    assert [row["S"] for row in rows] == [pytest.approx(theory.walltime_improvement(s.alpha, g, 0.0))
                                          for g in range(1, MAX_GAMMA + 1)]


@pytest.mark.parametrize("c, block, best, label", [
    (0.05, 0, 5, "γ* = 5"),
    (0.01, 0, MAX_GAMMA, f"γ* ≥ {MAX_GAMMA}: the chart ends here"),   # α 0.9: the optimum is 24
    (0.0, 0, MAX_GAMMA, "no γ*: at c = 0, S grows with γ"),
    (0.0, 4, 4, "γ* = 4"),   # a parallel drafter: flat past its block, at no cost
    (0.05, MAX_GAMMA, MAX_GAMMA, f"γ* = {MAX_GAMMA}"),   # a block of 16: its optimum is on the chart
])
def test_the_optimal_gamma_says_when_the_best_drawn_is_not_the_optimum(explorer_spec, c, block, best, label):
    (text,) = [e for e in calculations(explorer_spec)["label"] if "γ*" in e]
    assert evaluate(text, {"c": c, "block": block, "datum.gamma": best}) == label


def test_the_diamonds_label_sits_on_the_side_its_curve_leaves_clear():
    """Beside the diamond its label spans the next γ (the one before, for a diamond in the right half): the label
    goes below the point where the trace's curve is higher there, above where it is lower."""
    trace = make_trace()
    s = trace.summary()
    curves = {"E": lambda g: theory.expected_tokens(s.alpha, g),
              "S": lambda g: theory.walltime_improvement(s.alpha, g, s.c)}
    below = {"E": set(), "S": set()}
    for gamma in range(1, MAX_GAMMA + 1):
        trace.settings = replace(trace.settings, gamma=gamma)
        frame = frame_at(measured_point(trace))
        own = frame[frame["own"]].iloc[0]
        assert own["left"] == (gamma > LEFT_FROM)
        beside = gamma - 1 if own["left"] else gamma + 1
        for field, curve in curves.items():
            assert own[f"{field}_above"] == (curve(beside) >= curve(gamma))
            below[field] |= {gamma} if own[f"{field}_above"] else set()
    assert below["E"] == set(range(1, LEFT_FROM + 1))   # E rises everywhere: below on the right, above on the left
    assert 1 in below["S"] and LEFT_FROM not in below["S"]   # S rises to its optimal γ, then falls
    spec = charts.theory_explorer(trace)
    filters = {step["filter"] for unit in units(spec) for step in unit.get("transform", []) if "filter" in step}
    assert {"(!(datum.left)) && (datum.E_above)", "(datum.left) && (!(datum.S_above))"} <= filters


def test_the_spec_is_built_once_per_measured_point_and_handed_out_fresh():
    """The Theory page runs again at every widget change: the same trace's spec is not built again, and each
    caller gets its own copy (Streamlit edits the spec it is handed)."""
    trace = make_trace()
    explorer_json.cache_clear()
    first = charts.theory_explorer(trace)
    built = explorer_json.cache_info().misses
    again = charts.theory_explorer(trace)
    assert explorer_json.cache_info().misses == built and again == first and again is not first
    first["datasets"].clear()
    assert charts.theory_explorer(trace)["datasets"]
    charts.theory_explorer(replace(trace, block=2))   # another block is another spec
    assert explorer_json.cache_info().misses == built + 1


@pytest.mark.parametrize("point, under", [(Measured(0.88, 0.05, 8, 0), True), (Measured(0.95, 0.05, 10, 0), True),
                                          (Measured(0.37, 0.06, 2, 0), False), (Measured(0.88, 0.05, 3, 0), False)])
def test_the_optimums_label_goes_under_the_star_where_the_traces_diamond_sits_over_it(point, under):
    """At the sliders' start (α 0.8, c 0.05) γ* is 8: a trace drawn above the star within 2 γ of it labels its
    diamond where the γ* label would stand, so that label moves below the star; elsewhere it stays above."""
    alpha, c, gamma = START
    best = theory.optimal_gamma(alpha, c)
    optimum = {"alpha": alpha, "c": c, "block": 0, "datum.gamma": best,
               "datum.S": theory.walltime_improvement(alpha, best, c)}
    labels = [unit for unit in units(json.loads(explorer_json(point, 0)))
              if unit["mark"].get("dy") in (-30, 30) and unit["mark"]["type"] == "text"]
    shown = [unit["mark"]["dy"] for unit in labels if evaluate(unit["transform"][-1]["filter"], optimum)]   # its own
    assert shown == [30 if under else -30]
