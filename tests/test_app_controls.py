"""AppTest: the sidebar's controls live in session state and survive page switches; Theory needs no model."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from apps import switch_to
from streamlit.testing.v1 import AppTest
from test_charts import make_trace
from test_tree_size import CPU_CURVE, cost, embedded_setup, flat, write_sizing

from pages.ui.controls import CUSTOM_PAIR, KEPT, PROMPTS
from specviz import SpecvizError
from specviz.device import decoder_threads
from specviz.drafters import drafter_name, eagle
from specviz.examples import example, load_example
from specviz.limits import custom_models

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    return at


def test_controls_change_session_state(app):
    app.slider(key="gamma").set_value(7).run()
    app.radio(key="verify").set_value("spec").run()
    app.number_input(key="beta").set_value(5).run()
    app.slider(key="target_latency_ms").set_value(120).run()
    app.selectbox(key="prompt_choice").set_value("Code").run()
    state = app.session_state
    assert (state["gamma"], state["verify"], state["beta"], state["target_latency_ms"]) == (7, "spec", 5, 120)
    assert state["prompt"] == PROMPTS["Code"]
    app.switch_page("pages/inspector.py").run()
    assert app.slider(key="gamma").value == 7 and app.session_state["verify"] == "spec"
    assert app.subheader[0].value.startswith("Iteration 1")  # the app opens on the first example's first draft
    switch_to(app, "live")
    assert "No trace yet" in app.info[0].value and app.slider(key="gamma").value == 7


def test_spec_knobs_only_for_spec_verification(app):
    assert "beta" not in [w.key for w in app.sidebar.number_input]
    app.radio(key="verify").set_value("spec").run()
    assert "beta" in [w.key for w in app.sidebar.number_input]
    sampling_knobs = [app.slider(key="temperature"), app.number_input(key="top_k"), app.slider(key="top_p")]
    assert all(w.disabled and "Only speculative sampling samples" in w.help for w in sampling_knobs)
    app.radio(key="verify").set_value("sampling").run()
    assert not any(w.disabled for w in (app.slider(key="temperature"), app.number_input(key="top_k")))


def test_hidden_knobs_keep_their_values(app):
    app.radio(key="verify").set_value("spec").run()
    app.number_input(key="beta").set_value(7).run()
    app.radio(key="verify").set_value("greedy").run()
    app.slider(key="gamma").set_value(6).run()
    app.radio(key="verify").set_value("spec").run()
    assert app.number_input(key="beta").value == 7
    pairs = app.selectbox(key="pair").options
    app.selectbox(key="pair").set_value(pairs[-1]).run()
    app.text_input(key="custom_target").input("my/target").run()
    app.selectbox(key="pair").set_value(pairs[0]).run()
    app.slider(key="gamma").set_value(5).run()
    app.selectbox(key="pair").set_value(pairs[-1]).run()
    assert app.text_input(key="custom_target").value == "my/target"


def test_the_embedded_pair_starts_with_the_librarys_drafter_and_measured_gamma(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECVIZ_CACHE", str(tmp_path))
    monkeypatch.setattr(eagle, "DEFAULT_WEIGHTS", tmp_path / "missing.safetensors")   # no EAGLE head here
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert at.session_state["drafter"] == "ngram" and at.slider(key="gamma").value == 4
    assert "Nothing is measured" in at.slider(key="gamma").help
    assert at.toggle(key="auto_size").value and at.toggle(key="adaptive").value   # sized, then adapted per iteration
    pairs = at.selectbox(key="pair").options
    at.selectbox(key="pair").set_value(pairs[1]).run()
    assert at.session_state["drafter"] == "model"
    at.selectbox(key="pair").set_value(pairs[0]).run()
    assert at.session_state["drafter"] == "ngram"
    write_sizing(embedded_setup(decoder_threads()), drafter_name("ngram"), flat([0.8, 0.1, 0.05, 0.0]),
                 cost(CPU_CURVE))
    at = AppTest.from_file(APP, default_timeout=120).run()   # a new session starts at the measured chain
    assert at.slider(key="gamma").value == 7 and "γ = 7" in at.slider(key="gamma").help   # the tie-broken chain


def test_the_max_new_tokens_slider_keeps_to_the_hosts_limit(monkeypatch):
    monkeypatch.setenv("SPECVIZ_MAX_NEW_TOKENS", "32")
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "500")
    at = AppTest.from_file(APP, default_timeout=120).run()
    slider = at.slider(key="max_new_tokens")
    assert (slider.max, slider.value) == (32, 32) and "at most 32" in slider.help
    assert "at most 500 tokens" in at.text_area(key="prompt").help


def test_the_inspector_starts_at_an_examples_first_draft(app):
    """The token-tree example's first iteration is the target's token alone (its drafter reads the target's
    features); the inspector opens on the tree after it, and at a live run's first iteration."""
    app.switch_page("pages/inspector.py").run()
    switch_to(app, "token-tree")
    assert app.subheader[0].value.startswith("Iteration 1: drafted 10")
    switch_to(app, "copy-lookup")
    assert app.subheader[0].value.startswith("Iteration 0: drafted 8")



def test_the_inspectors_slider_shows_the_iteration_shown_across_examples(app):
    """Each example's trace has its own length, so its slider is a new widget: it says the iteration shown."""
    app.switch_page("pages/inspector.py").run()
    for name in ("greedy-race", "gamma-sweep", "beta-tau-grid", "drafters", "greedy-race"):
        switch_to(app, name)
        shown = int(app.subheader[0].value.split(":")[0].removeprefix("Iteration "))
        assert app.slider(key="inspect_slider").value == shown, name


def test_an_examples_settings_fill_the_sidebar_and_stay(app):
    switch_to(app, "copy-lookup")
    app.selectbox(key="dtype").set_value("bfloat16").run()
    app.button(key="use_example").click().run()
    shown = example("copy-lookup")
    assert app.selectbox(key="drafter").value == shown.drafter == "ngram"
    assert app.selectbox(key="dtype").value == load_example("copy-lookup").dtype == "float32"   # as it was run
    assert (app.slider(key="gamma").value, app.radio(key="verify").value) == (8, "greedy")
    assert app.text_area(key="prompt").value == shown.prompt and not app.toggle(key="auto_size").value
    app.switch_page("pages/lesson.py").run()
    assert app.slider(key="gamma").value == 8 and app.slider(key="max_new_tokens").value == 96
    switch_to(app, "live")
    assert not [b for b in app.button if b.key == "use_example"]   # your own runs have no example to copy


@pytest.mark.parametrize("page", ["pages/speedup.py", "pages/theory.py"])
def test_a_study_examples_settings_fill_its_pages_values_and_rounds(app, page):
    """Use this example's settings on a sweep, a grid or a drafter comparison sets what its page runs, from that
    page or from another one, so that Run measures the example again."""
    for name, where, widgets in (
            ("gamma-sweep", "pages/speedup.py", {"sweep_gammas": [1, 2, 3, 4, 6, 8], "sweep_repeats": 7,
                                                 "sweep_adaptive": True}),
            ("beta-tau-grid", "pages/table.py", {"grid_betas": [1, 3, 5], "grid_taus": [1.0, 3.0, 5.0],
                                                 "grid_repeats": 3}),
            ("drafters", "pages/speedup.py", {"compare_kinds": example("drafters").values["kinds"],
                                              "drafters_repeats": 3})):
        app.switch_page(where).run()
        for key, value in widgets.items():   # the person's own values first
            other = value[1:2] if isinstance(value, list) else not value if isinstance(value, bool) else 1
            next(w for kind in ("multiselect", "number_input", "checkbox") for w in app.get(kind)
                 if w.key == key).set_value(other).run()
        app.switch_page(page).run()
        switch_to(app, name)
        app.button(key="use_example").click().run()
        app.switch_page(where).run()
        assert not app.exception and not [w for w in app.warning if "Session State" in w.value]
        drawn = {w.key: w.value for kind in ("multiselect", "number_input", "checkbox") for w in app.get(kind)}
        assert {key: drawn[key] for key in widgets} == widgets, name


def test_custom_pair_without_target_says_so(app):
    app.selectbox(key="pair").set_value(app.selectbox(key="pair").options[-1]).run()
    app.button(key="generate").click().run()
    assert "enter a target model" in app.error[0].value


def test_a_host_can_keep_visitors_to_its_own_pairs(monkeypatch):
    """SPECVIZ_CUSTOM_MODELS=0: no Custom pair to name a hub id (a download) or a path on the host."""
    monkeypatch.setenv("SPECVIZ_CUSTOM_MODELS", "0")
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception and not any(o.startswith("Custom") for o in at.selectbox(key="pair").options)
    assert not [t for t in at.text_input if t.key == "custom_target"]
    monkeypatch.setenv("SPECVIZ_CUSTOM_MODELS", "1")
    assert AppTest.from_file(APP, default_timeout=120).run().selectbox(key="pair").options[-1] == CUSTOM_PAIR
    monkeypatch.setenv("SPECVIZ_CUSTOM_MODELS", "yes")
    with pytest.raises(SpecvizError, match="SPECVIZ_CUSTOM_MODELS must be 0 or 1, got 'yes'"):
        custom_models()


def test_the_model_drafter_on_the_embedded_pair_says_what_to_pick(app):
    shown = make_trace()
    shown.stopped_by = "the host's run-time limit (60 s)"   # its warning shares the slot under the buttons
    app.session_state["trace"], app.session_state["shown"] = shown, "live"
    app.switch_page("pages/generate.py").run()
    assert [w.value for w in app.warning if w.value.startswith("Stopped by the host's run-time limit")]
    app.selectbox(key="drafter").set_value("model").run()
    app.button(key="generate").click().run()
    assert "the embedded pair has no small draft LM" in app.error[0].value and "Custom pair" in app.error[0].value
    assert not app.exception and not app.warning   # the new run's error, not the trace's old stop


@pytest.mark.parametrize(("beta", "says"), [(3, True), (1, False)])   # β = 1 is greedy verification
def test_a_spec_verification_run_says_its_text_can_differ_from_the_targets(app, beta, says):
    shown = make_trace()
    shown.settings = replace(shown.settings, verify="spec", beta=beta)
    app.session_state["trace"], app.session_state["shown"] = shown, "live"
    app.switch_page("pages/generate.py").run()
    assert any(c.value.startswith(f"Spec-Verification (β = {beta}") for c in app.caption) is says


def test_theory_page(app):
    """The formulas' sliders live in the chart (no widgets, no rerun); the toy experiment keeps its plotly pair."""
    app.switch_page("pages/theory.py").run()
    assert not app.exception
    (explorer,) = app.get("vega_lite_chart")
    params = {p["name"]: p for p in json.loads(explorer.proto.spec)["params"]}
    assert params["alpha"]["value"] == 0.8 and params["alpha"]["bind"]["input"] == "range"
    assert "th_alpha" not in [s.key for s in app.slider]
    assert len(app.get("plotly_chart")) == 2
    assert any("Rejection probability" in c.value for c in app.main.caption)
    assert app.subheader[-1].value == "Lossless up to floating point"
    measured = json.loads((Path(APP).parent / "benchmarks" / "half-precision.json").read_text())
    assert any(f"float32 speculative output parted from the target alone's in 0 of {measured['runs']['float32']} runs"
               in c.value for c in app.main.caption)


def test_shipped_benchmark_shows_without_a_sweep(app):
    app.switch_page("pages/speedup.py").run()
    assert len(app.get("plotly_chart")) == 2  # the pack's γ sweep and drafter comparison
    switch_to(app, "live")
    assert not app.get("plotly_chart")
    app.checkbox(key="show_shipped_benchmark").check().run()
    assert not app.exception and not app.error
    assert len(app.get("plotly_chart")) == 1
    names = {trace.get("name") for trace in json.loads(app.get("plotly_chart")[0].proto.spec)["data"]}
    assert "benchmark: ngram" in names   # the shipped benchmark's points, drawn without a sweep of this session


def test_precision_is_a_choice_that_stays(app):
    box = app.selectbox(key="dtype")
    assert box.options == ["float32 (exact greedy)", "bfloat16 (faster)"]
    assert box.value == "float32" and "nearly tie" in box.help and "bf16" in box.help
    box.set_value("bfloat16").run()
    app.switch_page("pages/theory.py").run()
    assert app.selectbox(key="dtype").value == "bfloat16"
    assert app.session_state[KEPT]["dtype"] == "bfloat16"


def test_a_pages_own_widgets_keep_their_values_across_page_switches(app):
    """Streamlit drops the state of a widget a run does not draw: the Table page's rows and β, the Speedup
    page's γ values and rounds and the Generate page's toggles come back as they were left."""
    app.switch_page("pages/table.py").run()
    app.slider(key="table_rows").set_value(5).run()
    app.number_input(key="rv_beta").set_value(2).run()
    app.switch_page("pages/speedup.py").run()
    app.multiselect(key="sweep_gammas").set_value([2, 3]).run()
    app.checkbox(key="sweep_adaptive").uncheck().run()
    app.number_input(key="sweep_repeats").set_value(5).run()
    app.switch_page("pages/generate.py").run()
    app.toggle(key="show_rejected").set_value(False).run()
    app.checkbox(key="with_baseline").check().run()
    app.switch_page("pages/table.py").run()
    assert (app.slider(key="table_rows").value, app.number_input(key="rv_beta").value) == (5, 2)
    app.switch_page("pages/speedup.py").run()
    assert app.multiselect(key="sweep_gammas").value == [2, 3] and not app.checkbox(key="sweep_adaptive").value
    assert app.number_input(key="sweep_repeats").value == 5
    app.switch_page("pages/generate.py").run()
    assert not app.toggle(key="show_rejected").value and app.checkbox(key="with_baseline").value
    assert not app.exception


def test_a_short_trace_clamps_the_tables_rows_for_itself_only(app):
    """The copy-lookup example has 12 iterations: the table shows 12 there, and a longer trace the person's
    own choice again, not the clamped 12."""
    app.switch_page("pages/table.py").run()
    switch_to(app, "sampled-chat")
    assert app.slider(key="table_rows").value == 20
    app.slider(key="table_rows").set_value(30).run()
    switch_to(app, "copy-lookup")
    assert app.slider(key="table_rows").value == 12
    switch_to(app, "sampled-chat")
    assert app.slider(key="table_rows").value == 30
    app.slider(key="table_rows").set_value(8).run()
    switch_to(app, "copy-lookup")
    assert app.slider(key="table_rows").value == 8
