"""Speedup curves: a live γ sweep against the analytic curves, and where the current trace's drafts die."""

import json
from pathlib import Path

import streamlit as st

from pages.ui import controls, models, state, tables
from pages.ui.linked import linked_view
from specviz import SpecvizError, charts
from specviz.decoder_process import sizing_stream
from specviz.drafters import STANDALONE_KINDS
from specviz.sizing import warnings as sizing_warnings
from specviz.sweep import benchmark_points, drafter_comparison, gamma_sweep

controls.sidebar()  # drawn by each page, so a page opened on its own still has it
st.title("Speedup curves")
st.caption("Runs the target alone once, then the sidebar's pair and prompt once per γ (chains). Points are "
           "measured; curves are Leviathan et al.'s formulas through the measured α̂ and c (for a drafter that drafts "
           "its block in one pass, the blockwise heads or the Spec-Drafter, one drafter step whatever γ, flat past its "
           "block). The sweep is a study: save it, or load one, on the **Traces** page.")
gammas = st.multiselect("γ values to sweep", list(range(1, controls.MAX_GAMMA + 1)),
                        default=controls.kept("sweep_gammas", [1, 2, 4, 8]), key="sweep_gammas")
left, right = st.columns(2)
adaptive = left.checkbox("Add an adaptive run",
                         value=controls.kept("sweep_adaptive", True), key="sweep_adaptive",
                         help="An adaptive run beside the fixed γ values (chains up to the largest γ): it chooses "
                         "its draft length before every iteration (the sidebar's Adapt the draft to the text), and is "
                         "drawn as a dashed level across every γ.")
with right:
    sweep_rounds = tables.rounds_input("sweep_repeats", "each γ")
if st.button("Run γ sweep", type="primary", key="run_sweep", disabled=not gammas):
    models.study_with_progress("gamma sweep", sweep_rounds * (1 + len(gammas) + adaptive), gamma_sweep, lambda: (
        controls.prompt(), controls.settings(), sorted(gammas), True, adaptive, sweep_rounds))

SHIPPED_BENCHMARK = Path(__file__).resolve().parent.parent / "benchmarks" / "latest.json"
left, right = st.columns(2)
shipped = left.checkbox("Show the shipped benchmark", value=controls.kept("show_shipped_benchmark", False),
                        key="show_shipped_benchmark")
upload = right.file_uploader("…or a report saved by `python -m specviz bench`", type=["json"], key="benchmark_file")
benchmark = None
source = upload.getvalue() if upload is not None else SHIPPED_BENCHMARK.read_bytes() if shipped else None
if source is not None:
    try:
        benchmark = benchmark_points(json.loads(source))
    except (UnicodeDecodeError, json.JSONDecodeError, SpecvizError) as error:
        st.error(f"Cannot use this benchmark file: {error}")

sweep = state.study("gamma sweep")
tables.example_note("gamma sweep")
before = state.earlier("gamma sweep")[0]   # the same sweep, measured before this one: do its bars hold?
if sweep is not None or benchmark:
    st.plotly_chart(charts.sweep_chart(sweep, benchmark=benchmark, before=before), key="sweep_chart")
if sweep is not None:
    tables.show_spread(sweep)
    st.caption("The formulas assume one target step verifies γ + 1 tokens as fast as it decodes one (true on a "
               "busy GPU, not on a CPU), and each run's time includes its prompt's prefill: measured points sit "
               "below the curves when either assumption fails.")
    st.caption(state.study_measured_on(sweep))
    tables.study_rows(sweep)
else:
    st.info("Press **Run γ sweep** to measure; the per-position pictures below use the current trace.")

st.subheader("Drafters side by side")
st.caption("Runs the target alone, then every chosen drafter at the sidebar's γ (chains) on its prompt: how acceptance "
           "decays with the draft position, and each drafter's α̂ against its cost c. In a block drafted in one pass "
           "the blockwise heads share one query, the Spec-Drafter's masks have one each (SpecDec's Principle I). "
           "ngram, unigram, bigram and retrieval run no forward pass: the table gives them no c and the chart puts "
           "them at c = 0. Drafters trained for the embedded target need it.")
with st.expander("The drafters"):
    st.markdown(controls.DRAFTER_HELP)
kinds = st.multiselect("Drafters", STANDALONE_KINDS, default=controls.kept("compare_kinds", list(STANDALONE_KINDS)),
                       key="compare_kinds")
rounds = tables.rounds_input("drafters_repeats", "each drafter")
if st.button("Compare drafters", key="run_drafters", disabled=not kinds):
    models.study_with_progress("drafters", rounds * (1 + len(kinds)), drafter_comparison, lambda: (
        controls.prompt(), controls.settings(), list(kinds), True, rounds))
drafters = state.study("drafters")
tables.example_note("drafters")
if drafters is not None:
    st.plotly_chart(charts.drafters_chart(drafters), key="drafters_chart")
    tables.show_spread(drafters)
    st.caption(state.study_measured_on(drafters))
    tables.study_rows(drafters)

st.subheader("Sizing the token tree for this machine")
st.caption("A tree verifies more tokens per pass, and a pass over more tokens costs more. This measures (once, then "
           "cached) the target's cost curve and the drafter's acceptance by depth and rank, and predicts the "
           "tokens/s of every depth × top-k × budget; **Size the tree for this machine** in the sidebar runs the "
           "starred one.")
if st.button("Measure tree sizes for this pair", key="run_sizing",
             help="Measured once per pair, machine, dtype and thread count (a minute or two on a CPU, each step said "
                  "as it runs), then read back at once."):
    sized = models.runs_with_progress("tree sizing", 1, sizing_stream, lambda: ())
    if sized is not None:
        st.session_state.sizing = sized[0][0]
if st.session_state.get("sizing") is not None:
    st.plotly_chart(charts.sizing_chart(st.session_state.sizing), key="sizing_chart")
    for warning in sizing_warnings(st.session_state.sizing):
        st.warning(warning)

trace = state.require_trace()
st.subheader(f"Where drafts die in the current trace ({charts.shape_label(trace.settings)})")
linked_view(trace, key="linked")
if any(it.choice is not None for it in trace.iterations):
    st.subheader("Adaptive drafts in the current trace")
    st.caption("The draft chosen before each iteration (outlined: a probe after a pause), the drafts it accepted, "
               "and the acceptance estimate and predicted speedup the choice read. The Lesson's step \"Why this draft "
               "length\" walks through one choice.")
    st.plotly_chart(charts.adaptive_chart(trace), key="adaptive_chart")
