"""Studies: saving and loading, what a bad file gets, the figures rebuilt from a file, and the CLI's sweep and grid."""

from __future__ import annotations

import ast
import json
import pickle
from dataclasses import replace
from pathlib import Path

import pytest
from synthetic import synthetic_trace

from specviz import SpecvizError, charts, trace
from specviz.cli import main
from specviz.study import Study, Variant, load_record, load_study, run_name, study_from_dict

ROOT = Path(__file__).resolve().parent.parent


def sweep() -> Study:
    """A baseline and two γ runs made by hand: the speculative ones emit more tokens per second."""
    base = synthetic_trace(64, gamma=1, alpha=0.0, seed=1)
    base.wall_time *= 3
    return Study("gamma sweep", base, [Variant({"gamma": g}, synthetic_trace(64, gamma=g, seed=g)) for g in (2, 4)])


def test_the_table_of_runs_reads_as_numbers_with_a_dash_where_none_applies():
    study = sweep()
    cells = charts.rows_table(study).to_html()
    column = list(charts.rows_frame(study).columns).index("speedup")
    assert f'row0_col{column}" class="data row0 col{column}" >—<' in cells   # the baseline has no speedup
    assert f"{study.rows()[1].speedup:.2f}×" in cells and "None" not in cells and "nan" not in cells
    assert set(charts.ROW_HELP) == set(charts.rows_frame(study).columns) - {"run"}   # every number explained
    assert study.fastest() is max(study.variants, key=lambda v: study.speedup(v.trace)).trace
    setup = charts.study_setup(study)   # what the runs share: not γ, which the sweep varies
    assert study.baseline.prompt[:20] in setup and "γ =" not in setup and study.variants[0].trace.drafter in setup


def test_a_sampled_runs_match_is_left_out_as_saying_nothing_of_its_quality():
    study = sweep()   # the synthetic runs sample (lossless, T = 1)
    assert charts.rows_frame(study)["match"].isna().all()
    greedy = replace(study, variants=[Variant(v.varied, replace(v.trace, settings=replace(
        v.trace.settings, temperature=0.0))) for v in study.variants])
    assert list(charts.rows_frame(greedy)["match"][1:]) == [r.match_rate for r in greedy.rows()[1:]]


def test_a_run_is_named_as_the_papers_write_what_it_varied():
    assert [run_name(v) for v in ({"gamma": 4}, {"gamma": 8, "adaptive": True}, {"beta": 2, "tau": 0.5},
                                  {"drafter": "ngram"}, {"temperature": 0.7}, {})] == [
        "γ = 4", "adaptive, γ ≤ 8", "β = 2, τ = 0.5", "ngram", "temperature = 0.7", "speculative"]


def test_a_study_round_trips_and_every_figure_rebuilds_from_the_file(tmp_path):
    study = sweep()
    path = tmp_path / "sweep.json"
    study.save(path)
    loaded = load_study(path)
    assert loaded.to_dict() == study.to_dict() and loaded.rows() == study.rows()
    assert charts.sweep_chart(loaded).to_dict() == charts.sweep_chart(study).to_dict()
    assert charts.rows_frame(loaded).equals(charts.rows_frame(study))
    grid = Study("grid", study.baseline, [Variant({"beta": 3, "tau": 1.0}, study.variants[0].trace)])
    grid.save(path)
    assert charts.grid_frame(load_study(path)).equals(charts.grid_frame(grid))
    assert isinstance(load_record(path), Study)
    drafters = Study("drafters", study.baseline, [Variant({"drafter": k}, v.trace) for k, v in
                                                  zip(("eagle", "ngram"), study.variants)])
    drafters.save(path)
    assert charts.drafters_chart(load_study(path)).to_dict() == charts.drafters_chart(drafters).to_dict()
    study.baseline.save(path)
    assert load_record(path).to_dict() == study.baseline.to_dict()


def test_the_speedup_is_tokens_per_second_over_the_baseline():
    study = sweep()
    base = study.baseline.summary().tokens_per_s
    for row, variant in zip(study.rows()[1:], study.variants):
        assert row.speedup == pytest.approx(variant.trace.summary().tokens_per_s / base)
        assert row.speedup == study.speedup(variant.trace) and row.speedup > 1
    assert study.rows()[0].speedup is None and study.rows()[0].match_rate == 1.0


def bad(data: dict, **change) -> dict:
    return {**json.loads(json.dumps(data)), **change}


@pytest.mark.parametrize("change,message", [
    ({"format": "specviz-trace"}, "not a specviz study"),
    ({"version": 99}, "unsupported specviz study version 99"),
    ({"kind": "race"}, "unknown study kind 'race'"),
    ({"variants": {"gamma": 2}}, "variants must be a list"),
    ({"variants": [{"varied": {"gamma": [2]}, "trace": {}}]}, "variant 0 needs a 'varied' mapping"),
    ({"variants": [{"varied": {"gamma": 2}, "trace": {"format": "specviz-trace"}}]}, "unsupported specviz trace"),
    ({"baseline": None}, "not a specviz trace"),
    ({"kind": "comparison", "variants": []}, "a comparison holds one run beside the baseline, this one 0"),
    ({"kind": "comparison"}, "a comparison holds one run beside the baseline, this one [2-9]"),
], ids=["format", "version", "kind", "variants", "varied", "trace", "baseline", "race alone", "race of many"])
def test_a_bad_study_is_refused_with_a_clear_error(change, message):
    with pytest.raises(SpecvizError, match=message):
        study_from_dict(bad(sweep().to_dict(), **change))


def test_a_variant_on_another_prompt_is_refused():
    data = sweep().to_dict()
    data["variants"][0]["trace"]["prompt"] = "something else"
    with pytest.raises(SpecvizError, match="variant 0 ran on another prompt"):
        study_from_dict(data)


def test_oversized_pickled_and_broken_files_are_refused(tmp_path, monkeypatch):
    path = tmp_path / "study.json"
    sweep().save(path)
    monkeypatch.setattr(trace, "MAX_BYTES", path.stat().st_size - 1)
    with pytest.raises(SpecvizError, match="MiB, more than the"):
        load_study(path)
    monkeypatch.undo()
    path.write_bytes(pickle.dumps(sweep()))
    with pytest.raises(SpecvizError, match="not a specviz study"):
        load_study(path)
    path.write_text('{"format": "specviz-study", ')
    with pytest.raises(SpecvizError, match="not a specviz study"):
        load_study(path)


def test_the_drafters_chart_shows_acceptance_by_position_and_alpha_against_c():
    study = sweep()
    drafters = Study("drafters", study.baseline, [Variant({"drafter": k}, v.trace) for k, v in
                                                  zip(("eagle", "ngram"), study.variants)])
    fig = charts.drafters_chart(drafters)
    lines = [t for t in fig.data if t.type == "scatter" and t.mode == "lines+markers"]
    assert [t.name for t in lines] == ["eagle", "ngram"]
    assert list(lines[1].x) == [1, 2, 3, 4] and list(lines[1].y) == pytest.approx(
        study.variants[1].trace.summary().position_acceptance)
    tested = [sum(it.evaluated > k for it in study.variants[1].trace.iterations) for k in range(4)]
    assert list(lines[1].customdata) == tested and list(lines[1].marker.symbol) == [
        "square-open" if n < 10 else "square" for n in tested]   # few iterations tested it: a noisy estimate
    assert "open: < 10 tested" in fig.layout.annotations[0].text
    points = [t for t in fig.data if t.type == "scatter" and t.mode == "markers+text"]
    assert [(t.text[0], t.y[0]) for t in points] == [(k, v.trace.summary().alpha) for k, v in
                                                      zip(("eagle", "ngram"), study.variants)]
    bars = [t for t in fig.data if t.type == "bar"]
    assert [(t.x[0], t.y[0]) for t in bars] == [(r.varied["drafter"], r.speedup) for r in drafters.rows()[1:]]
    assert [t.text[0] for t in bars] == ["eagle", "ngram"] and all(t.textposition == "inside" for t in bars)
    assert fig.layout.xaxis3.showticklabels is False   # the names are in the bars, whatever the panel's width
    assert "block" not in points[0].hovertemplate
    medusa = Study("drafters", study.baseline, [Variant({"drafter": "medusa"}, replace(study.variants[0].trace,
                                                                                        block=4))])
    point = next(t for t in charts.drafters_chart(medusa).data if t.type == "scatter" and t.mode == "markers+text")
    assert "(one step drafts a block of 4)" in point.hovertemplate   # its c is one pass for the whole block
    assert all(t.error_y.array is None for t in bars)   # timed once: no bar to draw
    twins = Study("drafters", study.baseline, [Variant({"drafter": k}, study.variants[0].trace) for k in
                                               ("eagle", "lookup+eagle")] + drafters.variants[1:])
    points = [t for t in charts.drafters_chart(twins).data if t.type == "scatter" and t.mode == "markers+text"]
    assert [t.text[0] for t in points] == ["eagle, lookup+eagle", "", "ngram"]   # one label where two points coincide
    assert points[0].textfont.color not in (points[0].marker.color, points[1].marker.color)   # neither one's own
    timed = drafters.timed(-1, 1.0).timed(-1, 2.0).timed(0, 0.5).timed(0, 0.5).timed(1, 1.0).timed(1, 1.0)
    low, high = timed.rows()[1].speedup_low, timed.rows()[1].speedup_high
    bar = [t for t in charts.drafters_chart(timed).data if t.type == "bar"][0]
    assert bar.y[0] - bar.error_y.arrayminus[0] == pytest.approx(low) and \
        bar.y[0] + bar.error_y.array[0] == pytest.approx(high) and low < high


def test_charts_never_import_the_decoder():
    """specviz/charts draws records: its modules name the records and the theory, never what runs models (a
    rule on the source; loading any specviz module still runs specviz/__init__.py)."""
    allowed = {"specviz.charts", "specviz.divergence", "specviz.errors", "specviz.plural", "specviz.settings",
               "specviz.study", "specviz.theory", "specviz.toy", "specviz.trace", "specviz.tree"}
    for module in (ROOT / "specviz" / "charts").glob("*.py"):
        tree = ast.parse(module.read_text())
        guarded = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and ast.unparse(node.test) == "TYPE_CHECKING" for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in guarded:
                continue
            if isinstance(node, ast.ImportFrom):
                assert node.level == 0, (module.name, "a relative import")
                names = [f"specviz.{a.name}" for a in node.names] if node.module == "specviz" else [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in (n for n in names if n.split(".")[0] == "specviz"):
                assert name in allowed or name.startswith("specviz.charts."), (module.name, name)


def test_cli_sweep_and_grid_write_studies_show_reads_them(tiny_llama_dirs, tmp_path, capsys):
    target, drafter = (str(d) for d in tiny_llama_dirs)
    models = ["--target", target, "--drafter", "model", "--drafter-model", drafter, "--temperature", "0",
              "--max-new-tokens", "6", "--no-chat", "--threads", "1"]
    path = tmp_path / "sweep.json"
    assert main(["sweep", "w1 w2 w3", "--gammas", "3", "1", "--out", str(path), *models]) == 0
    out = capsys.readouterr().out
    study = load_study(path)
    assert study.kind == "gamma sweep" and [v.varied for v in study.variants] == [{"gamma": 1}, {"gamma": 3}]
    assert all(v.trace.generated_ids == study.baseline.generated_ids for v in study.variants)  # greedy
    assert "γ = 3" in out and "speedup" in out and "match 100%" in out
    grid = tmp_path / "grid.json"
    assert main(["grid", "w1 w2 w3", "--betas", "1", "--taus", "0.5", "2", "--out", str(grid), *models]) == 0
    study = load_study(grid)
    assert study.kind == "grid" and study.baseline.settings.verify == "greedy"
    assert [v.trace.settings.verify for v in study.variants] == ["spec", "spec"]
    capsys.readouterr()
    assert main(["show", str(grid)]) == 0
    assert "β = 1, τ = 2" in capsys.readouterr().out
    drafters = tmp_path / "drafters.json"
    alone = ["--target", target, *models[models.index("--temperature"):]]   # each kind brings its own drafter
    assert main(["drafters", "w1 w2 w3", "--kinds", "ngram", "--out", str(drafters), *alone]) == 0
    assert [v.varied for v in load_study(drafters).variants] == [{"drafter": "ngram"}]
    assert main(["sweep", "w1", "--gammas", "0", "--out", str(path), *models]) == 2
    assert "--gammas must all be between 1 and 64" in capsys.readouterr().err
