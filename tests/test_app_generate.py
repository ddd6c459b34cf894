"""AppTest: a real generation on the embedded model, then every page that reads its trace."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from apps import MODEL_TIMEOUT
from streamlit.testing.v1 import AppTest

from specviz.reverify import reverify

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture(scope="module")
def generated(embedded_sizing) -> AppTest:
    """One short greedy run with the baseline, shared by the tests below (they only read); the auto size is on
    (the default), and reads the sizing measured first."""
    at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT)
    at.run()
    at.session_state["max_new_tokens"] = 6
    at.session_state["temperature"] = 0.0
    at.checkbox(key="with_baseline").check()
    at.button(key="generate").click().run()
    assert not at.exception and not at.error
    return at


def test_generation_streams_text_and_numbers(generated):
    at = generated
    trace = at.session_state["trace"]
    assert 1 <= len(trace.generated_ids) <= 6 and trace.iterations
    text = [h.proto.body for h in at.get("html") if "specviz-text" in h.proto.body]
    assert text and "class=\"tok tok-" in text[0]
    metrics = {m.label: m.value for m in at.metric}
    summary, comparison = trace.summary(), at.session_state["studies"]["comparison"]
    assert metrics["tokens"] == str(len(trace.generated_ids)) and metrics["iterations"] == str(len(trace.iterations))
    assert metrics["tokens / s"] == f"{summary.tokens_per_s:.1f}" and summary.tokens_per_s > 0
    assert metrics["tokens / it."] == f"{summary.accepted_length:.2f}"
    assert metrics["measured speedup over the target alone"] == f"{comparison.speedup(trace):.2f}×"
    assert comparison.baseline.drafter == "none (baseline)"
    assert comparison.variants[0].trace.wall_time == trace.wall_time
    assert comparison.baseline.generated_ids == trace.generated_ids  # greedy: the same text, faster or not
    assert len(at.get("plotly_chart")) == 2 and len(at.get("vega_lite_chart")) == 1  # tree, timeline; linked view
    assert "use_example" not in [b.key for b in at.sidebar.button]   # the run shows your own runs: no example's
    assert trace.threads >= 1 and any(c.value == f"Measured on cpu (float32) with {trace.threads} torch thread"
                                      f"{'s' if trace.threads > 1 else ''}; no other run was queued ahead."
                                      for c in at.caption)
    assert "Showing: last run" in at.sidebar.caption[-1].value


def test_a_finished_run_is_not_called_stopped(generated):
    """`running`, set by the Generate click itself, is cleared by a run that finishes: the next rerun says
    nothing of a stop (the browser test presses Stop during a run and reads the warning)."""
    at = generated
    at.run()
    assert "running" not in at.session_state
    assert not [w.value for w in at.warning if "Stopped" in w.value]


def test_inspector_steps_without_recomputing(generated):
    at = generated
    at.switch_page("pages/inspector.py").run()
    assert at.subheader[0].value.startswith("Iteration 0:")
    trace = at.session_state["trace"]
    assert len(trace.iterations) > 1   # six greedy tokens take more than one iteration on this pair
    at.button(key="next").click().run()
    assert at.subheader[0].value.startswith("Iteration 1:") and at.slider(key="inspect_slider").value == 1
    at.button(key="prev").click().run()
    assert at.subheader[0].value.startswith("Iteration 0:") and at.slider(key="inspect_slider").value == 0
    last = len(trace.iterations) - 1
    at.slider(key="inspect_slider").set_value(last).run()
    assert at.subheader[0].value.startswith(f"Iteration {last}:")
    at.button(key="prev").click().run()
    assert at.slider(key="inspect_slider").value == last - 1
    assert not at.exception and at.get("plotly_chart")
    assert at.session_state["trace"] is trace   # stepping reads the kept trace; nothing ran again


def test_table_and_speedup_pages_read_the_trace(generated):
    at = generated
    at.switch_page("pages/table.py").run()
    assert not at.exception
    tables = [h.proto.body for h in at.get("html") if "specviz-table" in h.proto.body]
    assert len(tables) == 2 and "Draft" in tables[0]
    at.number_input(key="rv_beta").set_value(5).run()
    kept = [m.value for m in at.metric if m.label == "drafts kept with β=5, τ=1.0"]
    assert kept == [str(sum(v.accepted for v in reverify(at.session_state["trace"], 5, 1.0)))]
    at.switch_page("pages/speedup.py").run()
    assert not at.exception and len(at.get("vega_lite_chart")) == 1
    assert [chart.key for chart in at.get("plotly_chart")] == ["adaptive_chart"]   # the default run adapts


def test_traces_page_offers_the_download(generated):
    at = generated
    at.switch_page("pages/traces.py").run()
    assert not at.exception
    labels = [b.proto.label for b in at.get("download_button")]
    assert "Download the trace (JSON)" in labels and any(b.startswith("Download the comparison") for b in labels)


def test_a_run_in_bfloat16_runs_the_models_in_bfloat16(embedded_sizing):
    at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT).run()
    at.selectbox(key="dtype").set_value("bfloat16")
    at.toggle(key="auto_size").set_value(False)
    # a fixed chain: the adaptive default would first time bf16 verify passes of up to 64 tokens, minutes on a
    # CPU whose bf16 is emulated (no AVX-512 BF16 or AMX), and the dtype is all this test is about
    at.toggle(key="adaptive").set_value(False)
    at.slider(key="max_new_tokens").set_value(6)
    at.slider(key="temperature").set_value(0.0)
    at.checkbox(key="with_baseline").check()
    at.button(key="generate").click().run()
    assert not at.exception and not at.error
    comparison = at.session_state["studies"]["comparison"]
    assert comparison.baseline.dtype == at.session_state["trace"].dtype == "bfloat16"
    assert any(c.value.startswith("Measured on cpu (bfloat16)") for c in at.caption)


def test_a_run_that_fails_shows_its_error_and_is_not_called_stopped_after(monkeypatch):
    """A decoder failure that is no SpecvizError (a bug) keeps its traceback, and the next rerun does not take
    the failed run for one cut short by Stop."""
    from contextlib import contextmanager

    from pages.ui import models

    @contextmanager
    def failing():
        raise RuntimeError("the decoder process failed: boom")
        yield

    monkeypatch.setattr(models, "exclusive", failing)
    at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT)
    at.run()
    at.button(key="generate").click().run()
    assert "the decoder process failed: boom" in at.exception[0].value and at.session_state["running"] is False
    at.run()
    assert not any(w.value.startswith("Stopped") for w in at.warning)


def refused_before_it_queues(monkeypatch, page: str, button: str, sidebar: Callable[[AppTest], None],
                             toggle: str | None = None) -> list[str]:
    """The errors `page` shows when `button` is pressed after `sidebar(at)` set the sidebar (and `toggle` is on),
    failing if the run took a turn on the decoder process, where it would wait behind other visitors' runs
    only to be refused."""
    from pages.ui import models

    def queued():
        raise AssertionError("the run queued for the decoder")

    monkeypatch.setattr(models, "exclusive", queued)
    at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT)
    at.run()
    sidebar(at)
    at.switch_page(page).run()
    if toggle:
        at.toggle(key=toggle).set_value(True).run()
    at.button(key=button).click().run()
    assert not at.exception
    return [e.value for e in at.error]


@pytest.mark.parametrize("page, button", [("pages/generate.py", "generate"), ("pages/speedup.py", "run_sweep")])
def test_a_blank_prompt_is_refused_on_the_page_before_the_run_queues(monkeypatch, page, button):
    """A blank prompt says where to write one."""
    errors = refused_before_it_queues(monkeypatch, page, button,
                                      lambda at: at.text_area(key="prompt").set_value("  \n ").run())
    assert errors == ["The prompt is empty: write one in the sidebar's Prompt box, or pick a ready-made prompt "
                      "above it."]


@pytest.mark.parametrize("page, button", [("pages/generate.py", "generate"), ("pages/speedup.py", "run_sweep")])
def test_a_prompt_over_the_hosts_limit_is_refused_before_the_run_queues(monkeypatch, embedded, page, button):
    """Counted with the target's tokenizer in the app's own process: a visitor is not kept waiting behind other
    runs only to be refused (the run's own check in the decoder process stays for a model not yet here)."""
    monkeypatch.setenv("SPECVIZ_MAX_PROMPT_TOKENS", "5")
    prompt = "Why is the sky blue?"
    errors = refused_before_it_queues(monkeypatch, page, button, lambda at: at.text_area(key="prompt").set_value(
        prompt).run())
    tokens = len(embedded.encode_prompt(prompt))
    assert errors == [f"the prompt has {tokens} tokens; this host accepts at most 5 (SPECVIZ_MAX_PROMPT_TOKENS)"]


@pytest.mark.parametrize("page, toggle, button, what", [
    ("pages/generate.py", "race_view", "race", "race"),
    ("pages/speedup.py", None, "run_sweep", "γ sweep"),
])
def test_work_that_compares_with_the_target_alone_needs_a_drafter_and_says_so_before_it_queues(
        monkeypatch, page, toggle, button, what):
    errors = refused_before_it_queues(monkeypatch, page, button,
                                      lambda at: at.selectbox(key="drafter").set_value("none").run(), toggle)
    assert f"the {what} needs a drafter: pick one other than 'none' in the sidebar" in errors
