"""An adaptive run in the app: the chart of its choices, the Lesson's "why this draft length", the sweep's
adaptive level, the trace file keeping every choice (pure), and the pages that draw them (AppTest)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from apps import APP, PAGE_TIMEOUT
from streamlit.testing.v1 import AppTest
from synthetic import synthetic_adaptive_trace, synthetic_trace

from specviz import charts, trace_from_dict
from specviz.study import Study, Variant


def test_the_chart_draws_each_choice_its_accepted_drafts_and_the_estimate():
    trace = synthetic_adaptive_trace()
    fig = charts.adaptive_chart(trace)
    bars, accepted, alpha, gain = fig.data
    n = len(trace.iterations)
    assert list(bars.y) == [it.choice.gamma for it in trace.iterations] and len(bars.x) == n
    assert bars.marker.color[3] == "#ffffff" and bars.marker.color[0] != "#ffffff"   # the probe is outlined
    assert list(accepted.y) == [it.accepted for it in trace.iterations]
    assert list(alpha.y) == pytest.approx([0.6 - 0.02 * i for i in range(n)])
    assert list(gain.y) == pytest.approx([it.choice.gain for it in trace.iterations])
    assert charts.adaptive_chart(synthetic_trace(16)).data[0].x == ()   # a fixed run chose nothing
    assert [row[3] for row in bars.customdata[2:6]] == ["", ", match 3", ", no match", ", match 3"]


def test_the_lesson_says_why_this_draft_length_with_the_numbers():
    trace = synthetic_adaptive_trace()
    steps = charts.lesson_steps(trace, 2)
    assert len(steps) == 8 and steps[1].title == "Why this draft length" and steps[1].question.endswith("?")
    body, choice = steps[1].body, trace.iterations[2].choice
    for number in (f"{choice.alpha:.3f}", f"{choice.expected_tokens:.2f}", f"{choice.gain:.2f}×",
                   f"{trace.iterations[1].choice.alpha:.3f}"):
        assert number in body
    assert "a chain of γ = 4" in body and "2 finished iterations" in body
    assert "probe" in charts.lesson_steps(trace, 3)[1].body
    assert "calibrated" in charts.lesson_steps(trace, 0)[1].body
    assert "situation" not in body and "<b>match 3</b>" in charts.lesson_steps(trace, 5)[1].body
    assert [s.title for s in charts.lesson_steps(synthetic_trace(16), 0)].count("Why this draft length") == 0
    assert "clock" not in body
    trace.iterations[2].choice = replace(choice, costs=(1.64, 2.1, 0.97))   # a run that learns its costs
    learnt = charts.lesson_steps(trace, 2)[1].body
    assert all(f in learnt for f in ("1.64× the kept curve", "2.10× the curve", "0.97× the sizing"))


def test_a_trace_file_keeps_every_choice_and_an_old_one_loads_without():
    trace = synthetic_adaptive_trace()
    trace.iterations[1].choice = replace(trace.iterations[1].choice, costs=(1.2, 1.5, 1.0))
    again = trace_from_dict(json.loads(json.dumps(trace.to_dict())))
    assert [it.choice for it in again.iterations] == [it.choice for it in trace.iterations]
    assert again.settings.adaptive
    old = trace.to_dict()
    old["version"] = 4
    older = json.loads(json.dumps(old))
    for it in older["iterations"]:
        del it["choice"]["situation"], it["choice"]["costs"]
    assert {(it.choice.situation, it.choice.costs) for it in trace_from_dict(older).iterations} == {("", ())}
    for it in old["iterations"]:
        del it["choice"]
    del old["settings"]["adaptive"]
    assert all(it.choice is None for it in trace_from_dict(old).iterations)


def test_the_sweep_draws_the_adaptive_run_as_a_level_beside_the_fixed_points():
    base, adaptive = synthetic_trace(64), synthetic_adaptive_trace(64)
    study = Study("gamma sweep", base, [Variant({"gamma": 2}, synthetic_trace(64, gamma=2)),
                                        Variant({"gamma": 4}, base), Variant({"gamma": 4, "adaptive": True}, adaptive)])
    fig = charts.sweep_chart(study)
    measured = next(t for t in fig.data if t.name == "measured")
    assert list(measured.x) == [2, 4]   # the adaptive run is not a γ point
    level = next(t for t in fig.data if t.name and t.name.startswith("adaptive, γ ≤ 4"))
    assert level.line.dash == "dash" and len(set(level.y)) == 1


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=PAGE_TIMEOUT)
    at.run()
    return at


def test_the_speedup_page_draws_the_current_adaptive_run(app):
    app.session_state["trace"] = synthetic_adaptive_trace()
    app.session_state["shown"] = "live"
    app.switch_page("pages/speedup.py").run()
    assert not app.exception
    names = [json.loads(chart.proto.spec)["layout"]["title"]["text"] for chart in app.get("plotly_chart")]
    assert any("Adaptive drafts along the run" in name for name in names)
    assert any(s.value == "Adaptive drafts in the current trace" for s in app.subheader)


def test_the_lesson_page_steps_through_why_this_draft_length(app):
    app.session_state["trace"] = synthetic_adaptive_trace()
    app.session_state["shown"] = "live"
    app.switch_page("pages/lesson.py").run()
    assert app.header[0].value.startswith("Step 1 of 8")
    app.button(key="lesson_next").click().run()
    assert not app.exception and app.header[0].value == "Step 2 of 8: Why this draft length"
    assert any("α̂" in h.proto.body for h in app.get("html"))


def test_the_sidebar_turns_adaptive_drafts_on(app):
    app.toggle(key="adaptive").set_value(True).run()
    from pages.ui.controls import KEPT
    assert app.session_state[KEPT]["adaptive"] is True
