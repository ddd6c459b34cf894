"""Chart builders and the app's pure helpers, on a hand-made trace holding every kind of token."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from scipy.stats import chisquare

from specviz import DecodeSettings, SpecvizError, Trace, charts, theory, trace_from_dict
from specviz.bleu import bleu
from specviz.charts import drafters as drafters_look
from specviz.charts import labels
from specviz.charts import theory as toy_look
from specviz.charts.style import ACCEPT_COLOR, KINDS, NEUTRAL, PHASES, REJECT_COLOR, markdown_token, show_token
from specviz.charts.table import iteration_cells
from specviz.charts.text import token_span
from specviz.reverify import mean_tokens, reverify, spec_test
from specviz.study import Study, Variant, load_record, token_match_rate
from specviz.sweep import benchmark_points
from specviz.toy import TABLE, simulate, split
from specviz.trace import DraftStep, FinalToken, Iteration, TopK


def top(ids: list[int], probs: list[float]) -> TopK:
    return TopK(ids, [f"t{i}" for i in ids], probs)


def step(position: int, token: int, p: float, q: float, u: float, verdict: str, p_top: TopK) -> DraftStep:
    return DraftStep(position, token, f"t{token}", q, p, p / q, u, verdict, "sampling", 0.5, p_top,
                     top([token, 9], [q, 1 - q]))


def make_trace() -> Trace:
    """Iteration 0: a plain target step. 1: accept, reject, unverified, then a correction. 2: two accepts + bonus."""
    residual = top([7, 8], [0.75, 0.25])
    rejected = step(2, 4, 0.1, 0.5, 0.9, "rejected", top([7, 4, 8], [0.6, 0.1, 0.05]))
    rejected.residual_top, rejected.residual_mass = residual, 0.4
    its = [
        Iteration(0, 0, 0, [1], final=FinalToken("target", 1, "t1", "p", top([1, 2], [0.7, 0.3])),
                  draft_time=0.0, verify_time=0.05, sample_time=0.01),
        Iteration(1, 3, 1, [3, 7], drafts=[step(1, 3, 0.6, 0.5, 0.2, "accepted", top([3, 5], [0.6, 0.2])), rejected,
                                           step(3, 5, 0.3, 0.4, 0.5, "unverified", top([6, 5], [0.4, 0.3]))],
                  final=FinalToken("correction", 7, "t7", "residual", residual),
                  draft_time=0.01, verify_time=0.06, sample_time=0.01, draft_calls=3),
        Iteration(2, 2, 2, [5, 6, 2], drafts=[step(1, 5, 0.5, 0.5, 0.1, "accepted", top([5, 6], [0.5, 0.2])),
                                              step(2, 6, 0.4, 0.2, 0.7, "accepted", top([2, 6], [0.5, 0.4]))],
                  final=FinalToken("bonus", 2, "t2", "p", top([2, 3], [0.8, 0.1])),
                  draft_time=0.01, verify_time=0.05, sample_time=0.01, draft_calls=2),
    ]
    return Trace("prompt", [0], "target", "drafter", DecodeSettings(gamma=3, seed=1), iterations=its,
                 generated_ids=[1, 3, 7, 5, 6, 2], text="t1t3t7t5t6t2", wall_time=0.3)


@pytest.fixture
def trace() -> Trace:
    return make_trace()


def test_trace_fixture_round_trips(trace):
    assert trace_from_dict(trace.to_dict()).to_dict() == trace.to_dict()


def test_timeline_has_one_bar_per_iteration_and_phase(trace):
    fig = charts.timeline(trace)
    by_name = {t.name: t for t in fig.data}
    for phase, color in PHASES.items():
        assert list(by_name[phase].x) == [0, 1, 2]
        assert by_name[phase].marker.color == color
    assert list(by_name["verify"].y) == pytest.approx([50, 60, 50])
    assert list(by_name["accepted drafts"].y) == [0, 1, 2]
    assert list(by_name["correction"].y) == [0, 1, 0]
    assert list(by_name["bonus"].y) == [0, 0, 1]
    assert list(by_name["target"].y) == [1, 0, 0]
    assert by_name["bonus"].marker.color == KINDS["bonus"].color


def test_colored_text_marks_each_kind_by_more_than_colour(trace):
    html = charts.colored_text(trace)
    order = [html.index(f"tok-{kind}") for kind in ("target", "accepted", "rejected", "correction", "bonus")]
    assert order == sorted(order)
    assert html.count("tok-accepted") == 3 and html.count("tok-rejected") == 1
    assert "line-through" in html and "outline: 2px dashed" in html and "★" in html and "↻" in html
    assert "tok-rejected" not in charts.colored_text(trace, show_rejected=False)
    assert all(KINDS[kind].label in charts.legend() for kind in KINDS)


def test_a_words_leading_space_stays_outside_its_box():
    span = token_span(" harbor", "correction")   # a line wrapping before the word leaves no empty box behind
    assert span.startswith(' <span class="tok tok-correction"') and ">harbor<sup>" in span
    assert ">    <" in token_span("    ", "accepted")   # indentation alone stays marked


def test_only_the_outputs_own_newlines_break_the_line():
    assert token_span("\n", "accepted").count("<br>") == 1   # the output's newline: a new line
    rejected = token_span("\n    return", "rejected")     # a rejected draft's stays in its line, struck
    assert "<br>" not in rejected and "↵" in rejected


def test_the_settings_table_shows_what_shaped_the_run_in_the_papers_words(trace):
    def table(**changes) -> dict[str, str]:
        run = replace(trace, settings=replace(trace.settings, **changes))
        return dict(charts.settings_frame(run).itertuples(index=False))

    sampled = table(verify="sampling", temperature=0.7, top_p=0.9)
    assert sampled["verification"] == "lossless sampling" and "β" not in " ".join(sampled.values())
    assert sampled["tokens"] == "sampled at temperature 0.7, top-p 0.9" and "remote target" not in sampled
    spec = table(verify="spec", beta=5, tau=2.0)
    assert spec["verification"] == "Spec-Verification (β, τ): β = 5, τ = 2" and spec["tokens"].startswith("argmax")
    adaptive = table(adaptive=True, gamma=8, branches=4, nodes=64)["draft"]
    assert adaptive.startswith("adaptive: before each iteration the policy picks") and "up to depth 8" in adaptive
    assert charts.shape_label(replace(trace.settings, adaptive=True, gamma=8)) == "adaptive, γ ≤ 8"
    assert table(gamma=3)["draft"] == "a chain of γ = 3 drafted tokens"
    remote = table(target_url="http://host:8080", verify="greedy", target_latency_ms=50.0)
    assert remote["remote target"] == "http://host:8080" and remote["added latency"] == "50 ms per request"
    assert remote["ran on"].endswith(": the drafter, the target on its server")
    alone = dict(charts.settings_frame(replace(trace, drafter="none (baseline)")).itertuples(index=False))
    assert alone["draft"] == "none: the target alone"
    old = dict(charts.settings_frame(replace(trace, threads=0)).itertuples(index=False))   # a file from before
    assert old["ran on"].endswith("unrecorded torch threads")


def test_pq_bars_cover_both_top_lists_and_mark_the_draft(trace):
    draft = trace.iterations[1].drafts[1]
    fig = charts.pq_bars(draft)
    p, q = fig.data
    assert len(p.x) == 4  # union of p's {7, 4, 8} and q's {4, 9}
    drafted = [i for i, label in enumerate(p.x) if label.endswith(" ◀")]
    assert len(drafted) == 1 and p.marker.line.width[drafted[0]] > 0
    assert p.y[drafted[0]] == pytest.approx(0.1) and q.y[drafted[0]] == pytest.approx(0.5)


def test_acceptance_test_colours_by_verdict_and_draws_u(trace):
    bars, u = charts.acceptance_test(trace.iterations[1]).data
    assert list(bars.marker.color) == [ACCEPT_COLOR, REJECT_COLOR, NEUTRAL]
    assert list(bars.x) == pytest.approx([1.0, 0.2, 0.75])
    assert list(u.x)[:2] == pytest.approx([0.2, 0.9]) and u.x[2] is None   # the unverified u was never compared


def test_a_greedy_acceptance_test_says_its_rule_and_what_its_bars_are(trace):
    it = trace.iterations[1]
    greedy = replace(it, drafts=[replace(d, u=None, rule="greedy") for d in it.drafts])
    fig = charts.acceptance_test(greedy)
    assert fig.layout.title.text == "Acceptance test, greedy: x̃ must be argmax p" and len(fig.data) == 1
    assert list(fig.data[0].x) == [d.p for d in it.drafts] and "drafted token" in fig.layout.xaxis.title.text
    assert fig.layout.showlegend is False and charts.acceptance_test(it).layout.showlegend is True


def test_acceptance_verdicts_sit_right_of_the_plot_with_marks_beyond_hue(trace):
    fig = charts.acceptance_test(trace.iterations[1])
    notes = fig.layout.annotations
    assert [(n.xref, n.x, n.xanchor) for n in notes] == [("paper", 1, "left")] * 3  # past every bar and u
    assert [n.y for n in notes] == list(fig.data[0].y)
    assert ["✓" in notes[0].text, "✗" in notes[1].text and "<s>" in notes[1].text, "·" in notes[2].text] == [True] * 3
    assert fig.data[0].text is None  # nothing written inside a bar, however narrow


def test_residual_before_and_after_normalising(trace):
    it = trace.iterations[1]
    before, after = charts.residual_bars(it.drafts[1], it.final).data
    assert list(before.y) == pytest.approx([0.3, 0.1])
    assert list(after.y) == pytest.approx([0.75, 0.25])
    assert list(after.marker.line.width)[0] > 0  # t7 was sampled


def test_bonus_distribution_marks_the_sampled_token(trace):
    final = trace.iterations[2].final
    fig = charts.final_bars(final)
    (bars,) = fig.data
    assert list(bars.y) == pytest.approx([0.8, 0.1]) and list(bars.marker.line.width) == [4, 0]
    assert "◀ sampled" in bars.x[0] and "drawn from p" in fig.layout.title.text
    greedy = charts.final_bars(replace(final, sampled_from="argmax p"))   # a greedy rule's token is not drawn
    assert "◀ argmax" in greedy.data[0].x[0] and "taken as argmax p" in greedy.layout.title.text


def test_draft_verify_table_rows(trace):
    assert [(c.state, c.verify) for c in iteration_cells(trace.iterations[0])] == [("target", "t1")]  # no draft
    assert '<td style="">t1</td>' in charts.draft_verify_table(trace, limit=1)   # plain, no kept-draft green
    states = [c.state for c in iteration_cells(trace.iterations[1])]
    assert states == ["kept", "bifurcation", "discarded"]
    assert iteration_cells(trace.iterations[1])[1].verify == "t7"  # the correction
    assert [c.state for c in iteration_cells(trace.iterations[2])] == ["kept", "kept", "bonus"]
    html = charts.draft_verify_table(trace)
    assert html.count("<th>Draft</th>") == 3 and "line-through" in html and "★" in html
    relaxed = iteration_cells(trace.iterations[1], path=[0, 1, 2])
    assert [c.state for c in relaxed] == ["kept", "kept", "kept", "bonus"]
    # kept under Spec-Verification below the target's top-1: the Verify row holds the top-1, marked
    assert [(c.draft, c.verify) for c in relaxed[:3]] == [(["t3"], "t3"), (["t4"], "t7"), (["t5"], "t6")]
    assert [c.verify for c in iteration_cells(trace.iterations[2])[:2]] == ["t5", "t6"]   # sampling: the draft
    spec = replace(trace.iterations[2], drafts=[replace(d, rule="spec") for d in trace.iterations[2].drafts])
    assert [c.verify for c in iteration_cells(spec)[:2]] == ["t5", "t2"]
    marked = charts.draft_verify_table(replace(trace, iterations=[spec]))
    assert marked.count("underline dotted") == 1 and "kept within top-β and τ" in marked


def test_a_block_drafted_in_one_pass_is_marked(trace):
    block = replace(trace, iterations=[replace(it, draft_calls=1) for it in trace.iterations])
    assert all(it.one_pass == (it.drafted >= 2) for it in block.iterations)
    html = charts.draft_verify_table(block)
    assert html.count("one pass") == sum(it.drafted >= 2 for it in block.iterations) > 0
    stepwise = replace(trace, iterations=[replace(it, draft_calls=it.drafted) for it in trace.iterations])
    assert "one pass" not in charts.draft_verify_table(stepwise)


@pytest.mark.parametrize("after", [[], ["unverified"]], ids=["eos-last", "drafts-after-eos"])
def test_nothing_follows_an_accepted_end_of_sequence(trace, after):
    """EOS (t1) accepted inside the draft: the run ends there, with no final token; no bifurcation, no bonus."""
    eos = step(2, 1, 0.5, 0.5, 0.1, "accepted", top([1, 5], [0.5, 0.2]))
    drafts = [step(1, 3, 0.6, 0.5, 0.2, "accepted", top([3, 5], [0.6, 0.2])), eos]
    drafts += [step(3, 5, 0.3, 0.4, 0.5, verdict, top([5, 6], [0.4, 0.3])) for verdict in after]
    it = Iteration(3, len(drafts), 2, [3, 1], drafts=drafts)
    for path in (None, list(range(len(drafts)))):
        assert [c.state for c in iteration_cells(it, path)] == ["kept", "kept"]
    trace.iterations.append(it)
    html = charts.draft_verify_table(trace, limit=None)
    last = html[html.index("it. 3"):]
    assert "★" not in last and "outline" not in last and "line-through" not in last


def test_reverify_applies_beta_and_tau(trace):
    rejected = trace.iterations[1].drafts[1]  # rank 1 in p, gap log(0.6 / 0.1) ≈ 1.79
    assert not spec_test(rejected, beta=1, tau=10) and not spec_test(rejected, beta=2, tau=1.0)
    assert spec_test(rejected, beta=2, tau=2.0)
    strict = reverify(trace, beta=1, tau=0.0)
    assert [v.accepted for v in strict] == [0, 1, 1]
    loose = reverify(trace, beta=10, tau=10.0)
    assert [v.accepted for v in loose] == [0, 3, 2]
    assert mean_tokens(loose) == pytest.approx((1 + 4 + 3) / 3)
    warm = replace(trace, settings=replace(trace.settings, temperature=0.5))   # p sampled at T = 0.5: eq. 9's
    assert reverify(warm, beta=2, tau=1.0)[1].passed[1]                      # T = 1 gap is 1.79 × 0.5 ≈ 0.9
    assert not reverify(trace, beta=2, tau=1.0)[1].passed[1]


def test_reverify_takes_the_passing_child_the_target_ranks_best(trace):
    """A tree whose root children t5 (p's second) and t3 (p's first) both pass at β = 2: Spec-Verification
    takes t3, then its child t4, as the run's own rule did; the first child in drafting order would stop at t5."""
    p_root = top([3, 5, 8], [0.5, 0.3, 0.1])
    drafts = [replace(step(1, 5, 0.3, 0.6, 0.0, "rejected", p_root), parent=-1),
              replace(step(1, 3, 0.5, 0.3, 0.0, "accepted", p_root), parent=-1),
              replace(step(2, 4, 0.6, 0.5, 0.0, "accepted", top([4, 2], [0.6, 0.2])), parent=1)]
    final = FinalToken("bonus", 2, "t2", "argmax p", top([2, 3], [0.8, 0.1]))
    tree = replace(trace, settings=replace(trace.settings, temperature=0.0, beta=2, tau=10.0),
                   iterations=[Iteration(0, 3, 2, [3, 4, 2], drafts=drafts, final=final)])
    [verdict] = reverify(tree, beta=2, tau=10.0)
    assert verdict.passed == [True, True, True] and verdict.path == [1, 2] and verdict.tokens == 3
    assert [c.state for c in iteration_cells(tree.iterations[0], verdict.path)] == ["kept", "kept", "bonus"]


def test_a_draft_with_no_recorded_top_fails_reverification_without_a_fuss(trace):
    trace.iterations[1].drafts[0].p_top = None
    assert reverify(trace, beta=10, tau=10.0)[1].passed[0] is False


def test_reverified_tokens_stop_where_the_run_accepted_an_eos(trace):
    """The run's last iteration accepted EOS as its second draft and emitted 2 tokens, not 3: Tok. with
    a rule that keeps what the run kept is the run's own tokens / iteration."""
    drafts = [step(1, 3, 0.6, 0.5, 0.2, "accepted", top([3, 5], [0.6, 0.2])),
              step(2, 1, 0.5, 0.5, 0.1, "accepted", top([1, 5], [0.5, 0.2]))]
    trace.iterations.append(Iteration(3, 2, 2, [3, 1], drafts=drafts))
    same = reverify(trace, beta=10, tau=10.0)
    assert [v.tokens for v in same] == [1, 4, 3, 2]
    strict = reverify(trace, beta=1, tau=0.0)
    assert [v.accepted for v in strict][-1] == 2 and strict[-1].tokens == 2
    assert [v.tokens for v in reverify(trace, beta=1, tau=0.5)] == [1, 2, 2, 2]


def timed(trace: Trace, wall_time: float, c: float | None = None) -> Trace:
    """A copy of `trace` that took `wall_time` seconds (and, with `c`, whose draft step cost c target steps)."""
    copy = trace_from_dict(json.loads(json.dumps(trace.to_dict())))
    copy.wall_time = wall_time
    if c is not None:
        for it in copy.iterations:
            it.verify_time, it.draft_time, it.draft_calls = 1.0, c * it.drafted, it.drafted
    return copy


def test_sweep_chart():
    trace = make_trace()
    sweep = Study("gamma sweep", timed(trace, 1.0), [Variant({"gamma": 2}, timed(trace, 0.5, 0.1)),
                                                    Variant({"gamma": 4}, timed(trace, 0.625, 0.2))])
    assert [r.speedup for r in sweep.rows()] == [None, 2.0, pytest.approx(1.6)]
    alpha, c = sweep.measured_alpha_c()
    assert alpha == pytest.approx(trace.summary().alpha) and c == pytest.approx(0.15)
    adaptive = sweep.with_variant({"gamma": 4, "adaptive": True}, timed(trace, 0.5, 0.9))
    assert adaptive.measured_alpha_c() == (alpha, c)   # the curves are the fixed drafts'
    benchmark = [{"gamma": 3, "speedup": 2.0, "label": "benchmark: ngram"}]
    fig = charts.sweep_chart(sweep, max_gamma=8, benchmark=benchmark)
    measured = [t for t in fig.data if t.name == "measured"]
    assert [list(t.x) for t in measured] == [[2, 4], [2, 4]]
    assert list(measured[0].y) == [2.0, pytest.approx(1.6)]
    assert len([t for t in fig.data if (t.name or "").startswith("theory")][0].x) == 8
    names = [t.name or "" for t in fig.data]
    assert any(name.startswith("optimal γ") for name in names) and "benchmark: ngram" in names
    alone = charts.sweep_chart(None, benchmark=benchmark)
    assert [t.name for t in alone.data if t.name and t.name.startswith("benchmark")] == ["benchmark: ngram"]


def test_the_sweeps_curves_run_on_to_an_optimum_past_the_range_drawn():
    """At α 0.95 and c 0.01 the optimal γ is far past 16 (Leviathan et al., Theorem 3.8): starred where it is."""
    best = theory.optimal_gamma(0.95, 0.01)
    assert best > 16
    fig = charts.speedup_chart(0.95, 0.01, measured=[(2, 1.5, 2.0)])
    curve = next(t for t in fig.data if (t.name or "").startswith("theory"))
    assert list(curve.x) == list(range(1, best + 1))
    assert next(t for t in fig.data if (t.name or "").startswith("optimal γ")).name == f"optimal γ = {best}"
    free = charts.speedup_chart(0.95, 0.0, measured=[(2, 1.5, 2.0)])   # c = 0: none, and the curves stop at 16
    assert not any((t.name or "").startswith("optimal γ") for t in free.data)
    assert next(t for t in free.data if (t.name or "").startswith("theory")).x[-1] == 16


def test_a_parallel_drafters_sweep_is_drawn_against_one_drafter_step():
    """A γ sweep of a drafter of block 3: S(γ) = E(min(γ, 3)) / (c + 1), flat past its block, optimum γ = 3."""
    trace = replace(make_trace(), block=3)
    sweep = Study("gamma sweep", timed(trace, 1.0), [Variant({"gamma": g}, timed(trace, 0.5, 0.1)) for g in (1, 2)])
    alpha, c = sweep.measured_alpha_c()
    fig = charts.sweep_chart(sweep, max_gamma=6)
    curve = next(t for t in fig.data if (t.name or "").startswith("theory"))
    assert "a block of 3 in one drafter step" in curve.name
    assert list(curve.y) == [pytest.approx(theory.walltime_improvement(alpha, g, c, 3)) for g in range(1, 7)]
    assert curve.y[2] == curve.y[5] > curve.y[1]
    assert next(t for t in fig.data if (t.name or "").startswith("optimal γ")).name == "optimal γ = 3"


def test_benchmark_points_read_the_shipped_report():
    report = json.loads((Path(__file__).resolve().parent.parent / "benchmarks" / "latest.json").read_text())
    points = benchmark_points(report)
    assert points and {p["label"] for p in points} >= {"benchmark: ngram"}
    assert all(p["gamma"] >= 1 and p["speedup"] > 0 for p in points)
    with pytest.raises(SpecvizError, match="not a benchmark report"):
        benchmark_points({"points": [{"gamma": 2, "speedup": 1.5}]})
    with pytest.raises(SpecvizError, match="malformed"):
        benchmark_points({"format": "specviz-bench", "rows": [{"category": "all"}]})


def test_toy():
    toy = split([5, 3, 1, 1, 0], [1, 1, 4, 2, 2])
    assert [a + r for a, r in zip(toy.accepted, toy.residual)] == pytest.approx(toy.p)
    assert toy.rejection == pytest.approx(sum(toy.residual))
    counts = simulate([5, 3, 1, 1, 0], [1, 1, 4, 2, 2], 2000, seed=3)
    assert sum(counts) == 2000 and counts[4] == 0
    assert chisquare(counts[:4], [2000 * x for x in toy.p[:4]]).pvalue > 1e-3   # the toy's draws follow p
    labels = list("abcde")
    assert len(charts.toy_split_chart(toy, labels).data) == 4
    assert list(charts.toy_histogram(counts, toy.p, labels).data[0].y) == pytest.approx([n / 2000 for n in counts])
    for p in ([0, 0], [1, float("nan")], [1, float("inf")], [1, -1]):   # nan: a cell the page's table left empty
        with pytest.raises(SpecvizError, match="toy weights must be numbers >= 0, not all zero, and no cell left"):
            simulate(p, [1, 1], 10)


def test_grid_helpers():
    assert token_match_rate([1, 2, 3], [1, 2, 4, 5]) == 0.5
    trace = make_trace()
    other = timed(trace, 0.5)
    other.generated_ids = other.generated_ids[:2] + [99] * (len(other.generated_ids) - 2)
    grid = Study("grid", timed(trace, 1.0), [Variant({"beta": 1, "tau": 1.0}, timed(trace, 1.0)),
                                             Variant({"beta": 3, "tau": 1.0}, other)])
    frame = charts.grid_frame(grid)
    score = bleu(other.generated_ids, trace.generated_ids)
    assert 0 < score < 1 and grid.rows()[2].bleu == score and grid.rows()[1].bleu == 1.0
    assert frame.shape == (1, 2) and frame.iloc[0, 1] == f"{trace.summary().accepted_length:.2f} / {score:.2f} / 2.00×"
    rounds = grid.timed(-1, 1.0).timed(-1, 2.0).timed(0, 1.0).timed(0, 1.0).timed(1, 0.5).timed(1, 0.5)
    assert charts.grid_frame(rounds).iloc[0, 1].endswith(" / 3.00× (2.00–4.00)")   # the median and its rounds' range
    rows = charts.rows_frame(grid)
    assert list(rows["run"]) == ["baseline", "β = 1, τ = 1", "β = 3, τ = 1"]


def test_token_labels_show_spaces_and_survive_markdown():
    assert show_token(" a\n") == "␣a↵" and show_token("") == "∅"
    assert markdown_token("__init__*") == r"\_\_init\_\_\*"


EXAMPLES = Path(__file__).resolve().parent.parent / "assets" / "examples"


def test_the_drafters_labels_stay_apart_and_in_their_panel_at_every_width():
    """The class pack's drafters study (nine drafters, seven labels in α̂ against c, three of them crowded near
    c = 0.05): from the narrowest the Speedup page draws the chart (480 px, at 150% zoom) to a wide screen, each
    label, by its point or in a callout, stays inside its panel, off every marker and off every other label."""
    fig = charts.drafters_chart(load_record(EXAMPLES / "drafters.json"))
    points = [t for t in fig.data if t.type == "scatter" and t.mode == "markers+text"]
    callouts = [a for a in fig.layout.annotations if a.showarrow]
    (x0, x1), (y0, y1) = fig.layout.xaxis2.range, fig.layout.yaxis2.range
    beside = [(t, t.texttemplate[0] if t.texttemplate else t.text[0]) for t in points]
    shown = [text for _, text in beside if text] + [a.text for a in callouts]
    assert sorted(text.replace("<br>", " ") for text in shown) == sorted(t.text[0] for t in points if t.text[0])
    for chart_width in (480, 560, 640, 760, 900, 1400):
        width, height = drafters_look.panel_size(fig, "xaxis2", chart_width)
        at = {id(t): ((t.x[0] - x0) / (x1 - x0) * width, (t.y[0] - y0) / (y1 - y0) * height) for t in points}
        size = drafters_look.MARKER, drafters_look.LABEL_SIZE
        boxes = [labels.shift(labels.label_box(t.textposition, text, *size), *at[id(t)]) for t, text in beside if text]
        for a in callouts:
            w, h = labels.text_size(a.text, drafters_look.LABEL_SIZE)
            x, y = (a.x - x0) / (x1 - x0) * width + a.ax, (a.y - y0) / (y1 - y0) * height - a.ay
            boxes.append((x - w / 2, y - h / 2, x + w / 2, y + h / 2))
        r = drafters_look.MARKER / 2
        markers = [labels.shift((-r, -r, r, r), *at[id(t)]) for t in points]
        for k, box in enumerate(boxes):
            assert 0 <= box[0] and box[2] <= width and 0 <= box[1] and box[3] <= height, (chart_width, box)
            assert not any(labels.overlap(box, m) for m in markers), (chart_width, box)
            assert not any(labels.overlap(box, other) for other in boxes[k + 1:]), (chart_width, box)
    plot = 480 - drafters_look.MARGIN["l"] - drafters_look.MARGIN["r"]
    for title, axis in zip(fig.layout.annotations[:3], ("xaxis", "xaxis2", "xaxis3")):   # centred: half a gap a side
        left, right = fig.layout[axis].domain
        assert all(len(line) * labels.CHAR * drafters_look.TITLE_SIZE <= (right - left + drafters_look.SPACING)
                   * plot for line in title.text.split("<br>")), title.text


def test_the_drafters_bars_name_themselves_in_a_contrasting_ink():
    """Each name inside its bar is white on a dark bar and near-black on a light one, at least 4.5:1 (WCAG AA);
    no drafter is drawn pure black, which a dark background would swallow."""
    bars = [t for t in charts.drafters_chart(load_record(EXAMPLES / "drafters.json")).data if t.type == "bar"]
    assert len(bars) == 9 and all(t.textposition == "inside" for t in bars)
    for bar in bars:
        ink = bar.insidetextfont.color
        assert drafters_look.contrast(ink, bar.marker.color) >= 4.5, (bar.x[0], ink)
        assert ink == max(("#ffffff", drafters_look.DARK_INK),
                          key=lambda color: drafters_look.contrast(color, bar.marker.color))
    assert {b.x[0]: b.insidetextfont.color for b in bars if b.x[0] in ("unigram", "tiny", "eagle")} == {
        "unigram": drafters_look.DARK_INK, "tiny": drafters_look.DARK_INK, "eagle": "#ffffff"}
    assert drafters_look.contrast("#000000", "#ffffff") == pytest.approx(21)
    assert "#000000" not in drafters_look.COLORS
    assert len({b.marker.color for b in bars}) == 9, "two drafters share a colour"


def test_the_toy_charts_keep_every_token_and_each_p_over_its_own_bar():
    """The Theory page's toy, drawn as narrow as 230 px: every token a tick (a repeated token its own bar), p a
    line in data units as wide as its bar (never over a neighbour), q's circle smaller with more tokens, and the
    titles and legends inside the figure."""
    labels = [str(t) for t in TABLE["token"]]
    toy = split(TABLE["p"], TABLE["q"])
    counts = simulate(TABLE["p"], TABLE["q"], 500)
    for fig in (charts.toy_split_chart(toy, labels), charts.toy_histogram(counts, toy.p, labels)):
        axis = fig.layout.xaxis
        assert axis.tickmode == "array" and list(axis.ticktext) == labels and list(axis.tickvals) == [0, 1, 2, 3, 4]
        assert all(list(t.x) == [0, 1, 2, 3, 4] for t in fig.data if t.type == "bar")
        line = next(t for t in fig.data if t.name == "p (target)")
        half = (1 - fig.layout.bargap) / 2
        assert list(line.x) == pytest.approx([v for i in range(5) for v in (i - half, i + half, None)])
        assert list(line.y) == pytest.approx([v for p in toy.p for v in (p, p, None)])
        assert all(len(row) <= 20 for row in fig.layout.title.text.split("<br>"))   # bold 22 px in 230 px
        legend = fig.layout.legend
        rows = sum(1 + (t.name or "").count("<br>") for t in fig.data)
        assert legend.yref == "container" and rows * 24 <= legend.y * fig.layout.height <= fig.layout.margin.b - 40
        assert all(len(row) <= 24 for t in fig.data for row in t.name.split("<br>"))
    assert fig.layout.margin == charts.toy_split_chart(toy, labels).layout.margin   # side by side, plots aligned
    q = next(t for t in charts.toy_split_chart(toy, labels).data if t.name == "q (drafter)")
    assert q.marker.size == toy_look.marker_size(5) == 16 and toy_look.marker_size(20) < 16
    twice = charts.toy_split_chart(split([1, 1, 2], [2, 1, 1]), ["a", "a", "b"])
    assert list(twice.layout.xaxis.ticktext) == ["a", "a", "b"] and list(twice.data[0].x) == [0, 1, 2]
