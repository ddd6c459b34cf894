"""Measurements that can be trusted by eye: a study's runs timed in interleaved rounds, speedups as the median of
paired rounds with their min–max, drawn as error bars in the sweep and the race, and a sentence saying when
the spread is larger than the differences drawn."""

from __future__ import annotations

import json
import statistics
from math import comb

import pytest
import torch
from synthetic import synthetic_trace
from test_race import comparison

from specviz import charts, load_model, sweep
from specviz.charts.race import race_chart
from specviz.cli import main
from specviz.drafters import DraftModelDrafter
from specviz.errors import SpecvizError
from specviz.settings import DecodeSettings
from specviz.study import Study, Variant, inside_chance, repeats, repeats_note, study_from_dict


def rounds(base: list[float], variants: dict[int, list[float]]) -> Study:
    """A γ sweep whose baseline writes 64 tokens in each of `base` seconds, and γ = g's in `variants[g]`."""
    trace = synthetic_trace(64, gamma=1, alpha=0.0, seed=1)
    study = Study("gamma sweep", trace, baseline_seconds=base)
    for g, seconds in variants.items():
        run = synthetic_trace(64, gamma=g, seed=g)
        run.generated_ids = list(trace.generated_ids)   # the same tokens: rates compare seconds
        study = study.with_variant({"gamma": g}, run, seconds)
    return study


def test_a_speedup_is_the_median_of_paired_rounds_with_their_min_and_max():
    study = rounds([4.0, 8.0, 4.0], {2: [2.0, 4.0, 4.0]})
    row = study.rows()[1]
    assert study.paired(study.variants[0].trace) == [2.0, 2.0, 1.0]   # round by round: a slow spell hits both
    assert row.speedup == 2.0 and (row.speedup_low, row.speedup_high) == (1.0, 2.0) and row.rounds == 3
    assert study.rows()[0].rounds == 3 and study.rows()[0].speedup_low is None


def test_a_study_timed_once_keeps_its_old_numbers_and_file():
    base = synthetic_trace(64, gamma=1, alpha=0.0, seed=1)
    run = synthetic_trace(64, gamma=2, seed=2)
    study = Study("gamma sweep", base, [Variant({"gamma": 2}, run)])
    assert study.speedup(run) == pytest.approx(run.summary().tokens_per_s / base.summary().tokens_per_s)
    old = study.to_dict()
    old["version"] = 1
    del old["baseline_seconds"]
    del old["variants"][0]["seconds"]
    assert study_from_dict(old).rows()[1].speedup == pytest.approx(study.speedup(run))


def test_rounds_survive_the_file():
    study = rounds([4.0, 5.0, 4.5], {2: [2.0, 2.5, 2.2], 4: [3.0, 3.1, 2.9]})
    again = study_from_dict(json.loads(json.dumps(study.to_dict())))
    assert again.baseline_seconds == study.baseline_seconds and [v.seconds for v in again.variants] == [
        v.seconds for v in study.variants]
    assert [r.speedup_low for r in again.rows()] == [r.speedup_low for r in study.rows()]
    bad = study.to_dict()
    bad["variants"][0]["seconds"] = ["fast"]
    with pytest.raises(SpecvizError, match="the variant 0's seconds must be a list of numbers >= 0"):
        study_from_dict(bad)


def test_the_sweep_draws_medians_with_min_max_error_bars():
    study = rounds([4.0, 4.4, 4.2], {2: [2.0, 2.2, 2.0], 4: [1.6, 2.0, 1.8]})
    measured = next(t for t in charts.sweep_chart(study).data if t.name == "measured (median, min–max)")
    rows = study.rows()[1:]
    assert list(measured.y) == [r.speedup for r in rows]
    assert list(measured.error_y.array) == pytest.approx([r.speedup_high - r.speedup for r in rows])
    assert list(measured.error_y.arrayminus) == pytest.approx([r.speedup - r.speedup_low for r in rows])


def test_the_adaptive_level_carries_its_rounds_min_max_as_a_band_now_and_before():
    study = rounds([4.0, 4.4, 4.2], {2: [2.0, 2.2, 2.0]})
    run = synthetic_trace(64, gamma=2, seed=5)
    run.generated_ids = list(study.baseline.generated_ids)
    study = study.with_variant({"gamma": 2, "adaptive": True}, run, [1.6, 2.0, 1.8])
    low, high = study.rows()[2].speedup_low, study.rows()[2].speedup_high
    fig = charts.sweep_chart(study, before=study)
    bands = [t for t in fig.data if t.fill == "toself"]
    assert [list(t.y) for t in bands] == [[low, low, high, high]] * 2   # this sweep's, then the one before's
    assert bands[0].fillcolor != bands[1].fillcolor
    names = [t.name for t in fig.data if t.name and "adaptive" in t.name]
    assert names == [f"adaptive, γ ≤ 2: {study.rows()[2].speedup:.2f}× (band: min–max)",
                     f"adaptive before: {study.rows()[2].speedup:.2f}× (band: min–max)"]


def test_a_sweep_whose_runs_emitted_nothing_leaves_tokens_per_iteration_to_autoscale():
    base = synthetic_trace(64, gamma=1, alpha=0.0, seed=1)
    empty = synthetic_trace(64, gamma=2, seed=2)
    empty.iterations, empty.generated_ids = [], []
    assert charts.sweep_chart(Study("gamma sweep", base, [Variant({"gamma": 2}, empty)])).layout.yaxis2.range is None


def test_the_sweep_says_when_the_spread_is_larger_than_the_differences():
    apart = rounds([4.0, 4.0, 4.0], {2: [2.0, 2.05, 1.95], 4: [1.0, 1.02, 0.98]})
    warn, note = charts.spread_note(apart)
    assert not warn and "their order holds" in note and "Timed 3×" in note
    close = rounds([4.0, 4.0, 4.0], {2: [2.0, 2.4, 1.8], 4: [1.9, 2.3, 2.1]})
    warn, note = charts.spread_note(close)
    assert warn and "γ = 4 and γ = 2, 5.0% apart" in note and "not measured" in note
    crowded = rounds([4.0, 4.0, 4.0], {g: [2.0 + 0.01 * g, 2.4, 1.8] for g in range(1, 7)})   # 5 close pairs
    warn, note = charts.spread_note(crowded)
    assert warn and note.count(" apart") == 3 and "; and 2 more)" in note   # the closest three, then a count
    once = Study("gamma sweep", synthetic_trace(64), [Variant({"gamma": 2}, synthetic_trace(64, gamma=2))])
    warn, note = charts.spread_note(once)
    assert warn is True and "timed once" in note


def test_the_race_draws_each_sides_rounds():
    study = comparison()
    base, speculative = study.baseline.wall_time, study.variants[0].trace.wall_time
    study = Study("comparison", study.baseline, [Variant({}, study.variants[0].trace, [speculative, speculative * 1.2,
                                                                                       speculative * 0.9])],
                  [base, base * 1.1, base])
    fig = race_chart(study)
    bars = [t for t in fig.data if t.error_x is not None and t.error_x.array is not None]
    assert len(bars) == 2 and all("over 3 rounds" in t.name for t in bars)
    assert bars[1].x[0] == pytest.approx(speculative)
    assert bars[1].error_x.array[0] == pytest.approx(speculative * 0.2)
    assert "over 3 rounds" in fig.layout.annotations[0].text


def test_runs_are_timed_interleaved_round_by_round(tiny_llama_dirs, monkeypatch):
    torch.set_num_threads(1)
    target, draft = (load_model(str(d)) for d in tiny_llama_dirs)
    order: list[str] = []
    generate = sweep.generate

    def logged(target, drafter, prompt, settings, **kwargs):
        order.append("base" if drafter is None else f"γ{settings.gamma}")
        return generate(target, drafter, prompt, settings, **kwargs)

    monkeypatch.setattr(sweep, "generate", logged)
    settings = DecodeSettings(temperature=0.0, max_new_tokens=6)
    studies = list(sweep.gamma_sweep(target, DraftModelDrafter(draft), "w1 w2", settings, [1, 3], repeats=3))
    assert order == ["base", "γ1", "γ3"] * 3 and len(studies) == 9
    study = studies[-1]
    assert len(study.baseline_seconds) == 3 and all(len(v.seconds) == 3 for v in study.variants)
    assert all(r.rounds == 3 for r in study.rows())


def test_drafters_side_by_side_are_timed_in_rounds_too(tiny_llama_dirs, monkeypatch):
    torch.set_num_threads(1)
    target = load_model(str(tiny_llama_dirs[0]))
    order: list[str] = []
    generate = sweep.generate

    def logged(target, drafter, prompt, settings, **kwargs):
        order.append("base" if drafter is None else drafter.name.split()[0])
        return generate(target, drafter, prompt, settings, **kwargs)

    monkeypatch.setattr(sweep, "generate", logged)
    settings = DecodeSettings(temperature=0.0, max_new_tokens=6)
    studies = list(sweep.drafter_comparison(target, None, "w1 w2 w1 w2", settings, ["ngram"], repeats=3))
    assert order == ["base", "ngram"] * 3 and len(studies) == 6   # prompt lookup is the kind any target has
    assert [v.varied for v in studies[-1].variants] == [{"drafter": "ngram"}]
    assert all(r.rounds == 3 for r in studies[-1].rows())


def test_a_sweep_run_again_says_which_points_land_in_the_bars_drawn_before():
    before = rounds([4.0, 4.0, 4.0], {2: [2.0, 2.4, 2.2], 4: [3.0, 3.2, 3.4]})   # γ=2 1.67–2.0×, γ=4 1.18–1.33×
    again = rounds([4.0, 4.0, 4.0], {2: [2.1, 2.2, 2.3], 4: [2.0, 2.1, 2.2], 8: [3.0, 3.0, 3.0]})
    found = repeats(before, again)
    assert [(r.name, r.inside) for r in found] == [("γ = 2", True), ("γ = 4", False)]   # γ=8 was not drawn
    assert found[1].speedup == pytest.approx(4.0 / 2.1) and found[1].high == pytest.approx(4.0 / 3.0)


@pytest.mark.parametrize(("before", "now"), [(1, 3), (2, 2), (3, 2), (3, 3), (3, 4), (4, 5), (5, 2), (7, 7)])
def test_the_chance_that_a_rerun_lands_in_a_bar_counts_every_ordering_of_the_rounds(before, now):
    """`inside_chance` against a count over every way the two measurements' rounds can rank among themselves
    (for an even count: both middle rounds inside, and not both on one side), and against rounds drawn at random
    with nothing changing between the two, the median taken as the Study takes it."""
    from itertools import combinations

    both, either = 0, 0
    for ranks in combinations(range(before + now), before):
        mine = [r for r in range(before + now) if r not in ranks]
        lower, upper = mine[(now - 1) // 2], mine[now // 2]
        both += min(ranks) < lower and upper < max(ranks)
        either += not (upper < min(ranks) or lower > max(ranks))
    low, high = inside_chance(before, now)
    ways = comb(before + now, before)
    assert (low, high) == (pytest.approx(both / ways), pytest.approx(either / ways))
    assert (low == high) == (now % 2 == 1)
    draws = torch.randn(20_000, before + now, dtype=torch.float64,
                        generator=torch.Generator().manual_seed(before * 10 + now))
    earlier, rerun = draws[:, :before], draws[:, before:]
    median = torch.tensor([statistics.median(row) for row in rerun.tolist()], dtype=torch.float64)
    seen = float(((earlier.min(dim=1).values <= median) & (median <= earlier.max(dim=1).values)).double().mean())
    assert low - 0.015 <= seen <= high + 0.015   # 0.015: 4.3 binomial sd at 0.5


def test_a_reruns_note_weighs_the_points_inside_against_chance():
    drawn = rounds([4.0] * 3, {g: [2.0, 2.4, 2.2] for g in (1, 2, 4, 8)})   # every bar 1.67–2.0×
    inside = rounds([4.0] * 3, {g: [2.1, 2.2, 2.3] for g in (1, 2, 4, 8)})
    outside = rounds([4.0] * 3, {g: [1.0, 1.1, 1.2] for g in (1, 2, 4, 8)})
    note = repeats_note(repeats(drawn, inside))
    assert note.startswith("4 of 4 points fall within the bars drawn before")
    assert "with probability 0.60 for 3 rounds before and 3 now" in note and note.endswith("2.4 of 4 are expected.")
    assert repeats_note(repeats(drawn, outside)).startswith("0 of 4 points fall within")
    two = rounds([4.0] * 2, {g: [2.1, 2.3] for g in (1, 2, 4, 8)})
    note = repeats_note(repeats(drawn, two))
    assert "0.30 to 0.80 for 3 rounds before and 2 now" in note and "1.2 to 3.2 of 4 are expected (the median" in note


def test_the_sweep_command_checks_itself_against_an_earlier_sweep(tiny_llama_dirs, tmp_path, capsys):
    common = ["sweep", "w1 w2 w3", "--target", str(tiny_llama_dirs[0]), "--drafter-model", str(tiny_llama_dirs[1]),
              "--gammas", "1", "2", "--max-new-tokens", "8", "--temperature", "0", "--threads", "1"]
    assert main([*common, "--out", str(tmp_path / "first.json")]) == 0
    assert main([*common, "--out", str(tmp_path / "second.json"), "--again", str(tmp_path / "first.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sum("drawn before as" in line for line in lines) == 2
    assert lines[-1].startswith(f"The bars drawn before: {tmp_path / 'first.json'}. ")
    assert "of 2 points fall within the bars drawn before" in lines[-1]
    assert "0.60 for 3 rounds before and 3 now" in lines[-1]
