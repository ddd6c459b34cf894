"""The Lesson: its steps built from hand-made traces (pure), and the page that walks through them (AppTest)."""

from __future__ import annotations

import html
from dataclasses import replace
from pathlib import Path

import pytest
from apps import switch_to
from streamlit.testing.v1 import AppTest
from synthetic import synthetic_trace, synthetic_tree_trace
from test_charts import make_trace

from specviz import DecodeSettings, Trace, charts, theory
from specviz.charts.lesson import instructive
from specviz.trace import DraftStep, FinalToken

APP = str(Path(__file__).resolve().parent.parent / "app.py")
STEPS = 7
CONTEXT, DRAFT, SCORE, TEST, FINAL, EMITTED, SPEEDUP = range(STEPS)


def _rejected_first(trace: Trace) -> DraftStep:
    it = trace.iterations[charts.default_iteration(trace)]
    return next(d for d in it.drafts if d.verdict == "rejected")


@pytest.mark.parametrize("make", [synthetic_trace, synthetic_tree_trace, make_trace])
def test_every_iteration_has_seven_steps_with_a_question(make):
    trace = make()
    for it in trace.iterations[:20]:
        steps = charts.lesson_steps(trace, it.index)
        assert len(steps) == STEPS
        assert all(s.title and s.question.endswith("?") for s in steps)
        assert all(html.escape(s.question) in charts.lesson_html(s) for s in steps)


def test_chain_rejection_shows_its_numbers():
    trace = synthetic_trace()
    index = charts.default_iteration(trace)
    it = trace.iterations[index]
    assert it.final.kind == "correction" and all(not instructive(b) for b in trace.iterations[:index])
    first = _rejected_first(trace)
    steps = charts.lesson_steps(trace, index)
    for number in (first.p, first.q, first.u):
        assert f"{number:.3f}" in steps[TEST].body and f"{number:.3f}" in steps[FINAL].body
    assert f"iteration {index}" in charts.default_note(trace)
    assert "did not record" in steps[FINAL].body  # this trace keeps no residual
    tables = [s.body for s in steps if "<table" in s.body]
    assert tables and all('<div style="overflow-x: auto;"><table' in b for b in tables)  # a narrow column scrolls it


def test_the_context_shows_the_prompt_as_the_target_read_it():
    trace = make_trace()
    assert "(in grey)" in charts.lesson_steps(trace, 1)[CONTEXT].body   # an older file: the prompt alone
    trace.context = trace.prompt   # a run fed the raw prompt, with no chat template
    assert "(in grey)" in charts.lesson_steps(trace, 1)[CONTEXT].body
    trace.context = ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nprompt<|im_end|>\n"
                     "<|im_start|>assistant\n")
    body = charts.lesson_steps(trace, 1)[CONTEXT].body
    assert "Be brief." in body and "&lt;|im_start|&gt;assistant" in body and "chat template included" in body


def test_a_small_p_is_not_shown_as_zero_and_a_chain_hears_of_no_siblings():
    trace = synthetic_trace()
    index = charts.default_iteration(trace)
    first = _rejected_first(trace)
    first.p, first.ratio = 0.000531, 0.000531 / first.q
    steps = charts.lesson_steps(trace, index)
    assert "0.00053" in steps[SCORE].body and "0.00053" in steps[TEST].body and "0.000<" not in steps[SCORE].body
    assert "sibling" not in steps[SCORE].body


def test_tree_rejections_residuals_and_correction():
    trace = synthetic_tree_trace()
    assert charts.default_iteration(trace) == 0
    steps = charts.lesson_steps(trace, 0)
    assert "0.100" in steps[TEST].body and "0.500" in steps[TEST].body and "0.630" in steps[TEST].body  # ' the'
    assert "p′" in steps[TEST].body and "SpecInfer" in steps[TEST].body
    assert "3 drafted tokens never reached a test" in steps[TEST].body
    final = steps[FINAL]
    assert "after <b>'␣big'</b>: 0.500" in final.body and "after <b>'␣small'</b>: 1.000" in final.body  # masses
    assert "'␣red'</b> is drawn from it (probability 0.800)" in final.body
    assert "tried in turn" in final.figure.layout.title.text  # the residual sequence under ' a'
    assert "token tree of 7 nodes" in steps[DRAFT].body and steps[DRAFT].figure is not None
    assert "ONE</b> forward pass" in steps[SCORE].body and "70.0 ms" in steps[SCORE].body
    assert "2 tokens from one target pass" in steps[EMITTED].body


def test_all_accepted_gets_the_bonus_token():
    trace = synthetic_tree_trace()
    final = charts.lesson_steps(trace, 1)[FINAL]
    assert "bonus" in final.title and "'␣on'</b>" in final.body and "0.900" in final.body
    assert final.figure.layout.title.text.startswith("Bonus token")


def test_speedup_step_matches_theory():
    for trace in (synthetic_trace(), synthetic_tree_trace()):
        summary = trace.summary()
        best = theory.optimal_gamma(summary.alpha, summary.c)
        body = charts.lesson_steps(trace, 0)[SPEEDUP].body
        assert f"α̂ = {summary.alpha:.3f}" in body and f"optimal γ = {best} " in body
        assert f"{theory.walltime_improvement(summary.alpha, trace.settings.gamma, summary.c):.2f}×" in body
        assert f"define α as E[β], β = Σ min(p, q), the chance a draft is kept: averaged over the same drafts of " \
               f"its chains it is {summary.expected_alpha:.3f}" in body


def test_speedup_step_prices_a_parallel_drafters_block_as_one_step():
    """Blockwise heads of block 2 at γ = 3 draft 2 tokens for one drafter step: S = E(2) / (c + 1), optimum γ = 2."""
    trace = replace(synthetic_trace(), block=2)
    summary = trace.summary()
    step = charts.lesson_steps(trace, 0)[SPEEDUP]
    assert trace.settings.gamma > 2 and "S = E / (c + 1)" in step.body and "min(γ, B) = 2" in step.body
    assert f"{theory.walltime_improvement(summary.alpha, trace.settings.gamma, summary.c, 2):.2f}×" in step.body
    assert "optimal γ = 2 " in step.body and "S = E / (γc + 1)" not in step.body
    assert "a block of 2 in one drafter step" in next(t.name for t in step.figure.data if t.name.startswith("theory"))


def _rule(trace: Trace, verify: str) -> Trace:
    """The trace as if verified by `verify` (no u); the verdicts stay as recorded."""
    for it in trace.iterations:
        for d in it.drafts:
            d.u, d.rule = None, verify
        if it.final is not None and it.final.kind != "target":
            it.final.sampled_from = "argmax p"
    return replace(trace, settings=DecodeSettings(gamma=3, verify=verify, beta=2, tau=1.5))


def test_greedy_and_spec_rules_say_their_tests():
    greedy = charts.lesson_steps(_rule(make_trace(), "greedy"), 1)
    assert "argmax is <b>'t7'</b> (p = 0.600)" in greedy[TEST].body  # at the rejected 't4'
    assert "argmax p = <b>'t7'</b>" in greedy[FINAL].body
    assert ">p/q</th>" not in greedy[SCORE].body and "the greedy rule tests no ratio" in greedy[SCORE].body
    assert ">p/q</th>" in charts.lesson_steps(make_trace(), 1)[SCORE].body   # lossless sampling's ratio
    spec = charts.lesson_steps(_rule(make_trace(), "spec"), 1)
    assert "rank 2 in p (β = 2)" in spec[TEST].body and "(τ = 1.5)" in spec[TEST].body
    assert "top-β (β = 2)" in spec[CONTEXT].body


def test_target_steps_and_no_drafter():
    trace = make_trace()
    steps = charts.lesson_steps(trace, 0)  # iteration 0 is a plain target step
    assert "No draft" in steps[DRAFT].body and "Nothing to test" in steps[TEST].body
    assert "pass over the prompt, which emits the first token" in steps[DRAFT].body
    assert "target's own token" in steps[FINAL].title
    plain = Trace("prompt", [0], "target", "none (baseline)", DecodeSettings(), iterations=[trace.iterations[0]],
                  generated_ids=[1], wall_time=0.1)
    steps = charts.lesson_steps(plain, 0)
    assert "no drafter" in steps[DRAFT].body
    assert "undefined" in steps[SPEEDUP].body and steps[SPEEDUP].figure is None
    assert charts.default_iteration(plain) == 0 and "plain target step" in charts.default_note(plain)


def test_unrecorded_drafts_eos_and_a_free_drafter():
    trace = make_trace()
    trace.iterations[1].drafts = []     # recorded without per-token records
    trace.iterations[2].final = None    # an accepted draft was EOS
    for it in trace.iterations:
        it.draft_calls = 0              # prompt lookup: no drafter forward pass
    unrecorded = charts.lesson_steps(trace, 1)
    assert "without per-token records" in unrecorded[DRAFT].body
    assert "no per-token records" in unrecorded[FINAL].body
    last = charts.lesson_steps(trace, 2)
    assert "end-of-sequence" in last[FINAL].body and last[FINAL].figure is None
    assert "c = 0: the drafter made no forward pass" in last[SPEEDUP].body
    summary = trace.summary()   # free drafts: S = E grows with γ towards 1 / (1 − α̂), and no γ is optimal
    assert f"towards 1 / (1 − α̂) = {1 / (1 - summary.alpha):.2f}×" in last[SPEEDUP].body
    assert "the formula has no optimal γ" in last[SPEEDUP].body and "The optimal γ" not in last[SPEEDUP].body
    assert not [t for t in last[SPEEDUP].figure.data if (t.name or "").startswith("optimal γ")]
    for it in trace.iterations:   # every draft rejected: nothing grows
        it.accepted = 0
        for d in it.drafts:
            d.verdict = "rejected"
    assert trace.summary().alpha == 0
    assert "every draft is rejected: S = 1 at any γ" in charts.lesson_steps(trace, 2)[SPEEDUP].body


def test_a_block_drafted_in_one_pass_is_explained():
    trace = synthetic_trace()
    index = charts.default_iteration(trace)
    assert "drafted the whole block" not in charts.lesson_steps(trace, index)[DRAFT].body   # one pass per token
    trace.iterations[index].draft_calls = 1
    assert "drafted the whole block" in charts.lesson_steps(trace, index)[DRAFT].body


def test_tokens_are_escaped():
    trace = make_trace()
    trace.iterations[1].drafts[1].token = "<b>&"
    steps = charts.lesson_steps(trace, 1)
    assert all("<b>&" not in s.body for s in steps)
    assert "&lt;b&gt;&amp;" in steps[TEST].body


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    return at


def _title(at: AppTest) -> str:
    return at.header[0].value


def test_page_walks_through_the_steps(app):
    app.session_state["trace"] = synthetic_tree_trace()
    app.session_state["shown"] = "live"  # the app opened on an example
    app.switch_page("pages/lesson.py").run()
    assert not app.exception
    titles = [_title(app)]
    assert titles[0].startswith("Step 1 of 7")
    assert app.button(key="lesson_prev").disabled and not app.button(key="lesson_next").disabled
    for _ in range(STEPS - 1):
        app.button(key="lesson_next").click().run()
        assert not app.exception
        titles.append(_title(app))
    assert len(set(titles)) == STEPS and titles[-1].startswith("Step 7 of 7")
    assert app.button(key="lesson_next").disabled and not app.button(key="lesson_prev").disabled
    assert app.get("plotly_chart")  # the speedup curves
    for _ in range(STEPS - 1):
        app.button(key="lesson_prev").click().run()
        assert not app.exception
    assert _title(app) == titles[0] and app.button(key="lesson_prev").disabled
    assert any("Question for the class" in h.proto.body for h in app.get("html"))
    app.button(key="lesson_next_end").click().run()   # the same buttons under the step, for the end of a screen
    assert _title(app) == titles[1] and not app.button(key="lesson_prev_end").disabled


def test_the_lessons_iteration_opens_in_the_inspector(app):
    app.session_state["trace"] = make_trace()
    app.session_state["shown"] = "live"  # the app opened on an example
    app.switch_page("pages/lesson.py").run()
    index = app.selectbox(key="lesson_pick").value
    app.button(key="lesson_inspect").click().run()
    assert not app.exception and app.session_state["inspect_index"] == index
    assert app.subheader[0].value.startswith(f"Iteration {index}:")   # the inspector's page


def test_page_starts_at_the_instructive_iteration_and_a_new_one_restarts(app):
    app.session_state["trace"] = make_trace()
    app.session_state["shown"] = "live"  # the app opened on an example
    app.switch_page("pages/lesson.py").run()
    assert app.selectbox(key="lesson_pick").value == 1  # iteration 0 is a target step; 1 has the correction
    assert any("starts at iteration 1" in c.value for c in app.main.caption)
    app.button(key="lesson_next").click().run()
    app.button(key="lesson_next").click().run()
    assert _title(app).startswith("Step 3 of 7")
    app.selectbox(key="lesson_pick").set_value(2).run()
    assert not app.exception and _title(app).startswith("Step 1 of 7")
    lesson = next(h.proto.body for h in app.get("html") if "specviz-lesson" in h.proto.body)
    assert "Iteration 2 (numbered 0 to 2)" in lesson


def test_a_round_trip_through_an_example_keeps_the_place_in_each_trace(app):
    """The Lesson and the inspector come back where they stood in the session's run after showing an example, and
    where they stood in the example after going back to it; a new run of the session's starts afresh."""
    from specviz.examples import PACK

    app.session_state["trace"] = synthetic_trace(12)
    switch_to(app, "live")
    app.switch_page("pages/lesson.py").run()
    app.selectbox(key="lesson_pick").set_value(5).run()
    app.button(key="lesson_next").click().run()
    app.button(key="lesson_next").click().run()
    app.session_state["inspect_index"] = 7
    switch_to(app, PACK[1].name)
    assert _title(app).startswith("Step 1 of") and app.selectbox(key="lesson_pick").value != 5
    app.button(key="lesson_next").click().run()
    example_index = app.selectbox(key="lesson_pick").value
    switch_to(app, "live")
    assert app.selectbox(key="lesson_pick").value == 5 and _title(app).startswith("Step 3 of")
    assert app.session_state["inspect_index"] == 7
    switch_to(app, PACK[1].name)
    assert app.selectbox(key="lesson_pick").value == example_index and _title(app).startswith("Step 2 of")
    app.session_state["trace"] = synthetic_trace(12)   # what a new run does (`state.set_trace`), shown at once
    app.session_state["inspect_index"] = 0
    switch_to(app, "live")
    assert app.selectbox(key="lesson_pick").value != 5 and _title(app).startswith("Step 1 of")


def test_page_without_a_trace(app):
    switch_to(app, "live")
    app.switch_page("pages/lesson.py").run()
    assert not app.exception and "No trace yet" in app.info[0].value


def test_an_adaptive_runs_speedup_step_reads_the_lengths_it_chose():
    """The settings of an auto-sized adaptive run hold the sizer's limits (depth 8, 4 branches); the formula
    takes the median depth the policy drafted, and the run's drafts were chains."""
    from synthetic import synthetic_adaptive_trace

    trace = synthetic_adaptive_trace()
    trace.settings = replace(trace.settings, gamma=8, branches=4, nodes=32, auto_size=True)
    depths = sorted(it.choice.gamma for it in trace.iterations if it.choice.gamma)
    body = charts.lesson_steps(trace, 0)[-1].body
    summary = trace.summary()
    assert f"γ = {depths[len(depths) // 2]} is the median depth it drafted (from {depths[0]} to {depths[-1]})" in body
    assert f"{theory.walltime_improvement(summary.alpha, depths[len(depths) // 2], summary.c):.2f}×" in body
    assert "drafted token trees" not in body


def test_an_adaptive_run_after_the_targets_first_step_says_why_the_estimate_is_the_calibrated_one():
    """A drafter that reads the target's hidden states starts with the target's own step, which no adaptive
    choice made: the next iteration's estimate is still the calibrated one, and it is not the first iteration."""
    from synthetic import synthetic_adaptive_trace

    trace = synthetic_adaptive_trace()
    first = trace.iterations[0]
    trace.iterations[0] = replace(first, drafted=0, accepted=0, emitted_ids=[7], drafts=[], choice=None,
                                  final=FinalToken("target", 7, " w7", "p"))
    body = charts.lesson_steps(trace, 1)[1].body
    assert "1 finished iteration before it" in body and "first iteration" not in body
    assert "Iteration 0 was the target's own step" in body and "still the pair's calibrated one" in body
    assert "first iteration: the estimate is still" in charts.lesson_steps(synthetic_adaptive_trace(), 0)[1].body
