"""AppTest: loading traces (good and bad files), and live sweeps on a tiny same-vocabulary pair."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from apps import MODEL_TIMEOUT, use_tiny_pair
from streamlit.testing.v1 import AppTest
from test_charts import make_trace

from pages.ui.state import STUDY_NAMES
from specviz import contention
from specviz.charts.linked import PICK
from specviz.study import KINDS, Study, Variant

APP = str(Path(__file__).resolve().parent.parent / "app.py")


@pytest.fixture
def app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=MODEL_TIMEOUT)   # its live sweeps wait on the decoder process
    at.run()
    return at


def test_bad_upload_shows_an_error_and_changes_nothing(app):
    app.switch_page("pages/traces.py").run()
    data = json.dumps(make_trace().to_dict()).encode()
    app.file_uploader(key="trace_file").set_value(("lecture.json", data, "application/json")).run()
    kept, showing = app.session_state["trace"], app.sidebar.caption[-1].value
    app.file_uploader(key="trace_file").set_value(("notes.json", b"{\"hello\": 1}", "application/json")).run()
    assert app.error[0].value.startswith("Could not load notes.json, nothing was changed: neither a specviz trace")
    app.file_uploader(key="trace_file").set_value(("bytes.json", b"\xff\xfe", "application/json")).run()
    assert "Could not load bytes.json, nothing was changed: not a specviz trace or study: the file is not JSON" in \
        app.error[0].value
    assert app.session_state["trace"] is kept and app.sidebar.caption[-1].value == showing



def test_a_new_trace_opens_in_the_inspector_at_its_first_iteration(app):
    """A trace loaded (or run) after another starts the inspector afresh, not at the old trace's place."""
    data = json.dumps(make_trace().to_dict()).encode()
    for name in ("first.json", "second.json"):
        app.switch_page("pages/traces.py").run()
        app.file_uploader(key="trace_file").set_value((name, data, "application/json")).run()
        app.switch_page("pages/inspector.py").run()
        assert app.subheader[0].value.startswith("Iteration 0:")
        app.button(key="next").click().run()
        app.button(key="next").click().run()
        assert app.subheader[0].value.startswith("Iteration 2:")

def test_a_trace_loaded_while_an_example_shows_leaves_the_examples_place(app):
    """The example's inspector place stays for the switch back to it; the loaded trace opens at its first
    iteration."""
    from apps import switch_to

    from specviz.examples import PACK

    switch_to(app, PACK[0].name)
    app.switch_page("pages/inspector.py").run()
    app.button(key="next").click().run()
    place = app.session_state["inspect_index"]
    app.switch_page("pages/traces.py").run()
    app.file_uploader(key="trace_file").set_value(("lecture.json", json.dumps(make_trace().to_dict()).encode(),
                                                   "application/json")).run()
    app.switch_page("pages/inspector.py").run()
    assert app.subheader[0].value.startswith("Iteration 0:")
    switch_to(app, PACK[0].name)
    assert app.session_state["inspect_index"] == place and app.subheader[0].value.startswith(f"Iteration {place}:")


def test_loaded_trace_drives_every_page_without_a_model(app):
    app.switch_page("pages/traces.py").run()
    data = json.dumps(make_trace().to_dict()).encode()
    app.file_uploader(key="trace_file").set_value(("lecture.json", data, "application/json")).run()
    assert "Loaded lecture.json" in app.success[0].value
    assert app.session_state["trace"].generated_ids == make_trace().generated_ids
    app.switch_page("pages/inspector.py").run()
    app.button(key="next").click().run()
    assert app.subheader[0].value.startswith("Iteration 1: drafted 3, accepted 1, then correction token 't7'")
    assert len(app.get("plotly_chart")) == 4 + 3  # tree, mask, acceptance test, residual, p/q per drafted position
    app.button(key="next").click().run()
    assert "bonus token" in app.subheader[0].value
    for page in ("pages/generate.py", "pages/table.py", "pages/speedup.py", "pages/theory.py"):
        app.switch_page(page).run()
        assert not app.exception and not app.error
        if page != "pages/table.py":
            (chart,) = app.get("vega_lite_chart")  # the linked view; on Theory, the explorer
            assert list(chart.proto.selection_mode) == ([] if page == "pages/theory.py" else [PICK])
    assert {m.label: m.value for m in app.switch_page("pages/generate.py").run().metric}["tokens"] == "6"


def test_a_trace_recorded_with_fewer_than_three_top_tokens_reverifies(app):
    trace = make_trace()
    trace.settings = replace(trace.settings, record_top_k=2, temperature=0.5)   # generate --top-k-record 2
    app.switch_page("pages/traces.py").run()
    app.file_uploader(key="trace_file").set_value(("top2.json", json.dumps(trace.to_dict()).encode(),
                                                   "application/json")).run()
    app.switch_page("pages/table.py").run()
    assert not app.exception and app.number_input(key="rv_beta").value == 2
    assert any("sampled from p warped at T = 0.5: the recorded log-prob gaps are rescaled to T = 1" in c.value
               for c in app.caption)


def test_loaded_studies_show_on_their_pages_and_download_again(app):
    trace = make_trace()
    varied = {"comparison": [{}], "gamma sweep": [{"gamma": 2}, {"gamma": 4}], "grid": [{"beta": 3, "tau": 1.0}],
              "drafters": [{"drafter": "ngram"}, {"drafter": "eagle"}]}
    assert set(varied) == set(KINDS)   # every kind a study can be loads on its page
    app.switch_page("pages/traces.py").run()
    for kind, changes in varied.items():
        data = json.dumps(Study(kind, trace, [Variant(v, trace) for v in changes]).to_dict()).encode()
        app.file_uploader(key="trace_file").set_value((f"{kind}.json", data, "application/json")).run()
        assert not app.exception and not app.error
        assert f"the {STUDY_NAMES[kind]} study {kind}.json" in app.success[0].value
    assert {b.label.split(":")[0] for b in app.get("download_button")} == {
        "Download the trace (JSON)", *(f"Download the {STUDY_NAMES[kind]} study (JSON)" for kind in KINDS)}
    app.switch_page("pages/speedup.py").run()
    (chart, *_) = app.get("plotly_chart")
    measured = [t for t in json.loads(chart.proto.spec)["data"] if t.get("name") == "measured"]
    assert measured[0]["x"] == [2, 4] and measured[0]["y"] == [1.0, 1.0]
    app.switch_page("pages/generate.py").run()
    assert {m.label: m.value for m in app.metric}["measured speedup over the target alone"] == "1.00×"


def test_a_session_with_no_trace_shows_a_loaded_studys_fastest_run(app):
    slow, fast = make_trace(), make_trace()
    slow.wall_time, fast.wall_time = 1.0, 0.1
    sweep = Study("gamma sweep", make_trace(), [Variant({"gamma": 2}, slow), Variant({"gamma": 4}, fast)])
    app.switch_page("pages/traces.py").run()
    app.file_uploader(key="trace_file").set_value(("sweep.json", json.dumps(sweep.to_dict()).encode(),
                                                   "application/json")).run()
    assert app.session_state["trace"].wall_time == 0.1
    assert "the gamma sweep's fastest run" in app.markdown[0].value
    app.switch_page("pages/speedup.py").run()
    assert not app.exception and not app.info   # the linked view has a trace to show


def test_a_trace_cut_by_the_hosts_time_limit_says_so(app):
    trace = make_trace()
    trace.stopped_by = "the host's run-time limit of 30 s (SPECVIZ_MAX_RUN_SECONDS)"
    app.switch_page("pages/traces.py").run()
    app.file_uploader(key="trace_file").set_value(("cut.json", json.dumps(trace.to_dict()).encode(),
                                                   "application/json")).run()
    app.switch_page("pages/generate.py").run()
    order = [getattr(e, "value", None) for e in app.main]   # the page's elements, top to bottom
    cut = next(i for i, v in enumerate(order) if isinstance(v, str) and "Stopped by the host's run-time limit" in v)
    assert cut < order.index(app.metric[0].value)   # under the buttons, above the trace's numbers


def test_a_study_cut_by_the_hosts_study_limit_says_so_where_it_shows(app):
    why = "the host's study time limit of 600 s (SPECVIZ_MAX_STUDY_SECONDS)"
    sweep = Study("gamma sweep", make_trace(), [Variant({"gamma": 2}, make_trace())], stopped_by=why)
    app.switch_page("pages/traces.py").run()
    app.file_uploader(key="trace_file").set_value(("cut.json", json.dumps(sweep.to_dict()).encode(),
                                                   "application/json")).run()
    for page in ("pages/traces.py", "pages/speedup.py"):
        app.switch_page(page).run()
        assert not app.exception and [w.value for w in app.warning if w.value.startswith(f"Stopped early by {why}")]


def test_an_approximate_remote_trace_says_so_on_every_page_that_shows_it(app):
    trace = make_trace()
    trace.settings = replace(trace.settings, target_url="http://127.0.0.1:8000", target_logprobs=20)
    trace.iterations[1].p_unknown = 0.125
    trace.iterations[2].unsent = 2
    app.switch_page("pages/traces.py").run()
    app.file_uploader(key="trace_file").set_value(("remote.json", json.dumps(trace.to_dict()).encode(),
                                                   "application/json")).run()
    for page in ("generate", "table", "inspector", "lesson"):
        app.switch_page(f"pages/{page}.py").run()
        assert any("Approximate" in w.value and "top-20" in w.value and "12.5%" in w.value
                   and "2 drafts drawn from q could not be sent" in w.value for w in app.warning), page


@pytest.fixture
def tiny_pair(app, tiny_llama_dirs) -> AppTest:
    return use_tiny_pair(app, tiny_llama_dirs, "w1 w2 w3 w4", 8)


def test_gamma_sweep_and_spec_grid(tiny_pair):
    app = tiny_pair
    app.button(key="generate").click().run()
    assert not app.exception and not app.error
    app.switch_page("pages/speedup.py").run()
    app.multiselect(key="sweep_gammas").set_value([1, 3]).run()
    app.button(key="run_sweep").click().run()
    assert not app.exception and not app.error
    sweep = app.session_state["studies"]["gamma sweep"]
    assert [r.varied for r in sweep.rows()] == [{}, {"gamma": 1}, {"gamma": 3}, {"gamma": 3, "adaptive": True}]
    assert all(it.choice is not None for it in sweep.variants[-1].trace.iterations)   # it chose before each
    names = [t.get("name") for t in json.loads(app.get("plotly_chart")[0].proto.spec)["data"]]
    assert any(str(name).startswith("adaptive, γ ≤ 3") for name in names)
    assert [chart.key for chart in app.get("plotly_chart")] == ["sweep_chart", "adaptive_chart"]  # the run adapted
    assert len(app.get("vega_lite_chart")) == 1   # the linked view
    assert len(app.table) == 1 and "—".encode() in app.table[0].proto.arrow_data.styler.display_values
    threads = sweep.baseline.threads
    assert threads >= 1 and any(c.value.startswith(f"Measured on cpu (float32) with {threads} torch thread") and
                                "no other run was queued ahead" in c.value for c in app.caption)
    app.number_input(key="sweep_repeats").set_value(2).run()
    app.button(key="run_sweep").click().run()   # the same sweep again: do its points land in the bars drawn before?
    names = [t.get("name") for t in json.loads(app.get("plotly_chart")[0].proto.spec)["data"]]
    assert "the sweep before (median, min–max)" in names and any(str(n).startswith("adaptive before: ") for n in names)
    assert any(c.value.startswith("Run again with the same settings: ") and "of 3 points fall within the bars" in
               c.value and "0.30 to 0.80 for 3 rounds before and 2 now" in c.value for c in app.caption)
    app.checkbox(key="show_shipped_benchmark").check().run()
    assert not app.exception and not app.error
    names = [trace.get("name") for trace in json.loads(app.get("plotly_chart")[0].proto.spec)["data"]]
    assert "benchmark: ngram" in names
    app.multiselect(key="compare_kinds").set_value(["ngram"])
    app.number_input(key="drafters_repeats").set_value(2).run()
    app.button(key="run_drafters").click().run()
    assert not app.exception and not app.error
    drafters = app.session_state["studies"]["drafters"]
    assert [r.varied for r in drafters.rows()] == [{}, {"drafter": "ngram"}] and drafters.rows()[1].rounds == 2
    assert any(n.value.startswith("Timed 2× each, interleaved") for n in [*app.caption, *app.warning])
    app.button(key="run_drafters").click().run()   # again: its point against the bar drawn before
    assert any(c.value.startswith("Run again with the same settings: ") and "of 1 points fall within" in c.value
               and "0.17 to 0.67 for 2 rounds before and 2 now" in c.value for c in app.caption)
    app.switch_page("pages/table.py").run()
    app.multiselect(key="grid_betas").set_value([1, 3])
    app.multiselect(key="grid_taus").set_value([1.0])
    app.number_input(key="grid_repeats").set_value(2).run()
    app.button(key="run_grid").click().run()
    assert not app.exception and not app.error
    rows = app.session_state["studies"]["grid"].rows()
    assert [r.varied for r in rows] == [{}, {"beta": 1, "tau": 1.0}, {"beta": 3, "tau": 1.0}]
    assert all(r.rounds == 2 for r in rows)
    assert rows[1].match_rate == 1.0  # β = 1 is greedy verification: the target's own greedy output
    ran = [v.trace.settings for v in app.session_state["studies"]["grid"].variants]
    assert all(s.branches == 1 and not (s.auto_size or s.adaptive) and s.gamma == app.session_state.gamma for s in ran)
    assert app.dataframe


def test_a_sweep_cut_short_by_a_click_keeps_the_runs_it_finished(tiny_pair, monkeypatch):
    """Stop, or any other click, ends the script where the progress bar is next drawn: here after the
    sweep's second run. The study of those two runs is the session's, and the decoder is free again."""
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    from pages.ui import models

    drawn = models.st.progress

    class ClickedDuringTheSecondRun:
        def __init__(self, *args, **kwargs):
            self.bar, self.runs = drawn(*args, **kwargs), 0

        def progress(self, value: float, text: str) -> None:
            self.runs += 1
            if self.runs == 2:
                raise StopException()
            self.bar.progress(value, text=text)

        def empty(self) -> None:
            self.bar.empty()

    app = tiny_pair
    app.switch_page("pages/speedup.py").run()
    app.multiselect(key="sweep_gammas").set_value([1, 3]).run()
    app.number_input(key="sweep_repeats").set_value(2).run()
    app.button(key="run_sweep").click().run()   # a whole sweep first, in rounds: its bars
    monkeypatch.setattr(models.st, "progress", ClickedDuringTheSecondRun)
    app.button(key="run_sweep").click().run()
    assert not app.exception
    assert [r.varied for r in app.session_state["studies"]["gamma sweep"].rows()] == [{}, {"gamma": 1}]
    app.run()   # the run the click started
    assert any(c.value.startswith("Run again with the same settings: ") and " of 1 points fall within" in c.value
               for c in app.caption)   # the point it finished, against the bar drawn before
    assert len(models.turns()) == 0


def test_sizing_a_pair_draws_it_and_warns_when_it_was_timed_beside_other_work(tiny_pair, monkeypatch):
    monkeypatch.setattr(contention, "BUSY_CORES", -1.0)   # every measurement counts as taken beside other work
    app = tiny_pair
    app.switch_page("pages/speedup.py").run()
    app.button(key="run_sizing").click().run()
    assert not app.exception and not app.error
    assert "sizing_chart" in [chart.key for chart in app.get("plotly_chart")]
    busy = [w.value for w in app.warning if "measured while other processes kept" in w.value]
    assert [w.split(" was ")[0] for w in busy] == ["the target's verify-cost curve", "the drafter's step"]
    assert all(w.endswith("(python -m specviz sizing --again)") for w in busy)
